//! The successor rules: when a candidate checkpoint may replace the current one.
//!
//! High water is monotonic (invariant 4): a new checkpoint normally covers more events and names
//! the current checkpoint as its `previousCheckpointId`. The same coverage may be rewritten only
//! as an explicit compare-and-swap: the candidate names the current checkpoint and keeps its
//! source digest, through-boundary and turn/event counts. Everything else is a
//! `successor_conflict`.

use crate::checkpoint::HistoryCompactCheckpoint;
use crate::diagnostics::ReasonCode;

/// Why a candidate does not legitimately succeed the current checkpoint. Every variant has the
/// reason code [`ReasonCode::SuccessorConflict`]; the variant says which rule failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SuccessorError {
    /// The candidate belongs to another session.
    #[error("candidate belongs to session `{found}`, not `{expected}`")]
    SessionMismatch {
        /// Session of the current checkpoint.
        expected: String,
        /// Session of the candidate.
        found: String,
    },
    /// The candidate carries the current checkpoint's own id: a checkpoint cannot succeed itself.
    #[error("candidate reuses the current checkpoint id `{checkpoint_id}`")]
    SameCheckpointId {
        /// The shared id.
        checkpoint_id: String,
    },
    /// The candidate covers fewer events than the current checkpoint (high water moves forward).
    #[error("candidate covers {candidate} events, fewer than the current {current}")]
    FewerEvents {
        /// Event count of the current checkpoint.
        current: u64,
        /// Event count of the candidate.
        candidate: u64,
    },
    /// The candidate covers more events but names no predecessor.
    #[error("candidate covers more events but does not name `{current_id}` as its predecessor")]
    MissingPredecessor {
        /// Id of the current checkpoint it should name.
        current_id: String,
    },
    /// The candidate has the same event count but names no predecessor: an arbitrary late
    /// writer may not overwrite a checkpoint.
    #[error("equal-coverage rewrite does not name the current checkpoint `{current_id}`")]
    EqualCoverageNotNamingCurrent {
        /// Id of the current checkpoint it should name.
        current_id: String,
    },
    /// The candidate names a predecessor other than the current checkpoint.
    #[error("candidate names predecessor `{named}`, not the current checkpoint `{current_id}`")]
    NamesDifferentPredecessor {
        /// Id of the current checkpoint.
        current_id: String,
        /// The predecessor the candidate names.
        named: String,
    },
    /// Same event count, different source digest: the two checkpoints disagree about the
    /// source (a fork), so the candidate cannot be a rewrite.
    #[error("equal-coverage rewrite changes the source digest")]
    DigestChangedAtEqualCount {
        /// Digest of the current checkpoint.
        current: String,
        /// Digest of the candidate.
        candidate: String,
    },
    /// Same event count, different through-boundary.
    #[error("equal-coverage rewrite changes the through-boundary")]
    BoundaryChangedAtEqualCount,
    /// Same event count, different turn count.
    #[error("equal-coverage rewrite changes the turn count from {current} to {candidate}")]
    TurnCountChangedAtEqualCount {
        /// Turn count of the current checkpoint.
        current: u64,
        /// Turn count of the candidate.
        candidate: u64,
    },
}

impl SuccessorError {
    /// The stable reason code: always [`ReasonCode::SuccessorConflict`].
    pub fn reason_code(&self) -> ReasonCode {
        ReasonCode::SuccessorConflict
    }

    /// The stable snake_case code (`successor_conflict`).
    pub fn code(&self) -> &'static str {
        self.reason_code().as_str()
    }
}

/// Checks that `candidate` may replace `previous` (the current checkpoint, if any).
///
/// - No current checkpoint: any candidate is a valid first checkpoint.
/// - More events: the candidate must name `previous` as `previousCheckpointId`.
/// - Equal event count: the candidate must name `previous` and keep its source digest,
///   through-boundary and turn count (a compare-and-swap rewrite of the same view).
/// - Fewer events, another session, or the current checkpoint's own id: rejected.
///
/// ```
/// use contextfold_core::checkpoint::{SuccessorError, is_valid_successor};
/// # use contextfold_core::checkpoint::*;
/// # let base = HistoryCompactCheckpoint::from_value(serde_json::json!({
/// #   "schemaVersion": 2, "checkpointId": "cp1", "sessionId": "s", "createdAtMs": 1,
/// #   "highWater": {"name": "manual", "seq": 4},
/// #   "coverage": {"eventCount": 4, "turnCount": 1,
/// #     "through": {"runId": "r", "turnId": "t", "runtimeEventId": "e4"},
/// #     "sourceDigest": format!("sha256:{}", "a".repeat(64))},
/// #   "summary": "s", "limitations": [], "estimatedTokens": 10})).unwrap();
/// let mut rewrite = base.clone();
/// rewrite.checkpoint_id = "cp2".into();
/// rewrite.previous_checkpoint_id = Some("cp1".into());
/// assert_eq!(is_valid_successor(Some(&base), &rewrite), Ok(()));
/// rewrite.previous_checkpoint_id = None;
/// assert!(matches!(
///     is_valid_successor(Some(&base), &rewrite),
///     Err(SuccessorError::EqualCoverageNotNamingCurrent { .. })
/// ));
/// ```
pub fn is_valid_successor(
    previous: Option<&HistoryCompactCheckpoint>,
    candidate: &HistoryCompactCheckpoint,
) -> Result<(), SuccessorError> {
    let Some(current) = previous else {
        return Ok(());
    };
    if candidate.session_id != current.session_id {
        return Err(SuccessorError::SessionMismatch {
            expected: current.session_id.clone(),
            found: candidate.session_id.clone(),
        });
    }
    if candidate.checkpoint_id == current.checkpoint_id {
        return Err(SuccessorError::SameCheckpointId {
            checkpoint_id: current.checkpoint_id.clone(),
        });
    }
    let (current_count, candidate_count) =
        (current.coverage.event_count, candidate.coverage.event_count);
    if candidate_count < current_count {
        return Err(SuccessorError::FewerEvents {
            current: current_count,
            candidate: candidate_count,
        });
    }
    let equal_coverage = candidate_count == current_count;
    match candidate.previous_checkpoint_id.as_deref() {
        None if equal_coverage => {
            return Err(SuccessorError::EqualCoverageNotNamingCurrent {
                current_id: current.checkpoint_id.clone(),
            });
        }
        None => {
            return Err(SuccessorError::MissingPredecessor {
                current_id: current.checkpoint_id.clone(),
            });
        }
        Some(named) if named != current.checkpoint_id => {
            return Err(SuccessorError::NamesDifferentPredecessor {
                current_id: current.checkpoint_id.clone(),
                named: named.to_owned(),
            });
        }
        Some(_) => {}
    }
    if !equal_coverage {
        return Ok(());
    }
    if candidate.coverage.source_digest != current.coverage.source_digest {
        return Err(SuccessorError::DigestChangedAtEqualCount {
            current: current.coverage.source_digest.clone(),
            candidate: candidate.coverage.source_digest.clone(),
        });
    }
    if candidate.coverage.through != current.coverage.through {
        return Err(SuccessorError::BoundaryChangedAtEqualCount);
    }
    if candidate.coverage.turn_count != current.coverage.turn_count {
        return Err(SuccessorError::TurnCountChangedAtEqualCount {
            current: current.coverage.turn_count,
            candidate: candidate.coverage.turn_count,
        });
    }
    Ok(())
}
