//! Planning: everything the transaction decides before any provider call.
//!
//! Given the canonical log, the latest checkpoint and model facts, the plan finds the current
//! history size, decides whether the trigger needs work at all, selects the largest safe
//! completed prefix and the fold of a rolling update. It performs no I/O.

use crate::budget::{ContextBudget, TokenEstimator, estimate_events};
use crate::checkpoint::HistoryCompactCheckpoint;
use crate::compaction::effects::Trigger;
use crate::compaction::native::ProviderIdentity;
use crate::diagnostics::{Diagnostic, ReasonCode, TokenFigures};
use crate::event::RuntimeEvent;
use crate::projection::materialize::{estimate_messages, materialize};
use crate::replay::evaluate_replay;
use crate::safe_prefix::{PrefixOptions, SafePrefix, select_safe_prefix};

/// A checkpoint that matched the log and may seed a rolling update.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UsableCheckpoint {
    pub(crate) checkpoint: HistoryCompactCheckpoint,
    pub(crate) covered: usize,
    pub(crate) tokens: u64,
    /// The replacement is strictly smaller than the source it covers.
    pub(crate) smaller_than_source: bool,
}

/// Token figures of the log as it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sizes {
    pub(crate) prior_end: usize,
    pub(crate) prior_tokens: u64,
    pub(crate) current_tokens: u64,
    /// The context no compaction can remove: everything from the first pinned or partial prior
    /// event on (coverage is a prefix), plus the current turn.
    pub(crate) minimum_tokens: u64,
    /// Estimated history of the next request before compaction.
    pub(crate) before: u64,
    pub(crate) budget: ContextBudget,
}

impl Sizes {
    pub(crate) fn figures(&self, after: u64) -> TokenFigures {
        TokenFigures { before: self.before, after, budget: self.budget.history_budget }
    }
}

/// What planning concluded.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PlanDecision {
    /// Nothing to do, or nothing can be done; finish with this reason.
    Finish { reason: ReasonCode, over_budget: bool },
    /// Compact `events[..prefix.end]`.
    Compact { prefix: SafePrefix },
}

/// Finds a source-matched checkpoint through the replay gate, recording why a given one cannot
/// be used. A checkpoint that matched but failed only on size still proves its coverage.
pub(crate) fn usable_checkpoint(
    checkpoint: Option<&HistoryCompactCheckpoint>,
    prior: &[RuntimeEvent],
    current: &[RuntimeEvent],
    budget: &ContextBudget,
    provider: &ProviderIdentity,
    estimator: &dyn TokenEstimator,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<UsableCheckpoint> {
    let checkpoint = checkpoint?;
    let plan = match evaluate_replay(checkpoint, prior, current, budget, Some(provider), estimator)
    {
        Ok(plan) => plan,
        Err(rejection) => {
            diagnostics.push(rejection.diagnostic);
            rejection.plan?
        }
    };
    Some(UsableCheckpoint {
        checkpoint: checkpoint.clone(),
        covered: plan.covered,
        tokens: plan.checkpoint_tokens,
        smaller_than_source: plan.checkpoint_tokens < plan.source_tokens,
    })
}

/// Measures the log as the next request would see it without compaction, on the materialized
/// messages, exactly as [`crate::projection::project`] measures them.
pub(crate) fn measure(
    events: &[RuntimeEvent],
    prior_end: usize,
    usable: Option<&UsableCheckpoint>,
    budget: ContextBudget,
    estimator: &dyn TokenEstimator,
) -> Sizes {
    let (prior, current) = events.split_at(prior_end);
    let measure = |checkpoint, tail, current| {
        estimate_messages(estimator, &materialize(checkpoint, tail, current).messages)
    };
    let prior_tokens = measure(None, prior, &[]);
    let current_tokens = measure(None, &[], current);
    let minimum_tokens = match prior.iter().position(|e| e.pinned || e.partial) {
        Some(first) => measure(None, &prior[first..], current),
        None => current_tokens,
    };
    let before = match usable {
        Some(u) if u.smaller_than_source => {
            measure(Some(&u.checkpoint), &prior[u.covered..], current)
        }
        _ => measure(None, prior, current),
    };
    Sizes { prior_end, prior_tokens, current_tokens, minimum_tokens, before, budget }
}

/// Decides whether to compact and which prefix to cover.
pub(crate) fn decide(
    trigger: Trigger,
    events: &[RuntimeEvent],
    current_turn_id: Option<&str>,
    usable: Option<&UsableCheckpoint>,
    sizes: &Sizes,
    estimator: &dyn TokenEstimator,
    diagnostics: &mut Vec<Diagnostic>,
) -> PlanDecision {
    let budget = sizes.budget.history_budget;
    let over_budget = sizes.before > budget;
    // A provider overflow proves the estimate wrong, so only the capacity evaluators stop here.
    if matches!(trigger, Trigger::PreTurn | Trigger::MidTurn) && !over_budget {
        diagnostics.push(Diagnostic::with_tokens(
            ReasonCode::BelowHighWater,
            "history fits the budget; nothing compacted",
            sizes.figures(sizes.before),
        ));
        return PlanDecision::Finish { reason: ReasonCode::BelowHighWater, over_budget };
    }
    if sizes.minimum_tokens > budget {
        diagnostics.push(Diagnostic::with_tokens(
            ReasonCode::MinimumContextExceedsBudget,
            "the pinned tail plus the current turn alone exceed the history budget; \
             compaction cannot help",
            sizes.figures(sizes.minimum_tokens),
        ));
        if trigger.is_automatic() {
            return PlanDecision::Finish {
                reason: ReasonCode::MinimumContextExceedsBudget,
                over_budget,
            };
        }
    }
    let options = PrefixOptions {
        current_turn_id: current_turn_id.map(str::to_owned),
        reserve_tail_tokens: 0,
        reserve_tail_turns: reserved_tail_turns(trigger, events, sizes, estimator),
    };
    // The current turn was already checked to be a suffix, so selection cannot fail here.
    let select =
        |options: &PrefixOptions| select_safe_prefix(events, options, estimator).ok().flatten();
    // The reserved tail is a preference; never let it block the only possible compaction.
    let prefix = select(&options)
        .or_else(|| select(&PrefixOptions { reserve_tail_turns: 0, ..options.clone() }));
    let Some(prefix) = prefix else {
        diagnostics.push(Diagnostic::new(
            ReasonCode::NoSafePrefix,
            "no completed prefix can be covered without splitting a pinned, partial or paired event",
        ));
        return PlanDecision::Finish { reason: ReasonCode::NoSafePrefix, over_budget };
    };
    if let Some(u) = usable
        && prefix.end <= u.covered
    {
        diagnostics.push(Diagnostic::new(
            ReasonCode::AlreadyCovered,
            format!(
                "checkpoint {} already covers the whole safe prefix ({} events)",
                u.checkpoint.checkpoint_id, u.covered
            ),
        ));
        return PlanDecision::Finish { reason: ReasonCode::AlreadyCovered, over_budget };
    }
    PlanDecision::Compact { prefix }
}

/// Automatic triggers keep the newest completed turn raw when it is small (at most a quarter
/// of the history budget); manual compaction folds every completed turn.
fn reserved_tail_turns(
    trigger: Trigger,
    events: &[RuntimeEvent],
    sizes: &Sizes,
    estimator: &dyn TokenEstimator,
) -> usize {
    if !trigger.is_automatic() || sizes.prior_end == 0 {
        return 0;
    }
    let prior = &events[..sizes.prior_end];
    let last_turn = &prior[prior.len() - 1].turn_id;
    let start = prior.iter().rposition(|e| &e.turn_id != last_turn).map_or(0, |i| i + 1);
    let tokens = estimate_events(estimator, &prior[start..]);
    usize::from(tokens <= sizes.budget.history_budget / 4)
}
