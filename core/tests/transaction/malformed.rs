//! Summary validation through the transaction: the one stricter repair, granular
//! `malformed_summary_*` reasons, the malformed-input circuit, and the overflow retry.

use contextfold_core::ReasonCode;
use contextfold_core::compaction::{
    Compaction, OutcomeKind, ProviderFailureKind, Step, SummaryPurpose, SummaryRequest, Trigger,
};
use contextfold_core::projection::Part;

use crate::driver::{Answer, append_ok, drive, length_finish, summary, summary_failure};
use crate::support::{add_turn, codes, count, good_summary, input, long_summary, session, window};

const WINDOW: u64 = 8_000;

/// One malformed completion per granular reason, with the code it must produce.
fn malformed_cases() -> Vec<(Answer, ReasonCode)> {
    let good = good_summary("m");
    vec![
        (length_finish(good.clone()), ReasonCode::MalformedSummaryLengthFinish),
        (
            summary(good.replace(
                "## Next Steps\n- Run `cargo test` again and fix the next failure.\n\n",
                "",
            )),
            ReasonCode::MalformedSummaryMissingSection,
        ),
        (
            summary(
                "## Goal\nFix tests.\n\n## Next Steps\n- Run them.\n\n## Done and In Progress\n- \
                 Fixed one.\n\n## Critical Context\n- `cargo test`.\n",
            ),
            ReasonCode::MalformedSummarySectionOrder,
        ),
        (
            summary(good.replace("- Run `cargo test` again and fix the next failure.", "TBD")),
            ReasonCode::MalformedSummaryEmptySection,
        ),
        (summary(format!("{good}\n```rust\nfn cut_off(")), ReasonCode::MalformedSummaryOpenFence),
        (summary(format!("{good}- and then we...")), ReasonCode::MalformedSummaryTruncated),
        (
            summary("Error: rate limit exceeded, please retry later"),
            ReasonCode::MalformedSummaryErrorText,
        ),
    ]
}

fn system_text(request: &SummaryRequest) -> String {
    match &request.messages[0].parts[0] {
        Part::Text { text } => text.clone(),
        other => panic!("system message is text, got {other:?}"),
    }
}

fn user_text(request: &SummaryRequest) -> String {
    match &request.messages[1].parts[0] {
        Part::Text { text } => text.clone(),
        other => panic!("user message is text, got {other:?}"),
    }
}

#[test]
fn each_malformed_reason_gets_one_stricter_repair_then_records() {
    let log = session(6, 400);
    for (bad, code) in malformed_cases() {
        let run = drive(
            input(Trigger::Manual, log.events(), None, None, window(WINDOW)),
            vec![bad, summary(good_summary("repaired")), append_ok()],
        );
        assert_eq!(run.outcome.outcome, OutcomeKind::Recorded, "{code}");
        assert_eq!(count(&run.outcome, code), 1, "{code} reaches diagnostics");
        let summaries = run.summaries();
        assert_eq!(summaries[0].request.purpose, SummaryPurpose::Initial);
        assert_eq!(summaries[1].request.purpose, SummaryPurpose::Repair, "{code}");
        assert!(system_text(&summaries[1].request).contains(code.as_str()), "{code}");
        assert_eq!(user_text(&summaries[1].request), user_text(&summaries[0].request));
        assert_eq!(summaries[1].fold, summaries[0].fold);
        assert_eq!(run.outcome.attempts[0].dispatches, 2);
        assert!(run.circuit.is_empty(), "a repaired input does not arm the circuit");
    }
}

#[test]
fn malformed_twice_fails_open_arms_the_circuit_and_blocks_only_the_same_input() {
    let mut log = session(6, 400);
    for (next_turn, (bad, code)) in (7..).zip(malformed_cases()) {
        let events = log.events().to_vec();
        let run = drive(
            input(Trigger::Manual, &events, None, None, window(WINDOW)),
            vec![bad.clone(), bad.clone()],
        );
        assert_eq!(run.outcome.outcome, OutcomeKind::FailedOpen, "{code}");
        assert_eq!(run.outcome.reason, code);
        assert_eq!(count(&run.outcome, code), 2);
        assert_eq!(run.outcome.attempts[0].result, code);
        assert!(run.outcome.failure_note.is_some());
        assert_eq!(run.circuit.len(), 1, "{code} arms the circuit");

        // The same input again: failed open without any dispatch.
        let mut again = input(Trigger::Manual, &events, None, None, window(WINDOW));
        again.circuit = run.circuit.clone();
        again.new_checkpoint_id = "cp-other-id".into();
        let blocked = drive(again, vec![]);
        assert!(blocked.effects.is_empty(), "{code}: no summarize effect");
        assert_eq!(blocked.outcome.outcome, OutcomeKind::FailedOpen);
        assert_eq!(blocked.outcome.reason, ReasonCode::MalformedSummaryCircuitOpen);
        assert_eq!(blocked.outcome.attempts[0].dispatches, 0);
        assert_eq!(blocked.circuit, run.circuit);

        // A changed input (one more event, in a new turn) is dispatched again.
        add_turn(&mut log, next_turn, 40);
        let mut changed = input(Trigger::Manual, log.events(), None, None, window(WINDOW));
        changed.circuit = run.circuit.clone();
        let retried = drive(changed, vec![summary(good_summary("ok")), append_ok()]);
        assert_eq!(retried.summaries().len(), 1, "{code}: changed input dispatched");
        assert_eq!(retried.outcome.outcome, OutcomeKind::Recorded);
    }
}

#[test]
fn too_small_summary_of_a_large_fold_is_malformed() {
    let log = session(20, 2_000);
    let run = drive(
        input(Trigger::Manual, log.events(), None, None, window(WINDOW)),
        vec![
            summary(good_summary("tiny")),
            summary(long_summary("big enough", 1_200)),
            append_ok(),
        ],
    );
    assert_eq!(count(&run.outcome, ReasonCode::MalformedSummaryTooSmall), 1);
    assert_eq!(run.summaries()[1].request.purpose, SummaryPurpose::Repair);
    assert_eq!(run.outcome.outcome, OutcomeKind::Recorded);

    let twice = drive(
        input(Trigger::Manual, log.events(), None, None, window(WINDOW)),
        vec![summary(good_summary("tiny")), summary(good_summary("still tiny"))],
    );
    assert_eq!(twice.outcome.reason, ReasonCode::MalformedSummaryTooSmall);
    assert_eq!(twice.circuit.len(), 1);
}

#[test]
fn cancellation_and_provider_failures_never_arm_the_circuit() {
    let log = session(6, 400);
    let (bad, _) = malformed_cases().remove(1);
    for kind in [
        ProviderFailureKind::Cancelled,
        ProviderFailureKind::Unavailable,
        ProviderFailureKind::RateLimited,
        ProviderFailureKind::Auth,
    ] {
        let run = drive(
            input(Trigger::Manual, log.events(), None, None, window(WINDOW)),
            vec![bad.clone(), summary_failure(kind)],
        );
        assert!(run.circuit.is_empty(), "{kind:?} during the repair armed the circuit");
        let expected = if kind == ProviderFailureKind::Cancelled {
            OutcomeKind::Cancelled
        } else {
            OutcomeKind::FailedOpen
        };
        assert_eq!(run.outcome.outcome, expected);
        assert_eq!(run.outcome.reason, kind.code());
    }

    // The host cancels while the repair is outstanding.
    let mut tx =
        Compaction::start(input(Trigger::Manual, log.events(), None, None, window(WINDOW)))
            .expect("valid");
    let Answer::Summary(bad_result) = bad else { unreachable!("a summary answer") };
    assert!(matches!(tx.poll(), Ok(Step::Effect(_))));
    tx.handle_summary(bad_result).expect("expected");
    assert!(matches!(tx.poll(), Ok(Step::Effect(_))));
    assert!(tx.cancel());
    assert!(tx.into_circuit().is_empty());
}

#[test]
fn length_finish_is_rejected_even_for_a_perfect_text() {
    let log = session(6, 400);
    let run = drive(
        input(Trigger::Manual, log.events(), None, None, window(WINDOW)),
        vec![length_finish(good_summary("a")), length_finish(good_summary("a"))],
    );
    assert_eq!(run.outcome.reason, ReasonCode::MalformedSummaryLengthFinish);
    assert!(run.ledger.is_empty() && run.appends().is_empty());
}

fn tool_lines(request: &SummaryRequest, turns: usize) -> Vec<bool> {
    let text = user_text(request);
    (1..=turns)
        .flat_map(|n| [format!("[tool call c{n}] shell"), format!("[tool result c{n}] shell")])
        .map(|line| text.contains(&line))
        .collect()
}

#[test]
fn provider_overflow_gets_exactly_one_smaller_pair_safe_retry() {
    let log = session(4, 2_000);
    let run = drive(
        input(Trigger::Manual, log.events(), None, None, window(32_000)),
        vec![
            summary_failure(ProviderFailureKind::Overflow),
            summary(good_summary("after retry")),
            append_ok(),
        ],
    );
    let summaries = run.summaries();
    assert_eq!(summaries.len(), 2);
    let (first, retry) = (&summaries[0].request, &summaries[1].request);
    assert_eq!(first.omitted_tool_results, 0);
    assert!(retry.estimated_input_tokens < first.estimated_input_tokens);
    assert!(retry.omitted_tool_results > 0);
    assert!(tool_lines(first, 4).iter().all(|kept| *kept));
    assert!(tool_lines(retry, 4).iter().all(|kept| *kept), "every call/result pair survives");
    assert_eq!(summaries[1].fold, summaries[0].fold);
    assert!(codes(&run.outcome).contains(&ReasonCode::ProviderOverflow));
    assert!(codes(&run.outcome).contains(&ReasonCode::ToolResultsOmitted));
    assert_eq!(run.outcome.outcome, OutcomeKind::Recorded);
    assert_eq!(run.outcome.attempts[0].dispatches, 2);
}

#[test]
fn a_second_provider_overflow_fails_open() {
    let log = session(4, 2_000);
    let run = drive(
        input(Trigger::Manual, log.events(), None, None, window(32_000)),
        vec![
            summary_failure(ProviderFailureKind::Overflow),
            summary_failure(ProviderFailureKind::Overflow),
        ],
    );
    assert_eq!(run.outcome.outcome, OutcomeKind::FailedOpen);
    assert_eq!(run.outcome.reason, ReasonCode::ProviderOverflow);
    assert_eq!(run.outcome.attempts[0].dispatches, 2);
    assert!(run.circuit.is_empty());
}

#[test]
fn overflow_with_nothing_left_to_omit_is_not_retried() {
    // Twelve short turns: a fold larger than a checkpoint's floor (so it is dispatched), with
    // nothing to omit.
    let log = session(12, 10);
    let run = drive(
        input(Trigger::Manual, log.events(), None, None, window(32_000)),
        vec![summary_failure(ProviderFailureKind::Overflow)],
    );
    assert_eq!(run.outcome.outcome, OutcomeKind::FailedOpen);
    assert_eq!(run.outcome.reason, ReasonCode::SummaryInputCannotFit);
    assert_eq!(run.outcome.attempts[0].dispatches, 1);
}

#[test]
fn a_changed_model_or_budget_is_eligible_again() {
    let log = session(6, 400);
    let (bad, _) = malformed_cases().remove(1);
    let armed = drive(
        input(Trigger::Manual, log.events(), None, None, window(WINDOW)),
        vec![bad.clone(), bad],
    );
    assert_eq!(armed.circuit.len(), 1);
    let mut other_model = input(Trigger::Manual, log.events(), None, None, window(WINDOW));
    other_model.provider = crate::support::provider_on(crate::support::CONNECTION, "gpt-5-mini");
    let mut other_budget = input(Trigger::Manual, log.events(), None, None, window(WINDOW * 2));
    let mut other_connection = input(Trigger::Manual, log.events(), None, None, window(WINDOW));
    other_connection.provider = crate::support::provider_on("codex-backup", crate::support::MODEL);
    for mut changed in [other_model, other_budget.clone(), other_connection] {
        changed.circuit = armed.circuit.clone();
        let run = drive(changed, vec![summary(good_summary("ok")), append_ok()]);
        assert_eq!(run.outcome.outcome, OutcomeKind::Recorded);
    }
    // The unchanged input stays blocked, whatever the checkpoint id or clock.
    other_budget.model = window(WINDOW);
    other_budget.circuit = armed.circuit.clone();
    other_budget.now_ms += 60_000;
    let blocked = drive(other_budget, vec![]);
    assert_eq!(blocked.outcome.reason, ReasonCode::MalformedSummaryCircuitOpen);
}
