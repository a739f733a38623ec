//! Keys and provider state never leave a call: not in captures, failure messages or `Debug`.

use crate::providers;

use contextfold_host::providers::RequestCapture;
use providers::fixtures::*;
use providers::server::{LoopbackServer, Reply, StreamEnd};
use serde_json::json;

const SECRETS: [&str; 4] = [OPENAI_KEY, ANTHROPIC_KEY, PREVIOUS_STATE, NEW_STATE];

fn assert_clean(label: &str, text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "{label} leaks {secret}: {text}");
    }
}

#[tokio::test]
async fn codex_captures_are_redacted_and_keep_the_shape() {
    let server = LoopbackServer::start().await;
    let items = [compaction_item("cmp_new", NEW_STATE)];
    server.script(Reply::sse(&responses_stream(&items), StreamEnd::Clean));
    let capture = RequestCapture::new();
    let client = codex_client(&server).with_capture(capture.clone());
    let output = client.compact(&native_request()).await.expect("compacts");
    assert_eq!(output[0]["encrypted_content"], json!(NEW_STATE), "the caller gets the real state");

    let entries = capture.entries();
    assert_eq!(entries.len(), 1);
    let entry = &entries[0];
    assert_eq!(entry.provider, "openai-codex");
    assert_eq!(entry.status, Some(200));
    assert_eq!(entry.stripped_headers, ["authorization"]);
    assert_eq!(entry.headers["accept"], "text/event-stream");
    let input = entry.request["input"].as_array().expect("input kept");
    assert_eq!(input[0]["encrypted_content"], json!("[redacted]"));
    assert_eq!(input.last(), Some(&json!({"type": "compaction_trigger"})));
    let events =
        entry.response.as_ref().expect("events")["events"].as_array().expect("array").clone();
    assert_eq!(events.len(), responses_stream(&items).len());
    assert_eq!(events.last().expect("completed")["event"], json!("response.completed"));
    let text = capture.to_json();
    assert_clean("capture", &text);
    assert!(text.contains("[redacted]"));
    assert_clean("client Debug", &format!("{client:?}"));
}

#[tokio::test]
async fn failure_messages_are_scrubbed_of_keys_and_state() {
    // The provider echoes the key (as OpenAI's 401 does, partly) and the state it was sent.
    let server = LoopbackServer::start().await;
    let echo = format!("Incorrect API key provided: {OPENAI_KEY}; bad item {PREVIOUS_STATE}");
    server.script(Reply::status(401, json!({"error": {"message": echo, "type": "invalid_request_error", "code": "invalid_api_key"}})));
    let capture = RequestCapture::new();
    let failure = codex_client(&server)
        .with_capture(capture.clone())
        .compact(&native_request())
        .await
        .expect_err("401");
    assert_clean("401 message", &failure.message);
    assert!(
        failure.message.contains("Incorrect API key provided: [redacted]"),
        "{}",
        failure.message
    );
    assert_clean("401 capture", &capture.to_json());

    // An in-stream error that quotes the state of an item streamed just before.
    let server = LoopbackServer::start().await;
    let events = [
        json!({"type": "response.output_item.done", "output_index": 0, "item": compaction_item("cmp_new", NEW_STATE)}),
        json!({"type": "error", "code": "server_error", "message": format!("could not finish {NEW_STATE}")}),
    ];
    server.script(Reply::sse(&events, StreamEnd::Clean));
    let failure = codex_client(&server)
        .with_capture(capture.clone())
        .compact(&native_request())
        .await
        .expect_err("error event");
    assert_clean("stream error message", &failure.message);
    assert_clean("stream error capture", &capture.to_json());
}

#[tokio::test]
async fn summarizer_captures_strip_both_auth_headers() {
    let server = LoopbackServer::start().await;
    server.script(Reply::ok(chat_completion(&valid_summary(), "stop")));
    let echo = format!("invalid x-api-key {ANTHROPIC_KEY}");
    server.script(Reply::status(
        401,
        json!({"type": "error", "error": {"type": "authentication_error", "message": echo}}),
    ));
    let capture = RequestCapture::new();
    chat_client(&server)
        .with_capture(capture.clone())
        .summarize(&summary_request())
        .await
        .expect("ok");
    let client = anthropic_client(&server).with_capture(capture.clone());
    let failure = client.summarize(&summary_request()).await.expect_err("401");
    assert_clean("anthropic message", &failure.message);
    let entries = capture.entries();
    assert_eq!(entries[0].stripped_headers, ["authorization"]);
    assert_eq!(entries[1].stripped_headers, ["x-api-key"]);
    assert_eq!(entries[1].headers["anthropic-version"], "2023-06-01");
    assert_eq!(entries[1].failure.as_ref().expect("failure")["kind"], json!("auth"));
    assert_clean("summarizer capture", &capture.to_json());
    assert_clean("anthropic Debug", &format!("{client:?}"));
}
