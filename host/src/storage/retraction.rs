//! Taking a compaction back: a `checkpoint_retracted` AgentRun event, appended with the
//! projection row moved to what recovery then selects (the previous valid checkpoint, or none),
//! in one transaction. The RuntimeEvent log and the checkpoint's own record are never changed.
//! The selection rules are the core's (`select_recovered_checkpoint_with`); this file holds what
//! both backends share: reading the two record kinds into the core's inputs, and the checks a
//! retraction must pass.

use contextfold_core::checkpoint::{
    RecordedCheckpointEvent, Recovery, RetractionEvent, RetractionPayload, SkipReason,
    select_recovered_checkpoint_with,
};
use rusqlite::TransactionBehavior;

use super::Store;
use super::checkpoints::{CheckpointLookup, lookup_from, write_projection};
use super::error::StoreError;
use super::events::{
    AgentRunRecord, agent_run_kind, insert_agent_run_event, read_agent_run_events,
};

/// A session's recorded checkpoints and retractions, as the core's recovery reads them.
#[derive(Debug, Default)]
pub struct CheckpointRecords {
    /// Every `history_compact_checkpoint_recorded` event, in record order.
    pub recorded: Vec<RecordedCheckpointEvent>,
    /// Every `checkpoint_retracted` event, in record order.
    pub retractions: Vec<RetractionEvent>,
}

impl CheckpointRecords {
    /// Reads both kinds from the AgentRun records of one session (other kinds are ignored).
    /// A retraction whose payload does not read is an error, never skipped: it may be what
    /// keeps a checkpoint out.
    pub fn from_records(
        records: impl IntoIterator<Item = AgentRunRecord>,
    ) -> Result<Self, StoreError> {
        let mut out = Self::default();
        for record in records {
            match record.kind.as_str() {
                agent_run_kind::CHECKPOINT_RECORDED => out.recorded.push(RecordedCheckpointEvent {
                    event_id: record.event_id,
                    session_id: record.session_id,
                    recorded_at_ms: record.recorded_at_ms,
                    payload: record.payload,
                }),
                agent_run_kind::CHECKPOINT_RETRACTED => {
                    let payload: RetractionPayload = serde_json::from_value(record.payload)
                        .map_err(|e| StoreError::LedgerUnreadable {
                            session_id: record.session_id.clone(),
                            detail: format!("retraction `{}` does not read: {e}", record.event_id),
                        })?;
                    out.retractions.push(RetractionEvent {
                        event_id: record.event_id,
                        session_id: record.session_id,
                        recorded_at_ms: record.recorded_at_ms,
                        checkpoint_id: payload.checkpoint_id,
                        reason: payload.reason,
                    });
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// The core's recovery selection over these records.
    pub fn recover(&self, session_id: &str) -> Recovery {
        select_recovered_checkpoint_with(session_id, &self.recorded, &self.retractions)
    }

    /// Why `checkpoint_id` cannot be retracted now: the session never recorded it, or it is
    /// already taken back.
    pub(crate) fn check_retractable(
        &self,
        session_id: &str,
        checkpoint_id: &str,
    ) -> Result<(), StoreError> {
        let named = |event: &RecordedCheckpointEvent| {
            event.payload.get("checkpointId").and_then(|id| id.as_str()) == Some(checkpoint_id)
        };
        let events: Vec<&str> =
            self.recorded.iter().filter(|e| named(e)).map(|e| e.event_id.as_str()).collect();
        if events.is_empty() {
            return Err(StoreError::CheckpointNotFound {
                session_id: session_id.to_owned(),
                checkpoint_id: checkpoint_id.to_owned(),
            });
        }
        let retracted = self.recover(session_id).skipped.iter().any(|skip| {
            skip.reason == SkipReason::Retracted && events.contains(&skip.event_id.as_str())
        });
        if retracted {
            return Err(StoreError::CheckpointAlreadyRetracted {
                checkpoint_id: checkpoint_id.to_owned(),
            });
        }
        Ok(())
    }
}

/// The AgentRun record of a retraction.
pub(crate) fn retraction_record(
    session_id: &str,
    event_id: &str,
    recorded_at_ms: u64,
    checkpoint_id: &str,
    reason: &str,
) -> AgentRunRecord {
    let payload =
        RetractionPayload { checkpoint_id: checkpoint_id.to_owned(), reason: reason.to_owned() };
    AgentRunRecord {
        event_id: event_id.to_owned(),
        session_id: session_id.to_owned(),
        run_id: "retraction".to_owned(),
        kind: agent_run_kind::CHECKPOINT_RETRACTED.to_owned(),
        recorded_at_ms,
        payload: serde_json::to_value(payload).unwrap_or_default(),
    }
}

impl Store {
    /// Takes `checkpoint_id` back (with every checkpoint built on it): appends the retraction
    /// as AgentRun event `event_id` and moves the projection row to what recovery then selects,
    /// in one IMMEDIATE transaction. Returns the new current checkpoint.
    pub fn retract_checkpoint(
        &self,
        session_id: &str,
        event_id: &str,
        recorded_at_ms: u64,
        checkpoint_id: &str,
        reason: &str,
    ) -> Result<CheckpointLookup, StoreError> {
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(StoreError::sqlite("starting a retraction"))?;
        let before = checkpoint_records(&tx, session_id)?;
        before.check_retractable(session_id, checkpoint_id)?;
        let record = retraction_record(session_id, event_id, recorded_at_ms, checkpoint_id, reason);
        insert_agent_run_event(&tx, &record)?;
        let lookup =
            lookup_from(checkpoint_records(&tx, session_id)?.recover(session_id), Vec::new());
        tx.execute("DELETE FROM checkpoint_projection WHERE session_id = ?1", [session_id])
            .map_err(StoreError::sqlite("clearing the projection row"))?;
        if let (Some(checkpoint), Some(event_id)) = (&lookup.checkpoint, &lookup.agent_run_event_id)
        {
            write_projection(&tx, checkpoint, event_id)?;
        }
        tx.commit().map_err(StoreError::sqlite("committing a retraction"))?;
        Ok(lookup)
    }
}

/// The session's recorded checkpoints and retractions.
pub(crate) fn checkpoint_records(
    conn: &rusqlite::Connection,
    session_id: &str,
) -> Result<CheckpointRecords, StoreError> {
    let mut records =
        read_agent_run_events(conn, session_id, Some(agent_run_kind::CHECKPOINT_RECORDED))?;
    records.extend(read_agent_run_events(
        conn,
        session_id,
        Some(agent_run_kind::CHECKPOINT_RETRACTED),
    )?);
    CheckpointRecords::from_records(records)
}
