//! The host's check of a checkpoint a plugin asks it to append. A plugin is untrusted code: the
//! host re-proves, with the core's own validation, that the candidate covers an exact prefix of
//! the session's canonical log and legitimately succeeds the current checkpoint, before a byte
//! reaches the ledger. A forged coverage is refused with a typed [`CheckpointRejection`].

use contextfold_core::HistoryCompactCheckpoint;
use contextfold_core::checkpoint::{
    PrefixMismatch, SuccessorError, is_valid_successor, match_checkpoint_prefix,
    select_recovered_checkpoint,
};

use crate::component::traits::{Ledger, LedgerReadError};

/// Why the host refused to append a checkpoint a plugin produced. Nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointRejection {
    /// The checkpoint JSON does not parse as a `HistoryCompactCheckpoint`.
    #[error("the plugin sent an invalid checkpoint: {0}")]
    Invalid(String),
    /// The checkpoint names a session other than the one it is appended to.
    #[error("the checkpoint belongs to session `{checkpoint}`, not `{session}`")]
    WrongSession {
        /// The session the plugin appends to.
        session: String,
        /// The session the checkpoint names.
        checkpoint: String,
    },
    /// The checkpoint's coverage is not an exact prefix of the session's log.
    #[error("the checkpoint's coverage does not match the log: {0}")]
    Coverage(#[from] PrefixMismatch),
    /// The checkpoint does not legitimately succeed the current one.
    #[error("the checkpoint does not succeed the current one: {0}")]
    Successor(#[from] SuccessorError),
    /// The ledger could not be read to verify the checkpoint.
    #[error("cannot verify the checkpoint: {0}")]
    Ledger(#[from] LedgerReadError),
}

impl CheckpointRejection {
    /// Stable snake_case code: `checkpoint_invalid`, `session_mismatch`, the prefix mismatch's
    /// reason (`coverage_miss`, `source_hash_mismatch`), `successor_conflict`, or the ledger's.
    pub fn code(&self) -> &'static str {
        match self {
            CheckpointRejection::Invalid(_) => "checkpoint_invalid",
            CheckpointRejection::WrongSession { .. } => "session_mismatch",
            CheckpointRejection::Coverage(mismatch) => mismatch.code().as_str(),
            CheckpointRejection::Successor(error) => error.code(),
            CheckpointRejection::Ledger(error) => error.code(),
        }
    }
}

/// Parses and verifies a candidate checkpoint against the ledger's current contents.
///
/// The successor rules are checked only when the candidate names the current checkpoint (or
/// both name none): a candidate naming another predecessor lost a race, and the ledger's
/// compare-and-swap reports that as a conflict.
pub(crate) fn verify_candidate(
    ledger: &mut dyn Ledger,
    session_id: &str,
    json: &str,
) -> Result<HistoryCompactCheckpoint, CheckpointRejection> {
    let candidate = HistoryCompactCheckpoint::from_json(json)
        .map_err(|e| CheckpointRejection::Invalid(e.to_string()))?;
    if candidate.session_id != session_id {
        return Err(CheckpointRejection::WrongSession {
            session: session_id.to_owned(),
            checkpoint: candidate.session_id,
        });
    }
    let events = ledger.load_events(session_id)?;
    match_checkpoint_prefix(&candidate, &events)?;
    let current = latest_checkpoint(ledger, session_id)?;
    let current_id = current.as_ref().map(|cp| cp.checkpoint_id.as_str());
    if current_id == candidate.previous_checkpoint_id.as_deref() {
        is_valid_successor(current.as_ref(), &candidate)?;
    }
    Ok(candidate)
}

/// The session's latest checkpoint: the bounded projection's, or, when the ledger reports it
/// damaged, the one recovered from the recorded checkpoint events (as the guest recovers it).
pub(crate) fn latest_checkpoint(
    ledger: &mut dyn Ledger,
    session_id: &str,
) -> Result<Option<HistoryCompactCheckpoint>, LedgerReadError> {
    match ledger.load_latest_checkpoint(session_id) {
        Err(LedgerReadError::ProjectionDamaged(_)) => {
            let records = ledger.scan_checkpoint_events(session_id)?;
            Ok(select_recovered_checkpoint(session_id, &records).selected)
        }
        other => other,
    }
}
