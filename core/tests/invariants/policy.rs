//! Invariants 5 (current-policy validation) and 6 (raw recent tail).

use contextfold_core::budget::{ContextBudget, estimate_events};
use contextfold_core::projection::Part;
use contextfold_core::projection::live_head::Remainder;
use contextfold_core::replay::checkpoint_tokens;
use contextfold_core::safe_prefix::split_current_turn;
use contextfold_core::{CharEstimator, EventContent, ReasonCode};
use proptest::prelude::*;

use crate::scenario::{Driver, scenario};

proptest! {
    #![proptest_config(crate::config())]

    /// 5. A checkpoint replays only if it fits the budget in force now (the model window may
    /// have shrunk since it was recorded): checkpoint + live head + uncovered tail + uncovered
    /// current turn within the current history budget, and smaller than the source it replaces.
    #[test]
    fn invariant_05_current_policy_validation(case in scenario()) {
        let trace = Driver::run(case);
        for p in &trace.projections {
            let Some(replayed) = &p.projection.checkpoint else {
                if p.checkpoint.is_some() {
                    prop_assert!(!p.projection.diagnostics.is_empty(), "checkpoint silently not replayed");
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
            let head: Vec<_> = rest.head.iter().map(|e| (*e).clone()).collect();
            let fixed = estimate_events(&CharEstimator, &head) + estimate_events(&CharEstimator, rest.current);
            prop_assert!(cp_tokens + fixed <= budget, "replayed over the current budget");
            if !p.fail_open {
                prop_assert!(p.projection.estimated_tokens <= budget, "replay gate bypassed");
                // Without stale pruning the request carries the raw tail itself.
                let pruned = p.projection.diagnostics.iter().any(|d| d.code == ReasonCode::StaleToolResultsPruned);
                let tail = estimate_events(&CharEstimator, rest.tail);
                prop_assert!(pruned || cp_tokens + tail + fixed <= budget, "replay gate bypassed");
            }
            let source = estimate_events(&CharEstimator, &p.events[..covered])
                - estimate_events(&CharEstimator, &head);
            prop_assert!(cp_tokens < source, "replacement not smaller than its source");
        }
    }

    /// 6. The model keeps the newest raw source: every user message after the replayed
    /// coverage, and the whole current turn, appear verbatim in the request; events are
    /// omitted only on a fail-open path that says so.
    #[test]
    fn invariant_06_raw_recent_tail(case in scenario()) {
        let trace = Driver::run(case);
        for p in &trace.projections {
            let prior_end = split_current_turn(&p.events, p.current_turn.as_deref()).expect("suffix");
            let (prior, current) = p.events.split_at(prior_end);
            let texts: Vec<&str> = p.projection.messages.iter().flat_map(|m| m.parts.iter())
                .filter_map(|part| match part { Part::Text { text } => Some(text.as_str()), _ => None })
                .collect();
            let covered = p.projection.checkpoint.as_ref().map_or(0, |c| c.covered_events as usize);
            let skip = (covered + p.projection.omitted_events as usize).min(prior.len());
            for event in prior[skip..].iter().chain(current) {
                if let EventContent::UserText { text, .. } = &event.content {
                    prop_assert!(texts.contains(&text.as_str()), "raw tail lost {:?}", text);
                }
            }
            if p.projection.omitted_events > 0 {
                prop_assert!(p.fail_open, "events omitted outside fail-open");
                prop_assert!(p.projection.diagnostics.iter().any(|d| d.code == ReasonCode::PreviousCheckpointReused));
            }
        }
    }
}
