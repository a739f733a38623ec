//! The design's ten architectural invariants, checked after every simulated step.

use contextfold_core::budget::{ContextBudget, estimate_events};
use contextfold_core::checkpoint::{
    checkpoint_tokens, match_checkpoint_prefix, split_current_turn,
};
use contextfold_core::compaction::{CompactionOutcome, OutcomeKind, Trigger};
use contextfold_core::digest::digest_prefix;
use contextfold_core::projection::{Part, ProjectInput, Projection, Remainder, project};
use contextfold_core::{
    CharEstimator, EventContent, HistoryCompactCheckpoint, ReasonCode, RuntimeEvent,
};

use crate::world::Sim;

/// Projects the next request and checks invariants 5 (current-policy validation) and 6 (raw
/// recent tail).
pub(crate) fn check_projection(sim: &Sim, current: Option<&str>, fail_open: bool) -> Projection {
    let checkpoint = sim.ledger.latest("sim");
    let input = ProjectInput {
        events: sim.events(),
        current_turn_id: current,
        checkpoint: checkpoint.as_ref(),
        model: &sim.model,
        provider: Some(&sim.provider),
        fail_open,
    };
    let projection = project(&input, &CharEstimator).expect("valid log");
    let budget = ContextBudget::from_model(&sim.model).history_budget;
    let prior_end = split_current_turn(sim.events(), current).expect("suffix");
    let (prior, current_events) = sim.events().split_at(prior_end);

    // 5. Current-policy validation: a replayed checkpoint fits the budget in force now, with
    // the live head and the uncovered current turn beside it.
    if let (Some(replayed), Some(cp)) = (&projection.checkpoint, checkpoint.as_ref()) {
        assert_eq!(replayed.checkpoint_id, cp.checkpoint_id);
        let rest = Remainder::split(sim.events(), prior_end, cp.coverage.event_count as usize);
        let cp_tokens = checkpoint_tokens(cp, &CharEstimator);
        let head: Vec<RuntimeEvent> = rest.head.iter().map(|e| (*e).clone()).collect();
        let fixed =
            estimate_events(&CharEstimator, &head) + estimate_events(&CharEstimator, rest.current);
        let minimum_over = fail_open
            && projection
                .diagnostics
                .iter()
                .any(|d| d.code == ReasonCode::MinimumContextExceedsBudget);
        if minimum_over {
            // Nothing source-derived fits: fail-open sends the checkpoint and the current turn
            // alone, never a raw prior event beside them.
            let covered = cp.coverage.event_count as usize + projection.omitted_events as usize;
            assert!(covered >= prior_end, "seed {}: raw prior events beside the minimum", sim.seed);
        } else {
            // Masked observations of the current turn (prune::stale) may be what makes it fit.
            let masked =
                projection.diagnostics.iter().any(|d| d.code == ReasonCode::StaleToolResultsPruned);
            assert!(
                masked || cp_tokens + fixed <= budget,
                "seed {}: replayed over budget",
                sim.seed
            );
        }
        if !fail_open {
            assert!(projection.estimated_tokens <= budget, "seed {}: gate bypassed", sim.seed);
            let pruned =
                projection.diagnostics.iter().any(|d| d.code == ReasonCode::StaleToolResultsPruned);
            let tail = estimate_events(&CharEstimator, rest.tail);
            assert!(
                pruned || cp_tokens + tail + fixed <= budget,
                "seed {}: gate bypassed",
                sim.seed
            );
        }
    } else if let Some(cp) = checkpoint.as_ref() {
        assert!(
            !projection.diagnostics.is_empty(),
            "seed {}: checkpoint {} silently not replayed",
            sim.seed,
            cp.checkpoint_id
        );
    }

    // 6. Raw recent tail: every uncovered user text (and the current turn) is in the request,
    // unless fail-open omitted uncovered events and said so.
    let covered = projection.checkpoint.as_ref().map_or(0, |c| c.covered_events as usize);
    let texts: Vec<&str> = projection
        .messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match p {
            Part::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let skip = covered + projection.omitted_events as usize;
    for event in prior[skip.min(prior.len())..].iter().chain(current_events) {
        if let EventContent::UserText { text, .. } = &event.content {
            assert!(texts.contains(&text.as_str()), "seed {}: raw tail lost {text:?}", sim.seed);
        }
    }
    if projection.omitted_events > 0 {
        assert!(fail_open, "seed {}: events omitted outside fail-open", sim.seed);
        assert!(
            projection.diagnostics.iter().any(|d| d.code == ReasonCode::PreviousCheckpointReused)
        );
    }
    projection
}

/// Checks invariants 1-4 and 7-10 after one compaction.
#[allow(clippy::too_many_arguments)]
pub(crate) fn check_compaction(
    sim: &Sim,
    before_log: &[RuntimeEvent],
    before_ledger: usize,
    previous: Option<&HistoryCompactCheckpoint>,
    outcome: &CompactionOutcome,
    durable: &[HistoryCompactCheckpoint],
    trigger: Trigger,
    current: Option<&str>,
) {
    let seed = sim.seed;
    // 1. Source immutability: compaction changed no canonical event.
    assert_eq!(sim.events(), before_log, "seed {seed}: log changed");
    assert_eq!(digest_prefix(sim.events()), digest_prefix(before_log));

    // 2. Projection coverage: every recorded checkpoint binds to the current log's prefix.
    for record in &sim.ledger.records {
        let cp =
            HistoryCompactCheckpoint::from_value(record.payload.clone()).expect("schema-valid");
        assert!(
            match_checkpoint_prefix(&cp, sim.events()).is_ok(),
            "seed {seed}: {} lost coverage",
            cp.checkpoint_id
        );
    }

    // 3. No durability, no replacement: the outcome's checkpoint is the last one durably
    // appended (rolling steps may append several), and the ledger grew by exactly those.
    assert_eq!(sim.ledger.records.len(), before_ledger + durable.len(), "seed {seed}: ledger");
    match &outcome.checkpoint {
        Some(cp) => {
            assert_eq!(durable.last(), Some(cp), "seed {seed}: checkpoint was never made durable");
            assert!(matches!(outcome.outcome, OutcomeKind::Recorded | OutcomeKind::Exhausted));
            let latest = sim.ledger.latest("sim").expect("recorded");
            // 8. Projection is rebuildable: recovery from the ledger finds the accepted one.
            assert_eq!(&latest, cp, "seed {seed}: recovery disagrees with the accepted checkpoint");
        }
        None => {
            assert!(durable.is_empty(), "seed {seed}: a durable step went unreported");
            assert_ne!(outcome.outcome, OutcomeKind::Recorded);
        }
    }

    // 4. Monotonic high water, and 7. no false coverage: each step names the one before it,
    // covers more, and is smaller than the source it replaces (the live head, replayed beside
    // it, excluded).
    let mut tip = previous;
    for cp in durable {
        if let Some(prev) = tip {
            assert!(cp.coverage.event_count >= prev.coverage.event_count, "seed {seed}: regressed");
            assert_eq!(cp.previous_checkpoint_id.as_deref(), Some(prev.checkpoint_id.as_str()));
        }
        let covered = cp.coverage.event_count as usize;
        let prior_end = before_log
            .iter()
            .position(|e| Some(e.turn_id.as_str()) == current)
            .unwrap_or(before_log.len());
        let head: Vec<RuntimeEvent> =
            Remainder::split(before_log, prior_end, covered).head.into_iter().cloned().collect();
        let tokens = checkpoint_tokens(cp, &CharEstimator);
        let source = estimate_events(&CharEstimator, &before_log[..covered])
            - estimate_events(&CharEstimator, &head);
        assert!(tokens < source, "seed {seed}: compacted context not smaller than its source");
        tip = Some(cp);
    }
    if outcome.checkpoint.is_none() {
        assert_eq!(
            sim.ledger.latest("sim").as_ref(),
            previous,
            "seed {seed}: coverage moved on failure"
        );
    }

    // 9. Failure is observable.
    assert!(
        outcome.diagnostics.iter().any(|d| d.code == outcome.reason),
        "seed {seed}: reason {} has no diagnostic",
        outcome.reason
    );
    if outcome.outcome == OutcomeKind::FailedOpen && trigger == Trigger::Manual {
        assert!(matches!(
            &outcome.failure_note,
            Some(EventContent::RuntimeNote { code, .. }) if code == "context_compaction_failed_open"
        ));
    } else {
        assert!(outcome.failure_note.is_none(), "seed {seed}: note outside manual fail-open");
    }

    // 10. Authority is preserved: no checkpoint text became a RuntimeEvent.
    if let Some(summary) = outcome.checkpoint.as_ref().and_then(|c| c.summary()) {
        assert!(sim.events().iter().all(|e| match &e.content {
            EventContent::SystemNote { text } | EventContent::AssistantText { text } =>
                text != summary,
            _ => true,
        }));
    }
}
