//! Long agent turns: active-turn folding (settled steps of the current turn are covered, its
//! task replayed), rolling steps when the compactor input cannot take the whole fold, the
//! reserved tail that never blocks the only useful fold, and measured fail-open figures.

use contextfold_core::checkpoint::{safe_boundaries, split_current_turn};
use contextfold_core::compaction::{
    Compaction, EXTRACTIVE_PRODUCER, Effect, FinishReason, OutcomeKind, ProviderFailureKind,
    RAW_TAIL_SHARE_PERCENT, Step, SummaryResponse, Trigger, extractive_summary,
};
use contextfold_core::projection::{Part, ProjectInput, project};
use contextfold_core::{
    CharEstimator, HistoryCompactCheckpoint, LogBuilder, ModelFacts, ReasonCode,
};
use serde_json::json;

use crate::driver::{
    append_ok, assert_raw_tail_share, drive, drive_extractive, summary, summary_failure,
};
use crate::support::{
    SESSION, codes, end_of_turn, good_summary, input, long_summary, provider, session,
    start_current_turn, v2_checkpoint, window,
};

/// History budget 6,000 tokens.
const WINDOW: u64 = 8_000;
const TASK: &str = "Fix the flaky test in crates/net/src/retry.rs without changing its public API.";

/// Adds the active turn `now`: the task, then `steps` model steps (one call and a result of
/// `result_chars` characters each), then one small newest step.
fn active_turn(log: &mut LogBuilder, steps: usize, result_chars: usize) -> String {
    active_turn_with_inputs(log, steps, result_chars, 0)
}

/// [`active_turn`] whose calls also carry `input_chars` characters of file content (a call
/// input is never omitted from a summarizer request, unlike a result).
fn active_turn_with_inputs(
    log: &mut LogBuilder,
    steps: usize,
    result_chars: usize,
    input_chars: usize,
) -> String {
    log.turn("now").user(TASK);
    for step in 0..steps {
        let call = format!("now-c{step}");
        let content = "x".repeat(input_chars);
        let input = json!({"cmd": format!("cat src/part_{step}.rs"), "content": content});
        log.response(Some(&format!("now-r{step}")))
            .reasoning("which file next?")
            .tool_call(&call, "shell", input)
            .response(None)
            .tool_result(&call, "shell", json!("fn retry() {}\n".repeat(result_chars / 14 + 1)));
    }
    log.response(Some("now-last")).tool_call("now-last", "shell", json!({"cmd": "ls"}));
    log.response(None).tool_result("now-last", "shell", json!("Cargo.toml src"));
    "now".into()
}

fn projected(
    events: &[contextfold_core::RuntimeEvent],
    current: &str,
    checkpoint: Option<&HistoryCompactCheckpoint>,
    fail_open: bool,
) -> contextfold_core::projection::Projection {
    let model = window(WINDOW);
    let provider = provider();
    let input = ProjectInput {
        events,
        current_turn_id: Some(current),
        checkpoint,
        model: &model,
        provider: Some(&provider),
        fail_open,
    };
    project(&input, &CharEstimator).expect("valid log")
}

fn texts(projection: &contextfold_core::projection::Projection) -> Vec<&str> {
    let parts = projection.messages.iter().flat_map(|m| m.parts.iter());
    parts
        .filter_map(|p| if let Part::Text { text } = p { Some(text.as_str()) } else { None })
        .collect()
}

#[test]
fn a_session_whose_only_turn_is_active_shrinks_mid_turn() {
    let mut log = LogBuilder::new(SESSION);
    let current = active_turn(&mut log, 30, 3_000);
    let events = log.events().to_vec();
    let run = drive(
        input(Trigger::MidTurn, &events, Some(&current), None, window(WINDOW)),
        vec![summary(long_summary("active", 1_200)), append_ok()],
    );
    assert_eq!(run.outcome.outcome, OutcomeKind::Recorded, "{:?}", codes(&run.outcome));
    let recorded = run.outcome.checkpoint.as_ref().expect("recorded");
    assert_eq!(recorded.high_water.name, "mid_turn");
    let covered = recorded.coverage.event_count as usize;
    let cuts = safe_boundaries(&events, Some(&current)).expect("suffix");
    assert!(cuts.contains(&covered), "coverage ends after a settled step");
    // The newest steps stay raw, within their share of the budget: the trigger's verbatim tail.
    assert_raw_tail_share(
        &events,
        &cuts,
        covered,
        run.outcome.tokens.budget,
        RAW_TAIL_SHARE_PERCENT,
    );
    let projection = projected(&events, &current, Some(recorded), false);
    assert!(projection.fits);
    assert_eq!(projection.estimated_tokens, run.outcome.tokens.after, "figures are measured");
    let texts = texts(&projection);
    assert_eq!(texts.iter().filter(|t| **t == TASK).count(), 1, "the task is replayed verbatim");
    // Order: checkpoint, the live head (the task), then the raw steps.
    assert!(texts[0].contains("history_compact_checkpoint") || texts[0].contains("## Goal"));
    assert_eq!(texts[1], TASK);
}

#[test]
fn mid_turn_compaction_folds_prior_turns_and_settled_steps_together() {
    let mut log = session(12, 2_000);
    let current = active_turn(&mut log, 6, 3_000);
    let events = log.events().to_vec();
    let prior_end = split_current_turn(&events, Some(&current)).expect("suffix");
    let run = drive(
        input(Trigger::MidTurn, &events, Some(&current), None, window(WINDOW)),
        vec![summary(long_summary("a", 1_200)), append_ok()],
    );
    let recorded = run.outcome.checkpoint.as_ref().expect("recorded");
    let covered = recorded.coverage.event_count as usize;
    assert!(covered > prior_end, "settled steps of the active turn are covered");
    let cuts = safe_boundaries(&events, Some(&current)).expect("suffix");
    assert_raw_tail_share(
        &events,
        &cuts,
        covered,
        run.outcome.tokens.budget,
        RAW_TAIL_SHARE_PERCENT,
    );
    assert_eq!(
        run.summaries()[0].fold,
        contextfold_core::checkpoint::Fold { start: 0, end: covered }
    );
    let projection = projected(&events, &current, Some(recorded), false);
    assert!(projection.fits, "{} > {}", projection.estimated_tokens, projection.history_budget);
    assert!(texts(&projection).contains(&TASK));
}

#[test]
fn a_running_tool_call_is_never_covered() {
    let mut log = LogBuilder::new(SESSION);
    let current = active_turn(&mut log, 30, 3_000);
    log.response(Some("now-running")).tool_call("now-running", "shell", json!({"cmd": "make"}));
    let events = log.events().to_vec();
    let run = drive(
        input(Trigger::MidTurn, &events, Some(&current), None, window(WINDOW)),
        vec![summary(long_summary("running", 1_200)), append_ok()],
    );
    let covered = run.outcome.checkpoint.as_ref().expect("recorded").coverage.event_count;
    assert!((covered as usize) < events.len() - 1, "the running call stays raw");
}

#[test]
fn a_windowed_summarizer_folds_in_rolling_steps_until_the_request_fits() {
    // One user task, 120 steps writing 400 characters each and reading 3,000: about 100,000
    // tokens of history, far more than one 6,000-token summarizer request can take even with
    // every output omitted.
    let mut log = LogBuilder::new(SESSION);
    let current = active_turn_with_inputs(&mut log, 120, 3_000, 400);
    let events = log.events().to_vec();
    let (outcome, ledger) =
        drive_extractive(input(Trigger::MidTurn, &events, Some(&current), None, window(WINDOW)));
    assert_eq!(outcome.outcome, OutcomeKind::Recorded, "{:?}", codes(&outcome));
    assert!(ledger.len() >= 2, "several rolling steps: {}", ledger.len());
    assert!(codes(&outcome).contains(&ReasonCode::FoldSplit));
    for pair in ledger.windows(2) {
        assert_eq!(pair[1].previous_checkpoint_id.as_deref(), Some(pair[0].checkpoint_id.as_str()));
        assert!(pair[1].coverage.event_count > pair[0].coverage.event_count);
    }
    assert_eq!(ledger[0].checkpoint_id, "cp-new");
    assert_eq!(ledger[1].checkpoint_id, "cp-new.2");
    assert_eq!(outcome.checkpoint.as_ref(), ledger.last());
    let projection = projected(&events, &current, ledger.last(), false);
    assert!(projection.fits);
    assert!(texts(&projection).contains(&TASK));
}

#[test]
fn the_extractive_summarizer_is_never_refused_for_input_size() {
    let mut log = LogBuilder::new(SESSION);
    let current = active_turn_with_inputs(&mut log, 120, 3_000, 400);
    let events = log.events().to_vec();
    let mut compaction = input(Trigger::MidTurn, &events, Some(&current), None, window(WINDOW));
    compaction.summarizer_label = Some(EXTRACTIVE_PRODUCER.into());
    let (outcome, ledger) = drive_extractive(compaction);
    assert_eq!(outcome.outcome, OutcomeKind::Recorded, "{:?}", codes(&outcome));
    assert_eq!(ledger.len(), 1, "one step folds the whole target");
    assert!(!codes(&outcome).contains(&ReasonCode::FoldSplit));
}

#[test]
fn the_reserved_tail_never_blocks_the_only_useful_fold() {
    let mut log = session(14, 2_000);
    let events_before = log.events().to_vec();
    // A checkpoint covering everything but the newest (small) completed turn.
    let covered = end_of_turn(&events_before, 13);
    let checkpoint = v2_checkpoint("cp-old", &events_before, covered, &good_summary("old"));
    let current = start_current_turn(&mut log, 15, 21_500);
    let events = log.events().to_vec();
    let run = drive(
        input(Trigger::PreTurn, &events, Some(&current), Some(&checkpoint), window(WINDOW)),
        vec![summary(good_summary("new")), append_ok()],
    );
    assert_eq!(run.summaries()[0].fold.start, covered);
    assert_eq!(run.summaries()[0].fold.end, end_of_turn(&events, 14), "the reserve was dropped");
}

#[test]
fn cancelling_after_a_recorded_step_ends_on_that_checkpoint() {
    let mut log = LogBuilder::new(SESSION);
    let current = active_turn_with_inputs(&mut log, 120, 3_000, 400);
    let events = log.events().to_vec();
    let mut tx =
        Compaction::start(input(Trigger::MidTurn, &events, Some(&current), None, window(WINDOW)))
            .expect("valid input");
    let mut recorded = None;
    let outcome = loop {
        match tx.poll().expect("driver order") {
            Step::Effect(Effect::Summarize(effect)) if recorded.is_some() => {
                let _ = effect;
                assert!(tx.cancel());
            }
            Step::Effect(Effect::Summarize(effect)) => {
                let fold = &events[effect.fold.start..effect.fold.end];
                let text = extractive_summary(None, fold, effect.target_tokens);
                let answer = SummaryResponse { text, finish_reason: FinishReason::Stop };
                tx.handle_summary(Ok(answer)).expect("summary expected");
            }
            Step::Effect(Effect::AppendCheckpoint(checkpoint)) => {
                recorded = Some(*checkpoint);
                tx.handle_append(Ok(())).expect("append expected");
            }
            Step::Effect(other) => panic!("unexpected effect {other:?}"),
            Step::Done(outcome) => break *outcome,
        }
    };
    assert_eq!(outcome.checkpoint, recorded, "the durable step is the outcome's checkpoint");
    assert!(matches!(outcome.outcome, OutcomeKind::Recorded | OutcomeKind::Exhausted));
    assert!(codes(&outcome).contains(&ReasonCode::Cancelled));
}

#[test]
fn a_failed_rolling_compaction_reports_the_measured_fail_open_figure() {
    let mut log = session(14, 2_000);
    let events_before = log.events().to_vec();
    let checkpoint = v2_checkpoint(
        "cp-old",
        &events_before,
        end_of_turn(&events_before, 1),
        &good_summary("old"),
    );
    let current = start_current_turn(&mut log, 15, 60);
    let events = log.events().to_vec();
    let run = drive(
        input(Trigger::Overflow, &events, Some(&current), Some(&checkpoint), window(WINDOW)),
        vec![summary_failure(ProviderFailureKind::Unavailable)],
    );
    assert_eq!(run.outcome.outcome, OutcomeKind::FailedOpen, "{:?}", codes(&run.outcome));
    assert!(codes(&run.outcome).contains(&ReasonCode::PreviousCheckpointReused));
    let fail_open = projected(&events, &current, Some(&checkpoint), true);
    assert!(
        fail_open.omitted_events > 0,
        "the uncovered tail does not fit whole: {:?} {:?}",
        run.outcome.tokens,
        fail_open.diagnostics
    );
    assert_eq!(
        run.outcome.tokens.after, fail_open.estimated_tokens,
        "measured, not min(before, budget)"
    );
    assert!(run.outcome.tokens.after < run.outcome.tokens.budget);
}

#[test]
fn a_paste_larger_than_the_summarizer_window_reaches_it_as_an_addressed_marker() {
    // A 60,000-character pasted log (about 15,000 tokens) against a 6,000-token summarizer
    // window: no fold holding it can fit, so its text goes as a marker naming its archive
    // address instead of failing the compaction.
    let mut log = LogBuilder::new(SESSION);
    log.turn("t0").user(&format!("CI log:\n{}", "error[E0308]: mismatched types\n".repeat(1_940)));
    log.assistant("The log shows one type error, in the parser.");
    let current = active_turn(&mut log, 4, 200);
    let events = log.events().to_vec();
    let (outcome, ledger) =
        drive_extractive(input(Trigger::MidTurn, &events, Some(&current), None, window(WINDOW)));
    assert_eq!(outcome.outcome, OutcomeKind::Recorded, "{:?}", codes(&outcome));
    let note = outcome.diagnostics.iter().find(|d| d.code == ReasonCode::EventPayloadsOmitted);
    let note = note.expect("the omission is reported");
    assert!(note.detail.contains(&format!("contextfold://archive/{SESSION}/")), "{}", note.detail);
    assert!(ledger[0].coverage.event_count >= 2, "the paste's turn is covered");
    let projection = projected(&events, &current, ledger.last(), false);
    assert!(projection.fits);
    assert!(texts(&projection).contains(&TASK));
}

/// The shares are the model's: a model whose facts ask for a 10% raw tail and a 70% request
/// after compaction gets both, where the defaults give 25% and 50%.
#[test]
fn the_raw_tail_and_after_compaction_shares_are_per_model() {
    let mut log = LogBuilder::new(SESSION);
    let current = active_turn(&mut log, 30, 3_000);
    let events = log.events().to_vec();
    let cuts = safe_boundaries(&events, Some(&current)).expect("suffix");
    let run_with = |model: ModelFacts| {
        drive(
            input(Trigger::MidTurn, &events, Some(&current), None, model),
            vec![summary(long_summary("active", 1_200)), append_ok()],
        )
    };
    let default = run_with(window(WINDOW));
    let tuned = run_with(ModelFacts {
        raw_tail_share_percent: Some(10),
        after_compaction_share_percent: Some(70),
        ..window(WINDOW)
    });
    let covered = |run: &crate::driver::Driven| {
        run.outcome.checkpoint.as_ref().expect("recorded").coverage.event_count as usize
    };
    let budget = default.outcome.tokens.budget;
    assert_raw_tail_share(&events, &cuts, covered(&default), budget, RAW_TAIL_SHARE_PERCENT);
    assert_raw_tail_share(&events, &cuts, covered(&tuned), budget, 10);
    assert!(covered(&tuned) > covered(&default), "a smaller raw tail folds more");
    let target = |run: &crate::driver::Driven| run.summaries()[0].target_tokens;
    assert!(target(&tuned) > target(&default), "a larger share gives the summary more room");
}
