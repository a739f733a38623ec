//! The canonical RuntimeEvent ledger and the AgentRun ledger.

use std::collections::HashSet;

use contextfold_core::{EventContent, RuntimeEvent};
use rusqlite::{TransactionBehavior, params};
use serde::Serialize;
use serde_json::Value;

use super::{Store, StoreError};

/// Kinds of AgentRun events written by this host.
pub mod agent_run_kind {
    /// A durable checkpoint; its payload is the checkpoint JSON. Written only together with
    /// the projection row.
    pub const CHECKPOINT_RECORDED: &str = "history_compact_checkpoint_recorded";
    /// A Run started (payload: `{trigger}`).
    pub const RUN_STARTED: &str = "run_started";
    /// A compaction's outcome and diagnostics (payload: the core's outcome JSON, provider
    /// state redacted).
    pub const COMPACTION_OUTCOME: &str = "compaction_outcome_recorded";
    /// A Run completed (terminal).
    pub const RUN_COMPLETED: &str = "run_completed";
    /// A Run was cancelled (terminal).
    pub const RUN_CANCELLED: &str = "run_cancelled";
    /// A Run failed (terminal).
    pub const RUN_FAILED: &str = "run_failed";
    /// A checkpoint taken back (payload: the core's `RetractionPayload`, `{checkpointId,
    /// reason}`); written only by `retract_checkpoint`, with the projection row.
    pub const CHECKPOINT_RETRACTED: &str = "checkpoint_retracted";
    /// What the provider reported for one model request (payload: the core's `UsageFact`).
    pub const USAGE_RECORDED: &str = "model_usage_recorded";
    /// How one background preparation ended (payload: `{fate, checkpointId, summarizerTokens,
    /// detail}`; fate `used`, `superseded`, `wasted` or `failed`).
    pub const PREPARATION_SETTLED: &str = "preparation_settled";

    /// Whether events of `kind` are written only with the projection row (checkpoints and
    /// retractions), never through the generic AgentRun append.
    pub fn is_reserved(kind: &str) -> bool {
        kind == CHECKPOINT_RECORDED || kind == CHECKPOINT_RETRACTED
    }
}

/// One AgentRun ledger event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentRunRecord {
    /// Unique id of the event.
    pub event_id: String,
    /// Session it belongs to.
    pub session_id: String,
    /// Run that produced it.
    pub run_id: String,
    /// One of [`agent_run_kind`].
    pub kind: String,
    /// Host time in milliseconds since the Unix epoch.
    pub recorded_at_ms: u64,
    /// JSON payload.
    pub payload: Value,
}

impl Store {
    /// Appends `events` to the ledger of `session_id` in one IMMEDIATE transaction. Every event
    /// must belong to the session, continue its `seq` order and carry a new `runtimeEventId`;
    /// otherwise nothing is written.
    ///
    /// An id already in the ledger is refused by the table's `UNIQUE (session_id,
    /// runtime_event_id)` constraint (mapped to [`StoreError::EventDuplicateId`]), a repeat
    /// within `events` by an in-memory set; statements come from the connection's cache. Each
    /// row stores the event's canonical bytes and derived columns (`storage/derived.rs`).
    pub fn append_events(
        &self,
        session_id: &str,
        events: &[RuntimeEvent],
    ) -> Result<(), StoreError> {
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(StoreError::sqlite("starting an event append"))?;
        let mut previous: Option<u64> = tx
            .prepare_cached("SELECT max(seq) FROM runtime_events WHERE session_id = ?1")
            .and_then(|mut last| last.query_row([session_id], |row| row.get::<_, Option<i64>>(0)))
            .map_err(StoreError::sqlite("reading the last seq"))?
            .map(|seq| seq as u64);
        let mut batch_ids = HashSet::with_capacity(events.len());
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO runtime_events (session_id, seq, runtime_event_id, event_json, \
                     canonical, turn_id, run_id, live_head, tokens) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                )
                .map_err(StoreError::sqlite("preparing the event insert"))?;
            for (index, event) in events.iter().enumerate() {
                if event.session_id != session_id {
                    return Err(StoreError::EventSessionMismatch {
                        index,
                        expected: session_id.to_owned(),
                        found: event.session_id.clone(),
                    });
                }
                if let Some(previous) = previous
                    && event.seq <= previous
                {
                    return Err(StoreError::EventSeqNotIncreasing {
                        index,
                        seq: event.seq,
                        previous,
                    });
                }
                let duplicate = || StoreError::EventDuplicateId {
                    index,
                    event_id: event.runtime_event_id.clone(),
                };
                if !batch_ids.insert(event.runtime_event_id.as_str()) {
                    return Err(duplicate());
                }
                let unserializable = |detail: String| StoreError::LedgerUnreadable {
                    session_id: session_id.to_owned(),
                    detail: format!("event {index} cannot be serialized: {detail}"),
                };
                let event = super::attachments::archive_attachments(&tx, index, event)?;
                let derived = contextfold_core::event::LedgerRow::of(&event)
                    .map_err(|e| unserializable(e.to_string()))?;
                insert
                    .execute(params![
                        session_id,
                        event.seq as i64,
                        event.runtime_event_id,
                        derived.json,
                        derived.canonical,
                        event.turn_id,
                        event.run_id,
                        derived.live_head,
                        derived.tokens as i64
                    ])
                    .map_err(|e| {
                        if is_unique_violation(&e) {
                            duplicate()
                        } else {
                            StoreError::Sqlite { operation: "inserting an event", source: e }
                        }
                    })?;
                previous = Some(event.seq);
            }
        }
        tx.commit().map_err(StoreError::sqlite("committing an event append"))
    }

    /// The whole canonical ledger of `session_id`, in `seq` order. A row that does not parse,
    /// or disagrees with its key columns, stops the read with [`StoreError::LedgerUnreadable`].
    pub fn load_events(&self, session_id: &str) -> Result<Vec<RuntimeEvent>, StoreError> {
        self.read_events(session_id, -1)
    }

    /// The events of `session_id` with `seq` above `after`, in `seq` order (checked like
    /// [`Store::load_events`]).
    pub fn load_events_after(
        &self,
        session_id: &str,
        after: u64,
    ) -> Result<Vec<RuntimeEvent>, StoreError> {
        self.read_events(session_id, i64::try_from(after).unwrap_or(i64::MAX))
    }

    /// The events of `session_id` whose `seq` is above `after` (every `seq` is at least 0).
    fn read_events(&self, session_id: &str, after: i64) -> Result<Vec<RuntimeEvent>, StoreError> {
        let conn = self.lock();
        let unreadable = |detail: String| StoreError::LedgerUnreadable {
            session_id: session_id.to_owned(),
            detail,
        };
        let mut statement = conn
            .prepare_cached(
                "SELECT seq, runtime_event_id, event_json FROM runtime_events \
                 WHERE session_id = ?1 AND seq > ?2 ORDER BY seq",
            )
            .map_err(|e| unreadable(format!("cannot query runtime_events: {e}")))?;
        let mut rows = statement
            .query(params![session_id, after])
            .map_err(|e| unreadable(format!("cannot query runtime_events: {e}")))?;
        let mut events = Vec::new();
        while let Some(row) =
            rows.next().map_err(|e| unreadable(format!("cannot read a row: {e}")))?
        {
            events.push(super::stream::read_event_row(row, session_id)?);
        }
        Ok(events)
    }

    /// The `runtime_event_id` of the event of `session_id` at `seq`, if there is one.
    pub fn event_id_at(&self, session_id: &str, seq: u64) -> Result<Option<String>, StoreError> {
        let conn = self.lock();
        let mut statement = conn
            .prepare_cached(
                "SELECT runtime_event_id FROM runtime_events WHERE session_id = ?1 AND seq = ?2",
            )
            .map_err(StoreError::sqlite("looking up an event"))?;
        let mut rows = statement
            .query(params![session_id, seq as i64])
            .map_err(StoreError::sqlite("looking up an event"))?;
        match rows.next().map_err(StoreError::sqlite("looking up an event"))? {
            Some(row) => Ok(Some(row.get(0).map_err(StoreError::sqlite("looking up an event"))?)),
            None => Ok(None),
        }
    }

    /// Like [`Store::load_events`], but an empty ledger is [`StoreError::UnknownSession`].
    pub fn load_session(&self, session_id: &str) -> Result<Vec<RuntimeEvent>, StoreError> {
        let events = self.load_events(session_id)?;
        if events.is_empty() {
            return Err(StoreError::UnknownSession { session_id: session_id.to_owned() });
        }
        Ok(events)
    }

    /// Number of canonical events of `session_id`.
    pub fn event_count(&self, session_id: &str) -> Result<u64, StoreError> {
        self.lock()
            .query_row(
                "SELECT count(*) FROM runtime_events WHERE session_id = ?1",
                [session_id],
                |row| row.get::<_, i64>(0),
            )
            .map(|n| n as u64)
            .map_err(StoreError::sqlite("counting events"))
    }

    /// Every session with at least one canonical event, sorted.
    pub fn sessions(&self) -> Result<Vec<String>, StoreError> {
        let conn = self.lock();
        let mut statement = conn
            .prepare("SELECT DISTINCT session_id FROM runtime_events ORDER BY session_id")
            .map_err(StoreError::sqlite("listing sessions"))?;
        let rows = statement
            .query_map([], |row| row.get::<_, String>(0))
            .map_err(StoreError::sqlite("listing sessions"))?;
        rows.collect::<Result<_, _>>().map_err(StoreError::sqlite("listing sessions"))
    }

    /// Every session with at least one canonical event, with its event count, sorted by id.
    pub fn session_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let conn = self.lock();
        let mut statement = conn
            .prepare(
                "SELECT session_id, count(*) FROM runtime_events GROUP BY session_id \
                 ORDER BY session_id",
            )
            .map_err(StoreError::sqlite("listing sessions"))?;
        let rows = statement
            .query_map([], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?.max(0) as u64))
            })
            .map_err(StoreError::sqlite("listing sessions"))?;
        rows.collect::<Result<_, _>>().map_err(StoreError::sqlite("listing sessions"))
    }

    /// Appends one AgentRun event (Run lifecycle, compaction outcome). Checkpoint events are
    /// refused here: they are written by [`Store::append_checkpoint`] with their projection row.
    pub fn append_agent_run_event(&self, record: &AgentRunRecord) -> Result<(), StoreError> {
        if agent_run_kind::is_reserved(&record.kind) {
            return Err(StoreError::ReservedAgentRunKind { kind: record.kind.clone() });
        }
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(StoreError::sqlite("starting an AgentRun append"))?;
        insert_agent_run_event(&tx, record)?;
        tx.commit().map_err(StoreError::sqlite("committing an AgentRun append"))
    }

    /// Every AgentRun event of `session_id`, in the order they were recorded.
    pub fn agent_run_events(&self, session_id: &str) -> Result<Vec<AgentRunRecord>, StoreError> {
        let conn = self.lock();
        read_agent_run_events(&conn, session_id, None)
    }

    /// Copies the raw canonical events of `from` into the new session `to` (ids and seq kept,
    /// session id rewritten). Provider state is omitted: no checkpoint is copied (V3 state is
    /// bound to the source session's connection) and reasoning `providerData` is dropped.
    /// Returns the number of events copied.
    pub fn copy_session(&self, from: &str, to: &str) -> Result<usize, StoreError> {
        let events = self.load_session(from)?;
        if self.event_count(to)? > 0 {
            return Err(StoreError::SessionExists { session_id: to.to_owned() });
        }
        let copied: Vec<RuntimeEvent> = events
            .into_iter()
            .map(|mut event| {
                event.session_id = to.to_owned();
                if let EventContent::Reasoning { provider_data, .. } = &mut event.content {
                    *provider_data = None;
                }
                event
            })
            .collect();
        self.append_events(to, &copied)?;
        Ok(copied.len())
    }
}

/// Whether `error` is a `UNIQUE` constraint violation. In `runtime_events` the only `UNIQUE`
/// constraint is `(session_id, runtime_event_id)`; the `(session_id, seq)` primary key reports
/// `SQLITE_CONSTRAINT_PRIMARYKEY` instead.
fn is_unique_violation(error: &rusqlite::Error) -> bool {
    matches!(
        error,
        rusqlite::Error::SqliteFailure(failure, _)
            if failure.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
    )
}

pub(crate) fn insert_agent_run_event(
    conn: &rusqlite::Connection,
    record: &AgentRunRecord,
) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO agent_run_events (event_id, session_id, run_id, kind, recorded_at_ms, payload_json) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            record.event_id,
            record.session_id,
            record.run_id,
            record.kind,
            record.recorded_at_ms as i64,
            record.payload.to_string()
        ],
    )
    .map_err(StoreError::sqlite("inserting an AgentRun event"))?;
    Ok(())
}

/// Reads AgentRun events of a session (optionally of one kind). A row that cannot be read at
/// all is [`StoreError::LedgerUnreadable`]; a payload that is not JSON is kept as a JSON string
/// so recovery can report it as skipped.
pub(crate) fn read_agent_run_events(
    conn: &rusqlite::Connection,
    session_id: &str,
    kind: Option<&str>,
) -> Result<Vec<AgentRunRecord>, StoreError> {
    let unreadable = |e: rusqlite::Error| StoreError::LedgerUnreadable {
        session_id: session_id.to_owned(),
        detail: format!("the AgentRun ledger cannot be read: {e}"),
    };
    let mut statement = conn
        .prepare(
            "SELECT event_id, run_id, kind, recorded_at_ms, payload_json FROM agent_run_events \
             WHERE session_id = ?1 AND (?2 IS NULL OR kind = ?2) ORDER BY ordinal",
        )
        .map_err(unreadable)?;
    let rows = statement
        .query_map(params![session_id, kind], |row| {
            let payload: String = row.get(4)?;
            Ok(AgentRunRecord {
                event_id: row.get(0)?,
                session_id: session_id.to_owned(),
                run_id: row.get(1)?,
                kind: row.get(2)?,
                recorded_at_ms: row.get::<_, i64>(3)?.max(0) as u64,
                payload: serde_json::from_str(&payload).unwrap_or(Value::String(payload)),
            })
        })
        .map_err(unreadable)?;
    rows.collect::<Result<_, _>>().map_err(unreadable)
}

#[cfg(test)]
mod tests {
    use contextfold_core::LogBuilder;
    use serde_json::json;

    use super::*;

    fn log(turns: usize) -> Vec<RuntimeEvent> {
        let mut builder = LogBuilder::new("s");
        for turn in 0..turns {
            builder.turn(&format!("t{turn}")).user(&format!("request {turn}"));
            builder.tool_call(&format!("c{turn}"), "shell", json!({"cmd": "ls"}));
            builder.tool_result(&format!("c{turn}"), "shell", json!("src"));
            builder.assistant("done");
        }
        builder.build()
    }

    /// An id already in the ledger is refused by the UNIQUE constraint, reported as the typed
    /// duplicate error at its index, and the whole batch is rolled back.
    #[test]
    fn an_id_already_in_the_ledger_is_a_typed_duplicate_and_writes_nothing() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path().join("ledger.sqlite")).expect("open");
        let events = log(2);
        store.append_events("s", &events[..4]).expect("append");
        let mut batch = events[4..7].to_vec();
        batch[2].runtime_event_id = events[1].runtime_event_id.clone();
        let error = store.append_events("s", &batch).expect_err("duplicate");
        assert_eq!(error.code(), "event_duplicate_id");
        assert!(
            matches!(&error, StoreError::EventDuplicateId { index: 2, event_id }
                if *event_id == events[1].runtime_event_id),
            "{error:?}"
        );
        assert_eq!(store.event_count("s").expect("count"), 4, "no partial batch was written");
        store.append_events("s", &events[4..]).expect("the valid batch still appends");
        assert_eq!(store.load_events("s").expect("load"), events);
    }
}
