//! The Codex remote-compaction client over real HTTP: the request it sends, the stream it
//! consumes, and every way a stream can go wrong.

use crate::providers;

use std::time::{Duration, Instant};

use contextfold_core::compaction::{NativeBinding, ProviderFailureKind, accept_native_output};
use contextfold_host::providers::CancelToken;
use providers::fixtures::*;
use providers::server::{LoopbackServer, Reply, StreamEnd, sse_frame};
use serde_json::{Value, json};

fn reasoning_item() -> Value {
    json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA-reasoning"})
}

#[tokio::test]
async fn a_complete_stream_returns_its_output_items_and_the_request_is_history_only() {
    let server = LoopbackServer::start().await;
    let items = [reasoning_item(), compaction_item("cmp_new", NEW_STATE)];
    server.script(Reply::sse(&responses_stream(&items), StreamEnd::Clean));
    let request = native_request();
    let output = codex_client(&server).compact(&request).await.expect("compacts");
    assert_eq!(output, items);
    let binding =
        NativeBinding { connection_slug: "codex-loopback".into(), model_id: CODEX_MODEL.into() };
    assert!(accept_native_output(&output, &binding).is_ok());

    let received = server.received();
    assert_eq!(received.len(), 1);
    let sent = &received[0];
    assert_eq!((sent.method.as_str(), sent.path.as_str()), ("POST", "/v1/responses"));
    assert_eq!(sent.headers["authorization"], format!("Bearer {OPENAI_KEY}"));
    assert_eq!(sent.headers["accept"], "text/event-stream");
    let body = sent.body.as_object().expect("JSON object body");
    let mut keys: Vec<&str> = body.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["input", "model", "store", "stream"], "no instructions, no tools");
    assert_eq!(body["store"], json!(false));
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["model"], json!(CODEX_MODEL));
    assert_eq!(body["input"], Value::Array(request.input.clone()));
    let input = body["input"].as_array().expect("input array");
    assert_eq!(input.last(), Some(&json!({"type": "compaction_trigger"})));
    assert_eq!(input[0]["encrypted_content"], json!(PREVIOUS_STATE), "rolling state first");
}

#[tokio::test]
async fn done_items_are_used_when_the_completed_response_lists_no_output() {
    let server = LoopbackServer::start().await;
    let item = compaction_item("cmp_new", NEW_STATE);
    let events = vec![
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "output": []}}),
    ];
    server.script(Reply::sse(&events, StreamEnd::Clean));
    let output = codex_client(&server).compact(&native_request()).await.expect("compacts");
    assert_eq!(output, [item]);
}

#[tokio::test]
async fn zero_or_two_compaction_items_are_returned_for_the_core_to_refuse() {
    let binding =
        NativeBinding { connection_slug: "codex-loopback".into(), model_id: CODEX_MODEL.into() };
    for items in [
        vec![reasoning_item()],
        vec![compaction_item("cmp_a", NEW_STATE), compaction_item("cmp_b", "gAAAA-other")],
    ] {
        let server = LoopbackServer::start().await;
        server.script(Reply::sse(&responses_stream(&items), StreamEnd::Clean));
        let output =
            codex_client(&server).compact(&native_request()).await.expect("stream completes");
        assert_eq!(output, items);
        let defect = accept_native_output(&output, &binding).expect_err("no unique item");
        assert_eq!(defect.code(), "native_no_unique_item");
    }
}

#[tokio::test]
async fn truncated_streams_are_unavailable() {
    let full = responses_stream(&[compaction_item("cmp_new", NEW_STATE)]);
    let without_completion = &full[..full.len() - 1];
    // Clean end without response.completed; aborted connection; aborted mid-event.
    let mut cut_frames: Vec<String> = without_completion.iter().map(sse_frame).collect();
    let last = sse_frame(&full[full.len() - 1]);
    cut_frames.push(last[..last.len() / 2].to_owned());
    let replies = [
        Reply::sse(without_completion, StreamEnd::Clean),
        Reply::sse(without_completion, StreamEnd::Abort),
        Reply::Sse { frames: cut_frames, gap: Duration::ZERO, end: StreamEnd::Abort },
        Reply::sse(&[], StreamEnd::Clean),
    ];
    for (index, reply) in replies.into_iter().enumerate() {
        let server = LoopbackServer::start().await;
        server.script(reply);
        let failure =
            codex_client(&server).compact(&native_request()).await.expect_err("truncated");
        assert_eq!(failure.kind, ProviderFailureKind::Unavailable, "case {index}: {failure:?}");
        assert!(
            failure.message.starts_with("stream_truncated"),
            "case {index}: {}",
            failure.message
        );
        assert!(!failure.message.contains(NEW_STATE), "case {index}");
    }
}

#[tokio::test]
async fn stream_errors_are_classified_by_their_code() {
    let cases = [
        (
            json!({"type": "response.failed", "response": {"id": "resp_1", "status": "failed", "error": {"code": "context_length_exceeded", "message": "Your input exceeds the context window of this model."}}}),
            ProviderFailureKind::Overflow,
            "provider_reported",
        ),
        (
            json!({"type": "response.failed", "response": {"id": "resp_1", "status": "failed", "error": {"code": "server_error", "message": "An error occurred."}}}),
            ProviderFailureKind::Unavailable,
            "provider_reported",
        ),
        (
            json!({"type": "error", "code": "rate_limit_exceeded", "message": "Rate limit reached", "param": null}),
            ProviderFailureKind::RateLimited,
            "provider_reported",
        ),
        (
            json!({"type": "error", "code": "insufficient_quota", "message": "quota", "param": null}),
            ProviderFailureKind::Billing,
            "provider_reported",
        ),
        (
            json!({"type": "error", "code": "invalid_prompt", "message": "bad input", "param": null}),
            ProviderFailureKind::Rejected,
            "provider_reported",
        ),
        (
            json!({"type": "response.incomplete", "response": {"id": "resp_1", "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}}),
            ProviderFailureKind::Rejected,
            "response_incomplete",
        ),
    ];
    for (event, kind, code) in cases {
        let server = LoopbackServer::start().await;
        let events = [
            json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
            event,
        ];
        server.script(Reply::sse(&events, StreamEnd::Clean));
        let failure = codex_client(&server).compact(&native_request()).await.expect_err("fails");
        assert_eq!(failure.kind, kind, "{failure:?}");
        assert!(failure.message.starts_with(code), "{}", failure.message);
    }
}

#[tokio::test]
async fn an_event_without_json_data_is_malformed() {
    let server = LoopbackServer::start().await;
    server.script(Reply::Sse {
        frames: vec!["event: response.created\ndata: {\"type\": \"response.created\"\n\n".into()],
        gap: Duration::ZERO,
        end: StreamEnd::Clean,
    });
    let failure = codex_client(&server).compact(&native_request()).await.expect_err("malformed");
    assert_eq!(failure.kind, ProviderFailureKind::Unavailable);
    assert!(failure.message.starts_with("malformed_response"), "{}", failure.message);
}

#[tokio::test]
async fn a_stalled_stream_times_out() {
    let server = LoopbackServer::start().await;
    let events = responses_stream(&[compaction_item("cmp_new", NEW_STATE)]);
    server.script(Reply::Sse {
        frames: events.iter().map(sse_frame).collect(),
        gap: Duration::from_millis(150),
        end: StreamEnd::Clean,
    });
    let started = Instant::now();
    let failure = codex_client(&server)
        .with_timeout(SHORT_TIMEOUT)
        .compact(&native_request())
        .await
        .expect_err("times out");
    assert_eq!(failure.kind, ProviderFailureKind::Unavailable);
    assert!(failure.message.starts_with("timeout"), "{}", failure.message);
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn cancelling_mid_stream_ends_the_call_promptly() {
    let server = LoopbackServer::start().await;
    let events = responses_stream(&[compaction_item("cmp_new", NEW_STATE)]);
    server.script(Reply::Sse {
        frames: events.iter().map(sse_frame).collect(),
        gap: Duration::from_secs(2),
        end: StreamEnd::Clean,
    });
    let token = CancelToken::new();
    let client = codex_client(&server).with_cancel(token.clone());
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        token.cancel();
    });
    let started = Instant::now();
    let failure = client.compact(&native_request()).await.expect_err("cancelled");
    canceller.await.expect("canceller ran");
    assert_eq!(failure.kind, ProviderFailureKind::Cancelled);
    assert_eq!(failure.message, "cancelled: the call was cancelled");
    assert!(started.elapsed() < Duration::from_secs(2), "ended before the stream did");
}

#[tokio::test]
async fn a_json_answer_instead_of_a_stream_is_read_as_one_response() {
    let server = LoopbackServer::start().await;
    let item = compaction_item("cmp_new", NEW_STATE);
    server.script(Reply::ok(
        json!({"id": "resp_1", "object": "response", "status": "completed", "output": [item]}),
    ));
    let output = codex_client(&server).compact(&native_request()).await.expect("compacts");
    assert_eq!(output, [item]);
}
