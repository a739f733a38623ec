//! Provider-native compaction (schema V3) and its one text-summary fallback.

use contextfold_core::compaction::{
    AttemptKind, COMPACTION_TRIGGER_TYPE, CompactInput, Compactor, OutcomeKind,
    ProviderFailureKind, Trigger,
};
use contextfold_core::{HistoryCompactCheckpoint, ProviderState, ReasonCode, RuntimeEvent};
use serde_json::json;

use crate::driver::{
    Answer, append_ok, compaction_item, drive, native, native_failure, summary, summary_failure,
};
use crate::support::{
    CONNECTION, MODEL, codes, end_of_turn, good_summary, input, session, v3_checkpoint, window,
};

const WINDOW: u64 = 8_000;

fn native_input(
    events: &[RuntimeEvent],
    checkpoint: Option<&HistoryCompactCheckpoint>,
) -> CompactInput<'static> {
    let mut input = input(Trigger::Manual, events, None, checkpoint, window(WINDOW));
    input.compactor = Compactor::OpenaiCodexNative;
    input
}

#[test]
fn one_valid_compaction_item_records_a_v3_checkpoint_bound_to_connection_and_model() {
    let log = session(6, 400);
    let run = drive(
        native_input(log.events(), None),
        vec![
            native(vec![json!({"type": "reasoning", "id": "rs_1"}), compaction_item(1)]),
            append_ok(),
        ],
    );
    assert_eq!(run.outcome.outcome, OutcomeKind::Recorded);
    let request = run.natives()[0];
    assert_eq!(request.input.last().expect("items")["type"], COMPACTION_TRIGGER_TYPE);
    assert!(run.summaries().is_empty(), "no text summary when native succeeds");
    let recorded = run.outcome.checkpoint.as_ref().expect("recorded");
    assert_eq!(recorded.schema_version(), 3);
    match recorded.provider_state().expect("provider state") {
        ProviderState::OpenaiCodexRemoteV2 {
            connection_slug,
            model_id,
            item_id,
            encrypted_content,
        } => {
            assert_eq!((connection_slug.as_str(), model_id.as_str()), (CONNECTION, MODEL));
            assert_eq!(item_id, "cmp_1");
            assert_eq!(encrypted_content, "gAAAA-opaque-1");
        }
        other => panic!("unexpected state {other:?}"),
    }
    assert_eq!(recorded.produced_by.as_deref(), Some("openai-codex:gpt-5-codex"));
    assert_eq!(run.ledger, vec![recorded.clone()]);
    assert_eq!(run.outcome.attempts.len(), 1);
    assert_eq!(run.outcome.attempts[0].kind, AttemptKind::ProviderNative);
    assert_eq!(run.outcome.attempts[0].dispatches, 1);
    assert_eq!(run.outcome.attempts[0].result, ReasonCode::CheckpointRecorded);
}

fn assert_one_text_fallback(first: Answer, native_result: ReasonCode) {
    let log = session(6, 400);
    let run = drive(
        native_input(log.events(), None),
        vec![first, summary(good_summary("fallback")), append_ok()],
    );
    assert_eq!(run.outcome.outcome, OutcomeKind::Recorded, "{native_result}");
    assert_eq!(run.natives().len(), 1);
    assert_eq!(run.summaries().len(), 1);
    assert_eq!(run.summaries()[0].fold.start, 0);
    assert_eq!(run.outcome.checkpoint.as_ref().expect("recorded").schema_version(), 2);
    let attempts: Vec<_> =
        run.outcome.attempts.iter().map(|a| (a.kind, a.dispatches, a.result)).collect();
    assert_eq!(
        attempts,
        [
            (AttemptKind::ProviderNative, 1, native_result),
            (AttemptKind::TextSummary, 1, ReasonCode::CheckpointRecorded),
        ]
    );
    assert!(codes(&run.outcome).contains(&native_result));
}

#[test]
fn zero_compaction_items_fall_back_to_one_text_summary() {
    assert_one_text_fallback(
        native(vec![json!({"type": "reasoning", "id": "rs_1"})]),
        ReasonCode::NativeNoUniqueItem,
    );
}

#[test]
fn two_compaction_items_fall_back_to_one_text_summary() {
    assert_one_text_fallback(
        native(vec![compaction_item(1), compaction_item(2)]),
        ReasonCode::NativeNoUniqueItem,
    );
}

#[test]
fn an_incomplete_compaction_item_falls_back() {
    assert_one_text_fallback(
        native(vec![json!({"type": "compaction", "id": "cmp_1", "encrypted_content": ""})]),
        ReasonCode::NativeNoUniqueItem,
    );
}

#[test]
fn a_protocol_rejection_falls_back() {
    assert_one_text_fallback(
        native_failure(ProviderFailureKind::Rejected),
        ReasonCode::ProviderRejected,
    );
}

#[test]
fn a_failed_fallback_fails_open_after_exactly_two_attempts() {
    let log = session(6, 400);
    let run = drive(
        native_input(log.events(), None),
        vec![native(vec![]), summary_failure(ProviderFailureKind::Unavailable)],
    );
    assert_eq!(run.outcome.outcome, OutcomeKind::FailedOpen);
    assert_eq!(run.outcome.reason, ReasonCode::ProviderUnavailable);
    let kinds: Vec<_> = run.outcome.attempts.iter().map(|a| (a.kind, a.result)).collect();
    assert_eq!(
        kinds,
        [
            (AttemptKind::ProviderNative, ReasonCode::NativeNoUniqueItem),
            (AttemptKind::TextSummary, ReasonCode::ProviderUnavailable),
        ]
    );
    assert!(run.ledger.is_empty());
}

#[test]
fn unhealthy_connection_failures_do_not_fall_back() {
    let log = session(6, 400);
    for kind in [
        ProviderFailureKind::Auth,
        ProviderFailureKind::Billing,
        ProviderFailureKind::RateLimited,
        ProviderFailureKind::Unavailable,
    ] {
        let run = drive(native_input(log.events(), None), vec![native_failure(kind)]);
        assert_eq!(run.outcome.outcome, OutcomeKind::FailedOpen, "{kind:?}");
        assert_eq!(run.outcome.reason, kind.code());
        assert!(run.summaries().is_empty(), "{kind:?} must not double traffic");
        assert_eq!(run.outcome.attempts.len(), 1);
        assert_eq!(run.outcome.attempts[0].result, kind.code());
        assert!(run.outcome.failure_note.is_some());
        assert!(run.circuit.is_empty());
    }
}

#[test]
fn native_cancellation_is_cancelled_without_fallback() {
    let log = session(6, 400);
    let run = drive(
        native_input(log.events(), None),
        vec![native_failure(ProviderFailureKind::Cancelled)],
    );
    assert_eq!(run.outcome.outcome, OutcomeKind::Cancelled);
    assert_eq!(run.outcome.reason, ReasonCode::Cancelled);
    assert!(run.summaries().is_empty() && run.ledger.is_empty());
    assert!(run.outcome.failure_note.is_none());
    assert_eq!(run.outcome.attempts[0].result, ReasonCode::Cancelled);
}

#[test]
fn native_input_that_cannot_fit_is_not_dispatched_and_falls_back_to_text() {
    let log = session(8, 400);
    let events = log.events().to_vec();
    let huge_state = "A".repeat(40_000);
    let old =
        v3_checkpoint("cp-v3", &events, end_of_turn(&events, 3), CONNECTION, MODEL, &huge_state);
    let run = drive(
        native_input(&events, Some(&old)),
        vec![summary(good_summary("fallback")), append_ok()],
    );
    assert!(run.natives().is_empty(), "an over-capacity native request is never dispatched");
    let attempts: Vec<_> =
        run.outcome.attempts.iter().map(|a| (a.kind, a.dispatches, a.result)).collect();
    assert_eq!(
        attempts,
        [
            (AttemptKind::ProviderNative, 0, ReasonCode::NativeInputCannotFit),
            (AttemptKind::TextSummary, 1, ReasonCode::CheckpointRecorded),
        ]
    );
    assert_eq!(run.summaries()[0].fold.start, 0, "a V3 state seeds no text summary");
    let recorded = run.outcome.checkpoint.expect("recorded");
    assert_eq!(recorded.schema_version(), 2);
    assert_eq!(recorded.previous_checkpoint_id.as_deref(), Some("cp-v3"));
}

#[test]
fn rolling_native_update_resends_the_previous_state_and_only_the_fold() {
    let log = session(8, 400);
    let events = log.events().to_vec();
    let covered = end_of_turn(&events, 3);
    let old = v3_checkpoint("cp-v3", &events, covered, CONNECTION, MODEL, "gAAAA-previous");
    let run = drive(
        native_input(&events, Some(&old)),
        vec![native(vec![compaction_item(2)]), append_ok()],
    );
    let request = run.natives()[0];
    assert_eq!(request.input[0]["type"], "compaction");
    assert_eq!(request.input[0]["encrypted_content"], "gAAAA-previous");
    let text = serde_json::to_string(&request.input).expect("json");
    assert!(!text.contains("src/mod_1.rs") && text.contains("src/mod_4.rs"), "fold only");
    let recorded = run.outcome.checkpoint.expect("recorded");
    assert_eq!(recorded.previous_checkpoint_id.as_deref(), Some("cp-v3"));
    assert_eq!(recorded.coverage.event_count as usize, events.len());
}

#[test]
fn a_v3_checkpoint_of_another_connection_or_model_is_never_replayed() {
    let log = session(8, 400);
    let events = log.events().to_vec();
    let covered = end_of_turn(&events, 3);
    for (connection, model) in [("codex-other", MODEL), (CONNECTION, "gpt-5-codex-mini")] {
        let old = v3_checkpoint("cp-v3", &events, covered, connection, model, "gAAAA-previous");
        let run = drive(
            native_input(&events, Some(&old)),
            vec![native(vec![compaction_item(3)]), append_ok()],
        );
        assert_eq!(codes(&run.outcome)[0], ReasonCode::ProviderMismatch);
        let request = run.natives()[0];
        assert!(request.input.iter().all(|item| item["type"] != "compaction"));
        let text = serde_json::to_string(&request.input).expect("json");
        assert!(text.contains("src/mod_1.rs"), "reprojected from raw events");
        let recorded = run.outcome.checkpoint.expect("recorded");
        assert_eq!(recorded.provider_state().expect("v3").binding(), (CONNECTION, MODEL));
    }
}

#[test]
fn an_invalid_native_fold_is_reported_as_invalid_not_as_too_large() {
    // Two turns reuse one call id: the log is valid, but a Responses request cannot pair them.
    let mut log = contextfold_core::LogBuilder::new(crate::support::SESSION);
    for n in 1..=2 {
        log.turn(&format!("t{n}"))
            .user("list the files")
            .tool_call("call-1", "shell", json!({"cmd": "ls"}))
            .tool_result("call-1", "shell", json!("src tests ".repeat(300)))
            .assistant("two folders");
    }
    let run = drive(
        native_input(log.events(), None),
        vec![summary(good_summary("fallback")), append_ok()],
    );
    assert!(run.natives().is_empty(), "an invalid native input is never dispatched");
    assert_eq!(run.outcome.attempts[0].kind, AttemptKind::ProviderNative);
    assert_eq!(run.outcome.attempts[0].dispatches, 0);
    assert_eq!(run.outcome.attempts[0].result, ReasonCode::NativeInputInvalid);
    assert!(codes(&run.outcome).contains(&ReasonCode::NativeInputInvalid));
    assert!(!codes(&run.outcome).contains(&ReasonCode::NativeInputCannotFit));
}
