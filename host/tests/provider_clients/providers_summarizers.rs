//! The Chat Completions and Anthropic Messages summarizers over real HTTP: what they send, what
//! they read back, finish reasons, timeouts and cancellation.

use crate::providers;

use std::time::{Duration, Instant};

use contextfold_core::compaction::{FinishReason, ProviderFailureKind, SummaryResponse};
use contextfold_core::projection::to_openai_chat;
use contextfold_host::providers::{ANTHROPIC_VERSION, CancelToken, anthropic_max_output_tokens};
use providers::fixtures::*;
use providers::server::{LoopbackServer, Reply};
use serde_json::json;

#[tokio::test]
async fn chat_sends_the_mapped_messages_and_reads_the_completion() {
    let server = LoopbackServer::start().await;
    server.script(Reply::ok(chat_completion(&valid_summary(), "stop")));
    let request = summary_request();
    let response = chat_client(&server).summarize(&request).await.expect("summarizes");
    assert_eq!(
        response,
        SummaryResponse { text: valid_summary(), finish_reason: FinishReason::Stop }
    );

    let sent = &server.received()[0];
    assert_eq!((sent.method.as_str(), sent.path.as_str()), ("POST", "/v1/chat/completions"));
    assert_eq!(sent.headers["authorization"], format!("Bearer {OPENAI_KEY}"));
    assert_eq!(sent.headers["content-type"], "application/json");
    let expected_messages = to_openai_chat(&request.messages).expect("maps");
    assert_eq!(
        sent.body,
        json!({"model": CHAT_MODEL, "messages": expected_messages, "stream": false})
    );
    assert_eq!(sent.body["messages"][0]["role"], "system");
    assert!(
        sent.body["messages"][1]["content"]
            .as_str()
            .expect("text")
            .contains("cargo test -p parser")
    );
}

#[tokio::test]
async fn chat_output_cap_is_sent_only_when_configured() {
    let server = LoopbackServer::start().await;
    server.script(Reply::ok(chat_completion(&valid_summary(), "stop")));
    chat_client(&server)
        .with_max_output_tokens(Some(4_000))
        .summarize(&summary_request())
        .await
        .expect("summarizes");
    assert_eq!(server.received()[0].body["max_completion_tokens"], json!(4_000));
}

#[tokio::test]
async fn a_length_finish_is_reported_as_length() {
    let server = LoopbackServer::start().await;
    server.script(Reply::ok(chat_completion("## Goal\nFix the pars", "length")));
    server.script(Reply::ok(anthropic_message("## Goal\nFix the pars", "max_tokens")));
    let chat = chat_client(&server).summarize(&summary_request()).await.expect("answers");
    assert_eq!(chat.finish_reason, FinishReason::Length);
    let anthropic = anthropic_client(&server).summarize(&summary_request()).await.expect("answers");
    assert_eq!(anthropic.finish_reason, FinishReason::Length);
}

#[tokio::test]
async fn anthropic_sends_system_separately_with_the_models_max_output() {
    let server = LoopbackServer::start().await;
    server.script(Reply::ok(anthropic_message(&valid_summary(), "end_turn")));
    let request = summary_request();
    let response = anthropic_client(&server).summarize(&request).await.expect("summarizes");
    assert_eq!(
        response,
        SummaryResponse { text: valid_summary(), finish_reason: FinishReason::Stop }
    );

    let sent = &server.received()[0];
    assert_eq!((sent.method.as_str(), sent.path.as_str()), ("POST", "/v1/messages"));
    assert_eq!(sent.headers["x-api-key"], ANTHROPIC_KEY);
    assert_eq!(sent.headers["anthropic-version"], ANTHROPIC_VERSION);
    assert!(!sent.headers.contains_key("authorization"));
    let body = &sent.body;
    assert_eq!(body["model"], json!(ANTHROPIC_MODEL));
    assert_eq!(body["max_tokens"], json!(anthropic_max_output_tokens(ANTHROPIC_MODEL)));
    assert_eq!(body["max_tokens"], json!(64_000));
    let system = body["system"].as_str().expect("system string");
    assert!(system.contains("## Goal"), "the instructions travel as system");
    let messages = body["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["role"], "user");
    let text = messages[0]["content"][0]["text"].as_str().expect("text block");
    assert!(text.contains("cargo test -p parser"));
    assert!(messages.iter().all(|message| message["role"] != "system"));
}

#[tokio::test]
async fn anthropic_max_tokens_is_configurable() {
    let server = LoopbackServer::start().await;
    server.script(Reply::ok(anthropic_message(&valid_summary(), "end_turn")));
    anthropic_client(&server)
        .with_max_tokens(12_345)
        .summarize(&summary_request())
        .await
        .expect("ok");
    assert_eq!(server.received()[0].body["max_tokens"], json!(12_345));
}

#[tokio::test]
async fn a_pre_fired_token_sends_nothing() {
    let server = LoopbackServer::start().await;
    server.script(Reply::ok(chat_completion(&valid_summary(), "stop")));
    let token = CancelToken::new();
    token.cancel();
    let failure = chat_client(&server)
        .with_cancel(token)
        .summarize(&summary_request())
        .await
        .expect_err("cancelled");
    assert_eq!(failure.kind, ProviderFailureKind::Cancelled);
    assert!(server.received().is_empty(), "no request was sent");
}

#[tokio::test]
async fn cancelling_a_slow_summary_ends_it_promptly() {
    for anthropic in [false, true] {
        let server = LoopbackServer::start().await;
        server.script(Reply::ok(chat_completion(&valid_summary(), "stop")).delayed(SLOW));
        let token = CancelToken::new();
        let canceller = {
            let token = token.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(150)).await;
                token.cancel();
            })
        };
        let started = Instant::now();
        let result = if anthropic {
            anthropic_client(&server).with_cancel(token).summarize(&summary_request()).await
        } else {
            chat_client(&server).with_cancel(token).summarize(&summary_request()).await
        };
        canceller.await.expect("canceller ran");
        let failure = result.expect_err("cancelled");
        assert_eq!(failure.kind, ProviderFailureKind::Cancelled);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(server.received().len(), 1, "the request was in flight");
    }
}

#[tokio::test]
async fn bad_configuration_is_a_typed_error() {
    use contextfold_host::providers::{
        AnthropicSummarizer, CodexNativeCompactor, OpenAiChatSummarizer,
    };
    let error = OpenAiChatSummarizer::new("ftp://example.invalid", CHAT_MODEL, OPENAI_KEY)
        .expect_err("scheme");
    assert_eq!(error.code(), "invalid_base_url");
    let error =
        AnthropicSummarizer::new("not a url", ANTHROPIC_MODEL, ANTHROPIC_KEY).expect_err("url");
    assert_eq!(error.code(), "invalid_base_url");
    let error =
        CodexNativeCompactor::new("http://127.0.0.1:1/v1", "", OPENAI_KEY).expect_err("model");
    assert_eq!(error.code(), "empty_model");
    let error =
        OpenAiChatSummarizer::new("http://127.0.0.1:1/v1", CHAT_MODEL, "  ").expect_err("key");
    assert_eq!(error.code(), "invalid_api_key");
    let error = OpenAiChatSummarizer::new("http://127.0.0.1:1/v1", CHAT_MODEL, "sk-a\u{7}b")
        .expect_err("key");
    assert_eq!(error.code(), "invalid_api_key");
    assert!(!error.to_string().contains("sk-a"));
}

#[test]
fn clients_and_their_futures_can_move_across_tasks() {
    use contextfold_host::providers::{
        AnthropicSummarizer, CodexNativeCompactor, OpenAiChatSummarizer,
    };
    fn assert_send<T: Send>(_: T) {}
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<OpenAiChatSummarizer>();
    assert_send_sync::<AnthropicSummarizer>();
    assert_send_sync::<CodexNativeCompactor>();
    let url = "http://127.0.0.1:1/v1";
    let chat = OpenAiChatSummarizer::new(url, CHAT_MODEL, OPENAI_KEY).expect("config");
    let anthropic = AnthropicSummarizer::new(url, ANTHROPIC_MODEL, ANTHROPIC_KEY).expect("config");
    let codex = CodexNativeCompactor::new(url, CODEX_MODEL, OPENAI_KEY).expect("config");
    let (summary, native) = (summary_request(), native_request());
    // Built, never polled: only the types are checked.
    assert_send(chat.summarize(&summary));
    assert_send(anthropic.summarize(&summary));
    assert_send(codex.compact(&native));
}
