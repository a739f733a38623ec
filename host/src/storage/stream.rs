//! Streaming projection: a checkpoint's covered prefix is verified row by row, straight from
//! SQLite into the core's [`PrefixHasher`], and only the uncovered tail is kept in memory.
//!
//! [`Store::project_streaming`] gives the same [`Projection`] as loading the whole ledger and
//! calling [`contextfold_core::projection::project`], with memory bounded by the largest event
//! plus the tail, not by the ledger: a 1 GB ledger projects in a few tens of megabytes. Each
//! covered row is parsed, checked against its key columns and the log's structure (one
//! session, increasing `seq`, unique ids), hashed and dropped. The checkpoint's count,
//! through-boundary, turn count and digest are then checked exactly as
//! [`contextfold_core::prefix_match::match_checkpoint_prefix`] checks them.
//!
//! Anything off the happy path (no checkpoint, a mismatch, a covered event of the current
//! turn) falls back to the full in-memory projection, so the diagnostics are the core's own.

use std::collections::HashSet;

use contextfold_core::ModelFacts;
use contextfold_core::budget::{TokenEstimator, estimate_event};
use contextfold_core::checkpoint::HistoryCompactCheckpoint;
use contextfold_core::compaction::native::ProviderIdentity;
use contextfold_core::diagnostics::ReasonCode;
use contextfold_core::digest::PrefixHasher;
use contextfold_core::event::{LogError, RuntimeEvent, validate_log};
use contextfold_core::prefix_match::{EventKeys, PrefixMismatch};
use contextfold_core::projection::{ProjectInput, Projection, project, project_with};
use contextfold_core::safe_prefix::split_current_turn;
use contextfold_core::verified_prefix::{PrefixVerifier, VerifiedCoverage};

use crate::hashing::PipelinedSha256;

use super::{Store, StoreError};

/// What a streaming projection needs besides the ledger (the fields of
/// [`ProjectInput`] other than `events`).
#[derive(Debug, Clone, Copy)]
pub struct StreamRequest<'a> {
    /// The turn being produced now.
    pub current_turn_id: Option<&'a str>,
    /// The checkpoint to replay (normally [`Store::current_checkpoint`]).
    pub checkpoint: Option<&'a HistoryCompactCheckpoint>,
    /// Facts about the selected model.
    pub model: &'a ModelFacts,
    /// The provider identity of the request (V3 checkpoints need a match).
    pub provider: Option<&'a ProviderIdentity>,
    /// Fail-open mode (see [`ProjectInput::fail_open`]).
    pub fail_open: bool,
}

/// A streaming projection and how it was computed.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamedProjection {
    /// The projection, equal to the in-memory one.
    pub projection: Projection,
    /// Events verified by streaming (the checkpoint's coverage), 0 on the fallback path.
    pub streamed_events: u64,
    /// Events held in memory: the uncovered tail, or the whole ledger on the fallback path.
    pub loaded_events: usize,
}

/// The covered prefix as verified from the rows: what the tail verifier needs to know.
#[derive(Debug)]
struct StreamedPrefix {
    session_id: String,
    last_seq: u64,
    event_ids: HashSet<String>,
    source_tokens: u64,
}

impl Store {
    /// Projects `session_id` like [`contextfold_core::projection::project()`] over the whole
    /// ledger, but streams the checkpoint's covered prefix instead of loading it.
    pub fn project_streaming(
        &self,
        session_id: &str,
        request: &StreamRequest<'_>,
        estimator: &dyn TokenEstimator,
    ) -> Result<StreamedProjection, StoreError> {
        if let Some(checkpoint) = request.checkpoint
            && checkpoint.provider_state().is_none()
            && let Some((prefix, tail)) =
                self.stream_prefix(session_id, checkpoint, request.current_turn_id, estimator)?
        {
            let mut verifier = TailVerifier { prefix: &prefix, checkpoint };
            let input = project_input(&tail, request);
            if let Ok(mut projection) = project_with(&input, estimator, &mut verifier) {
                describe_coverage(&mut projection, checkpoint);
                return Ok(StreamedProjection {
                    projection,
                    streamed_events: checkpoint.coverage.event_count,
                    loaded_events: tail.len(),
                });
            }
        }
        let events = self.load_events(session_id)?;
        let projection = project(&project_input(&events, request), estimator).map_err(|error| {
            StoreError::LedgerUnreadable {
                session_id: session_id.to_owned(),
                detail: format!("the ledger is not a valid log: {error} ({})", error.code()),
            }
        })?;
        Ok(StreamedProjection { projection, streamed_events: 0, loaded_events: events.len() })
    }

    /// Reads the ledger in `seq` order, hashing the first `coverage.event_count` rows and
    /// keeping the rest. `None` when the prefix does not match the checkpoint (or holds an
    /// event of the current turn): the caller falls back to the full projection.
    fn stream_prefix(
        &self,
        session_id: &str,
        checkpoint: &HistoryCompactCheckpoint,
        current_turn_id: Option<&str>,
        estimator: &dyn TokenEstimator,
    ) -> Result<Option<(StreamedPrefix, Vec<RuntimeEvent>)>, StoreError> {
        let Ok(covered) = usize::try_from(checkpoint.coverage.event_count) else { return Ok(None) };
        if covered == 0 || checkpoint.session_id != session_id {
            return Ok(None);
        }
        let conn = self.lock();
        let mut statement = conn
            .prepare(
                "SELECT seq, runtime_event_id, event_json FROM runtime_events \
                 WHERE session_id = ?1 ORDER BY seq",
            )
            .map_err(StoreError::sqlite("preparing the streamed ledger read"))?;
        let mut rows =
            statement.query([session_id]).map_err(StoreError::sqlite("streaming the ledger"))?;
        // Hashing runs on a second thread while this one reads and parses rows.
        let mut hasher = PrefixHasher::with_engine(PipelinedSha256::default());
        let mut prefix = StreamedPrefix {
            session_id: session_id.to_owned(),
            last_seq: 0,
            event_ids: HashSet::new(),
            source_tokens: 0,
        };
        let mut turn_ids: HashSet<String> = HashSet::new();
        let mut tail = Vec::new();
        let mut index = 0usize;
        while let Some(row) = rows.next().map_err(StoreError::sqlite("reading a ledger row"))? {
            let event = read_event_row(row, session_id)?;
            let id = event.runtime_event_id.clone();
            if index >= covered {
                tail.push(event);
                index += 1;
                continue;
            }
            let continues = index == 0 || event.seq > prefix.last_seq;
            if !continues || current_turn_id == Some(event.turn_id.as_str()) {
                return Ok(None);
            }
            if !prefix.event_ids.insert(id) {
                return Ok(None);
            }
            if !turn_ids.contains(&event.turn_id) {
                turn_ids.insert(event.turn_id.clone());
            }
            hasher.push(&event);
            prefix.source_tokens += estimate_event(estimator, &event);
            prefix.last_seq = event.seq;
            index += 1;
            if index == covered {
                let through = &checkpoint.coverage.through;
                let matches = event.runtime_event_id == through.runtime_event_id
                    && event.turn_id == through.turn_id
                    && event.run_id == through.run_id
                    && turn_ids.len() as u64 == checkpoint.coverage.turn_count
                    && hasher.digest() == checkpoint.coverage.source_digest;
                if !matches {
                    return Ok(None);
                }
            }
        }
        Ok((index >= covered).then_some((prefix, tail)))
    }
}

/// Parses one `(seq, runtime_event_id, event_json)` row of `session_id`'s ledger, checking the
/// event against its key columns.
pub(crate) fn read_event_row(
    row: &rusqlite::Row<'_>,
    session_id: &str,
) -> Result<RuntimeEvent, StoreError> {
    let unreadable =
        |detail: String| StoreError::LedgerUnreadable { session_id: session_id.to_owned(), detail };
    let seq: i64 = row.get(0).map_err(StoreError::sqlite("reading a ledger row"))?;
    let id = row.get_ref(1).and_then(|v| Ok(v.as_str()?));
    let json = row.get_ref(2).and_then(|v| Ok(v.as_str()?));
    let (id, json) = match (id, json) {
        (Ok(id), Ok(json)) => (id, json),
        (Err(e), _) | (_, Err(e)) => {
            return Err(unreadable(format!("row seq {seq}: cannot read it: {e}")));
        }
    };
    let event = RuntimeEvent::from_json(json)
        .map_err(|e| unreadable(format!("row seq {seq}: {e} ({})", e.code())))?;
    if event.seq as i64 != seq || event.runtime_event_id != id || event.session_id != session_id {
        return Err(unreadable(format!(
            "row seq {seq}: the event JSON disagrees with its key columns"
        )));
    }
    Ok(event)
}

/// The key fields and canonical bytes of a `(seq, runtime_event_id, event_json, canonical,
/// turn_id, run_id)` row of `session_id`'s ledger that holds its canonical form; `None` for a
/// row that must be parsed (`canonical` 0).
pub(crate) fn stored_row<'r>(
    row: &'r rusqlite::Row<'_>,
    session_id: &'r str,
) -> Result<Option<(EventKeys<'r>, &'r [u8])>, StoreError> {
    let read = |e| StoreError::Sqlite { operation: "reading a ledger row", source: e };
    let canonical: bool = row.get(3).map_err(read)?;
    if !canonical {
        return Ok(None);
    }
    let text = |index: usize| row.get_ref(index).and_then(|v| Ok(v.as_str()?));
    let keys = EventKeys {
        session_id,
        runtime_event_id: text(1).map_err(read)?,
        turn_id: text(4).map_err(read)?,
        run_id: text(5).map_err(read)?,
    };
    let bytes = row.get_ref(2).and_then(|v| Ok(v.as_bytes()?)).map_err(read)?;
    Ok(Some((keys, bytes)))
}

/// The [`ProjectInput`] of `request` over `events`.
fn project_input<'a>(events: &'a [RuntimeEvent], request: &StreamRequest<'a>) -> ProjectInput<'a> {
    ProjectInput {
        events,
        current_turn_id: request.current_turn_id,
        checkpoint: request.checkpoint,
        model: request.model,
        provider: request.provider,
        fail_open: request.fail_open,
    }
}

/// The core describes the replay relative to the events it was given (the tail): restore the
/// number of events the checkpoint replaces in the ledger.
fn describe_coverage(projection: &mut Projection, checkpoint: &HistoryCompactCheckpoint) {
    for diagnostic in &mut projection.diagnostics {
        if diagnostic.code == ReasonCode::CheckpointReplayed {
            diagnostic.detail = format!(
                "checkpoint {} replaces {} events",
                checkpoint.checkpoint_id, checkpoint.coverage.event_count
            );
        }
    }
}

/// A [`PrefixVerifier`] over the uncovered tail alone: the covered prefix was verified while
/// streaming, so the tail starts at index 0 of the events the core sees.
struct TailVerifier<'a> {
    prefix: &'a StreamedPrefix,
    checkpoint: &'a HistoryCompactCheckpoint,
}

impl PrefixVerifier for TailVerifier<'_> {
    fn check_log(
        &mut self,
        events: &[RuntimeEvent],
        current_turn_id: Option<&str>,
    ) -> Result<usize, LogError> {
        validate_log(events)?;
        for (index, event) in events.iter().enumerate() {
            if event.session_id != self.prefix.session_id {
                return Err(LogError::MixedSessions { index });
            }
            if self.prefix.event_ids.contains(&event.runtime_event_id) {
                return Err(LogError::DuplicateEventId { index });
            }
        }
        if events.first().is_some_and(|first| first.seq <= self.prefix.last_seq) {
            return Err(LogError::SeqNotIncreasing { index: 0 });
        }
        split_current_turn(events, current_turn_id)
    }

    fn verify(
        &mut self,
        checkpoint: &HistoryCompactCheckpoint,
        _prior: &[RuntimeEvent],
        _estimator: &dyn TokenEstimator,
    ) -> Result<VerifiedCoverage, PrefixMismatch> {
        if checkpoint != self.checkpoint {
            return Err(PrefixMismatch::NotEnoughEvents {
                claimed: checkpoint.coverage.event_count,
                available: 0,
            });
        }
        Ok(VerifiedCoverage { covered: 0, source_tokens: self.prefix.source_tokens })
    }
}
