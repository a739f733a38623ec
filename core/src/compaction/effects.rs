//! What the compaction transaction asks of its host, what the host reports back, and what the
//! transaction finally returns.

use serde::{Deserialize, Serialize};

use crate::checkpoint::HistoryCompactCheckpoint;
use crate::compaction::native::NativeRequest;
use crate::compaction::summary_request::SummaryRequest;
use crate::compaction::summary_validation::FinishReason;
use crate::diagnostics::{Diagnostic, ReasonCode, TokenFigures};
use crate::event::EventContent;
use crate::safe_prefix::Fold;

/// Who emitted the Compact command. Only the trigger differs between them: they all enter the
/// same transaction, with no force flag and no policy knobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trigger {
    /// The user asked for compaction.
    Manual,
    /// The pre-turn evaluator found the next request over capacity.
    PreTurn,
    /// The active-turn evaluator found the next step over capacity.
    MidTurn,
    /// The provider reported a real context overflow.
    Overflow,
    /// The runtime prepares the next checkpoint off the agent's critical path: the history has
    /// reached the model's soft threshold ([`crate::ModelFacts::prepare_at_share`]). The
    /// transaction hands the checkpoint back unrecorded ([`OutcomeKind::Prepared`]); a later
    /// automatic compaction adopts it ([`super::CompactInput::prepared`]).
    Prepare,
}

impl Trigger {
    /// Stable snake_case name, used as the checkpoint's high-water name.
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Manual => "manual",
            Trigger::PreTurn => "pre_turn",
            Trigger::MidTurn => "mid_turn",
            Trigger::Overflow => "overflow",
            Trigger::Prepare => "prepare",
        }
    }

    /// Automatic triggers end in `context_budget_exhausted` when they fail over budget.
    pub fn is_automatic(self) -> bool {
        !matches!(self, Trigger::Manual)
    }
}

/// One thing the host must do, then report back with the matching `handle_*` call.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Send a text-summary request; answer with `handle_summary`.
    Summarize(Box<SummarizeEffect>),
    /// Send a native compaction request; answer with `handle_native`.
    CompactNatively(NativeRequest),
    /// Durably append this checkpoint (with its projection row, atomically); answer with
    /// `handle_append`. The checkpoint is used only after the append succeeds.
    AppendCheckpoint(Box<HistoryCompactCheckpoint>),
}

/// A text-summary request, with the source it summarizes.
#[derive(Debug, Clone, PartialEq)]
pub struct SummarizeEffect {
    /// The ready-to-send request (instructions, previous summary, transcript of the fold).
    pub request: SummaryRequest,
    /// The summary being rolled forward, if any.
    pub previous_summary: Option<String>,
    /// The newly folded events, as indexes into the input log (`events[fold.start..fold.end]`).
    /// Offline compactors such as [`extractive_summary`](crate::compaction::extractive_summary) read these directly.
    pub fold: Fold,
    /// Covered events the checkpoint's requests replay verbatim beside its summary (the live
    /// head: the split turn's user messages and notes), as indexes into the input log,
    /// ascending. A summary need not repeat them; the extractive summarizer names them instead.
    pub replayed_head: Vec<usize>,
    /// Events before the fold that the previous checkpoint left to its live head and this one
    /// no longer replays (the fold reaches into a later turn), as indexes into the input log,
    /// ascending: the summary takes them in as if they were folded now (the text request's
    /// transcript opens with them).
    pub carried: Vec<usize>,
    /// The summary should stay within about this many tokens: what
    /// [`AFTER_COMPACTION_SHARE_PERCENT`] of the history budget leaves beside the live head and
    /// the raw tail the fold keeps, at least half that share (at most
    /// `MAX_SUMMARY_TARGET_TOKENS`), less when the rest of the request needs more of the
    /// budget (never below `MIN_SUMMARY_TARGET_TOKENS`), so the checkpoint leaves room for the
    /// rest of the request; and always below what the checkpoint replaces (less its envelope),
    /// so a summary that meets it is never refused as not smaller.
    pub target_tokens: u64,
    /// The session's own provider options, passed through unchanged (the summarizer reuses
    /// the session's connection, model and options, with no compaction-only output cap).
    pub provider_options: Option<serde_json::Value>,
}

/// Share of the history budget, in percent, that the request right after a compaction may
/// fill: the newest raw steps (at most [`RAW_TAIL_SHARE_PERCENT`]) and the summary together. The
/// rest is room to grow before the next compaction. Chosen with `bench/quality.sh` (issue 37;
/// docs/performance.md, "Continuation quality"): against 50%, the agent loop on 20 real
/// trajectories keeps 47.6% of the folded artifacts at 8k (37.0% at 50%) and 81.5% at 16k
/// (62.6%), at 1.39x and 1.22x the compactions per 100 steps; 65% and 70% kept less, and
/// 75% with a floor of 40% of the budget took 1.48x the compactions at 8k.
pub const AFTER_COMPACTION_SHARE_PERCENT: u64 = 75;

/// Share of the history budget, in percent, that an automatic compaction leaves to the newest
/// raw steps or turns (the fold stops before them), so the next call sees its latest work
/// exactly, not as a summary.
pub const RAW_TAIL_SHARE_PERCENT: u64 = 25;

/// Default share of the history budget, in percent, at which a runtime starts preparing the
/// next checkpoint in the background ([`Trigger::Prepare`]); per model:
/// [`crate::ModelFacts::prepare_at_percent`]. Chosen by measurement (docs/performance.md,
/// "Background preparation").
pub const PREPARE_AT_PERCENT: u64 = 80;

/// Upper bound of [`SummarizeEffect::target_tokens`].
pub(crate) const MAX_SUMMARY_TARGET_TOKENS: u64 = 8_192;

/// Lower bound of [`SummarizeEffect::target_tokens`] (a large fold's summary must reach 200
/// estimated tokens to pass validation).
pub(crate) const MIN_SUMMARY_TARGET_TOKENS: u64 = 256;

/// Tokens the planner sets aside for a V2 checkpoint's envelope (tag, coverage, limitations)
/// when it judges whether any fold can fit; a step's summary target leaves room for the
/// envelope measured for its own checkpoint (`compaction::envelope`).
pub(crate) const CHECKPOINT_ENVELOPE_TOKENS: u64 = 256;

/// Most checkpoints one compaction transaction records in rolling steps (each step strictly
/// extends coverage, so the steps also end when no safe fold remains).
pub(crate) const MAX_ROLLING_STEPS: u32 = 64;

/// A summarizer's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryResponse {
    /// The generated text.
    pub text: String,
    /// Why generation stopped.
    pub finish_reason: FinishReason,
}

/// How a provider call failed. The class decides retries and fallbacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ProviderFailureKind {
    /// Non-retryable protocol rejection (HTTP 400-class that is not an overflow).
    Rejected,
    /// The request exceeded the model's context.
    Overflow,
    /// Authentication failed.
    Auth,
    /// Billing or quota.
    Billing,
    /// Rate limited.
    RateLimited,
    /// Unavailable, timed out, or the connection broke.
    Unavailable,
    /// The host cancelled the call.
    Cancelled,
}

impl ProviderFailureKind {
    /// The reason code reported for this failure.
    pub fn code(self) -> ReasonCode {
        match self {
            ProviderFailureKind::Rejected => ReasonCode::ProviderRejected,
            ProviderFailureKind::Overflow => ReasonCode::ProviderOverflow,
            ProviderFailureKind::Auth => ReasonCode::ProviderAuth,
            ProviderFailureKind::Billing => ReasonCode::ProviderBilling,
            ProviderFailureKind::RateLimited => ReasonCode::ProviderRateLimited,
            ProviderFailureKind::Unavailable => ReasonCode::ProviderUnavailable,
            ProviderFailureKind::Cancelled => ReasonCode::Cancelled,
        }
    }
}

/// A failed provider call. JSON: `{ "kind", "message" }`, other keys ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderFailure {
    /// The failure class.
    pub kind: ProviderFailureKind,
    /// Detail for diagnostics (must not contain keys or provider state).
    pub message: String,
}

/// A failed durable append. JSON: `{ "conflict", "message" }`, other keys ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppendFailure {
    /// Another writer recorded a checkpoint first (the compare-and-swap lost).
    pub conflict: bool,
    /// Detail for diagnostics.
    pub message: String,
}

/// The final state of one compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    /// A new checkpoint was durably recorded.
    Recorded,
    /// Nothing needed doing (below high water, already covered).
    Skipped,
    /// Compaction failed; the session continues on source-derived context.
    FailedOpen,
    /// Automatic compaction could not bring history within the budget.
    Exhausted,
    /// The host cancelled; nothing was persisted and nothing was armed.
    Cancelled,
    /// A background preparation ([`Trigger::Prepare`]) built a checkpoint that passed every
    /// check but the durable append, which it leaves to the compaction that adopts it.
    Prepared,
}

/// Which compactor made one physical attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptKind {
    /// Provider-native compaction.
    ProviderNative,
    /// Text summary.
    TextSummary,
}

/// One physical attempt of the logical compaction call, for telemetry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    /// The compactor.
    pub kind: AttemptKind,
    /// Requests dispatched (first try, repair, overflow retry).
    pub dispatches: u32,
    /// How it ended (`checkpoint_recorded` on success).
    pub result: ReasonCode,
}

/// Everything the host learns from one compaction. `reason` and `outcome` are the values the
/// CLI's `compact --json` and the npm package expose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionOutcome {
    /// How it ended.
    pub outcome: OutcomeKind,
    /// The stable reason code.
    pub reason: ReasonCode,
    /// The durably recorded checkpoint (only for [`OutcomeKind::Recorded`] and
    /// [`OutcomeKind::Exhausted`] after a successful append), or the unrecorded prepared one
    /// ([`OutcomeKind::Prepared`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<HistoryCompactCheckpoint>,
    /// Every decision taken, in order.
    pub diagnostics: Vec<Diagnostic>,
    /// Physical attempts, per compactor.
    pub attempts: Vec<Attempt>,
    /// For a failed manual compaction: the one visible runtime note the host appends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_note: Option<EventContent>,
    /// History tokens before and after (estimated), and the budget.
    pub tokens: TokenFigures,
}

/// What [`Compaction::poll`](super::Compaction::poll) returns.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Perform this effect and report its result.
    Effect(Effect),
    /// The transaction is over.
    Done(Box<CompactionOutcome>),
}

/// A driver called the machine out of order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DriverError {
    /// A result was reported for an effect that was not handed out.
    #[error("unexpected {got} result: the transaction is waiting for {expected}")]
    UnexpectedResult {
        /// The result kind reported.
        got: &'static str,
        /// What the machine waits for.
        expected: &'static str,
    },
    /// `poll` was called while an effect is still outstanding.
    #[error("poll called while the {0} effect is still outstanding")]
    EffectOutstanding(&'static str),
}

impl DriverError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            DriverError::UnexpectedResult { .. } => "driver_unexpected_result",
            DriverError::EffectOutstanding(_) => "driver_effect_outstanding",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_have_the_documented_json() {
        let failure: ProviderFailure =
            serde_json::from_str(r#"{"kind":"rate_limited","message":"m","extra":1}"#).unwrap();
        assert_eq!(failure.kind, ProviderFailureKind::RateLimited);
        assert_eq!(
            serde_json::to_string(&failure).unwrap(),
            r#"{"kind":"rate_limited","message":"m"}"#
        );
        assert!(
            serde_json::from_str::<ProviderFailure>(r#"{"kind":"other","message":"m"}"#).is_err()
        );
        assert!(serde_json::from_str::<ProviderFailure>(r#"{"kind":"auth"}"#).is_err());
        let append: AppendFailure =
            serde_json::from_str(r#"{"conflict":true,"message":"m"}"#).unwrap();
        assert!(append.conflict);
        assert_eq!(serde_json::to_string(&append).unwrap(), r#"{"conflict":true,"message":"m"}"#);
        assert!(serde_json::from_str::<AppendFailure>(r#"{"conflict":1,"message":"m"}"#).is_err());
    }
}
