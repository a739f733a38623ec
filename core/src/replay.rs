//! The replay gate: the single current-policy check through which a checkpoint enters history.
//!
//! A checkpoint that was valid once is not fit for every later request: the model may change,
//! its window may shrink. [`evaluate_replay`] accepts a checkpoint only if it belongs to this
//! session (and, for V3, to this provider, connection and model), still matches the log's
//! prefix, is strictly smaller than the source it replaces, and leaves checkpoint + raw tail +
//! current turn within the current history budget.

use crate::budget::{ContextBudget, TokenEstimator};
use crate::checkpoint::HistoryCompactCheckpoint;
use crate::compaction::native::{ProviderIdentity, provider_state_matches};
use crate::diagnostics::{Diagnostic, ReasonCode, TokenFigures};
use crate::event::RuntimeEvent;
use crate::projection::materialize::{
    checkpoint_message, estimate_message, estimate_messages, materialize,
};
use crate::verified_prefix::{FullVerification, PrefixVerifier};

/// Estimated model-visible tokens of a checkpoint: its one materialized message (the full V2
/// text block, never a truncated one, or the V3 provider-state part).
pub fn checkpoint_tokens(
    checkpoint: &HistoryCompactCheckpoint,
    estimator: &dyn TokenEstimator,
) -> u64 {
    estimate_message(estimator, &checkpoint_message(checkpoint))
}

/// A checkpoint accepted for this request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayPlan {
    /// The checkpoint replaces `prior[..covered]`.
    pub covered: usize,
    /// Tokens of the checkpoint as the model sees it.
    pub checkpoint_tokens: u64,
    /// Tokens of the covered raw source it replaces.
    pub source_tokens: u64,
    /// Tokens of the whole replay (checkpoint + uncovered raw tail + current turn), measured
    /// on the materialized messages exactly as the request will carry them.
    pub replay_tokens: u64,
    /// Tokens of the current turn alone, materialized.
    pub current_tokens: u64,
}

impl ReplayPlan {
    /// Checkpoint + tail + current turn.
    pub fn total(&self) -> u64 {
        self.replay_tokens
    }
}

/// Why a checkpoint is not replayed. `plan` is set when the checkpoint matched the log but
/// failed on size (not smaller than its source, or over the budget): it still proves its
/// coverage, so a rolling update may extend it and a fail-open path may reuse it with a shorter
/// tail when it is smaller than its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayRejection {
    /// The diagnostic to report.
    pub diagnostic: Diagnostic,
    /// The figures of a source-matched checkpoint that failed only on size.
    pub plan: Option<ReplayPlan>,
}

/// Evaluates whether `checkpoint` may replace the start of `prior` in the next request.
///
/// `prior` is the log before the current turn; `current` is the current turn.
pub fn evaluate_replay(
    checkpoint: &HistoryCompactCheckpoint,
    prior: &[RuntimeEvent],
    current: &[RuntimeEvent],
    budget: &ContextBudget,
    provider: Option<&ProviderIdentity>,
    estimator: &dyn TokenEstimator,
) -> Result<ReplayPlan, ReplayRejection> {
    let mut full = FullVerification::default();
    evaluate_replay_with(checkpoint, prior, current, budget, provider, estimator, &mut full)
}

/// [`evaluate_replay`] with a chosen prefix verifier (e.g. a per-session
/// [`crate::verified_prefix::VerifiedPrefix`] cache, for O(tail) steady state).
pub fn evaluate_replay_with(
    checkpoint: &HistoryCompactCheckpoint,
    prior: &[RuntimeEvent],
    current: &[RuntimeEvent],
    budget: &ContextBudget,
    provider: Option<&ProviderIdentity>,
    estimator: &dyn TokenEstimator,
    verifier: &mut dyn PrefixVerifier,
) -> Result<ReplayPlan, ReplayRejection> {
    let reject = |code, detail: String| ReplayRejection {
        diagnostic: Diagnostic::new(code, detail),
        plan: None,
    };
    if let Some(state) = checkpoint.provider_state() {
        let bound = provider.is_some_and(|p| provider_state_matches(state, p));
        if !bound {
            return Err(reject(
                ReasonCode::ProviderMismatch,
                format!(
                    "checkpoint {} holds {} state bound to another provider, connection or model",
                    checkpoint.checkpoint_id,
                    state.kind_name()
                ),
            ));
        }
    }
    let matched = verifier.verify(checkpoint, prior, estimator).map_err(|mismatch| {
        reject(mismatch.code(), format!("checkpoint {}: {mismatch}", checkpoint.checkpoint_id))
    })?;
    let replay = materialize(Some(checkpoint), &prior[matched.covered..], current);
    let plan = ReplayPlan {
        covered: matched.covered,
        checkpoint_tokens: checkpoint_tokens(checkpoint, estimator),
        source_tokens: matched.source_tokens,
        replay_tokens: estimate_messages(estimator, &replay.messages),
        current_tokens: estimate_messages(estimator, &materialize(None, &[], current).messages),
    };
    let figures = |after| TokenFigures {
        before: plan.source_tokens + plan.replay_tokens - plan.checkpoint_tokens,
        after,
        budget: budget.history_budget,
    };
    if plan.checkpoint_tokens >= plan.source_tokens {
        return Err(ReplayRejection {
            diagnostic: Diagnostic::with_tokens(
                ReasonCode::ReplacementNotSmaller,
                format!(
                    "checkpoint {} ({} tokens) is not smaller than the {} source tokens it covers",
                    checkpoint.checkpoint_id, plan.checkpoint_tokens, plan.source_tokens
                ),
                figures(plan.total()),
            ),
            plan: Some(plan),
        });
    }
    if plan.total() > budget.history_budget {
        return Err(ReplayRejection {
            diagnostic: Diagnostic::with_tokens(
                ReasonCode::CheckpointOverBudget,
                format!(
                    "checkpoint {} plus tail and current turn is {} tokens, over the {} budget",
                    checkpoint.checkpoint_id,
                    plan.total(),
                    budget.history_budget
                ),
                figures(plan.total()),
            ),
            plan: Some(plan),
        });
    }
    Ok(plan)
}
