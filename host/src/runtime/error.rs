//! Typed errors of the session runtime.

use contextfold_core::budget::UsageFactError;
use contextfold_core::compaction::{DriverError, StartError};
use contextfold_core::event::LogError;

use crate::storage::StoreError;

/// A session-runtime operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The store failed (nothing was written by the failed call).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Manual compaction (or a new turn) was refused: an ordinary turn is active.
    #[error("turn `{turn_id}` is active; manual compaction runs only between turns")]
    TurnActive {
        /// The active turn.
        turn_id: String,
    },
    /// A new turn was refused: a manual compaction Run is active.
    #[error("manual compaction run `{run_id}` is active")]
    CompactionActive {
        /// The compaction Run.
        run_id: String,
    },
    /// The operation needs an active turn and there is none.
    #[error("no turn is active")]
    NoActiveTurn,
    /// The session log breaks a structural rule.
    #[error("the session log is invalid: {0}")]
    InvalidLog(#[from] LogError),
    /// The compaction transaction refused its input.
    #[error("compaction could not start: {0}")]
    Start(#[from] StartError),
    /// The runtime drove the compaction transaction out of order (a bug).
    #[error("compaction driver error: {0}")]
    Driver(#[from] DriverError),
    /// A blocking storage task panicked or was aborted.
    #[error("a storage task did not finish: {0}")]
    TaskFailed(String),
    /// A usage fact's counts cannot be true; nothing was recorded.
    #[error("invalid usage fact: {0}")]
    InvalidUsageFact(#[from] UsageFactError),
}

impl RuntimeError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            RuntimeError::Store(error) => error.code(),
            RuntimeError::TurnActive { .. } => "turn_active",
            RuntimeError::CompactionActive { .. } => "compaction_active",
            RuntimeError::NoActiveTurn => "no_active_turn",
            RuntimeError::InvalidLog(error) => error.code(),
            RuntimeError::Start(StartError::Log(error)) => error.code(),
            RuntimeError::Start(_) => "compaction_start_invalid",
            RuntimeError::Driver(error) => error.code(),
            RuntimeError::TaskFailed(_) => "storage_task_failed",
            RuntimeError::InvalidUsageFact(error) => error.code(),
        }
    }
}
