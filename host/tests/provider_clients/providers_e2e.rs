//! End to end: the core's compaction transaction driven by the real clients over loopback HTTP,
//! with an in-memory AgentRun ledger.

use crate::providers;

use contextfold_core::checkpoint::RecordedCheckpointEvent;
use contextfold_core::compaction::{
    AttemptKind, CompactInput, Compaction, CompactionOutcome, Compactor, Effect,
    MalformedInputCircuit, OPENAI_CODEX_PROVIDER, OutcomeKind, ProviderIdentity, Step, Trigger,
};
use contextfold_core::{CheckpointProjection, LogBuilder, ModelFacts, ProviderState, RuntimeEvent};
use contextfold_host::providers::{CodexNativeCompactor, OpenAiChatSummarizer};
use providers::fixtures::*;
use providers::server::{LoopbackServer, Reply, StreamEnd};
use serde_json::json;

/// Three completed turns, each with a sizeable tool result.
fn long_session() -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new("s-e2e");
    for turn in 1..=3 {
        let call = format!("c{turn}");
        log.turn(&format!("t{turn}"))
            .user(&format!("Step {turn}: fix the next failing parser test"));
        log.response(Some(&format!("r{turn}a"))).tool_call(
            &call,
            "shell",
            json!({"cmd": format!("cargo test -p parser case_{turn}")}),
        );
        log.response(None);
        log.tool_result(
            &call,
            "shell",
            json!(format!("test case_{turn} ... FAILED\n").repeat(120)),
        );
        log.response(Some(&format!("r{turn}b"))).assistant("Fixed the off-by-one in parse_header.");
        log.response(None);
    }
    log.build()
}

fn input(compactor: Compactor, provider: ProviderIdentity) -> CompactInput<'static> {
    CompactInput {
        trigger: Trigger::Manual,
        events: long_session().into(),
        current_turn_id: None,
        checkpoint: None,
        model: ModelFacts { context_window: Some(16_000), ..Default::default() },
        provider,
        compactor,
        new_checkpoint_id: "cp-e2e-1".into(),
        now_ms: 1_800_000_000_000,
        provider_options: None,
        summarizer_label: None,
        circuit: MalformedInputCircuit::new(),
        prepared: None,
    }
}

fn codex_identity() -> ProviderIdentity {
    ProviderIdentity {
        provider: OPENAI_CODEX_PROVIDER.into(),
        connection_slug: "codex-loopback".into(),
        model_id: CODEX_MODEL.into(),
    }
}

/// Drives one compaction to its outcome, appending accepted checkpoints to `ledger`.
async fn drive(
    input: CompactInput<'_>,
    summarizer: &OpenAiChatSummarizer,
    native: &CodexNativeCompactor,
    ledger: &mut Vec<RecordedCheckpointEvent>,
) -> CompactionOutcome {
    let mut tx = Compaction::start(input).expect("valid log");
    for _ in 0..16 {
        match tx.poll().expect("driver order") {
            Step::Effect(Effect::Summarize(effect)) => {
                let result = summarizer.summarize(&effect.request).await;
                tx.handle_summary(result).expect("awaiting a summary");
            }
            Step::Effect(Effect::CompactNatively(request)) => {
                let result = native.compact(&request).await;
                tx.handle_native(result).expect("awaiting native output");
            }
            Step::Effect(Effect::AppendCheckpoint(checkpoint)) => {
                ledger.push(RecordedCheckpointEvent {
                    event_id: format!("ar-{}", ledger.len() + 1),
                    session_id: checkpoint.session_id.clone(),
                    recorded_at_ms: checkpoint.created_at_ms,
                    payload: checkpoint.to_value(),
                });
                tx.handle_append(Ok(())).expect("awaiting the append");
            }
            Step::Done(outcome) => return *outcome,
        }
    }
    panic!("the transaction did not finish within 16 effects");
}

fn attempts(outcome: &CompactionOutcome) -> Vec<(AttemptKind, &'static str)> {
    outcome.attempts.iter().map(|a| (a.kind, a.result.as_str())).collect()
}

#[tokio::test]
async fn a_text_summary_is_recorded() {
    let server = LoopbackServer::start().await;
    server.script(Reply::ok(chat_completion(&valid_summary(), "stop")));
    let provider = ProviderIdentity {
        provider: "openai".into(),
        connection_slug: "chat-loopback".into(),
        model_id: CHAT_MODEL.into(),
    };
    let mut ledger = Vec::new();
    let outcome = drive(
        input(Compactor::TextSummary, provider),
        &chat_client(&server),
        &codex_client(&server),
        &mut ledger,
    )
    .await;
    assert_eq!(outcome.outcome, OutcomeKind::Recorded, "{:?}", outcome.diagnostics);
    let checkpoint = outcome.checkpoint.as_ref().expect("checkpoint");
    assert_eq!(checkpoint.schema_version(), 2);
    // The model's text as written; the quality gate may append exact artifacts after it.
    assert!(
        matches!(&checkpoint.projection, CheckpointProjection::Summary(text) if text.starts_with(valid_summary().trim_end()))
    );
    assert_eq!(checkpoint.coverage.event_count, long_session().len() as u64);
    assert_eq!(attempts(&outcome), [(AttemptKind::TextSummary, "checkpoint_recorded")]);
    assert_eq!(ledger.len(), 1);
    let received = server.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].path, "/v1/chat/completions");
    let transcript = received[0].body["messages"][1]["content"].as_str().expect("user text");
    assert!(transcript.contains("cargo test -p parser case_3"), "the whole fold was sent");
}

#[tokio::test]
async fn codex_native_state_is_recorded_as_v3() {
    let server = LoopbackServer::start().await;
    let items = [
        json!({"type": "reasoning", "id": "rs_1", "summary": []}),
        compaction_item("cmp_new", NEW_STATE),
    ];
    server.script(Reply::sse(&responses_stream(&items), StreamEnd::Clean));
    let mut ledger = Vec::new();
    let outcome = drive(
        input(Compactor::OpenaiCodexNative, codex_identity()),
        &chat_client(&server),
        &codex_client(&server),
        &mut ledger,
    )
    .await;
    assert_eq!(outcome.outcome, OutcomeKind::Recorded, "{:?}", outcome.diagnostics);
    let checkpoint = outcome.checkpoint.as_ref().expect("checkpoint");
    assert_eq!(checkpoint.schema_version(), 3);
    let CheckpointProjection::ProviderState(ProviderState::OpenaiCodexRemoteV2 {
        item_id,
        encrypted_content,
        connection_slug,
        model_id,
    }) = &checkpoint.projection
    else {
        panic!("expected provider state, got {:?}", checkpoint.projection);
    };
    assert_eq!((item_id.as_str(), encrypted_content.as_str()), ("cmp_new", NEW_STATE));
    assert_eq!((connection_slug.as_str(), model_id.as_str()), ("codex-loopback", CODEX_MODEL));
    assert_eq!(attempts(&outcome), [(AttemptKind::ProviderNative, "checkpoint_recorded")]);
    let received = server.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].path, "/v1/responses");
    let body = &received[0].body;
    assert!(body.get("tools").is_none() && body.get("instructions").is_none());
    assert_eq!(body["store"], json!(false));
    assert_eq!(
        body["input"].as_array().and_then(|i| i.last()),
        Some(&json!({"type": "compaction_trigger"}))
    );
    assert_eq!(ledger.len(), 1);
}

#[tokio::test]
async fn zero_compaction_items_fall_back_to_one_text_summary() {
    let server = LoopbackServer::start().await;
    server.script(Reply::sse(
        &responses_stream(&[json!({"type": "reasoning", "id": "rs_1", "summary": []})]),
        StreamEnd::Clean,
    ));
    server.script(Reply::ok(chat_completion(&valid_summary(), "stop")));
    let mut ledger = Vec::new();
    let outcome = drive(
        input(Compactor::OpenaiCodexNative, codex_identity()),
        &chat_client(&server),
        &codex_client(&server),
        &mut ledger,
    )
    .await;
    assert_eq!(outcome.outcome, OutcomeKind::Recorded, "{:?}", outcome.diagnostics);
    assert_eq!(outcome.checkpoint.as_ref().expect("checkpoint").schema_version(), 2);
    assert_eq!(
        attempts(&outcome),
        [
            (AttemptKind::ProviderNative, "native_no_unique_item"),
            (AttemptKind::TextSummary, "checkpoint_recorded")
        ]
    );
    let paths: Vec<String> = server.received().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/v1/responses", "/v1/chat/completions"]);
    assert_eq!(ledger.len(), 1);
}

#[tokio::test]
async fn a_codex_rate_limit_fails_open_without_a_fallback() {
    let server = LoopbackServer::start().await;
    server.script(Reply::status(429, json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}})));
    server.script(Reply::ok(chat_completion(&valid_summary(), "stop")));
    let mut ledger = Vec::new();
    let outcome = drive(
        input(Compactor::OpenaiCodexNative, codex_identity()),
        &chat_client(&server),
        &codex_client(&server),
        &mut ledger,
    )
    .await;
    assert_eq!(outcome.outcome, OutcomeKind::FailedOpen, "{:?}", outcome.diagnostics);
    assert_eq!(outcome.reason.as_str(), "provider_rate_limited");
    assert!(outcome.checkpoint.is_none());
    assert_eq!(attempts(&outcome), [(AttemptKind::ProviderNative, "provider_rate_limited")]);
    assert_eq!(server.received().len(), 1, "no text-summary request after a rate limit");
    assert_eq!(server.unused_replies(), 1);
    assert!(ledger.is_empty());
    let json = serde_json::to_string(&outcome).expect("serializes");
    assert!(!json.contains(OPENAI_KEY));
}
