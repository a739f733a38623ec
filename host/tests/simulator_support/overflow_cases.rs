//! Context-length errors: each API's status and body, classified and parsed by the host.

use contextfold_core::compaction::ProviderFailureKind;
use contextfold_core::projection::{Message, Role};
use contextfold_host::providers::classify::{ErrorDetail, classify_http};
use contextfold_host::providers::{
    AnthropicSummarizer, CodexNativeCompactor, OpenAiChatSummarizer, OverflowFacts, overflow_facts,
};
use contextfold_host::simulator::{RESPONSES_OVERFLOW_MESSAGE, WireShape};
use serde_json::{Value, json};

use super::simulator_support::*;

fn facts(input: u64, output: Option<u64>, window: u64) -> Option<OverflowFacts> {
    Some(OverflowFacts { input_tokens: input, output_tokens: output, context_window: window })
}

fn classified(status: u16, body: &Value) -> ProviderFailureKind {
    classify_http(status, &ErrorDetail::from_body(body.to_string().as_bytes()))
}

#[tokio::test]
async fn openai_chat_overflows_with_the_real_body() {
    let sim = start(1000).await;
    let text = long_text("word", 1200);
    let body = chat(&[("user", &text)]);
    let input = chat_tokens(&[("user", &text)]);
    let (status, answer) = post_json(&sim, WireShape::OpenAiChat, &body).await;
    assert_eq!(status, 400);
    let message = format!(
        "This model's maximum context length is 1000 tokens. However, your messages resulted in {input} tokens. Please reduce the length of the messages."
    );
    assert_eq!(
        answer,
        json!({"error": {"message": message, "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
    );
    assert_eq!(classified(status, &answer), ProviderFailureKind::Overflow);
    assert_eq!(overflow_facts(answer.to_string().as_bytes()), facts(input, None, 1000));

    // Input that fits, but not with the requested completion.
    let fits = chat(&[("user", "Summarize the session.")]);
    let input = chat_tokens(&[("user", "Summarize the session.")]);
    let mut capped = fits.clone();
    capped["max_completion_tokens"] = json!(999);
    let (status, answer) = post_json(&sim, WireShape::OpenAiChat, &capped).await;
    assert_eq!(status, 400);
    assert_eq!(overflow_facts(answer.to_string().as_bytes()), facts(input, Some(999), 1000));
    let (status, _) = post_json(&sim, WireShape::OpenAiChat, &fits).await;
    assert_eq!(status, 200);
    let overflows: Vec<bool> = sim.records().iter().map(|r| r.overflow).collect();
    assert_eq!(overflows, [true, true, false]);

    // The host's client sees an Overflow failure.
    let client = OpenAiChatSummarizer::new(&sim.openai_base_url(), "gpt-4.1", "sk-test")
        .expect("config")
        .with_http_client(direct_http())
        .with_max_output_tokens(Some(2000));
    let failure = client.summarize(&summary_request()).await.expect_err("overflows");
    assert_eq!(failure.kind, ProviderFailureKind::Overflow);
}

#[tokio::test]
async fn responses_overflow_as_json_and_in_the_stream() {
    let sim = start(1000).await;
    let body = json!({"model": "gpt-5", "input": long_text("word", 1200)});
    let (status, answer) = post_json(&sim, WireShape::OpenAiResponses, &body).await;
    assert_eq!(status, 400);
    assert_eq!(
        answer,
        json!({"error": {"type": "invalid_request_error", "code": "context_length_exceeded", "message": RESPONSES_OVERFLOW_MESSAGE, "param": "input"}})
    );
    assert_eq!(classified(status, &answer), ProviderFailureKind::Overflow);
    assert_eq!(overflow_facts(answer.to_string().as_bytes()), None, "no counts given");

    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let events = post_stream(&sim, WireShape::OpenAiResponses, &streamed).await;
    let last = &events.last().expect("events").1;
    assert_eq!((last["type"].clone(), last["sequence_number"].clone()), (json!("error"), json!(2)));
    assert_eq!(last["error"]["code"], json!("context_length_exceeded"));

    // The host's streaming client reads the in-stream error as an Overflow.
    let codex = CodexNativeCompactor::new(&sim.openai_base_url(), "gpt-5", "sk-test")
        .expect("config")
        .with_http_client(direct_http());
    let mut big = summary_request();
    big.messages.push(Message::text(Role::User, long_text("w", 1200)));
    let failure = codex.summarize(&big).await.expect_err("overflows");
    assert_eq!(failure.kind, ProviderFailureKind::Overflow);
}

#[tokio::test]
async fn anthropic_overflows_with_the_real_body() {
    let sim = start(1000).await;
    let text = long_text("word", 1200);
    let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [{"role": "user", "content": text}]});
    let input = message("user", &text);
    let (status, answer) = post_json(&sim, WireShape::AnthropicMessages, &body).await;
    assert_eq!(status, 400);
    assert_eq!(answer["type"], json!("error"));
    assert_eq!(
        answer["error"],
        json!({"type": "invalid_request_error", "message": format!("prompt is too long: {input} tokens > 1000 maximum")})
    );
    assert_eq!(classified(status, &answer), ProviderFailureKind::Overflow);
    assert_eq!(overflow_facts(answer.to_string().as_bytes()), facts(input, None, 1000));

    let fits = json!({"model": "claude-sonnet-4-5", "max_tokens": 995, "messages": [{"role": "user", "content": "Hello there"}]});
    let (status, answer) = post_json(&sim, WireShape::AnthropicMessages, &fits).await;
    assert_eq!(status, 400);
    assert_eq!(classified(status, &answer), ProviderFailureKind::Overflow);
    let input = message("user", "Hello there");
    assert_eq!(overflow_facts(answer.to_string().as_bytes()), facts(input, Some(995), 1000));

    let client = AnthropicSummarizer::new(&sim.base_url(), "claude-sonnet-4-5", "sk-ant-test")
        .expect("config")
        .with_http_client(direct_http());
    let failure = client.summarize(&summary_request()).await.expect_err("overflows");
    assert_eq!(failure.kind, ProviderFailureKind::Overflow);
}
