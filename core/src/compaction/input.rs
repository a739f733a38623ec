//! What a compaction is started with: the input, the compactor the host selected and why a start
//! is refused. A leaf: the transaction and its run both read these types.

use std::borrow::Cow;

use crate::budget::ModelFacts;
use crate::checkpoint::HistoryCompactCheckpoint;
use crate::compaction::circuit::MalformedInputCircuit;
use crate::compaction::effects::Trigger;
use crate::compaction::native::ProviderIdentity;
use crate::event::{LogError, RuntimeEvent};

/// Which compactor the host selected for this session's provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Compactor {
    /// A text summary from the session's own model (schema V2).
    TextSummary,
    /// OpenAI Codex remote compaction v2 (schema V3), with one text-summary fallback.
    OpenaiCodexNative,
}

/// Everything one compaction needs. Times and ids are inputs; the core generates neither.
///
/// The events are borrowed when the caller keeps its log for the transaction's lifetime (a host
/// driving the loop in one function: `events: (&log[..]).into()`), or owned when the
/// transaction outlives the caller's frame (a binding holding it behind a handle:
/// `events: log.into()`); the log is never copied either way.
#[derive(Debug, Clone)]
pub struct CompactInput<'a> {
    /// Who emitted the Compact command.
    pub trigger: Trigger,
    /// The canonical log of the session, in order (including the current turn, if any).
    pub events: Cow<'a, [RuntimeEvent]>,
    /// The turn being produced now: its settled steps may be covered, its user and system
    /// messages are replayed as the live head.
    pub current_turn_id: Option<String>,
    /// The latest compatible checkpoint, if any.
    pub checkpoint: Option<HistoryCompactCheckpoint>,
    /// Facts about the selected model.
    pub model: ModelFacts,
    /// The provider, connection and model in use.
    pub provider: ProviderIdentity,
    /// The compactor selected for the provider.
    pub compactor: Compactor,
    /// Id for the checkpoint this compaction may record.
    pub new_checkpoint_id: String,
    /// Current time in milliseconds since the Unix epoch.
    pub now_ms: u64,
    /// The session's provider options, handed to the summarizer unchanged.
    pub provider_options: Option<serde_json::Value>,
    /// Label recorded as `produced_by` on text checkpoints (e.g.
    /// [`crate::compaction::extractive::EXTRACTIVE_PRODUCER`]); defaults to `text-summary:<model>`.
    pub summarizer_label: Option<String>,
    /// The session backend's malformed-input circuit; returned updated by
    /// [`Compaction::into_circuit`](super::Compaction::into_circuit).
    pub circuit: MalformedInputCircuit,
    /// A checkpoint a background preparation built ([`Trigger::Prepare`]), unrecorded. When
    /// this compaction needs to fold and the checkpoint still succeeds `checkpoint`, matches
    /// the log and passes the replay gate, it is appended instead of calling the summarizer
    /// (`prepared_checkpoint_used`); otherwise the compaction runs as without it
    /// (`prepared_checkpoint_rejected`). See `compaction::adoption`.
    pub prepared: Option<HistoryCompactCheckpoint>,
}

/// Invalid input to [`Compaction::start`](super::Compaction::start); nothing was planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The log breaks a structural rule.
    #[error(transparent)]
    Log(#[from] LogError),
}
