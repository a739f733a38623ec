//! Invariants 5 (current-policy validation) and 6 (raw recent tail).

use contextfold_core::budget::{ContextBudget, estimate_events};
use contextfold_core::checkpoint::{checkpoint_tokens, split_current_turn};
use contextfold_core::projection::{Part, Remainder};
use contextfold_core::{CharEstimator, EventContent, ReasonCode, RuntimeEvent};
use proptest::prelude::*;

use crate::scenario::{Driver, Trace, scenario};

/// Invariant 5: A checkpoint replays only if it fits the budget in force now (the model window may
/// have shrunk since it was recorded): checkpoint + live head + uncovered tail + uncovered
/// current turn within the current history budget, and smaller than the source it replaces.
#[test]
fn invariant_05_current_policy_validation() {
    crate::check("invariant_05_current_policy_validation", scenario(), |case| {
        current_policy_holds(&Driver::run(case))
    })
}

/// Invariant 6: The model keeps the newest raw source: every event after the replayed coverage reaches
/// the request (user, assistant and note text verbatim; every call and every result by id,
/// outputs possibly pruned to a placeholder; partial events left out with a diagnostic), the
/// current turn's user messages always do (its live head, even when a mid-turn fold covers
/// them); events are omitted only on a fail-open path that says so.
#[test]
fn invariant_06_raw_recent_tail() {
    crate::check("invariant_06_raw_recent_tail", scenario(), |case| {
        raw_tail_holds(&Driver::run(case))
    })
}

/// Invariant 5 on one trace.
pub(crate) fn current_policy_holds(trace: &Trace) -> Result<(), TestCaseError> {
    for p in &trace.projections {
        let Some(replayed) = &p.projection.checkpoint else {
            if p.checkpoint.is_some() {
                prop_assert!(
                    !p.projection.diagnostics.is_empty(),
                    "checkpoint silently not replayed"
                );
            }
            continue;
        };
        let cp = p.checkpoint.as_ref().expect("replayed from the current checkpoint");
        prop_assert_eq!(&replayed.checkpoint_id, &cp.checkpoint_id);
        let budget = ContextBudget::from_model(&p.model).history_budget;
        prop_assert_eq!(p.projection.history_budget, budget);
        let prior_end = split_current_turn(&p.events, p.current_turn.as_deref()).expect("suffix");
        let covered = cp.coverage.event_count as usize;
        // What follows the checkpoint: the live head (covered messages of the current turn,
        // replayed), the uncovered prior tail, the uncovered current turn.
        let rest = Remainder::split(&p.events, prior_end, covered);
        let cp_tokens = checkpoint_tokens(cp, &CharEstimator);
        // Partial (streaming or abandoned) events never reach the request.
        // Nor do results whose call is folded or omitted before the raw part (late results of
        // calls the agent had moved on from; the projection reports them as orphans).
        let raw_prior = (covered + p.projection.omitted_events as usize).min(prior_end);
        let gone = |e: &RuntimeEvent| {
            match &e.content {
            EventContent::ToolResult { call_id, .. } => p.events[..raw_prior].iter().any(|c| {
                matches!(&c.content, EventContent::ToolCall { call_id: id, .. } if id == call_id)
            }),
            _ => false,
        }
        };
        let complete = |events: &[RuntimeEvent]| -> Vec<RuntimeEvent> {
            events.iter().filter(|e| !e.partial && !gone(e)).cloned().collect()
        };
        let head: Vec<_> = rest.head.iter().map(|e| (*e).clone()).filter(|e| !e.partial).collect();
        let fixed = estimate_events(&CharEstimator, &head)
            + estimate_events(&CharEstimator, &complete(rest.current));
        let minimum_over = p.fail_open
            && p.projection
                .diagnostics
                .iter()
                .any(|d| d.code == ReasonCode::MinimumContextExceedsBudget);
        if minimum_over {
            // Nothing source-derived fits: fail-open sends the checkpoint and the current turn
            // alone (the smallest such context), never a raw prior event beside them.
            prop_assert_eq!(raw_prior, prior_end, "raw prior events beside an over-budget minimum");
        } else {
            prop_assert!(cp_tokens + fixed <= budget, "replayed over the current budget");
        }
        if !p.fail_open {
            prop_assert!(p.projection.estimated_tokens <= budget, "replay gate bypassed");
            // Without stale pruning the request carries the raw tail itself.
            let pruned = p
                .projection
                .diagnostics
                .iter()
                .any(|d| d.code == ReasonCode::StaleToolResultsPruned);
            let tail = estimate_events(&CharEstimator, &complete(rest.tail));
            prop_assert!(pruned || cp_tokens + tail + fixed <= budget, "replay gate bypassed");
        }
        let source = estimate_events(&CharEstimator, &p.events[..covered])
            - estimate_events(&CharEstimator, &head);
        prop_assert!(cp_tokens < source, "replacement not smaller than its source");
    }
    Ok(())
}

/// Invariant 6 on one trace.
pub(crate) fn raw_tail_holds(trace: &Trace) -> Result<(), TestCaseError> {
    for p in &trace.projections {
        let prior_end = split_current_turn(&p.events, p.current_turn.as_deref()).expect("suffix");
        let (prior, current) = p.events.split_at(prior_end);
        let texts: Vec<&str> = p
            .projection
            .messages
            .iter()
            .flat_map(|m| m.parts.iter())
            .filter_map(|part| match part {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let covered = p.projection.checkpoint.as_ref().map_or(0, |c| c.covered_events as usize);
        // Raw from here on: after the coverage (which may reach into the current turn, a
        // mid-turn fold) or after what a fail-open path omitted from the prior tail.
        let raw_from = if covered > prior.len() {
            covered
        } else {
            (covered + p.projection.omitted_events as usize).min(prior.len())
        };
        // The current turn's own user messages are its live head: replayed even when covered.
        for event in &current[..raw_from.saturating_sub(prior.len())] {
            if let EventContent::UserText { text, .. } = &event.content {
                prop_assert!(texts.contains(&text.as_str()), "live head lost {:?}", text);
            }
        }
        let (mut calls, mut results) = (Vec::new(), Vec::new());
        for part in p.projection.messages.iter().flat_map(|m| m.parts.iter()) {
            match part {
                Part::ToolCall { call_id, .. } => calls.push(call_id.as_str()),
                Part::ToolResult { call_id, .. } => results.push(call_id.as_str()),
                _ => {}
            }
        }
        let partial_noted =
            p.projection.diagnostics.iter().any(|d| d.code == ReasonCode::PartialEventsLeftOut);
        for event in &p.events[raw_from..] {
            if event.partial {
                // A streaming (or abandoned) partial step is left out, and the request says so.
                prop_assert!(partial_noted, "partial {} left out silently", event.runtime_event_id);
                continue;
            }
            match &event.content {
                EventContent::UserText { text, .. }
                | EventContent::AssistantText { text }
                | EventContent::SystemNote { text } => {
                    prop_assert!(texts.contains(&text.as_str()), "raw tail lost {:?}", text);
                }
                EventContent::RuntimeNote { text, .. } => {
                    prop_assert!(
                        texts.iter().any(|t| t.contains(text.as_str())),
                        "raw tail lost note {:?}",
                        text
                    );
                }
                EventContent::ToolCall { call_id, .. }
                | EventContent::HostedToolCall { call_id, .. } => {
                    prop_assert!(
                        calls.contains(&call_id.as_str()),
                        "raw tail lost call {}",
                        call_id
                    );
                }
                // Outputs may be pruned to a placeholder; the result itself stays. A result
                // recorded after its call was already folded as interrupted (the agent had moved
                // on) has no call left to answer: it is dropped, and the request says so.
                EventContent::ToolResult { call_id, .. }
                | EventContent::HostedToolResult { call_id, .. } => {
                    let call_covered = p.events[..raw_from].iter().any(|e| {
                        matches!(&e.content, EventContent::ToolCall { call_id: c, .. }
                            | EventContent::HostedToolCall { call_id: c, .. } if c == call_id)
                    });
                    let reported = p
                        .projection
                        .diagnostics
                        .iter()
                        .any(|d| d.code == ReasonCode::OrphanToolResultDropped);
                    prop_assert!(
                        results.contains(&call_id.as_str()) || (call_covered && reported),
                        "raw tail lost the result of {}",
                        call_id
                    );
                }
                _ => {}
            }
        }
        if p.projection.omitted_events > 0 {
            prop_assert!(p.fail_open, "events omitted outside fail-open");
            prop_assert!(
                p.projection
                    .diagnostics
                    .iter()
                    .any(|d| d.code == ReasonCode::PreviousCheckpointReused)
            );
        }
    }
    Ok(())
}
