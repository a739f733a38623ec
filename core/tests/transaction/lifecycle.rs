//! Cancellation and the driver's call order.

use contextfold_core::ReasonCode;
use contextfold_core::compaction::{
    Compaction, DriverError, Effect, FinishReason, OutcomeKind, Step, SummaryResponse, Trigger,
};

use crate::driver::{append_ok, drive_started};
use crate::support::{good_summary, input, session, window};

fn started() -> Compaction<'static> {
    let log = session(6, 400);
    Compaction::start(input(Trigger::Manual, log.events(), None, None, window(8_000)))
        .expect("valid")
}

fn good() -> Result<SummaryResponse, contextfold_core::compaction::ProviderFailure> {
    Ok(SummaryResponse { text: good_summary("late"), finish_reason: FinishReason::Stop })
}

fn done(tx: &mut Compaction<'_>) -> contextfold_core::compaction::CompactionOutcome {
    match tx.poll().expect("in order") {
        Step::Done(outcome) => *outcome,
        Step::Effect(effect) => panic!("effect handed out after the end: {effect:?}"),
    }
}

#[test]
fn cancel_before_the_first_poll_hands_out_nothing() {
    let mut tx = started();
    assert!(tx.cancel());
    let outcome = done(&mut tx);
    assert_eq!((outcome.outcome, outcome.reason), (OutcomeKind::Cancelled, ReasonCode::Cancelled));
    assert!(outcome.checkpoint.is_none() && outcome.failure_note.is_none());
    assert!(tx.into_circuit().is_empty());
}

#[test]
fn cancel_while_summarizing_discards_a_late_summary() {
    let mut tx = started();
    assert!(matches!(tx.poll(), Ok(Step::Effect(Effect::Summarize(_)))));
    assert!(tx.cancel());
    assert_eq!(tx.handle_summary(good()), Ok(()), "a late result is discarded");
    assert_eq!(tx.handle_native(Ok(vec![])), Ok(()));
    let outcome = done(&mut tx);
    assert_eq!(outcome.outcome, OutcomeKind::Cancelled);
    assert_eq!(outcome.attempts[0].result, ReasonCode::Cancelled);
    assert_eq!(outcome.attempts[0].dispatches, 1);
    assert!(outcome.checkpoint.is_none());
    assert!(!tx.cancel(), "a finished transaction cannot be cancelled again");
}

#[test]
fn cancel_before_the_append_is_handed_out_persists_nothing() {
    let mut tx = started();
    assert!(matches!(tx.poll(), Ok(Step::Effect(Effect::Summarize(_)))));
    tx.handle_summary(good()).expect("expected");
    assert!(tx.cancel(), "the append effect is not out yet");
    assert_eq!(tx.handle_append(Ok(())), Ok(()), "a late append result is discarded");
    let outcome = done(&mut tx);
    assert_eq!(outcome.outcome, OutcomeKind::Cancelled);
    assert!(outcome.checkpoint.is_none());
}

#[test]
fn cancel_after_the_append_is_handed_out_is_refused() {
    let mut tx = started();
    assert!(matches!(tx.poll(), Ok(Step::Effect(Effect::Summarize(_)))));
    tx.handle_summary(good()).expect("expected");
    let Ok(Step::Effect(Effect::AppendCheckpoint(checkpoint))) = tx.poll() else {
        panic!("append expected")
    };
    assert!(!tx.cancel(), "the durable write is the commit point");
    assert!(!tx.is_done());
    tx.handle_append(Ok(())).expect("expected");
    let outcome = done(&mut tx);
    assert_eq!(outcome.outcome, OutcomeKind::Recorded);
    assert_eq!(outcome.checkpoint.as_ref(), Some(checkpoint.as_ref()));
}

#[test]
fn driver_misuse_is_reported_and_recoverable() {
    let mut tx = started();
    let unexpected = tx.handle_summary(good()).expect_err("nothing was handed out yet");
    assert_eq!(unexpected, DriverError::UnexpectedResult { got: "summary", expected: "a poll" });
    assert_eq!(unexpected.code(), "driver_unexpected_result");

    assert!(matches!(tx.poll(), Ok(Step::Effect(Effect::Summarize(_)))));
    let outstanding = tx.poll().expect_err("summary outstanding");
    assert_eq!(outstanding, DriverError::EffectOutstanding("summary"));
    assert_eq!(outstanding.code(), "driver_effect_outstanding");
    assert_eq!(
        tx.handle_append(Ok(())),
        Err(DriverError::UnexpectedResult { got: "append", expected: "summary" })
    );
    assert_eq!(
        tx.handle_native(Ok(vec![])),
        Err(DriverError::UnexpectedResult { got: "native", expected: "summary" })
    );
    // Misuse changed nothing: the transaction still completes normally.
    tx.handle_summary(good()).expect("expected");
    let run = drive_started(tx, vec![append_ok()], Vec::new());
    assert_eq!(run.outcome.outcome, OutcomeKind::Recorded);
    assert_eq!(run.ledger.len(), 1);
}

#[test]
fn results_after_a_normal_end_are_misuse() {
    let mut tx = started();
    assert!(matches!(tx.poll(), Ok(Step::Effect(_))));
    tx.handle_summary(good()).expect("expected");
    assert!(matches!(tx.poll(), Ok(Step::Effect(Effect::AppendCheckpoint(_)))));
    tx.handle_append(Ok(())).expect("expected");
    assert_eq!(tx.outcome_kind(), Some(OutcomeKind::Recorded));
    assert_eq!(
        tx.handle_summary(good()),
        Err(DriverError::UnexpectedResult { got: "summary", expected: "nothing" })
    );
    assert_eq!(done(&mut tx).outcome, OutcomeKind::Recorded, "poll after the end repeats it");
}

#[test]
fn a_cancelled_manual_compaction_does_not_poison_the_next_one() {
    let log = session(6, 400);
    let mut tx = Compaction::start(input(Trigger::Manual, log.events(), None, None, window(8_000)))
        .expect("valid");
    assert!(matches!(tx.poll(), Ok(Step::Effect(Effect::Summarize(_)))));
    assert!(tx.cancel());
    let circuit = tx.into_circuit();
    let mut next = input(Trigger::Manual, log.events(), None, None, window(8_000));
    next.circuit = circuit;
    let run =
        crate::driver::drive(next, vec![crate::driver::summary(good_summary("b")), append_ok()]);
    assert_eq!(run.outcome.outcome, OutcomeKind::Recorded);
}
