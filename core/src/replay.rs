//! The replay gate: the single current-policy check through which a checkpoint enters history.
//!
//! A checkpoint that was valid once is not fit for every later request: the model may change,
//! its window may shrink. [`evaluate_replay`] accepts a checkpoint only if it belongs to this
//! session (and, for V3, to this provider, connection and model), still matches the log's
//! prefix, is strictly smaller than the source it replaces, and leaves checkpoint + live head +
//! raw tail + current turn within the current history budget. The prefix may reach into the
//! current turn (active-turn folding, see [`crate::projection::live_head`]). Sizes are measured
//! after stale tool-result pruning of the uncovered tail, as the request is sent, so pruning can
//! make a checkpoint fit.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::budget::{ContextBudget, ModelFacts, TokenEstimator, estimate_event};
use crate::checkpoint::HistoryCompactCheckpoint;
use crate::compaction::native::{ProviderIdentity, provider_state_matches};
use crate::diagnostics::{Diagnostic, ReasonCode, TokenFigures};
use crate::event::RuntimeEvent;
use crate::projection::live_head::{Remainder, replay};
use crate::projection::materialize::{
    checkpoint_message, estimate_message, estimate_messages, materialize_events,
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

/// A checkpoint accepted for this request. JSON: camelCase keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayPlan {
    /// The checkpoint replaces `events[..covered]` (the current turn's live head excepted).
    pub covered: usize,
    /// Tokens of the checkpoint as the model sees it.
    pub checkpoint_tokens: u64,
    /// Tokens of the covered raw source it replaces (the live head, replayed beside it, not
    /// counted).
    pub source_tokens: u64,
    /// Tokens of the whole replay (checkpoint + live head + uncovered raw tail + current turn),
    /// measured on the materialized messages exactly as the request will carry them.
    pub replay_tokens: u64,
    /// Tokens of what no raw-tail selection can drop: the live head and the uncovered events of
    /// the current turn, materialized.
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

/// The replay gate's question as the npm package takes it (JSON, camelCase): `{ events,
/// checkpoint, currentTurnId?, model?, provider? }` and nothing else. The events and the
/// checkpoint stay JSON values, for the binding's own readers and their error codes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplayQuestion {
    /// The whole log.
    pub events: Vec<Value>,
    /// The checkpoint to replay.
    pub checkpoint: Value,
    /// The turn in progress, if any.
    #[serde(default)]
    pub current_turn_id: Option<String>,
    /// The model of the request (`null`: the defaults).
    #[serde(default)]
    pub model: Option<ModelFacts>,
    /// The provider of the request (a V3 checkpoint must be bound to it).
    #[serde(default)]
    pub provider: Option<ProviderIdentity>,
}

/// The replay gate's answer as JSON (camelCase): `{ decision, code, plan, diagnostic }`. A
/// rejection is an answer, not an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayDecision {
    /// `accepted` or `rejected`.
    pub decision: &'static str,
    /// The rejection's reason code; `null` when accepted.
    pub code: Option<&'static str>,
    /// The replay figures: always when accepted; when rejected, only for a checkpoint that
    /// matched the log and failed on size.
    pub plan: Option<ReplayPlan>,
    /// The rejection's diagnostic; `null` when accepted.
    pub diagnostic: Option<Diagnostic>,
}

impl From<Result<ReplayPlan, ReplayRejection>> for ReplayDecision {
    fn from(evaluated: Result<ReplayPlan, ReplayRejection>) -> Self {
        match evaluated {
            Ok(plan) => ReplayDecision {
                decision: "accepted",
                code: None,
                plan: Some(plan),
                diagnostic: None,
            },
            Err(rejection) => ReplayDecision {
                decision: "rejected",
                code: Some(rejection.diagnostic.code.as_str()),
                plan: rejection.plan,
                diagnostic: Some(rejection.diagnostic),
            },
        }
    }
}

/// Evaluates whether `checkpoint` may replace the start of `events` in the next request.
///
/// `events` is the whole log; the current turn starts at `prior_end` (see
/// [`crate::safe_prefix::split_current_turn`]).
pub fn evaluate_replay(
    checkpoint: &HistoryCompactCheckpoint,
    events: &[RuntimeEvent],
    prior_end: usize,
    budget: &ContextBudget,
    provider: Option<&ProviderIdentity>,
    estimator: &dyn TokenEstimator,
) -> Result<ReplayPlan, ReplayRejection> {
    let mut full = FullVerification::default();
    evaluate_replay_with(checkpoint, events, prior_end, budget, provider, estimator, &mut full)
}

/// [`evaluate_replay`] with a chosen prefix verifier (e.g. a per-session
/// [`crate::verified_prefix::VerifiedPrefix`] cache, for O(tail) steady state).
pub fn evaluate_replay_with(
    checkpoint: &HistoryCompactCheckpoint,
    events: &[RuntimeEvent],
    prior_end: usize,
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
    let matched = verifier.verify(checkpoint, events, estimator).map_err(|mismatch| {
        reject(mismatch.code(), format!("checkpoint {}: {mismatch}", checkpoint.checkpoint_id))
    })?;
    let rest = Remainder::split(events, prior_end, matched.covered);
    let replay = replay(
        Some(checkpoint),
        events,
        prior_end,
        matched.covered,
        budget.history_budget,
        estimator,
    );
    let fixed = Remainder { tail: &[], ..rest.clone() };
    let plan = ReplayPlan {
        covered: matched.covered,
        checkpoint_tokens: checkpoint_tokens(checkpoint, estimator),
        source_tokens: matched
            .source_tokens
            .saturating_sub(rest.head.iter().map(|event| estimate_event(estimator, event)).sum()),
        replay_tokens: estimate_messages(estimator, &replay.materialized.messages),
        current_tokens: estimate_messages(
            estimator,
            &materialize_events(None, fixed.events(), &[]).messages,
        ),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_replay_question_has_the_documented_shape_only() {
        let question = json!({ "events": [], "checkpoint": null, "model": null });
        assert!(serde_json::from_value::<ReplayQuestion>(question).is_ok());
        assert!(serde_json::from_value::<ReplayQuestion>(json!({ "events": [] })).is_err());
        let unknown = json!({ "events": [], "checkpoint": {}, "extra": 1 });
        assert!(serde_json::from_value::<ReplayQuestion>(unknown).is_err());
    }

    #[test]
    fn a_rejection_is_a_decision_with_its_code() {
        let diagnostic = Diagnostic::new(ReasonCode::ProviderMismatch, "another model");
        let rejected = ReplayDecision::from(Err(ReplayRejection { diagnostic, plan: None }));
        let written = serde_json::to_value(&rejected).expect("writes");
        assert_eq!(written["decision"], "rejected");
        assert_eq!(written["code"], "provider_mismatch");
        assert_eq!(written["plan"], Value::Null);
    }
}
