//! Streaming projection: a checkpoint's covered prefix is proven from the stored rows
//! ([`Store::read_covered`], `storage/covered.rs`) and only the live head and the uncovered
//! tail are kept in memory.
//!
//! [`Store::project_streaming`] gives the same [`Projection`] as loading the whole ledger and
//! calling [`contextfold_core::projection::project`], with memory bounded by the tail and one
//! turn's head, not by the ledger: a 1 GB ledger projects in a few tens of megabytes. The core
//! projects `head + tail` with a [`CoveredVerifier`], which answers for the covered prefix
//! with what the stream proved; the session runtime's cold path does the same
//! (`runtime/log_cache.rs`).
//!
//! Anything off the happy path (no checkpoint, a mismatch, a current turn the covered prefix
//! holds outside its final run, a checkpoint the core does not replay) falls back to the full
//! in-memory projection, so the diagnostics are the core's own.

use contextfold_core::ModelFacts;
use contextfold_core::budget::TokenEstimator;
use contextfold_core::checkpoint::{
    HistoryCompactCheckpoint, PrefixMismatch, PrefixVerifier, VerifiedCoverage, split_current_turn,
};
use contextfold_core::compaction::ProviderIdentity;
use contextfold_core::event::{LogError, RuntimeEvent, validate_log};
use contextfold_core::projection::{ProjectInput, Projection, project, project_with};

use super::covered::CoveredPrefix;
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
    /// Events held in memory: the live head and the uncovered tail, or the whole ledger on the
    /// fallback path.
    pub loaded_events: usize,
}

impl Store {
    /// Projects `session_id` like [`contextfold_core::projection::project()`] over the whole
    /// ledger, but proves the checkpoint's covered prefix from the stored rows instead of
    /// loading it.
    pub fn project_streaming(
        &self,
        session_id: &str,
        request: &StreamRequest<'_>,
        estimator: &(dyn TokenEstimator + Sync),
    ) -> Result<StreamedProjection, StoreError> {
        if let Some(checkpoint) = request.checkpoint
            && checkpoint.provider_state().is_none()
            && let Some(log) = self.read_covered(session_id, checkpoint, estimator)?
        {
            let head = log.head.len();
            let mut events = log.head;
            events.extend(log.tail);
            let input = project_input(&events, request);
            if let Some(projection) = project_covered(&log.prefix, head, &input, estimator) {
                return Ok(StreamedProjection {
                    projection,
                    streamed_events: checkpoint.coverage.event_count,
                    loaded_events: events.len(),
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
}

/// Projects `input` (whose events are the live head, `head` events, then the tail after
/// `prefix`) with the coverage `prefix` proved for `input.checkpoint`. `None` when the core
/// would not replay the checkpoint over these events: the caller projects the whole log.
pub(crate) fn project_covered(
    prefix: &CoveredPrefix,
    head: usize,
    input: &ProjectInput<'_>,
    estimator: &dyn TokenEstimator,
) -> Option<Projection> {
    let checkpoint = input.checkpoint?;
    if !prefix.proves(checkpoint) {
        return None;
    }
    let mut verifier = CoveredVerifier { prefix, head };
    let projection = project_with(input, estimator, &mut verifier).ok()?;
    projection.checkpoint.is_some().then_some(projection)
}

/// Parses one `(seq, runtime_event_id, event_json)` row of `session_id`'s ledger, checking the
/// event against its key columns.
pub(crate) fn read_event_row(
    row: &rusqlite::Row<'_>,
    session_id: &str,
) -> Result<RuntimeEvent, StoreError> {
    let seq: i64 = row.get(0).map_err(StoreError::sqlite("reading a ledger row"))?;
    let id = row.get_ref(1).and_then(|v| Ok(v.as_str()?));
    let json = row.get_ref(2).and_then(|v| Ok(v.as_bytes()?));
    match (id, json) {
        (Ok(id), Ok(json)) => super::covered::event_of_row(seq as u64, id, json, session_id),
        (Err(e), _) | (_, Err(e)) => Err(StoreError::LedgerUnreadable {
            session_id: session_id.to_owned(),
            detail: format!("row seq {seq}: cannot read it: {e}"),
        }),
    }
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

/// A [`PrefixVerifier`] for `head + tail` events: the covered prefix was proven from the rows,
/// so the core sees only the live head (covered, `head` events) and the tail.
struct CoveredVerifier<'a> {
    prefix: &'a CoveredPrefix,
    head: usize,
}

impl PrefixVerifier for CoveredVerifier<'_> {
    fn check_log(
        &mut self,
        events: &[RuntimeEvent],
        current_turn_id: Option<&str>,
    ) -> Result<usize, LogError> {
        validate_log(events)?;
        let Some(first_new) = events.get(self.head..) else {
            return Err(LogError::SeqNotIncreasing { index: events.len() });
        };
        if first_new.first().is_some_and(|first| first.seq <= self.prefix.last.0) {
            return Err(LogError::SeqNotIncreasing { index: self.head });
        }
        // The current turn must be a suffix of the whole log: a covered turn can be current
        // only when it is the last covered one, never left before, and nothing after the
        // coverage belongs to another turn.
        if let Some(current) = current_turn_id
            && self.prefix.turn_ids.contains(current)
        {
            let suffix = current == self.prefix.final_turn
                && !self.prefix.final_turn_reentered
                && first_new.iter().all(|event| event.turn_id == current);
            if !suffix {
                return Err(LogError::CurrentTurnNotSuffix { index: self.head });
            }
        }
        split_current_turn(events, current_turn_id)
    }

    fn verify(
        &mut self,
        checkpoint: &HistoryCompactCheckpoint,
        _prior: &[RuntimeEvent],
        estimator: &dyn TokenEstimator,
    ) -> Result<VerifiedCoverage, PrefixMismatch> {
        if !self.prefix.proves(checkpoint) {
            return Err(PrefixMismatch::NotEnoughEvents {
                claimed: checkpoint.coverage.event_count,
                available: 0,
            });
        }
        Ok(VerifiedCoverage {
            covered: self.head,
            source_tokens: estimator.scale_tally(self.prefix.base_tokens),
        })
    }
}
