//! Property tests of `project` over generated sessions, checkpoints and windows:
//! (a) a projection fits its budget whenever a fitting projection exists (the checkpoint's
//! replay passes the gate, or the raw history fits); (b) it is deterministic, and appending a
//! new turn never changes what was projected before it; (c) every tool call in it has exactly
//! one result, after the call. Appending completed turns may change earlier messages in one way
//! only, by design: the moving recent-turn window of stale pruning replaces an older oversized
//! tool result with its placeholder (the log and any checkpoint digest are untouched).

use std::collections::HashMap;

use contextfold_core::budget::ContextBudget;
use contextfold_core::checkpoint::{
    HighWater, coverage_of, evaluate_replay, safe_boundaries, split_current_turn,
};
use contextfold_core::projection::{
    Message, Part, ProjectInput, Projection, estimate_messages, materialize, project,
};
use contextfold_core::{
    CharEstimator, CheckpointProjection, HistoryCompactCheckpoint, LogBuilder, ModelFacts,
    ReasonCode, RuntimeEvent,
};
use proptest::prelude::*;
use serde_json::json;

/// One agent step: parallel calls of one response, each with a result size (`None`: the call
/// was interrupted and has no result).
#[derive(Debug, Clone)]
struct Step {
    results: Vec<Option<usize>>,
}

#[derive(Debug, Clone)]
struct Turn {
    request_chars: usize,
    steps: Vec<Step>,
    answer_chars: usize,
}

fn result_size() -> impl Strategy<Value = Option<usize>> {
    prop_oneof![
        1 => Just(None),
        4 => Just(Some(40)),
        4 => Just(Some(1_200)),
        2 => Just(Some(6_000)),
        1 => Just(Some(18_000)), // above the stale-pruning threshold
    ]
}

fn turn() -> impl Strategy<Value = Turn> {
    (
        10usize..400,
        prop::collection::vec(prop::collection::vec(result_size(), 1..4), 0..3),
        0usize..300,
    )
        .prop_map(|(request_chars, steps, answer_chars)| Turn {
            request_chars,
            steps: steps.into_iter().map(|results| Step { results }).collect(),
            answer_chars,
        })
}

fn text(chars: usize, seed: usize) -> String {
    let base = format!("word{seed} fix src/lib.rs and run cargo test; ");
    base.repeat(chars / base.len() + 1)[..chars].to_owned()
}

fn append_turn(log: &mut LogBuilder, n: usize, turn: &Turn, complete: bool) {
    log.turn(&format!("t{n}")).response(None).user(&text(turn.request_chars.max(1), n));
    for (s, step) in turn.steps.iter().enumerate() {
        log.response(Some(&format!("r{n}-{s}")));
        for c in 0..step.results.len() {
            log.tool_call(&format!("c{n}-{s}-{c}"), "shell", json!({"cmd": format!("step {s}")}));
        }
        log.response(None);
        for (c, size) in step.results.iter().enumerate() {
            if let Some(size) = size {
                log.tool_result(&format!("c{n}-{s}-{c}"), "shell", json!(text(*size, c)));
            }
        }
    }
    if complete && turn.answer_chars > 0 {
        log.response(Some(&format!("r{n}-final")))
            .assistant(&text(turn.answer_chars, n))
            .response(None);
    }
}

fn build(turns: &[Turn]) -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new("s1");
    for (n, turn) in turns.iter().enumerate() {
        append_turn(&mut log, n + 1, turn, true);
    }
    log.build()
}

fn window() -> impl Strategy<Value = u64> {
    prop_oneof![Just(2_000u64), Just(4_000), Just(8_000), Just(16_000), Just(32_000), Just(128_000)]
}

/// A V2 checkpoint over the `pick`-th safe boundary of the prior history, with a summary of
/// `summary_chars` characters; `None` when there is no safe boundary or `pick` says so.
fn checkpoint_for(
    events: &[RuntimeEvent],
    current: Option<&str>,
    pick: Option<prop::sample::Index>,
    summary_chars: usize,
) -> Option<HistoryCompactCheckpoint> {
    let boundaries = safe_boundaries(events, current).expect("valid log");
    if boundaries.is_empty() {
        return None;
    }
    let end = *pick?.get(&boundaries);
    Some(HistoryCompactCheckpoint {
        checkpoint_id: "cp-1".into(),
        session_id: "s1".into(),
        created_at_ms: 1,
        high_water: HighWater { name: "pre_turn".into(), seq: events[end - 1].seq },
        coverage: coverage_of(&events[..end])?,
        projection: CheckpointProjection::Summary(format!("## Goal\n{}", text(summary_chars, 7))),
        limitations: Vec::new(),
        estimated_tokens: 0,
        previous_checkpoint_id: None,
        produced_by: None,
        manifest: None,
    })
}

fn run_project(
    events: &[RuntimeEvent],
    current: Option<&str>,
    checkpoint: Option<&HistoryCompactCheckpoint>,
    model: &ModelFacts,
) -> Projection {
    project(
        &ProjectInput {
            events,
            current_turn_id: current,
            checkpoint,
            model,
            provider: None,
            fail_open: false,
        },
        &CharEstimator,
    )
    .expect("valid log")
}

/// Every ordinary call has exactly one result, and it comes after the call.
fn assert_paired(messages: &[Message]) -> Result<(), TestCaseError> {
    let mut calls: HashMap<&str, usize> = HashMap::new();
    let mut results: HashMap<&str, usize> = HashMap::new();
    for part in messages.iter().flat_map(|m| &m.parts) {
        match part {
            Part::ToolCall { call_id, .. } => {
                *calls.entry(call_id).or_default() += 1;
            }
            Part::ToolResult { call_id, .. } => {
                prop_assert!(
                    calls.contains_key(call_id.as_str()),
                    "result {call_id} before its call"
                );
                *results.entry(call_id).or_default() += 1;
            }
            _ => {}
        }
    }
    for (call, n) in &calls {
        prop_assert_eq!(*n, 1, "call {} appears {} times", call, n);
        prop_assert_eq!(
            results.get(call).copied(),
            Some(1),
            "call {} needs exactly one result",
            call
        );
    }
    prop_assert_eq!(calls.len(), results.len());
    Ok(())
}

/// `after` starts with `before`'s messages, except results whose output is the pruning
/// placeholder on one side (a stale or masked result, pruned in an epoch). Either side: a
/// request that names no current turn keys stale results earlier than one that does, so the
/// two may close their epochs on different candidates (prune::request; the epochs are stable
/// while a session names its current turn the same way, which tests/tests/cache_stability
/// checks request by request).
fn changed_only_by_pruning(before: &[Message], after: &[Message]) -> Result<(), TestCaseError> {
    let is_placeholder = |output: &serde_json::Value| {
        output.as_str().is_some_and(|text| text.starts_with("[stale tool result omitted"))
    };
    for (old, new) in before.iter().zip(after) {
        prop_assert_eq!(old.role, new.role);
        prop_assert_eq!(old.parts.len(), new.parts.len());
        for (a, b) in old.parts.iter().zip(&new.parts) {
            if a == b {
                continue;
            }
            // The only allowed change: a result became (or is not yet) a placeholder.
            let (
                Part::ToolResult { call_id: id_a, output: out_a, .. },
                Part::ToolResult { call_id: id_b, output: out_b, .. },
            ) = (a, b)
            else {
                return Err(TestCaseError::fail(format!("part changed: {a:?} -> {b:?}")));
            };
            prop_assert_eq!(id_a, id_b);
            prop_assert!(
                is_placeholder(out_a) || is_placeholder(out_b),
                "{:?} -> {:?}",
                out_a,
                out_b
            );
        }
    }
    Ok(())
}

/// Session, window and an optional checkpoint of the prior history.
fn scenario() -> impl Strategy<Value = (Vec<Turn>, Turn, u64, Option<prop::sample::Index>, usize)> {
    (
        prop::collection::vec(turn(), 1..9),
        turn(),
        window(),
        prop::option::weighted(0.7, any::<prop::sample::Index>()),
        20usize..3_000,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn a_projection_fits_whenever_a_fitting_projection_exists(
        (turns, current_turn, window, pick, summary_chars) in scenario()
    ) {
        let mut log = LogBuilder::extend(build(&turns));
        let current = format!("t{}", turns.len() + 1);
        append_turn(&mut log, turns.len() + 1, &current_turn, false);
        let events = log.build();
        let model = ModelFacts { context_window: Some(window), ..Default::default() };
        let budget = ContextBudget::from_model(&model);
        let checkpoint = checkpoint_for(&events, Some(&current), pick, summary_chars);
        let projection = run_project(&events, Some(&current), checkpoint.as_ref(), &model);

        prop_assert_eq!(projection.estimated_tokens, estimate_messages(&CharEstimator, &projection.messages));
        prop_assert_eq!(projection.fits, projection.estimated_tokens <= budget.history_budget);
        // A projection that does not fit says so, once, with its figures; one that fits never.
        let over: Vec<_> = projection.diagnostics.iter()
            .filter(|d| d.code == ReasonCode::ProjectionOverBudget)
            .collect();
        prop_assert_eq!(over.len(), usize::from(!projection.fits));
        if let Some(diagnostic) = over.first() {
            prop_assert_eq!(diagnostic.tokens.map(|t| (t.after, t.budget)), Some((projection.estimated_tokens, budget.history_budget)));
        }
        let prior_end = split_current_turn(&events, Some(&current)).expect("suffix");
        let (prior, now) = events.split_at(prior_end);
        let raw = estimate_messages(&CharEstimator, &materialize(None, prior, now).messages);
        if raw <= budget.history_budget {
            prop_assert!(projection.fits, "raw history fits ({raw}) but the projection does not");
        }
        if let Some(cp) = &checkpoint {
            if evaluate_replay(cp, &events, prior_end, &budget, None, &CharEstimator).is_ok() {
                prop_assert!(projection.fits, "the checkpoint's replay fits but the projection does not");
                prop_assert_eq!(projection.checkpoint.as_ref().map(|c| c.covered_events), Some(cp.coverage.event_count));
            } else {
                prop_assert!(projection.checkpoint.is_none(), "a rejected checkpoint was replayed");
            }
        }
        assert_paired(&projection.messages)?;
    }

    #[test]
    fn a_projection_is_deterministic_and_appending_a_turn_keeps_its_prefix(
        (turns, next_turn, window, pick, summary_chars) in scenario()
    ) {
        let base = build(&turns);
        let model = ModelFacts { context_window: Some(window), ..Default::default() };
        let checkpoint = checkpoint_for(&base, None, pick, summary_chars);
        let before = run_project(&base, None, checkpoint.as_ref(), &model);
        let again = run_project(&base.clone(), None, checkpoint.clone().as_ref(), &model);
        prop_assert_eq!(
            serde_json::to_vec(&before.messages).expect("json"),
            serde_json::to_vec(&again.messages).expect("json")
        );
        prop_assert_eq!(&before.diagnostics, &again.diagnostics);

        let mut log = LogBuilder::extend(base.clone());
        let current = format!("t{}", turns.len() + 1);
        append_turn(&mut log, turns.len() + 1, &next_turn, false);
        let after = run_project(log.events(), Some(&current), checkpoint.as_ref(), &model);
        assert_paired(&after.messages)?;
        if after.checkpoint == before.checkpoint {
            prop_assert!(after.messages.len() >= before.messages.len());
            // Only pruning may change it: the new turn's results can make older results masked
            // (`KEPT_RECENT_RESULTS` newer ones follow them).
            changed_only_by_pruning(&before.messages, &after.messages)?;
        }
    }

    #[test]
    fn appending_completed_turns_changes_earlier_messages_only_by_stale_pruning(
        (turns, extra, window, pick, summary_chars) in scenario()
    ) {
        let base = build(&turns);
        let model = ModelFacts { context_window: Some(window), ..Default::default() };
        let checkpoint = checkpoint_for(&base, None, pick, summary_chars);
        let before = run_project(&base, None, checkpoint.as_ref(), &model);
        let mut log = LogBuilder::extend(base);
        for k in 1..=3 {
            append_turn(&mut log, turns.len() + k, &extra, k < 3);
        }
        let current = format!("t{}", turns.len() + 3);
        let after = run_project(log.events(), Some(&current), checkpoint.as_ref(), &model);
        if after.checkpoint == before.checkpoint {
            changed_only_by_pruning(&before.messages, &after.messages)?;
        }
    }
}
