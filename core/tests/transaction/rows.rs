//! The design's failure table, row by row, for the text compactor.

use contextfold_core::compaction::{OutcomeKind, ProviderFailureKind, Trigger};
use contextfold_core::event::EventContent;
use contextfold_core::projection::{ProjectInput, project};
use contextfold_core::{CharEstimator, ReasonCode};

use crate::driver::{append_err, append_ok, drive, summary, summary_failure};
use crate::support::{
    codes, count, good_summary, input, long_summary, provider, session, start_current_turn, window,
};

/// Window of the over-budget scenarios: history budget 6,000 tokens.
const WINDOW: u64 = 8_000;

#[test]
fn below_high_water_skips_without_any_effect() {
    let mut log = session(3, 400);
    let current = start_current_turn(&mut log, 4, 60);
    for trigger in [Trigger::PreTurn, Trigger::MidTurn] {
        let run = drive(input(trigger, log.events(), Some(&current), None, window(WINDOW)), vec![]);
        assert_eq!(run.outcome.outcome, OutcomeKind::Skipped);
        assert_eq!(run.outcome.reason, ReasonCode::BelowHighWater);
        assert_eq!(codes(&run.outcome), [ReasonCode::BelowHighWater]);
        assert!(run.effects.is_empty() && run.ledger.is_empty());
        assert!(run.outcome.attempts.is_empty());
        assert!(run.outcome.checkpoint.is_none() && run.outcome.failure_note.is_none());
        assert!(run.outcome.tokens.before <= run.outcome.tokens.budget);
    }
}

/// A real provider overflow proves the estimate wrong: the overflow trigger compacts even when
/// the estimate says history fits (there is no high water to be below).
#[test]
fn a_provider_overflow_compacts_even_when_the_estimate_fits() {
    let mut log = session(3, 400);
    let current = start_current_turn(&mut log, 4, 60);
    let run = drive(
        input(Trigger::Overflow, log.events(), Some(&current), None, window(WINDOW)),
        vec![summary(good_summary("o")), append_ok()],
    );
    assert_eq!(run.outcome.outcome, OutcomeKind::Recorded);
    assert_eq!(run.ledger.len(), 1);
    assert_eq!(run.ledger[0].high_water.name, "overflow");
}

#[test]
fn empty_summary_gets_one_repair_then_exhausts_an_automatic_trigger_without_a_note() {
    let mut log = session(14, 2_000);
    let current = start_current_turn(&mut log, 15, 60);
    let run = drive(
        input(Trigger::PreTurn, log.events(), Some(&current), None, window(WINDOW)),
        vec![summary(""), summary("  \n")],
    );
    assert_eq!(run.outcome.outcome, OutcomeKind::Exhausted);
    assert_eq!(run.outcome.reason, ReasonCode::ContextBudgetExhausted);
    assert!(run.outcome.failure_note.is_none(), "automatic failure writes no note");
    assert_eq!(count(&run.outcome, ReasonCode::EmptySummary), 2);
    assert_eq!(count(&run.outcome, ReasonCode::ContextBudgetExhausted), 1);
    assert_eq!(count(&run.outcome, ReasonCode::ContextCompactionFailedOpen), 0);
    let summaries = run.summaries();
    assert_eq!(summaries.len(), 2);
    assert_eq!(summaries[1].request.purpose, contextfold_core::compaction::SummaryPurpose::Repair);
    assert_eq!(run.outcome.attempts.len(), 1);
    assert_eq!(run.outcome.attempts[0].dispatches, 2);
    assert_eq!(run.outcome.attempts[0].result, ReasonCode::EmptySummary);
    assert!(run.ledger.is_empty() && run.outcome.checkpoint.is_none());
    assert!(run.circuit.is_empty(), "an empty summary is not a malformed one");
    assert!(run.outcome.tokens.after > run.outcome.tokens.budget);
}

#[test]
fn empty_summary_of_a_manual_compaction_fails_open_with_one_visible_note() {
    let log = session(6, 400);
    let run = drive(
        input(Trigger::Manual, log.events(), None, None, window(WINDOW)),
        vec![summary(""), summary("")],
    );
    assert_eq!(run.outcome.outcome, OutcomeKind::FailedOpen);
    assert_eq!(run.outcome.reason, ReasonCode::EmptySummary);
    assert_eq!(count(&run.outcome, ReasonCode::ContextCompactionFailedOpen), 1);
    assert_eq!(count(&run.outcome, ReasonCode::ContextBudgetExhausted), 0);
    match &run.outcome.failure_note {
        Some(EventContent::RuntimeNote { code, text }) => {
            assert_eq!(code, ReasonCode::ContextCompactionFailedOpen.as_str());
            assert!(text.contains("empty_summary"), "{text}");
        }
        other => panic!("expected one runtime note, got {other:?}"),
    }
    assert!(run.ledger.is_empty() && run.appends().is_empty());
}

#[test]
fn manual_over_budget_failure_still_fails_open_rather_than_exhausting() {
    let mut log = session(14, 2_000);
    let current = start_current_turn(&mut log, 15, 60);
    let run = drive(
        input(Trigger::Manual, log.events(), Some(&current), None, window(WINDOW)),
        vec![summary_failure(ProviderFailureKind::Unavailable)],
    );
    assert_eq!(run.outcome.outcome, OutcomeKind::FailedOpen);
    assert_eq!(run.outcome.reason, ReasonCode::ProviderUnavailable);
    assert!(run.outcome.failure_note.is_some());
    assert_eq!(run.outcome.attempts[0].dispatches, 1, "unavailability is not retried");
}

#[test]
fn minimum_context_over_budget_exhausts_immediately_without_an_effect() {
    let mut log = session(2, 200);
    let current = start_current_turn(&mut log, 3, 8_000);
    let run =
        drive(input(Trigger::PreTurn, log.events(), Some(&current), None, window(2_000)), vec![]);
    assert_eq!(run.outcome.outcome, OutcomeKind::Exhausted);
    assert_eq!(run.outcome.reason, ReasonCode::ContextBudgetExhausted);
    assert!(codes(&run.outcome).contains(&ReasonCode::MinimumContextExceedsBudget));
    assert!(run.effects.is_empty() && run.outcome.attempts.is_empty());
    assert!(run.outcome.failure_note.is_none());
}

#[test]
fn replacement_not_smaller_than_its_source_is_never_appended() {
    let log = session(2, 2_000);
    let source = contextfold_core::budget::estimate_events(&CharEstimator, log.events());
    let large = long_summary("big", source as usize * 4 + 400);
    // Over the budget (a 1,400-token window: its history budget is below the 1,100 source
    // tokens, its summarizer request still fits), a manual compaction whose summary is not
    // smaller fails open with its visible note; within the budget, the same answer is a typed
    // no-op that writes nothing.
    for (window_tokens, outcome) in
        [(1_400, OutcomeKind::FailedOpen), (32_000, OutcomeKind::Skipped)]
    {
        let run = drive(
            input(Trigger::Manual, log.events(), None, None, window(window_tokens)),
            vec![summary(large.clone())],
        );
        assert_eq!(run.outcome.outcome, outcome, "window {window_tokens}");
        assert_eq!(run.outcome.reason, ReasonCode::ReplacementNotSmaller);
        assert!(codes(&run.outcome).contains(&ReasonCode::ReplacementNotSmaller));
        assert!(run.appends().is_empty() && run.ledger.is_empty());
        assert_eq!(run.outcome.attempts[0].result, ReasonCode::ReplacementNotSmaller);
        assert_eq!(run.outcome.attempts[0].dispatches, 1, "a valid summary is not repaired");
        assert_eq!(
            run.outcome.failure_note.is_some(),
            outcome == OutcomeKind::FailedOpen,
            "window {window_tokens}: a note only when the history does not fit"
        );
    }
}

#[test]
fn a_manual_compaction_of_a_fitting_history_too_small_to_fold_calls_no_summarizer() {
    // Two short turns: their fold is no larger than a checkpoint's envelope alone, so asking
    // again and again never calls a summarizer and never grows the log.
    let log = session(2, 10);
    let run = drive(input(Trigger::Manual, log.events(), None, None, window(32_000)), vec![]);
    assert_eq!(run.outcome.outcome, OutcomeKind::Skipped);
    assert_eq!(run.outcome.reason, ReasonCode::ReplacementNotSmaller);
    assert!(run.outcome.failure_note.is_none());
    assert_eq!(run.outcome.attempts[0].dispatches, 0);
    assert!(run.appends().is_empty() && run.ledger.is_empty());
}

#[test]
fn failed_durable_append_returns_no_candidate() {
    let log = session(6, 400);
    let run = drive(
        input(Trigger::Manual, log.events(), None, None, window(WINDOW)),
        vec![summary(good_summary("a")), append_err(false)],
    );
    assert_eq!(run.outcome.outcome, OutcomeKind::FailedOpen);
    assert_eq!(run.outcome.reason, ReasonCode::AppendFailed);
    assert!(run.outcome.checkpoint.is_none(), "an uncommitted candidate is never returned");
    assert!(run.ledger.is_empty());
    assert_eq!(run.appends().len(), 1);
    assert_eq!(count(&run.outcome, ReasonCode::CheckpointRecorded), 0);
    assert!(run.circuit.is_empty());
}

#[test]
fn append_conflict_is_a_successor_conflict() {
    let log = session(6, 400);
    let run = drive(
        input(Trigger::Manual, log.events(), None, None, window(WINDOW)),
        vec![summary(good_summary("a")), append_err(true)],
    );
    assert_eq!(run.outcome.outcome, OutcomeKind::FailedOpen);
    assert_eq!(run.outcome.reason, ReasonCode::SuccessorConflict);
    assert!(run.outcome.checkpoint.is_none() && run.ledger.is_empty());
}

#[test]
fn failed_append_of_an_automatic_trigger_over_budget_exhausts() {
    let mut log = session(14, 2_000);
    let current = start_current_turn(&mut log, 15, 60);
    let run = drive(
        input(Trigger::PreTurn, log.events(), Some(&current), None, window(WINDOW)),
        vec![summary(good_summary("a")), append_err(false)],
    );
    assert_eq!(run.outcome.outcome, OutcomeKind::Exhausted);
    assert_eq!(run.outcome.reason, ReasonCode::ContextBudgetExhausted);
    assert!(codes(&run.outcome).contains(&ReasonCode::AppendFailed));
    assert!(run.outcome.checkpoint.is_none() && run.ledger.is_empty());
}

/// A log whose event estimate fits the budget while its materialized projection does not:
/// many small tool calls, whose call ids, tool names and message overheads the projection adds.
fn log_fitting_only_by_event_estimate(budget: u64) -> contextfold_core::LogBuilder {
    use contextfold_core::budget::estimate_events;
    let mut n = 1;
    let mut log = contextfold_core::LogBuilder::new(crate::support::SESSION);
    loop {
        let mut next = log.clone();
        next.turn(&format!("t{n}")).user("go").response(Some(&format!("r{n}")));
        for c in 0..5 {
            next.tool_call(&format!("c{n}-{c}"), "shell", serde_json::json!({}));
        }
        next.response(None);
        for c in 0..5 {
            next.tool_result(&format!("c{n}-{c}"), "shell", serde_json::json!("ok"));
        }
        if estimate_events(&CharEstimator, next.events()) > budget {
            return log;
        }
        log = next;
        n += 1;
    }
}

#[test]
fn automatic_trigger_measures_history_as_the_projection_does() {
    let model = window(2_000);
    let mut log = log_fitting_only_by_event_estimate(1_450);
    let current = start_current_turn(&mut log, 999, 40);
    let projection = project(
        &ProjectInput {
            events: log.events(),
            current_turn_id: Some(&current),
            checkpoint: None,
            model: &model,
            provider: Some(&provider()),
            fail_open: false,
        },
        &CharEstimator,
    )
    .expect("valid log");
    assert!(!projection.fits, "precondition: the projected request is over capacity");
    let mut tx = contextfold_core::compaction::Compaction::start(input(
        Trigger::PreTurn,
        log.events(),
        Some(&current),
        None,
        model.clone(),
    ))
    .expect("valid log");
    if let contextfold_core::compaction::Step::Done(outcome) = tx.poll().expect("in order") {
        assert_ne!(
            outcome.reason,
            ReasonCode::BelowHighWater,
            "the projection is {} tokens over a {} budget, yet the transaction skipped",
            projection.estimated_tokens,
            projection.history_budget
        );
        assert!(outcome.tokens.before > outcome.tokens.budget, "{:?}", outcome.tokens);
    }
}

/// A task of about 5,400 tokens: alone (with room for the smallest checkpoint) it fits the
/// 6,000-token budget, beside a large checkpoint it does not.
const TASK_CHARS: usize = 21_500;

#[test]
fn a_fold_that_keeps_the_reserved_tail_rolls_on_until_the_request_fits() {
    let mut log = session(6, 2_000);
    let current = start_current_turn(&mut log, 7, TASK_CHARS);
    // The first step keeps the newest turn raw; the request still does not fit, so a second
    // rolling step folds it too, and then it fits.
    let run = drive(
        input(Trigger::PreTurn, log.events(), Some(&current), None, window(WINDOW)),
        vec![summary(good_summary("a")), append_ok(), summary(good_summary("b")), append_ok()],
    );
    assert_eq!(run.outcome.outcome, OutcomeKind::Recorded, "{:?}", codes(&run.outcome));
    assert_eq!(run.ledger.len(), 2);
    assert_eq!(run.ledger[1].previous_checkpoint_id.as_deref(), Some("cp-new"));
    assert_eq!(run.outcome.checkpoint.as_ref(), run.ledger.last());
    assert!(run.outcome.tokens.after <= run.outcome.tokens.budget);
}

#[test]
fn recorded_but_still_over_budget_exhausts_an_automatic_trigger_with_the_checkpoint() {
    let mut log = session(6, 2_000);
    let current = start_current_turn(&mut log, 7, TASK_CHARS);
    // Both steps are recorded, and the large task beside the (large) second checkpoint still
    // exceeds the budget (the task alone does not, so compaction was worth trying).
    let run = drive(
        input(Trigger::PreTurn, log.events(), Some(&current), None, window(WINDOW)),
        vec![
            summary(good_summary("a")),
            append_ok(),
            summary(long_summary("b", 3_000)),
            append_ok(),
        ],
    );
    assert_eq!(run.outcome.outcome, OutcomeKind::Exhausted);
    assert_eq!(run.outcome.reason, ReasonCode::ContextBudgetExhausted);
    let recorded = run.outcome.checkpoint.as_ref().expect("the durable checkpoint is returned");
    assert_eq!(run.ledger.len(), 2);
    assert_eq!(run.ledger.last(), Some(recorded));
    assert_eq!(
        codes(&run.outcome)[codes(&run.outcome).len() - 2..],
        [ReasonCode::CheckpointRecorded, ReasonCode::ContextBudgetExhausted]
    );
    assert!(run.outcome.tokens.after > run.outcome.tokens.budget);
}

#[test]
fn a_live_pinned_step_at_the_start_of_the_only_turn_leaves_no_safe_prefix() {
    let mut log = contextfold_core::LogBuilder::new(crate::support::SESSION);
    log.turn("now").user("refactor the parser");
    log.push(EventContent::AssistantText { text: "plan: keep this raw".into() }).pinned = true;
    // The newest ten results alone (never masked) exceed the budget.
    for n in 1..=14 {
        let call = format!("c{n}");
        let body = "let x = compute(y);\n".repeat(150);
        log.response(Some(&format!("r{n}")))
            .tool_call(&call, "shell", serde_json::json!({"cmd": "cat"}))
            .response(None)
            .tool_result(&call, "shell", serde_json::json!(body));
    }
    let manual =
        drive(input(Trigger::Manual, log.events(), Some("now"), None, window(WINDOW)), vec![]);
    assert_eq!(
        (manual.outcome.outcome, manual.outcome.reason),
        (OutcomeKind::Skipped, ReasonCode::NoSafePrefix)
    );
    let automatic =
        drive(input(Trigger::MidTurn, log.events(), Some("now"), None, window(WINDOW)), vec![]);
    assert_eq!(automatic.outcome.outcome, OutcomeKind::Exhausted);
    assert_eq!(automatic.outcome.reason, ReasonCode::ContextBudgetExhausted);
    // Nothing after a live pinned step can be covered: it and everything after it is the
    // minimum context.
    assert!(codes(&automatic.outcome).contains(&ReasonCode::MinimumContextExceedsBudget));
    assert!(automatic.effects.is_empty());
}

#[test]
fn the_outcome_json_uses_the_documented_names() {
    let log = session(6, 400);
    let run = drive(
        input(Trigger::Manual, log.events(), None, None, window(WINDOW)),
        vec![summary(""), summary("")],
    );
    let value = serde_json::to_value(&run.outcome).expect("json");
    assert_eq!(value["outcome"], "failed_open");
    assert_eq!(value["reason"], "empty_summary");
    assert!(value.get("checkpoint").is_none());
    assert_eq!(value["failureNote"]["code"], "context_compaction_failed_open");
    assert_eq!(value["attempts"][0]["kind"], "text_summary");
    assert_eq!(value["attempts"][0]["dispatches"], 2);
    assert_eq!(value["diagnostics"][0]["code"], "empty_summary");
    assert!(value["tokens"]["budget"].as_u64().expect("number") > 0);
    let back: contextfold_core::compaction::CompactionOutcome =
        serde_json::from_value(value).expect("round trip");
    assert_eq!(back, run.outcome);
}
