//! Durable checkpoints: the AgentRun `history_compact_checkpoint_recorded` event and the bounded
//! projection row, written in one transaction under the core's compare-and-swap; lookup with
//! ledger recovery and best-effort projection repair.

use contextfold_core::HistoryCompactCheckpoint;
use contextfold_core::checkpoint::{RecordedCheckpointEvent, Recovery, is_valid_successor};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;

use super::Store;
use super::error::{CheckpointAppendError, StoreError};
use super::events::{
    AgentRunRecord, agent_run_kind, insert_agent_run_event, read_agent_run_events,
};

/// Where a lookup found the current checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LookupSource {
    /// The session has no valid checkpoint.
    None,
    /// The bounded projection row.
    Projection,
    /// A scan of the AgentRun ledger (the projection was uninitialized, invalid or unreadable).
    Recovered,
}

/// A note about a lookup: projection damage, repair, and every ledger event recovery skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LookupNote {
    /// Stable snake_case code (`projection_uninitialized`, `projection_invalid`,
    /// `projection_unreadable`, `projection_repaired`, `projection_repair_failed`, or a core
    /// reason code such as `recovery_event_skipped`).
    pub code: String,
    /// Human-readable detail.
    pub detail: String,
}

/// The current checkpoint of a session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointLookup {
    /// The checkpoint, if any.
    pub checkpoint: Option<HistoryCompactCheckpoint>,
    /// Id of the AgentRun event that recorded it.
    pub agent_run_event_id: Option<String>,
    /// Where it came from.
    pub source: LookupSource,
    /// Damage, repair and recovery notes.
    pub notes: Vec<LookupNote>,
}

enum ProjectionRow {
    Missing,
    Valid(Box<HistoryCompactCheckpoint>, String),
    Damaged(&'static str, String),
}

impl Store {
    /// Records `checkpoint` as the AgentRun event `event_id` of run `run_id` and moves the
    /// projection to it, in one IMMEDIATE transaction. The candidate must be a valid successor
    /// of the current tip ([`is_valid_successor`]); otherwise nothing is written and the error
    /// is [`CheckpointAppendError::Conflict`].
    pub fn append_checkpoint(
        &self,
        event_id: &str,
        run_id: &str,
        recorded_at_ms: u64,
        checkpoint: &HistoryCompactCheckpoint,
    ) -> Result<(), CheckpointAppendError> {
        let session_id = checkpoint.session_id.as_str();
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(StoreError::sqlite("starting a checkpoint append"))?;
        let tip = match read_projection(&tx, session_id) {
            ProjectionRow::Valid(tip, _) => Some(*tip),
            ProjectionRow::Missing | ProjectionRow::Damaged(..) => {
                recover(&tx, session_id)?.selected
            }
        };
        is_valid_successor(tip.as_ref(), checkpoint).map_err(|source| {
            CheckpointAppendError::Conflict {
                checkpoint_id: checkpoint.checkpoint_id.clone(),
                source,
            }
        })?;
        let record = AgentRunRecord {
            event_id: event_id.to_owned(),
            session_id: session_id.to_owned(),
            run_id: run_id.to_owned(),
            kind: agent_run_kind::CHECKPOINT_RECORDED.to_owned(),
            recorded_at_ms,
            payload: checkpoint.to_value(),
        };
        insert_agent_run_event(&tx, &record)?;
        write_projection(&tx, checkpoint, event_id)?;
        tx.commit().map_err(StoreError::sqlite("committing a checkpoint append"))?;
        Ok(())
    }

    /// The current checkpoint: the projection row when it is valid; otherwise the ledger is
    /// scanned with the core's recovery selection and the projection repaired best-effort.
    /// An unreadable AgentRun ledger is an error, never a guess.
    pub fn current_checkpoint(&self, session_id: &str) -> Result<CheckpointLookup, StoreError> {
        let conn = self.lock();
        let damage = match read_projection(&conn, session_id) {
            ProjectionRow::Valid(checkpoint, event_id) => {
                return Ok(CheckpointLookup {
                    checkpoint: Some(*checkpoint),
                    agent_run_event_id: Some(event_id),
                    source: LookupSource::Projection,
                    notes: Vec::new(),
                });
            }
            ProjectionRow::Missing => LookupNote {
                code: "projection_uninitialized".into(),
                detail: format!("no projection row for session `{session_id}`"),
            },
            ProjectionRow::Damaged(code, detail) => LookupNote { code: code.into(), detail },
        };
        let recovery = recover(&conn, session_id)?;
        let mut lookup = lookup_from(recovery, vec![damage]);
        let note = match (&lookup.checkpoint, &lookup.agent_run_event_id) {
            (Some(checkpoint), Some(event_id)) => Some(repair_note(
                repair(&conn, session_id, Some((checkpoint, event_id))),
                &checkpoint.checkpoint_id,
            )),
            _ => None,
        };
        lookup.notes.extend(note);
        Ok(lookup)
    }

    /// Rebuilds the projection row of `session_id` from the AgentRun ledger (the `recover`
    /// command): the row is replaced by the recovered tip, or removed when there is none.
    pub fn rebuild_projection(&self, session_id: &str) -> Result<CheckpointLookup, StoreError> {
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(StoreError::sqlite("starting a projection rebuild"))?;
        let recovery = recover(&tx, session_id)?;
        let lookup = lookup_from(recovery, Vec::new());
        tx.execute("DELETE FROM checkpoint_projection WHERE session_id = ?1", [session_id])
            .map_err(StoreError::sqlite("clearing the projection row"))?;
        if let (Some(checkpoint), Some(event_id)) = (&lookup.checkpoint, &lookup.agent_run_event_id)
        {
            write_projection(&tx, checkpoint, event_id)?;
        }
        tx.commit().map_err(StoreError::sqlite("committing a projection rebuild"))?;
        Ok(lookup)
    }

    /// Every `history_compact_checkpoint_recorded` event of `session_id`, in record order.
    pub fn recorded_checkpoints(
        &self,
        session_id: &str,
    ) -> Result<Vec<RecordedCheckpointEvent>, StoreError> {
        recorded(&self.lock(), session_id)
    }
}

fn recorded(
    conn: &Connection,
    session_id: &str,
) -> Result<Vec<RecordedCheckpointEvent>, StoreError> {
    let records =
        read_agent_run_events(conn, session_id, Some(agent_run_kind::CHECKPOINT_RECORDED))?;
    Ok(records
        .into_iter()
        .map(|record| RecordedCheckpointEvent {
            event_id: record.event_id,
            session_id: record.session_id,
            recorded_at_ms: record.recorded_at_ms,
            payload: record.payload,
        })
        .collect())
}

fn recover(conn: &Connection, session_id: &str) -> Result<Recovery, StoreError> {
    Ok(super::retraction::checkpoint_records(conn, session_id)?.recover(session_id))
}

/// A lookup from what recovery selected, with its notes after `notes`.
pub(crate) fn lookup_from(recovery: Recovery, mut notes: Vec<LookupNote>) -> CheckpointLookup {
    notes.extend(
        recovery
            .diagnostics()
            .into_iter()
            .map(|d| LookupNote { code: d.code.as_str().to_owned(), detail: d.detail }),
    );
    let source =
        if recovery.selected.is_some() { LookupSource::Recovered } else { LookupSource::None };
    CheckpointLookup {
        checkpoint: recovery.selected,
        agent_run_event_id: recovery.selected_event_id,
        source,
        notes,
    }
}

fn read_projection(conn: &Connection, session_id: &str) -> ProjectionRow {
    let row = conn
        .query_row(
            "SELECT checkpoint_id, event_count, agent_run_event_id, checkpoint_json \
             FROM checkpoint_projection WHERE session_id = ?1",
            [session_id],
            |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, String>(3)?,
                ))
            },
        )
        .optional();
    let (checkpoint_id, event_count, event_id, json) = match row {
        Ok(Some(row)) => row,
        Ok(None) => return ProjectionRow::Missing,
        Err(error) => return ProjectionRow::Damaged("projection_unreadable", error.to_string()),
    };
    let checkpoint = match checkpoint_of_row(session_id, &checkpoint_id, event_count, &json) {
        Ok(checkpoint) => checkpoint,
        Err(detail) => return ProjectionRow::Damaged("projection_invalid", detail),
    };
    // The row may never describe a fact absent from the canonical ledger.
    let recorded = conn
        .query_row(
            "SELECT json_extract(payload_json, '$.checkpointId') FROM agent_run_events \
             WHERE event_id = ?1 AND session_id = ?2 AND kind = ?3",
            params![event_id, session_id, agent_run_kind::CHECKPOINT_RECORDED],
            |row| row.get::<_, Option<String>>(0),
        )
        .optional();
    match recorded {
        Ok(Some(Some(id))) if id == checkpoint.checkpoint_id => {}
        Ok(_) => {
            return ProjectionRow::Damaged(
                "projection_invalid",
                format!("the row names AgentRun event `{event_id}`, which does not record it"),
            );
        }
        Err(error) => return ProjectionRow::Damaged("projection_unreadable", error.to_string()),
    }
    ProjectionRow::Valid(Box::new(checkpoint), event_id)
}

pub(super) fn write_projection(
    conn: &Connection,
    checkpoint: &HistoryCompactCheckpoint,
    event_id: &str,
) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO checkpoint_projection \
         (session_id, checkpoint_id, event_count, agent_run_event_id, checkpoint_json) \
         VALUES (?1, ?2, ?3, ?4, ?5) \
         ON CONFLICT (session_id) DO UPDATE SET checkpoint_id = excluded.checkpoint_id, \
         event_count = excluded.event_count, agent_run_event_id = excluded.agent_run_event_id, \
         checkpoint_json = excluded.checkpoint_json",
        params![
            checkpoint.session_id,
            checkpoint.checkpoint_id,
            checkpoint.coverage.event_count as i64,
            event_id,
            checkpoint.to_json()
        ],
    )
    .map_err(StoreError::sqlite("writing the projection row"))?;
    Ok(())
}

/// Best-effort repair: replaces the projection row in its own transaction.
fn repair(
    conn: &Connection,
    session_id: &str,
    tip: Option<(&HistoryCompactCheckpoint, &String)>,
) -> Result<(), StoreError> {
    let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
        .map_err(StoreError::sqlite("starting a projection repair"))?;
    tx.execute("DELETE FROM checkpoint_projection WHERE session_id = ?1", [session_id])
        .map_err(StoreError::sqlite("clearing the projection row"))?;
    if let Some((checkpoint, event_id)) = tip {
        write_projection(&tx, checkpoint, event_id)?;
    }
    tx.commit().map_err(StoreError::sqlite("committing a projection repair"))
}

fn repair_note(result: Result<(), StoreError>, checkpoint_id: &str) -> LookupNote {
    match result {
        Ok(()) => LookupNote {
            code: "projection_repaired".into(),
            detail: format!("projection row rewritten to checkpoint {checkpoint_id}"),
        },
        Err(error) => LookupNote {
            code: "projection_repair_failed".into(),
            detail: format!(
                "the recovered checkpoint is used, but the row was not rewritten: {error}"
            ),
        },
    }
}

/// The checkpoint a projection row stores, checked against the row's own columns (every
/// backend reads the row alike); the error says why the row is damaged.
pub(crate) fn checkpoint_of_row(
    session_id: &str,
    checkpoint_id: &str,
    event_count: i64,
    json: &str,
) -> Result<HistoryCompactCheckpoint, String> {
    let checkpoint = HistoryCompactCheckpoint::from_json(json)
        .map_err(|error| format!("checkpoint JSON does not parse: {error} ({})", error.code()))?;
    if checkpoint.session_id != session_id
        || checkpoint.checkpoint_id != checkpoint_id
        || checkpoint.coverage.event_count as i64 != event_count
    {
        return Err("the row's columns disagree with its checkpoint JSON".into());
    }
    Ok(checkpoint)
}
