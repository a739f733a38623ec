//! [`project`]: the next request's history, computed from the log every time.
//!
//! The pipeline, in order (the order is what keeps checkpoints valid):
//! 1. split off the current turn;
//! 2. validate the latest checkpoint against the immutable log and the current budget
//!    ([`crate::replay::evaluate_replay`], which measures the request after step 3);
//! 3. prune stale oversized tool results of the uncovered remainder and old attachments, in
//!    epochs ([`crate::prune::close_epochs`]), so the bytes a checkpoint digest covers never
//!    change and the pruned set changes only when that frees at least
//!    [`crate::prune::PRUNE_EPOCH_MIN_FREED_TOKENS`];
//! 4. materialize checkpoint + live head + raw tail + current turn as provider-neutral messages
//!    (the live head is non-empty only when the checkpoint covers settled steps of the current
//!    turn, see [`crate::projection::live_head`]).
//!
//! `project` never invents a summary and never drops uncovered events silently. Only in
//! fail-open mode (after a failed compaction) may a source-matched checkpoint be reused with the
//! newest complete raw turns that fit, and the omission is reported; when even the checkpoint
//! and the current turn are over the budget, fail-open sends exactly those (the smallest
//! source-derived context, reported `minimum_context_exceeds_budget`), never the larger raw log.

use serde::{Deserialize, Serialize};

use crate::budget::{ContextBudget, ModelFacts, TokenEstimator};
use crate::checkpoint::HistoryCompactCheckpoint;
use crate::compaction::native::ProviderIdentity;
use crate::diagnostics::{Diagnostic, ReasonCode, TokenFigures};
use crate::event::{LogError, RuntimeEvent};
use crate::projection::live_head::replay;
use crate::projection::materialize::estimate_messages;
use crate::projection::message::Message;
use crate::replay::evaluate_replay_with;
use crate::safe_prefix::select_fitting_tail;
use crate::verified_prefix::{FullVerification, PrefixVerifier};

/// Inputs of one projection.
#[derive(Debug, Clone, Copy)]
pub struct ProjectInput<'a> {
    /// The canonical log, in order (including the current turn, if any).
    pub events: &'a [RuntimeEvent],
    /// The turn being produced now.
    pub current_turn_id: Option<&'a str>,
    /// The latest compatible checkpoint, if any.
    pub checkpoint: Option<&'a HistoryCompactCheckpoint>,
    /// Facts about the selected model.
    pub model: &'a ModelFacts,
    /// The provider, connection and model of the request (V3 checkpoints need a match).
    pub provider: Option<&'a ProviderIdentity>,
    /// Fail-open mode, the mode a request is built in: when the normal projection does not fit
    /// (a compaction failed or could not shrink it enough), reuse a source-matched checkpoint
    /// with the newest complete raw turns that fit (none when the checkpoint and the current turn
    /// alone are over the budget), never widening its coverage. A projection
    /// that fits is the same in both modes (fail-open acts only on a checkpoint rejected for
    /// size, and the replay gate admits only checkpoints smaller than their source, so the raw
    /// history then cannot fit either). Off, the projection says whether the history fits as it
    /// is (what decides to compact).
    pub fail_open: bool,
}

/// The checkpoint a projection replayed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayedCheckpoint {
    /// Its id.
    pub checkpoint_id: String,
    /// Its schema version (2 or 3).
    pub schema_version: u32,
    /// Events it replaces.
    pub covered_events: u64,
}

/// The history of the next request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Projection {
    /// Checkpoint + raw tail + current turn.
    pub messages: Vec<Message>,
    /// Estimated tokens of `messages`.
    pub estimated_tokens: u64,
    /// The history budget in force.
    pub history_budget: u64,
    /// `estimated_tokens <= history_budget`.
    pub fits: bool,
    /// The checkpoint replayed, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<ReplayedCheckpoint>,
    /// Uncovered events left out in fail-open mode (0 otherwise).
    pub omitted_events: u64,
    /// Every decision taken.
    pub diagnostics: Vec<Diagnostic>,
}

/// Projects the next request's history, verifying from scratch. Errors only on a structurally
/// broken log.
pub fn project(
    input: &ProjectInput<'_>,
    estimator: &dyn TokenEstimator,
) -> Result<Projection, LogError> {
    project_with(input, estimator, &mut FullVerification::default())
}

/// [`project`] with a chosen prefix verifier: pass the session's
/// [`crate::verified_prefix::VerifiedPrefix`] so that steady state costs O(uncovered tail).
pub fn project_with(
    input: &ProjectInput<'_>,
    estimator: &dyn TokenEstimator,
    verifier: &mut dyn PrefixVerifier,
) -> Result<Projection, LogError> {
    let prior_end = verifier.check_log(input.events, input.current_turn_id)?;
    let budget = ContextBudget::from_model(input.model);
    let mut diagnostics = Vec::new();

    let mut replayed = None;
    let mut tail_start = 0;
    let mut omitted_events = 0;
    if let Some(checkpoint) = input.checkpoint {
        let gate = evaluate_replay_with(
            checkpoint,
            input.events,
            prior_end,
            &budget,
            input.provider,
            estimator,
            verifier,
        );
        match gate {
            Ok(plan) => {
                diagnostics.push(Diagnostic::with_tokens(
                    ReasonCode::CheckpointReplayed,
                    format!(
                        "checkpoint {} replaces {} events",
                        checkpoint.checkpoint_id, checkpoint.coverage.event_count
                    ),
                    TokenFigures {
                        before: plan.source_tokens + plan.replay_tokens - plan.checkpoint_tokens,
                        after: plan.total(),
                        budget: budget.history_budget,
                    },
                ));
                replayed = Some(checkpoint);
                tail_start = plan.covered;
            }
            Err(rejection) => {
                // A checkpoint over budget is reused only when the raw log does not fit either:
                // with its older observations masked (crate::prune) the raw log can be the
                // smaller request, and it is what a projection without fail-open sends.
                let reusable = rejection.plan.filter(|_| {
                    input.fail_open
                        && rejection.diagnostic.code == ReasonCode::CheckpointOverBudget
                        && !raw_fits(input, prior_end, &budget, estimator)
                });
                diagnostics.push(rejection.diagnostic);
                if let Some(plan) = reusable {
                    let minimum = plan.checkpoint_tokens + plan.current_tokens;
                    // When even the checkpoint and the current turn are over the budget, the
                    // smallest source-derived context is still the checkpoint and the current
                    // turn: never the whole raw log, which is larger still.
                    let start = match budget.history_budget.checked_sub(minimum) {
                        Some(room) => fitting_tail_start(
                            input,
                            checkpoint,
                            plan.covered,
                            prior_end,
                            room,
                            &budget,
                            estimator,
                        ),
                        None => {
                            diagnostics.push(Diagnostic::new(
                                ReasonCode::MinimumContextExceedsBudget,
                                format!(
                                    "fail-open: checkpoint {} and the current turn are about \
                                     {minimum} estimated tokens, over the history budget of {}",
                                    checkpoint.checkpoint_id, budget.history_budget
                                ),
                            ));
                            prior_end.max(plan.covered)
                        }
                    };
                    omitted_events = start.saturating_sub(plan.covered) as u64;
                    diagnostics.push(Diagnostic::new(
                        ReasonCode::PreviousCheckpointReused,
                        format!(
                            "fail-open: checkpoint {} reused for its own {} events; {} uncovered \
                             events left out, the newest complete turns kept",
                            checkpoint.checkpoint_id,
                            checkpoint.coverage.event_count,
                            omitted_events
                        ),
                    ));
                    replayed = Some(checkpoint);
                    tail_start = start;
                }
            }
        }
    }

    let replay =
        replay(replayed, input.events, prior_end, tail_start, budget.history_budget, estimator);
    diagnostics.extend(replay.diagnostics);
    let materialized = replay.materialized;
    let estimated_tokens = estimate_messages(estimator, &materialized.messages);
    diagnostics.extend(materialized.repairs.iter().map(|repair| repair.to_diagnostic()));
    let fits = estimated_tokens <= budget.history_budget;
    if !fits {
        diagnostics.push(Diagnostic::with_tokens(
            ReasonCode::ProjectionOverBudget,
            format!(
                "the projection is about {estimated_tokens} estimated tokens, over the history \
                 budget of {}: compact before the request, or the provider is likely to refuse it",
                budget.history_budget
            ),
            TokenFigures {
                before: estimated_tokens,
                after: estimated_tokens,
                budget: budget.history_budget,
            },
        ));
    }
    Ok(Projection {
        messages: materialized.messages,
        estimated_tokens,
        history_budget: budget.history_budget,
        fits,
        checkpoint: replayed.map(|cp| ReplayedCheckpoint {
            checkpoint_id: cp.checkpoint_id.clone(),
            schema_version: cp.schema_version(),
            covered_events: cp.coverage.event_count,
        }),
        omitted_events,
        diagnostics,
    })
}

/// Whether the whole log, replayed without a checkpoint (pruned), fits the history budget.
fn raw_fits(
    input: &ProjectInput<'_>,
    prior_end: usize,
    budget: &ContextBudget,
    estimator: &dyn TokenEstimator,
) -> bool {
    let replay = replay(None, input.events, prior_end, 0, budget.history_budget, estimator);
    estimate_messages(estimator, &replay.materialized.messages) <= budget.history_budget
}

/// The start of the newest complete raw turns that fit beside `checkpoint` and the current
/// turn, measured on the materialized messages (the event estimate picks a first candidate, then
/// the start moves forward until the real replay fits).
fn fitting_tail_start(
    input: &ProjectInput<'_>,
    checkpoint: &HistoryCompactCheckpoint,
    covered: usize,
    prior_end: usize,
    mut room: u64,
    budget: &ContextBudget,
    estimator: &dyn TokenEstimator,
) -> usize {
    loop {
        let start =
            select_fitting_tail(input.events, covered, prior_end, room, estimator).max(covered);
        let replay = replay(
            Some(checkpoint),
            input.events,
            prior_end,
            start,
            budget.history_budget,
            estimator,
        );
        let total = estimate_messages(estimator, &replay.materialized.messages);
        if total <= budget.history_budget || start >= prior_end {
            return start;
        }
        room = room.saturating_sub(total - budget.history_budget).min(room.saturating_sub(1));
    }
}
