//! Planning: everything the transaction decides before any provider call.
//!
//! Given the canonical log, the latest checkpoint and model facts, the plan finds the current
//! history size, decides whether the trigger needs work at all, and picks the fold target: the
//! largest safe prefix, or one that keeps the trigger's verbatim tail raw. Settled steps of the
//! active turn are candidates like completed turns (see [`crate::safe_prefix`]). It performs no
//! I/O.

use crate::budget::{ContextBudget, TokenEstimator, estimate_events};
use crate::checkpoint::HistoryCompactCheckpoint;
use crate::compaction::effects::{
    CHECKPOINT_ENVELOPE_TOKENS, MIN_SUMMARY_TARGET_TOKENS, RAW_TAIL_SHARE_PERCENT, Trigger,
};
use crate::compaction::native::ProviderIdentity;
use crate::diagnostics::{Diagnostic, ReasonCode, TokenFigures};
use crate::event::RuntimeEvent;
use crate::projection::live_head::{Remainder, replay};
use crate::projection::materialize::{estimate_messages, materialize_events};
use crate::replay::evaluate_replay;
use crate::safe_prefix::safe_boundaries;

/// How much more than the growth until the hard trigger a preparation's fold gives up of its
/// raw tail, in percent of the history budget: the step that crosses the trigger overshoots
/// it. Measured with the reserve in the summary target too (docs/performance.md, "Background
/// preparation"), where at 8k 0% left 4 of 67 held preparations refused and 5% none.
const PREPARE_MARGIN_PERCENT: u64 = 5;

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
    /// What no raw-tail selection can drop beside the usable checkpoint (or from the raw log):
    /// the live head and the uncovered current turn.
    pub(crate) current_tokens: u64,
    /// The context no compaction can remove: the live head plus everything after the largest
    /// safe cut, plus the smallest checkpoint that could replace the rest.
    pub(crate) minimum_tokens: u64,
    /// Estimated history of the next request before compaction.
    pub(crate) before: u64,
    pub(crate) budget: ContextBudget,
    /// The model's raw-tail share, in percent ([`crate::ModelFacts::raw_tail_share`]).
    pub(crate) raw_tail_share: u64,
    /// The model's soft threshold, in percent ([`crate::ModelFacts::prepare_at_share`]).
    pub(crate) prepare_at: u64,
}

impl Sizes {
    pub(crate) fn figures(&self, after: u64) -> TokenFigures {
        TokenFigures { before: self.before, after, budget: self.budget.history_budget }
    }

    /// Tokens the history may still grow by before the hard trigger fires (plus the margin):
    /// a prepared checkpoint is adopted then, with everything appended since its preparation
    /// raw after it, so its fold keeps raw only what that growth will not. Its summary target
    /// is the foreground's: the budget above the after-compaction share is the room for the
    /// growth. 0 for every trigger but [`Trigger::Prepare`].
    pub(crate) fn growth_reserve(&self, trigger: Trigger) -> u64 {
        match trigger {
            Trigger::Prepare => {
                self.budget.history_budget.saturating_sub(self.before)
                    + self.budget.history_budget * PREPARE_MARGIN_PERCENT / 100
            }
            _ => 0,
        }
    }
}

/// What planning concluded.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PlanDecision {
    /// Nothing to do, or nothing can be done; finish with this reason.
    Finish { reason: ReasonCode, over_budget: bool },
    /// Compact towards `events[..target]`; `cuts` are every safe cut, ascending.
    Compact { target: usize, cuts: Vec<usize> },
}

/// Finds a source-matched checkpoint through the replay gate, recording why a given one cannot
/// be used. A checkpoint that matched but failed only on size still proves its coverage.
pub(crate) fn usable_checkpoint(
    checkpoint: Option<&HistoryCompactCheckpoint>,
    events: &[RuntimeEvent],
    prior_end: usize,
    budget: &ContextBudget,
    provider: &ProviderIdentity,
    estimator: &dyn TokenEstimator,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<UsableCheckpoint> {
    let checkpoint = checkpoint?;
    let plan =
        match evaluate_replay(checkpoint, events, prior_end, budget, Some(provider), estimator) {
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

/// Tokens of the request a coverage of `covered` events gives (with `checkpoint`, if any),
/// measured exactly as [`crate::projection::project`] measures it.
pub(crate) fn replay_tokens(
    checkpoint: Option<&HistoryCompactCheckpoint>,
    events: &[RuntimeEvent],
    prior_end: usize,
    covered: usize,
    history_budget: u64,
    estimator: &dyn TokenEstimator,
) -> u64 {
    let replay = replay(checkpoint, events, prior_end, covered, history_budget, estimator);
    estimate_messages(estimator, &replay.materialized.messages)
}

/// Tokens of the live head and the uncovered current turn for a coverage of `covered` events.
fn fixed_tokens(
    events: &[RuntimeEvent],
    prior_end: usize,
    covered: usize,
    estimator: &dyn TokenEstimator,
) -> u64 {
    let rest = Remainder { tail: &[], ..Remainder::split(events, prior_end, covered) };
    estimate_messages(estimator, &materialize_events(None, rest.events(), &[]).messages)
}

/// Measures the log as the next request would see it without compaction.
pub(crate) fn measure(
    events: &[RuntimeEvent],
    prior_end: usize,
    cuts: &[usize],
    usable: Option<&UsableCheckpoint>,
    budget: ContextBudget,
    estimator: &dyn TokenEstimator,
) -> Sizes {
    let largest = cuts.last().copied().unwrap_or(0);
    // A fold needs a checkpoint beside what it leaves: at least its envelope and the smallest
    // summary target.
    let checkpoint_floor = match largest {
        0 => 0,
        _ => CHECKPOINT_ENVELOPE_TOKENS + MIN_SUMMARY_TARGET_TOKENS,
    };
    let minimum_tokens =
        replay_tokens(None, events, prior_end, largest, budget.history_budget, estimator)
            + checkpoint_floor;
    let (before, current_tokens) = match usable {
        Some(u) if u.smaller_than_source => (
            replay_tokens(
                Some(&u.checkpoint),
                events,
                prior_end,
                u.covered,
                budget.history_budget,
                estimator,
            ),
            fixed_tokens(events, prior_end, u.covered, estimator),
        ),
        _ => (
            replay_tokens(None, events, prior_end, 0, budget.history_budget, estimator),
            fixed_tokens(events, prior_end, prior_end, estimator),
        ),
    };
    Sizes {
        prior_end,
        current_tokens,
        minimum_tokens,
        before,
        budget,
        raw_tail_share: RAW_TAIL_SHARE_PERCENT,
        prepare_at: crate::compaction::PREPARE_AT_PERCENT,
    }
}

/// Decides whether to compact and which prefix to fold towards.
pub(crate) fn decide(
    trigger: Trigger,
    events: &[RuntimeEvent],
    cuts: Vec<usize>,
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
    let soft = budget * sizes.prepare_at / 100;
    if trigger == Trigger::Prepare && sizes.before * 100 < budget * sizes.prepare_at {
        diagnostics.push(Diagnostic::with_tokens(
            ReasonCode::BelowSoftThreshold,
            format!("history is below the soft threshold ({soft} tokens); nothing prepared"),
            sizes.figures(sizes.before),
        ));
        return PlanDecision::Finish { reason: ReasonCode::BelowSoftThreshold, over_budget };
    }
    if sizes.minimum_tokens > budget {
        diagnostics.push(Diagnostic::with_tokens(
            ReasonCode::MinimumContextExceedsBudget,
            "the live head and what no safe cut can cover alone exceed the history budget; \
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
    let Some(&largest) = cuts.last() else {
        diagnostics.push(Diagnostic::new(
            ReasonCode::NoSafePrefix,
            "no prefix can be covered without splitting a live, paired or batched event",
        ));
        return PlanDecision::Finish { reason: ReasonCode::NoSafePrefix, over_budget };
    };
    let covered = usable.map_or(0, |u| u.covered);
    // A checkpoint made for a larger window is never a reason to stop: over the current budget
    // with nothing new to fold, the same prefix is compressed again (an equal-coverage successor).
    if let Some(usable) = usable.filter(|_| over_budget && largest == covered) {
        diagnostics.push(Diagnostic::with_tokens(
            ReasonCode::RecompressForBudget,
            format!(
                "checkpoint {} covers the whole safe prefix ({covered} events) but the request \
                 does not fit the {budget}-token budget; compressing the same prefix again",
                usable.checkpoint.checkpoint_id
            ),
            sizes.figures(sizes.before),
        ));
        return PlanDecision::Compact { target: covered, cuts };
    }
    if largest <= covered {
        let id = usable.map_or("", |u| u.checkpoint.checkpoint_id.as_str());
        diagnostics.push(Diagnostic::new(
            ReasonCode::AlreadyCovered,
            format!("checkpoint {id} already covers the whole safe prefix ({covered} events)"),
        ));
        return PlanDecision::Finish { reason: ReasonCode::AlreadyCovered, over_budget };
    }
    // The reserved tail is a preference; it never blocks the only useful fold.
    let target = reserved_target(trigger, events, &cuts, sizes, estimator)
        .filter(|&reserved| reserved > covered)
        .unwrap_or(largest);
    PlanDecision::Compact { target, cuts }
}

/// The trigger's verbatim tail: automatic triggers keep the newest raw units (settled steps of
/// the active turn, or completed turns) that fit together in the model's raw-tail share
/// ([`RAW_TAIL_SHARE_PERCENT`] unless its facts say otherwise) of the history budget, so the
/// next call sees its latest work exactly. A preparation keeps only what the growth until its
/// adoption will not add raw anyway ([`Sizes::growth_reserve`]). Manual compaction folds
/// everything, and so does a provider overflow (it proved the estimate wrong, so a share of it
/// means nothing). Returns the smallest cut whose raw tail still fits the share, if any.
fn reserved_target(
    trigger: Trigger,
    events: &[RuntimeEvent],
    cuts: &[usize],
    sizes: &Sizes,
    estimator: &dyn TokenEstimator,
) -> Option<usize> {
    let (&largest, earlier) = cuts.split_last()?;
    if matches!(trigger, Trigger::Manual | Trigger::Overflow) {
        return None;
    }
    let share = (sizes.budget.history_budget * sizes.raw_tail_share / 100)
        .saturating_sub(sizes.growth_reserve(trigger));
    if share == 0 {
        return None;
    }
    let mut kept = None;
    let mut tail_tokens = 0;
    let mut end = largest;
    for &cut in earlier.iter().rev() {
        tail_tokens += estimate_events(estimator, &events[cut..end]);
        if tail_tokens > share {
            break;
        }
        kept = Some(cut);
        end = cut;
    }
    kept
}

/// Every safe cut of the log (active-turn steps included), ascending.
pub(crate) fn all_cuts(events: &[RuntimeEvent], current_turn_id: Option<&str>) -> Vec<usize> {
    // The current turn was already checked to be a suffix, so this cannot fail here.
    safe_boundaries(events, current_turn_id).unwrap_or_default()
}
