//! What the host implements to supply the component's imports: a [`Ledger`] and a
//! [`Provider`]. They speak core types; the runner converts to and from the WIT JSON forms.

use contextfold_core::checkpoint::RecordedCheckpointEvent;
use contextfold_core::compaction::{
    AppendFailure, NativeRequest, ProviderFailure, SummaryRequest, SummaryResponse,
};
use contextfold_core::{HistoryCompactCheckpoint, RuntimeEvent};
use serde_json::Value;

/// Why a ledger read failed (the WIT `ledger-error`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerReadError {
    /// The bounded checkpoint projection is missing or invalid: the guest scans the recorded
    /// checkpoint events instead.
    #[error("checkpoint projection damaged: {0}")]
    ProjectionDamaged(String),
    /// No such session.
    #[error("unknown session `{0}`")]
    UnknownSession(String),
    /// The storage is unavailable.
    #[error("ledger unavailable: {0}")]
    Unavailable(String),
}

impl LedgerReadError {
    /// Stable snake_case code.
    pub fn code(&self) -> &'static str {
        match self {
            LedgerReadError::ProjectionDamaged(_) => "ledger_projection_damaged",
            LedgerReadError::UnknownSession(_) => "ledger_unknown_session",
            LedgerReadError::Unavailable(_) => "ledger_unavailable",
        }
    }
}

/// Durable storage of one host: the canonical RuntimeEvent log and the recorded checkpoints.
pub trait Ledger: Send {
    /// The session's events, in log order.
    fn load_events(&mut self, session_id: &str) -> Result<Vec<RuntimeEvent>, LedgerReadError>;

    /// The latest checkpoint from the bounded projection (`None`: never recorded one).
    fn load_latest_checkpoint(
        &mut self,
        session_id: &str,
    ) -> Result<Option<HistoryCompactCheckpoint>, LedgerReadError>;

    /// Every recorded checkpoint event of the session, in recording order.
    fn scan_checkpoint_events(
        &mut self,
        session_id: &str,
    ) -> Result<Vec<RecordedCheckpointEvent>, LedgerReadError>;

    /// Appends the checkpoint and its projection row atomically, compare-and-swap on the
    /// checkpoint's `previous_checkpoint_id` (a mismatch is `conflict: true`, nothing written).
    fn append_checkpoint(
        &mut self,
        session_id: &str,
        checkpoint: &HistoryCompactCheckpoint,
    ) -> Result<(), AppendFailure>;
}

/// One summarize call from the guest.
#[derive(Debug, Clone, PartialEq)]
pub struct SummarizeCall {
    /// The ready-to-send request.
    pub request: SummaryRequest,
    /// The summary being rolled forward.
    pub previous_summary: Option<String>,
    /// The newly folded events.
    pub fold_events: Vec<RuntimeEvent>,
    /// Events the previous checkpoint left to its live head, summarized as if folded now.
    pub carried_events: Vec<RuntimeEvent>,
    /// The live head replayed right after the summary.
    pub replayed_events: Vec<RuntimeEvent>,
    /// Target size of the summary, in estimated tokens.
    pub target_tokens: u64,
}

/// The model provider of one host.
pub trait Provider: Send {
    /// Sends a text-summary request.
    fn summarize(&mut self, call: &SummarizeCall) -> Result<SummaryResponse, ProviderFailure>;

    /// Sends a native compaction request; returns the output items, unfiltered.
    fn compact_natively(&mut self, request: &NativeRequest) -> Result<Vec<Value>, ProviderFailure>;
}
