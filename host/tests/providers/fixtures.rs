//! Requests built by the core from a small realistic session, the keys the tests use, and the
//! provider clients pointed at a loopback server.

use std::time::Duration;

use contextfold_core::compaction::{
    NativeRequest, SummaryRequest, build_native_request, build_summary_request,
};
use contextfold_core::{CharEstimator, LogBuilder, ProviderState, RuntimeEvent};
use contextfold_host::providers::{
    AnthropicSummarizer, CodexNativeCompactor, OpenAiChatSummarizer,
};
use serde_json::{Value, json};

use super::server::LoopbackServer;

/// The OpenAI key the tests send (it must never show up in errors or captures).
pub const OPENAI_KEY: &str = "sk-test-OPENAI-5f3c9a1e7b2d4e8f";
/// The Anthropic key the tests send.
pub const ANTHROPIC_KEY: &str = "sk-ant-test-ANTHROPIC-9d8c7b6a";
/// Encrypted content of the previous compaction item (sent in rolling native requests).
pub const PREVIOUS_STATE: &str = "gAAAAB-previous-state-0123456789abcdef";
/// Encrypted content of the compaction item the scripted Codex returns.
pub const NEW_STATE: &str = "gAAAAB-new-state-fedcba9876543210";
/// The model ids.
pub const CHAT_MODEL: &str = "gpt-4.1-mini";
pub const ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
pub const CODEX_MODEL: &str = "gpt-5-codex";

/// A short session: a request, a tool call with a large result, an answer.
pub fn session_events() -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new("s-providers");
    log.turn("t1").user("Fix the failing parser test in src/parser.rs");
    log.response(Some("r1")).tool_call("c1", "shell", json!({"cmd": "cargo test -p parser"}));
    log.response(None);
    log.tool_result("c1", "shell", json!("test parse_header ... FAILED\n".repeat(40)));
    log.response(Some("r2")).assistant("The header parser drops the last byte; fixing it.");
    log.response(None);
    log.build()
}

/// The core's initial summary request for [`session_events`].
pub fn summary_request() -> SummaryRequest {
    build_summary_request(None, &session_events(), 50_000, &CharEstimator).expect("fits")
}

/// The core's rolling native request for [`session_events`], with a previous state.
pub fn native_request() -> NativeRequest {
    let previous = ProviderState::OpenaiCodexRemoteV2 {
        connection_slug: "codex-loopback".into(),
        model_id: CODEX_MODEL.into(),
        item_id: "cmp_prev".into(),
        encrypted_content: PREVIOUS_STATE.into(),
    };
    build_native_request(Some(&previous), &session_events(), 50_000, &CharEstimator).expect("fits")
}

/// A summary with every required section, substantive.
pub fn valid_summary() -> String {
    "## Goal\nFix the failing parser test in src/parser.rs.\n\n\
     ## Done and In Progress\nRan `cargo test -p parser`: parse_header FAILED.\n\n\
     ## Key Decisions\nFix the header parser rather than the test.\n\n\
     ## Next Steps\nPatch the off-by-one in parse_header and rerun the tests.\n\n\
     ## Critical Context\nsrc/parser.rs, parse_header drops the last byte."
        .to_owned()
}

/// A Chat Completions body answering with `text` and `finish_reason`.
pub fn chat_completion(text: &str, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": CHAT_MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}
    })
}

/// An Anthropic Messages body answering with `text` and `stop_reason`.
pub fn anthropic_message(text: &str, stop_reason: &str) -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": ANTHROPIC_MODEL,
        "content": [{"type": "text", "text": text}], "stop_reason": stop_reason,
        "usage": {"input_tokens": 100, "output_tokens": 50}
    })
}

/// A compaction output item.
pub fn compaction_item(id: &str, encrypted_content: &str) -> Value {
    json!({"type": "compaction", "id": id, "encrypted_content": encrypted_content})
}

/// The events of a complete Responses stream whose output is `items`.
pub fn responses_stream(items: &[Value]) -> Vec<Value> {
    let mut events = vec![
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "status": "in_progress", "output": []}}),
        json!({"type": "response.in_progress", "sequence_number": 1, "response": {"id": "resp_1", "status": "in_progress", "output": []}}),
    ];
    for (index, item) in items.iter().enumerate() {
        events.push(
            json!({"type": "response.output_item.added", "output_index": index, "item": item}),
        );
        events.push(
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        );
    }
    events.push(json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "output": items, "usage": {"input_tokens": 10, "output_tokens": 5}}}));
    events
}

/// A client deadline short enough for "slow" replies to time out quickly.
pub const SHORT_TIMEOUT: Duration = Duration::from_millis(300);
/// How long a "slow" reply waits: far beyond [`SHORT_TIMEOUT`].
pub const SLOW: Duration = Duration::from_secs(20);

/// An HTTP client that never uses a proxy (loopback only).
pub fn direct_http() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().expect("client")
}

pub fn chat_client(server: &LoopbackServer) -> OpenAiChatSummarizer {
    OpenAiChatSummarizer::new(&server.url("/v1"), CHAT_MODEL, OPENAI_KEY)
        .expect("valid config")
        .with_http_client(direct_http())
}

pub fn anthropic_client(server: &LoopbackServer) -> AnthropicSummarizer {
    AnthropicSummarizer::new(&server.url(""), ANTHROPIC_MODEL, ANTHROPIC_KEY)
        .expect("valid config")
        .with_http_client(direct_http())
}

pub fn codex_client(server: &LoopbackServer) -> CodexNativeCompactor {
    CodexNativeCompactor::new(&server.url("/v1"), CODEX_MODEL, OPENAI_KEY)
        .expect("valid config")
        .with_http_client(direct_http())
}
