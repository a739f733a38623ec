//! Helpers of the simulator tests: a started simulator, HTTP posts, an SSE reader, and token
//! counts computed with tiktoken directly (not through the simulator's own code).
#![allow(dead_code, unreachable_pub)]

use contextfold_core::compaction::{SummaryRequest, build_summary_request};
use contextfold_core::{CharEstimator, LogBuilder};
use contextfold_host::simulator::{Simulator, SimulatorConfig, SimulatorHandle, WireShape};
use serde_json::{Value, json};

/// The simulator's reply in every test.
pub const REPLY: &str = "## Goal\nFix the parser.\n\n## Next Steps\nRun the tests again.";

/// A simulator with `context_window` on a free loopback port.
pub async fn start(context_window: u64) -> SimulatorHandle {
    let config =
        SimulatorConfig { context_window, reply_text: REPLY.to_owned(), ..Default::default() };
    Simulator::start(config).await.expect("starts")
}

/// An HTTP client that never uses a proxy (loopback only).
pub fn direct_http() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().expect("client")
}

/// `o200k_base` tokens of `text`, straight from tiktoken.
pub fn o200k(text: &str) -> u64 {
    tiktoken_rs::o200k_base_singleton().encode_ordinary(text).len() as u64
}

/// Tokens of one rendered message: 3 framing tokens, the role, the text.
pub fn message(role: &str, text: &str) -> u64 {
    3 + o200k(role) + o200k(text)
}

async fn post(sim: &SimulatorHandle, shape: WireShape, body: &Value) -> reqwest::Response {
    direct_http()
        .post(format!("{}{}", sim.base_url(), shape.path()))
        .json(body)
        .send()
        .await
        .expect("sends")
}

/// Posts `body` and returns the status and JSON answer.
pub async fn post_json(sim: &SimulatorHandle, shape: WireShape, body: &Value) -> (u16, Value) {
    let answer = post(sim, shape, body).await;
    let status = answer.status().as_u16();
    (status, answer.json().await.expect("a JSON body"))
}

/// Posts a streaming `body` and returns its events (`event:` name, `data:` JSON), `[DONE]`
/// left out.
pub async fn post_stream(
    sim: &SimulatorHandle,
    shape: WireShape,
    body: &Value,
) -> Vec<(Option<String>, Value)> {
    let answer = post(sim, shape, body).await;
    assert_eq!(answer.status().as_u16(), 200);
    let kind = answer.headers()["content-type"].to_str().expect("ascii").to_owned();
    assert!(kind.starts_with("text/event-stream"), "{kind}");
    let text = answer.text().await.expect("body");
    let mut events = Vec::new();
    for frame in text.split("\n\n").filter(|f| !f.trim().is_empty()) {
        let mut name = None;
        let mut data = String::new();
        for line in frame.lines() {
            if let Some(value) = line.strip_prefix("event: ") {
                name = Some(value.to_owned());
            } else if let Some(value) = line.strip_prefix("data: ") {
                data.push_str(value);
            }
        }
        if data != "[DONE]" {
            events.push((name, serde_json::from_str(&data).expect("JSON data")));
        }
    }
    events
}

/// A user message of about `words` tokens, distinct per `tag`.
pub fn long_text(tag: &str, words: usize) -> String {
    (0..words).map(|n| format!("{tag}{n} ")).collect()
}

/// A chat request of `messages` (role, text) pairs.
pub fn chat(messages: &[(&str, &str)]) -> Value {
    let messages: Vec<Value> =
        messages.iter().map(|(role, text)| json!({"role": role, "content": text})).collect();
    json!({"model": "gpt-4.1", "messages": messages})
}

/// Tokens of [`chat`]'s rendering.
pub fn chat_tokens(messages: &[(&str, &str)]) -> u64 {
    messages.iter().map(|(role, text)| message(role, text)).sum()
}

/// A small summary request built by the core.
pub fn summary_request() -> SummaryRequest {
    let mut log = LogBuilder::new("s-sim");
    log.turn("t1").user("Fix the failing parser test in src/parser.rs");
    log.response(Some("r1")).assistant("The header parser drops the last byte; fixing it.");
    log.response(None);
    build_summary_request(None, &log.build(), 50_000, &CharEstimator).expect("fits")
}
