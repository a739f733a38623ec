//! Durable checkpoints on PostgreSQL: the `history_compact_checkpoint_recorded` AgentRun event
//! and the projection row written in one transaction under the session's lock, after the
//! core's compare-and-swap against the tip; lookup with ledger recovery and best-effort repair
//! (the rules of `storage/checkpoints.rs`, the same notes and codes).

use contextfold_core::HistoryCompactCheckpoint;
use contextfold_core::checkpoint::{Recovery, is_valid_successor};
use tokio_postgres::GenericClient;

use super::events::{insert_agent_run_event, read_agent_run_events};
use super::{PgError, PgLedger};
use crate::storage::retraction::{CheckpointRecords, retraction_record};
use crate::storage::{
    AgentRunRecord, CheckpointAppendError, CheckpointLookup, LookupNote, LookupSource, StoreError,
    agent_run_kind,
};

enum ProjectionRow {
    Missing,
    Valid(Box<HistoryCompactCheckpoint>, String),
    Damaged(&'static str, String),
}

impl PgLedger {
    /// Records `checkpoint` as AgentRun event `event_id` and moves the projection row to it, in
    /// one transaction, if it is a valid successor of the tip ([`is_valid_successor`]);
    /// otherwise nothing is written and the error is [`CheckpointAppendError::Conflict`].
    pub async fn append_checkpoint(
        &self,
        event_id: &str,
        run_id: &str,
        recorded_at_ms: u64,
        checkpoint: &HistoryCompactCheckpoint,
    ) -> Result<(), CheckpointAppendError> {
        let session_id = checkpoint.session_id.as_str();
        let mut client = self.client("appending a checkpoint").await.map_err(StoreError::from)?;
        let tx = client.transaction().await.map_err(|e| {
            StoreError::from(PgError::from_client("starting a checkpoint append", e))
        })?;
        Self::lock_session(&tx, session_id).await.map_err(StoreError::from)?;
        let tip = match read_projection(&*tx, session_id).await {
            ProjectionRow::Valid(tip, _) => Some(*tip),
            ProjectionRow::Missing | ProjectionRow::Damaged(..) => {
                recover(&*tx, session_id).await?.selected
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
        insert_agent_run_event(&tx, &record).await?;
        write_projection(&*tx, checkpoint, event_id).await?;
        tx.commit().await.map_err(|e| {
            StoreError::from(PgError::from_client("committing a checkpoint append", e))
        })?;
        Ok(())
    }

    /// The current checkpoint: the projection row when it is valid, otherwise recovered from
    /// the AgentRun ledger and the row repaired best-effort.
    pub async fn current_checkpoint(
        &self,
        session_id: &str,
    ) -> Result<CheckpointLookup, StoreError> {
        let client = self.client("looking up the current checkpoint").await?;
        let damage = match read_projection(&**client, session_id).await {
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
        drop(client);
        let recovery = {
            let client = self.client("recovering the current checkpoint").await?;
            recover(&**client, session_id).await?
        };
        let mut lookup = lookup_from(recovery, vec![damage]);
        if let (Some(checkpoint), Some(event_id)) = (&lookup.checkpoint, &lookup.agent_run_event_id)
        {
            let note = match self.repair(checkpoint, event_id).await {
                Ok(()) => LookupNote {
                    code: "projection_repaired".into(),
                    detail: format!(
                        "projection row rewritten to checkpoint {}",
                        checkpoint.checkpoint_id
                    ),
                },
                Err(error) => LookupNote {
                    code: "projection_repair_failed".into(),
                    detail: format!(
                        "the recovered checkpoint is used, but the row was not rewritten: {error}"
                    ),
                },
            };
            lookup.notes.push(note);
        }
        Ok(lookup)
    }

    /// Rewrites the projection row to the recovered tip, under the session's lock, only if the
    /// tip is still the one recovered (a checkpoint appended meanwhile wins).
    async fn repair(
        &self,
        tip: &HistoryCompactCheckpoint,
        event_id: &str,
    ) -> Result<(), StoreError> {
        let mut client = self.client("repairing the projection").await?;
        let tx =
            client.transaction().await.map_err(PgError::during("starting a projection repair"))?;
        Self::lock_session(&tx, &tip.session_id).await?;
        let current = recover(&*tx, &tip.session_id).await?;
        if current.selected_event_id.as_deref() == Some(event_id) {
            write_projection(&*tx, tip, event_id).await?;
        }
        tx.commit().await.map_err(PgError::during("committing a projection repair"))?;
        Ok(())
    }

    /// Rebuilds the projection row of `session_id` from the AgentRun ledger
    /// ([`crate::storage::Store::rebuild_projection`]'s contract): replaced by the recovered
    /// tip, or removed when there is none, in one transaction under the session's lock.
    pub async fn rebuild_projection(
        &self,
        session_id: &str,
    ) -> Result<CheckpointLookup, StoreError> {
        let mut client = self.client("rebuilding the projection").await?;
        let tx =
            client.transaction().await.map_err(PgError::during("starting a projection rebuild"))?;
        Self::lock_session(&tx, session_id).await?;
        let lookup = reproject(&*tx, session_id).await?;
        tx.commit().await.map_err(PgError::during("committing a projection rebuild"))?;
        Ok(lookup)
    }
}

impl PgLedger {
    /// Takes `checkpoint_id` back ([`crate::storage::Store::retract_checkpoint`]'s contract):
    /// the retraction event and the projection row moved to what recovery then selects, in one
    /// transaction under the session's lock.
    pub async fn retract_checkpoint(
        &self,
        session_id: &str,
        event_id: &str,
        recorded_at_ms: u64,
        checkpoint_id: &str,
        reason: &str,
    ) -> Result<CheckpointLookup, StoreError> {
        let mut client = self.client("retracting a checkpoint").await?;
        let tx = client.transaction().await.map_err(PgError::during("starting a retraction"))?;
        Self::lock_session(&tx, session_id).await?;
        checkpoint_records(&*tx, session_id).await?.check_retractable(session_id, checkpoint_id)?;
        let record = retraction_record(session_id, event_id, recorded_at_ms, checkpoint_id, reason);
        insert_agent_run_event(&tx, &record).await?;
        let lookup = reproject(&*tx, session_id).await?;
        tx.commit().await.map_err(PgError::during("committing a retraction"))?;
        Ok(lookup)
    }
}

/// Replaces the projection row of `session_id` by what recovery selects now (removes it when
/// nothing is selected) and returns that selection; the caller holds the session's lock.
async fn reproject(
    client: &impl GenericClient,
    session_id: &str,
) -> Result<CheckpointLookup, StoreError> {
    let lookup = lookup_from(recover(client, session_id).await?, Vec::new());
    client
        .execute("DELETE FROM checkpoint_projection WHERE session_id = $1", &[&session_id])
        .await
        .map_err(PgError::during("clearing the projection row"))?;
    if let (Some(checkpoint), Some(event_id)) = (&lookup.checkpoint, &lookup.agent_run_event_id) {
        write_projection(client, checkpoint, event_id).await?;
    }
    Ok(lookup)
}

async fn recover(client: &impl GenericClient, session_id: &str) -> Result<Recovery, StoreError> {
    Ok(checkpoint_records(client, session_id).await?.recover(session_id))
}

/// The session's recorded checkpoints and retractions.
async fn checkpoint_records(
    client: &impl GenericClient,
    session_id: &str,
) -> Result<CheckpointRecords, StoreError> {
    let mut records =
        read_agent_run_events(client, session_id, Some(agent_run_kind::CHECKPOINT_RECORDED))
            .await?;
    records.extend(
        read_agent_run_events(client, session_id, Some(agent_run_kind::CHECKPOINT_RETRACTED))
            .await?,
    );
    CheckpointRecords::from_records(records)
}

fn lookup_from(recovery: Recovery, mut notes: Vec<LookupNote>) -> CheckpointLookup {
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

async fn read_projection(client: &impl GenericClient, session_id: &str) -> ProjectionRow {
    let row = client
        .query_opt(
            "SELECT p.checkpoint_id, p.event_count, p.agent_run_event_id, p.checkpoint_json, \
             a.payload_json FROM checkpoint_projection p LEFT JOIN agent_run_events a \
             ON a.event_id = p.agent_run_event_id AND a.session_id = p.session_id AND a.kind = $2 \
             WHERE p.session_id = $1",
            &[&session_id, &agent_run_kind::CHECKPOINT_RECORDED],
        )
        .await;
    let row = match row {
        Ok(Some(row)) => row,
        Ok(None) => return ProjectionRow::Missing,
        Err(error) => return ProjectionRow::Damaged("projection_unreadable", error.to_string()),
    };
    let (checkpoint_id, event_count, event_id, json, recorded): (
        String,
        i64,
        String,
        String,
        Option<String>,
    ) = (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
    let checkpoint =
        match crate::storage::checkpoint_of_row(session_id, &checkpoint_id, event_count, &json) {
            Ok(checkpoint) => checkpoint,
            Err(detail) => return ProjectionRow::Damaged("projection_invalid", detail),
        };
    // The row may never describe a fact absent from the canonical ledger.
    let recorded_id = recorded
        .and_then(|payload| serde_json::from_str::<serde_json::Value>(&payload).ok())
        .and_then(|payload| payload.get("checkpointId")?.as_str().map(str::to_owned));
    if recorded_id.as_deref() != Some(checkpoint.checkpoint_id.as_str()) {
        return ProjectionRow::Damaged(
            "projection_invalid",
            format!("the row names AgentRun event `{event_id}`, which does not record it"),
        );
    }
    ProjectionRow::Valid(Box::new(checkpoint), event_id)
}

async fn write_projection(
    client: &impl GenericClient,
    checkpoint: &HistoryCompactCheckpoint,
    event_id: &str,
) -> Result<(), StoreError> {
    client
        .execute(
            "INSERT INTO checkpoint_projection \
             (session_id, checkpoint_id, event_count, agent_run_event_id, checkpoint_json) \
             VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (session_id) DO UPDATE SET checkpoint_id = excluded.checkpoint_id, \
             event_count = excluded.event_count, agent_run_event_id = excluded.agent_run_event_id, \
             checkpoint_json = excluded.checkpoint_json",
            &[
                &checkpoint.session_id,
                &checkpoint.checkpoint_id,
                &(checkpoint.coverage.event_count as i64),
                &event_id,
                &checkpoint.to_json(),
            ],
        )
        .await
        .map_err(PgError::during("writing the projection row"))?;
    Ok(())
}
