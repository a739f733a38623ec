//! The RuntimeEvent ledger and the AgentRun ledger on PostgreSQL: the same checks and stored
//! form as `storage/events.rs`, each write in one transaction under the session's lock.

use std::collections::HashSet;

use contextfold_core::RuntimeEvent;
use contextfold_core::compaction::MalformedInputCircuit;
use serde_json::Value;
use tokio_postgres::GenericClient;
use tokio_postgres::Row;

use super::{PgError, PgLedger};
use crate::ledger::StoredRow;
use crate::storage::{AgentRunRecord, CIRCUIT_KEY, StoreError, agent_run_kind};

impl PgLedger {
    /// Appends `events` to `session_id` (the rules of [`crate::storage::Store::append_events`]):
    /// every event of the session, `seq` above the ledger's last, a new `runtimeEventId`, large
    /// inline attachments moved to the archive; all or nothing.
    pub async fn append_events(
        &self,
        session_id: &str,
        events: &[RuntimeEvent],
    ) -> Result<(), StoreError> {
        let mut client = self.client("appending events").await?;
        let tx = client.transaction().await.map_err(PgError::during("starting an event append"))?;
        Self::lock_session(&tx, session_id).await?;
        let mut previous: Option<u64> = tx
            .query_one("SELECT max(seq) FROM runtime_events WHERE session_id = $1", &[&session_id])
            .await
            .map_err(PgError::during("reading the last seq"))?
            .get::<_, Option<i64>>(0)
            .map(|seq| seq as u64);
        let insert = tx
            .prepare_cached(
                "INSERT INTO runtime_events (session_id, seq, runtime_event_id, event_json, \
                 canonical, turn_id, run_id, live_head, tokens) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .await
            .map_err(PgError::during("preparing the event insert"))?;
        let mut batch_ids = HashSet::with_capacity(events.len());
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
                return Err(StoreError::EventSeqNotIncreasing { index, seq: event.seq, previous });
            }
            let duplicate =
                || StoreError::EventDuplicateId { index, event_id: event.runtime_event_id.clone() };
            if !batch_ids.insert(event.runtime_event_id.as_str()) {
                return Err(duplicate());
            }
            let event = super::archive::archive_attachments(&tx, index, event).await?;
            let row = contextfold_core::event::LedgerRow::of(&event).map_err(|e| {
                StoreError::LedgerUnreadable {
                    session_id: session_id.to_owned(),
                    detail: format!("event {index} cannot be serialized: {e}"),
                }
            })?;
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 9] = [
                &session_id,
                &(event.seq as i64),
                &event.runtime_event_id,
                &row.json,
                &row.canonical,
                &event.turn_id,
                &event.run_id,
                &row.live_head,
                &(row.tokens as i64),
            ];
            tx.execute(&insert, &params).await.map_err(
                |source| match PgError::unique_violation(&source) {
                    Some("runtime_events_event_id_key") => duplicate(),
                    Some("runtime_events_pkey") => StoreError::EventSeqNotIncreasing {
                        index,
                        seq: event.seq,
                        previous: previous.unwrap_or(event.seq),
                    },
                    _ => PgError::from_client("inserting an event", source).into(),
                },
            )?;
            previous = Some(event.seq);
        }
        tx.commit().await.map_err(PgError::during("committing an event append"))?;
        Ok(())
    }

    /// The whole ledger of `session_id` in `seq` order; a row that does not parse or disagrees
    /// with its key columns is `ledger_unreadable`.
    pub async fn load_events(&self, session_id: &str) -> Result<Vec<RuntimeEvent>, StoreError> {
        self.read_events(session_id, -1).await
    }

    /// The events of `session_id` with `seq` above `after`.
    pub async fn load_events_after(
        &self,
        session_id: &str,
        after: u64,
    ) -> Result<Vec<RuntimeEvent>, StoreError> {
        self.read_events(session_id, i64::try_from(after).unwrap_or(i64::MAX)).await
    }

    async fn read_events(
        &self,
        session_id: &str,
        after: i64,
    ) -> Result<Vec<RuntimeEvent>, StoreError> {
        let client = self.client("reading events").await?;
        let rows = client
            .query(
                "SELECT seq, runtime_event_id, event_json FROM runtime_events \
                 WHERE session_id = $1 AND seq > $2 ORDER BY seq",
                &[&session_id, &after],
            )
            .await
            .map_err(PgError::during("reading events"))?;
        rows.iter().map(|row| parse_event_row(row, session_id)).collect()
    }

    /// The `runtime_event_id` at `seq`, if there is one.
    pub async fn event_id_at(
        &self,
        session_id: &str,
        seq: u64,
    ) -> Result<Option<String>, StoreError> {
        let client = self.client("looking up an event").await?;
        let row = client
            .query_opt(
                "SELECT runtime_event_id FROM runtime_events WHERE session_id = $1 AND seq = $2",
                &[&session_id, &(seq as i64)],
            )
            .await
            .map_err(PgError::during("looking up an event"))?;
        Ok(row.map(|row| row.get(0)))
    }

    /// The highest `seq` of `session_id`, if it has events.
    pub async fn last_seq(&self, session_id: &str) -> Result<Option<u64>, StoreError> {
        let client = self.client("reading the last seq").await?;
        let row = client
            .query_one("SELECT max(seq) FROM runtime_events WHERE session_id = $1", &[&session_id])
            .await
            .map_err(PgError::during("reading the last seq"))?;
        Ok(row.get::<_, Option<i64>>(0).map(|seq| seq as u64))
    }

    /// Up to `limit` stored rows of `session_id` after `after` (`None`: from the start).
    pub async fn stored_rows(
        &self,
        session_id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<StoredRow>, StoreError> {
        let client = self.client("reading stored rows").await?;
        let after = after.map_or(-1, |seq| i64::try_from(seq).unwrap_or(i64::MAX));
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = client
            .query(
                "SELECT seq, runtime_event_id, event_json, canonical, turn_id, run_id, live_head, \
                 tokens FROM runtime_events WHERE session_id = $1 AND seq > $2 ORDER BY seq \
                 LIMIT $3",
                &[&session_id, &after, &limit],
            )
            .await
            .map_err(PgError::during("reading stored rows"))?;
        Ok(rows
            .iter()
            .map(|row| StoredRow {
                seq: row.get::<_, i64>(0) as u64,
                runtime_event_id: row.get(1),
                event_json: row.get(2),
                canonical: row.get(3),
                turn_id: row.get(4),
                run_id: row.get(5),
                live_head: row.get(6),
                tokens: row.get::<_, Option<i64>>(7).map(|t| t.max(0) as u64),
            })
            .collect())
    }

    /// Appends one AgentRun event; checkpoint events are refused (`reserved_agent_run_kind`):
    /// they are written by [`PgLedger::append_checkpoint`] with their projection row.
    pub async fn append_agent_run_event(&self, record: &AgentRunRecord) -> Result<(), StoreError> {
        if agent_run_kind::is_reserved(&record.kind) {
            return Err(StoreError::ReservedAgentRunKind { kind: record.kind.clone() });
        }
        let mut client = self.client("appending an AgentRun event").await?;
        let tx =
            client.transaction().await.map_err(PgError::during("starting an AgentRun append"))?;
        Self::lock_session(&tx, &record.session_id).await?;
        insert_agent_run_event(&tx, record).await?;
        tx.commit().await.map_err(PgError::during("committing an AgentRun append"))?;
        Ok(())
    }

    /// Every AgentRun event of `session_id`, in record order.
    pub async fn agent_run_events(
        &self,
        session_id: &str,
    ) -> Result<Vec<AgentRunRecord>, StoreError> {
        let client = self.client("reading the AgentRun ledger").await?;
        read_agent_run_events(&**client, session_id, None).await
    }

    /// The circuit of the latest compaction outcome ([`crate::storage::Store::latest_circuit`]).
    pub async fn latest_circuit(
        &self,
        session_id: &str,
    ) -> Result<Option<MalformedInputCircuit>, StoreError> {
        let client = self.client("reading the latest compaction outcome").await?;
        let row = client
            .query_opt(
                "SELECT payload_json FROM agent_run_events WHERE session_id = $1 AND kind = $2 \
                 ORDER BY ordinal DESC LIMIT 1",
                &[&session_id, &agent_run_kind::COMPACTION_OUTCOME],
            )
            .await
            .map_err(PgError::during("reading the latest compaction outcome"))?;
        let Some(row) = row else { return Ok(None) };
        let unreadable = |detail: String| StoreError::LedgerUnreadable {
            session_id: session_id.to_owned(),
            detail,
        };
        let value: Value = serde_json::from_str(row.get(0))
            .map_err(|e| unreadable(format!("a compaction outcome is not JSON: {e}")))?;
        match value.get(CIRCUIT_KEY) {
            None | Some(Value::Null) => Ok(None),
            Some(circuit) => serde_json::from_value(circuit.clone())
                .map(Some)
                .map_err(|e| unreadable(format!("the recorded malformed-input circuit: {e}"))),
        }
    }
}

/// Parses one `(seq, runtime_event_id, event_json)` row, checked against its key columns.
fn parse_event_row(row: &Row, session_id: &str) -> Result<RuntimeEvent, StoreError> {
    let (seq, id, json): (i64, &str, &str) = (row.get(0), row.get(1), row.get(2));
    let unreadable =
        |detail: String| StoreError::LedgerUnreadable { session_id: session_id.to_owned(), detail };
    let event = RuntimeEvent::from_json(json)
        .map_err(|e| unreadable(format!("row seq {seq}: {e} ({})", e.code())))?;
    if event.seq as i64 != seq || event.runtime_event_id != id || event.session_id != session_id {
        return Err(unreadable(format!(
            "row seq {seq}: the event JSON disagrees with its key columns"
        )));
    }
    Ok(event)
}

/// Inserts one AgentRun row (the caller holds the session's lock).
pub(super) async fn insert_agent_run_event(
    tx: &tokio_postgres::Transaction<'_>,
    record: &AgentRunRecord,
) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO agent_run_events (event_id, session_id, run_id, kind, recorded_at_ms, \
         payload_json) VALUES ($1, $2, $3, $4, $5, $6)",
        &[
            &record.event_id,
            &record.session_id,
            &record.run_id,
            &record.kind,
            &(record.recorded_at_ms as i64),
            &record.payload.to_string(),
        ],
    )
    .await
    .map_err(PgError::during("inserting an AgentRun event"))?;
    Ok(())
}

/// AgentRun events of a session (optionally of one kind), in record order; a payload that is
/// not JSON is kept as a JSON string so recovery can report it as skipped.
pub(super) async fn read_agent_run_events(
    client: &impl GenericClient,
    session_id: &str,
    kind: Option<&str>,
) -> Result<Vec<AgentRunRecord>, StoreError> {
    let rows = client
        .query(
            "SELECT event_id, run_id, kind, recorded_at_ms, payload_json FROM agent_run_events \
             WHERE session_id = $1 AND ($2::text IS NULL OR kind = $2) ORDER BY ordinal",
            &[&session_id, &kind],
        )
        .await
        .map_err(PgError::during("reading the AgentRun ledger"))?;
    Ok(rows
        .iter()
        .map(|row| {
            let payload: String = row.get(4);
            AgentRunRecord {
                event_id: row.get(0),
                session_id: session_id.to_owned(),
                run_id: row.get(1),
                kind: row.get(2),
                recorded_at_ms: row.get::<_, i64>(3).max(0) as u64,
                payload: serde_json::from_str(&payload).unwrap_or(Value::String(payload)),
            }
        })
        .collect())
}
