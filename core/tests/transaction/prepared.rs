//! Background preparation (issue 39): a `prepare` transaction hands its checkpoint back
//! unrecorded, and a later automatic compaction adopts it without a summarizer call only while
//! it still succeeds the tip, matches the log and fits the request being built.

use contextfold_core::budget::{CharEstimator, ContextBudget};
use contextfold_core::compaction::{Compactor, OutcomeKind, Trigger};
use contextfold_core::projection::{ProjectInput, project};
use contextfold_core::{
    HistoryCompactCheckpoint, LogBuilder, ModelFacts, ReasonCode, RuntimeEvent,
};

use crate::driver::{append_ok, compaction_item, drive, drive_extractive, native, summary};
use crate::support::{
    add_turn, codes, end_of_turn, good_summary, input, long_summary, provider, provider_on,
    session, start_current_turn, v2_checkpoint, window,
};

/// The context window of these tests: a 6,000-token history budget.
const WINDOW: u64 = 8_000;
/// Characters of each turn's tool result.
const RESULT_CHARS: usize = 2_000;

/// The history of the next request without compaction, and the budget.
fn history(events: &[RuntimeEvent], current: Option<&str>, model: &ModelFacts) -> (u64, u64) {
    let provider = provider();
    let projected = project(
        &ProjectInput {
            events,
            current_turn_id: current,
            checkpoint: None,
            model,
            provider: Some(&provider),
            fail_open: false,
        },
        &CharEstimator,
    )
    .expect("valid log");
    (projected.estimated_tokens, ContextBudget::from_model(model).history_budget)
}

/// Distinct turns of `events`.
fn turns(events: &[RuntimeEvent]) -> usize {
    events.iter().map(|e| e.turn_id.as_str()).collect::<std::collections::HashSet<_>>().len()
}

/// Completed turns until the history is above the soft threshold, below the budget.
fn at_soft_threshold() -> LogBuilder {
    let model = window(WINDOW);
    let mut log = session(1, RESULT_CHARS);
    for n in 2..=12 {
        let (tokens, budget) = history(log.events(), None, &model);
        if tokens * 100 >= budget * model.prepare_at_share() {
            assert!(tokens < budget, "{tokens} of {budget}");
            return log;
        }
        add_turn(&mut log, n, RESULT_CHARS);
    }
    panic!("never reached the soft threshold")
}

/// `log` grown by three more turns and a current one: over the budget.
fn at_hard_trigger(mut log: LogBuilder) -> (Vec<RuntimeEvent>, String) {
    let next = turns(log.events()) + 1;
    for n in next..next + 3 {
        add_turn(&mut log, n, RESULT_CHARS);
    }
    let current = start_current_turn(&mut log, next + 3, 200);
    let events = log.build();
    let (tokens, budget) = history(&events, Some(&current), &window(WINDOW));
    assert!(tokens > budget, "the hard trigger fires: {tokens} of {budget}");
    (events, current)
}

/// Prepares a checkpoint over `events` with the extractive summary.
fn prepare(
    events: &[RuntimeEvent],
    tip: Option<&HistoryCompactCheckpoint>,
) -> HistoryCompactCheckpoint {
    let mut prep = input(Trigger::Prepare, events, None, tip, window(WINDOW));
    prep.new_checkpoint_id = "cp-prepared".into();
    let (outcome, ledger) = drive_extractive(prep);
    assert_eq!(
        (outcome.outcome, outcome.reason),
        (OutcomeKind::Prepared, ReasonCode::CheckpointPrepared)
    );
    assert!(ledger.is_empty(), "a preparation appends nothing");
    outcome.checkpoint.expect("the prepared checkpoint is handed back")
}

#[test]
fn below_the_soft_threshold_nothing_is_prepared() {
    let log = session(3, RESULT_CHARS);
    let driven = drive(input(Trigger::Prepare, log.events(), None, None, window(WINDOW)), vec![]);
    assert_eq!(driven.outcome.outcome, OutcomeKind::Skipped);
    assert_eq!(driven.outcome.reason, ReasonCode::BelowSoftThreshold);
    assert!(driven.effects.is_empty());
    // The threshold is per model: at 20% the same log is prepared.
    let model = ModelFacts { prepare_at_percent: Some(20), ..window(WINDOW) };
    let driven = drive(
        input(Trigger::Prepare, log.events(), None, None, model),
        vec![summary(long_summary("prepared", 400))],
    );
    assert_eq!(driven.outcome.outcome, OutcomeKind::Prepared);
    assert!(driven.appends().is_empty() && driven.ledger.is_empty());
}

#[test]
fn a_preparation_leaves_room_for_the_growth_until_its_adoption() {
    let log = at_soft_threshold();
    let (before, budget) = history(log.events(), None, &window(WINDOW));
    let prepared = prepare(log.events(), None);
    // The whole safe prefix is folded (the growth until the hard trigger will be the raw
    // tail), and the request it gives now leaves at least that growth free under the budget:
    // its summary is held to the after-compaction share, as a foreground one is.
    let events = log.events().len() as u64;
    assert!(
        prepared.coverage.event_count + 4 >= events,
        "{} of {events}",
        prepared.coverage.event_count
    );
    let growth = budget - before;
    assert!(
        prepared.estimated_tokens <= budget * 75 / 100
            && prepared.estimated_tokens + growth <= budget,
        "{} + {growth}",
        prepared.estimated_tokens
    );
}

#[test]
fn the_hard_trigger_adopts_a_prepared_checkpoint_without_a_summarizer_call() {
    let log = at_soft_threshold();
    let prepared = prepare(log.events(), None);
    let (events, current) = at_hard_trigger(log);
    let mut hard = input(Trigger::PreTurn, &events, Some(&current), None, window(WINDOW));
    hard.prepared = Some(prepared.clone());
    // One effect only: the durable append of the prepared checkpoint.
    let driven = drive(hard, vec![append_ok()]);
    assert_eq!(driven.outcome.outcome, OutcomeKind::Recorded, "{:?}", codes(&driven.outcome));
    assert_eq!(driven.ledger, vec![prepared.clone()]);
    assert!(driven.summaries().is_empty());
    assert!(codes(&driven.outcome).contains(&ReasonCode::PreparedCheckpointUsed));
    assert!(driven.outcome.tokens.after <= driven.outcome.tokens.budget);
    // A provider overflow proved the estimate wrong: it folds in the foreground.
    let mut overflow = input(Trigger::Overflow, &events, Some(&current), None, window(WINDOW));
    overflow.prepared = Some(prepared);
    let (outcome, _) = drive_extractive(overflow);
    assert!(!codes(&outcome).contains(&ReasonCode::PreparedCheckpointUsed));
    // Without it the same compaction calls the summarizer.
    let foreground = input(Trigger::PreTurn, &events, Some(&current), None, window(WINDOW));
    let (outcome, ledger) = drive_extractive(foreground);
    assert_eq!((outcome.outcome, ledger.len()), (OutcomeKind::Recorded, 1));
    assert!(!codes(&outcome).contains(&ReasonCode::PreparedCheckpointUsed));
}

#[test]
fn a_prepared_checkpoint_is_not_used_while_the_history_fits() {
    let log = at_soft_threshold();
    let prepared = prepare(log.events(), None);
    let mut fits = input(Trigger::MidTurn, log.events(), None, None, window(WINDOW));
    fits.prepared = Some(prepared);
    let driven = drive(fits, vec![]);
    assert_eq!(driven.outcome.reason, ReasonCode::BelowHighWater);
}

#[test]
fn a_checkpoint_recorded_since_the_preparation_overtakes_it() {
    // While the preparation ran, a foreground compaction (another process, or this one before
    // the preparation came back) recorded a checkpoint over the first turn. The prepared
    // checkpoint would fit, but it succeeds no checkpoint, so it cannot succeed that tip (the
    // store's compare-and-swap would refuse it too): the compaction runs in the foreground on
    // top of the tip.
    let log = at_soft_threshold();
    let prepared = prepare(log.events(), None);
    let (events, _) = at_hard_trigger(log);
    let mut log = LogBuilder::extend(events[..events.len() - 1].to_vec());
    let next = turns(log.events()) + 1;
    add_turn(&mut log, next, RESULT_CHARS);
    let current = start_current_turn(&mut log, next + 1, 200);
    let events = log.build();
    let tip = v2_checkpoint("cp-other", &events, end_of_turn(&events, 1), &good_summary("other"));
    let mut hard = input(Trigger::PreTurn, &events, Some(&current), Some(&tip), window(WINDOW));
    hard.prepared = Some(prepared.clone());
    let (outcome, ledger) = drive_extractive(hard);
    let rejected =
        outcome.diagnostics.iter().find(|d| d.code == ReasonCode::PreparedCheckpointRejected);
    assert!(
        rejected.is_some_and(|d| d.detail.contains("predecessor")),
        "{:?}",
        outcome.diagnostics
    );
    assert_eq!(ledger.len(), 1, "{:?}", outcome.diagnostics);
    assert_ne!(ledger[0].checkpoint_id, prepared.checkpoint_id);
    assert_eq!(ledger[0].previous_checkpoint_id.as_deref(), Some("cp-other"));
    // Without the tip the same prepared checkpoint serves.
    let mut alone = input(Trigger::PreTurn, &events, Some(&current), None, window(WINDOW));
    alone.prepared = Some(prepared);
    assert!(
        codes(&drive(alone, vec![append_ok()]).outcome)
            .contains(&ReasonCode::PreparedCheckpointUsed)
    );
}

#[test]
fn a_smaller_budget_since_the_preparation_judges_it_again() {
    // The user switched to a model with a smaller window while the preparation ran: the
    // prepared checkpoint is judged against the new budget and, over it, not used.
    let log = at_soft_threshold();
    let prepared = prepare(log.events(), None);
    let (events, current) = at_hard_trigger(log);
    let small = window(WINDOW / 4);
    let mut hard = input(Trigger::PreTurn, &events, Some(&current), None, small);
    hard.prepared = Some(prepared);
    let (outcome, _) = drive_extractive(hard);
    let rejected =
        outcome.diagnostics.iter().find(|d| d.code == ReasonCode::PreparedCheckpointRejected);
    assert!(
        rejected.is_some_and(|d| d.detail.contains("checkpoint_over_budget")),
        "{:?}",
        outcome.diagnostics
    );
}

#[test]
fn a_log_that_does_not_extend_the_prepared_source_rejects_it() {
    let log = at_soft_threshold();
    let prepared = prepare(log.events(), None);
    let (mut events, current) = at_hard_trigger(log);
    // Another session's history with the same shape: ids and counts agree, the digest does not.
    if let contextfold_core::EventContent::UserText { text, .. } = &mut events[0].content {
        text.push_str(" (edited)");
    }
    let mut hard = input(Trigger::PreTurn, &events, Some(&current), None, window(WINDOW));
    hard.prepared = Some(prepared);
    let (outcome, _) = drive_extractive(hard);
    let rejected =
        outcome.diagnostics.iter().find(|d| d.code == ReasonCode::PreparedCheckpointRejected);
    assert!(
        rejected.is_some_and(|d| d.detail.contains("source_hash_mismatch")),
        "{:?}",
        outcome.diagnostics
    );
}

#[test]
fn provider_state_prepared_for_another_model_is_not_replayed() {
    let log = at_soft_threshold();
    let mut prep = input(Trigger::Prepare, log.events(), None, None, window(WINDOW));
    prep.compactor = Compactor::OpenaiCodexNative;
    let driven = drive(prep, vec![native(vec![compaction_item(1)])]);
    assert_eq!(driven.outcome.outcome, OutcomeKind::Prepared);
    let prepared = driven.outcome.checkpoint.expect("prepared");
    assert_eq!(prepared.schema_version(), 3);
    let (events, current) = at_hard_trigger(log);
    let mut hard = input(Trigger::PreTurn, &events, Some(&current), None, window(WINDOW));
    hard.provider = provider_on("codex-main", "gpt-5.1-codex");
    hard.prepared = Some(prepared);
    let (outcome, ledger) = drive_extractive(hard);
    let rejected =
        outcome.diagnostics.iter().find(|d| d.code == ReasonCode::PreparedCheckpointRejected);
    assert!(
        rejected.is_some_and(|d| d.detail.contains("provider_mismatch")),
        "{:?}",
        outcome.diagnostics
    );
    assert_eq!(ledger[0].schema_version(), 2);
}

/// Appends completed turn `t<n>` whose tool result is `lines` distinct compiler errors, each
/// with its own path: a fold full of exact artifacts.
fn add_error_turn(log: &mut LogBuilder, n: usize, lines: usize) {
    let body: String = (0..lines)
        .map(|i| {
            format!("error[E0432]: unresolved import `crate::m{n}_{i}` at src/m{n}/f{i}.rs:{i}\n")
        })
        .collect();
    log.turn(&format!("t{n}"))
        .user(&format!("turn {n}: please fix the build"))
        .response(Some(&format!("resp-{n}-a")))
        .tool_call(&format!("c{n}"), "shell", serde_json::json!({"cmd": "cargo build"}))
        .response(None)
        .tool_result(&format!("c{n}"), "shell", serde_json::json!(body))
        .response(Some(&format!("resp-{n}-b")))
        .assistant("Still failing; next.")
        .response(None);
}

#[test]
fn a_preparation_that_could_not_keep_its_folds_artifacts_is_left_to_the_foreground() {
    let model = window(WINDOW);
    let mut log = LogBuilder::new("s-artifacts");
    let mut n = 1;
    loop {
        add_error_turn(&mut log, n, 20);
        let (tokens, budget) = history(log.events(), None, &model);
        if tokens * 100 >= budget * model.prepare_at_share() {
            assert!(tokens < budget, "{tokens} of {budget}");
            break;
        }
        n += 1;
    }
    let driven = drive(input(Trigger::Prepare, log.events(), None, None, model.clone()), vec![]);
    assert_eq!(
        (driven.outcome.outcome, driven.outcome.reason),
        (OutcomeKind::Skipped, ReasonCode::PreparationTooSmall),
        "{:?}",
        codes(&driven.outcome)
    );
    assert!(driven.effects.is_empty(), "no summarizer call");
    // The foreground compaction at the hard trigger, with the whole share, still runs.
    while history(log.events(), None, &model).0 <= history(log.events(), None, &model).1 {
        n += 1;
        add_error_turn(&mut log, n, 20);
    }
    let driven = drive_extractive(input(Trigger::PreTurn, log.events(), None, None, model));
    assert_eq!(driven.0.outcome, OutcomeKind::Recorded, "{:?}", codes(&driven.0));
}
