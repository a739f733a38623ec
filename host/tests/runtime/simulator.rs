//! The provider simulator over real HTTP (reqwest): each wire shape as JSON and as a stream,
//! exact counts, cache granularity, and the host's clients talking to it.

#[path = "../simulator_support/cache_cases.rs"]
mod cache_cases;
#[path = "../simulator_support/overflow_cases.rs"]
mod overflow_cases;
use crate::simulator_support;

use contextfold_core::compaction::FinishReason;
use contextfold_host::providers::{
    AnthropicSummarizer, CodexNativeCompactor, OpenAiChatSummarizer,
};
use contextfold_host::simulator::WireShape;
use serde_json::{Value, json};
use simulator_support::*;

#[tokio::test]
async fn chat_counts_exactly_as_json_and_as_a_stream() {
    let sim = start(100_000).await;
    let tools = json!([{"type": "function", "function": {"name": "shell", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}}]);
    let call = json!({"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": "{\"cmd\":\"ls\"}"}});
    let messages = json!([
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": [{"type": "text", "text": "List the files."}]},
        {"role": "assistant", "content": null, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Cargo.toml\nsrc\n"},
    ]);
    let expected = o200k(&tools[0].to_string())
        + message("system", "You are a careful coding agent.")
        + message("user", "List the files.")
        + message("assistant", "")
        + o200k(&call.to_string())
        + message("tool", "Cargo.toml\nsrc\n");
    let body = json!({"model": "gpt-4.1", "messages": messages, "tools": tools});
    let (status, answer) = post_json(&sim, WireShape::OpenAiChat, &body).await;
    assert_eq!(status, 200);
    assert_eq!(answer["usage"]["prompt_tokens"], json!(expected));
    assert_eq!(answer["usage"]["prompt_tokens_details"]["cached_tokens"], json!(0));
    assert_eq!(answer["usage"]["completion_tokens"], json!(o200k(REPLY)));
    assert_eq!(answer["choices"][0]["message"]["content"], json!(REPLY));
    assert_eq!(answer["choices"][0]["finish_reason"], json!("stop"));

    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    streamed["stream_options"] = json!({"include_usage": true});
    let events = post_stream(&sim, WireShape::OpenAiChat, &streamed).await;
    let text: String = events
        .iter()
        .filter_map(|(_, e)| e.pointer("/choices/0/delta/content").and_then(Value::as_str))
        .collect();
    assert_eq!(text, REPLY);
    let finish = events.iter().find_map(|(_, e)| e.pointer("/choices/0/finish_reason")?.as_str());
    assert_eq!(finish, Some("stop"));
    let usage = &events.last().expect("events").1["usage"];
    assert_eq!(usage["prompt_tokens"], json!(expected));
    let records = sim.records();
    assert_eq!(records.len(), 2);
    assert!(records.iter().all(|r| r.input_tokens == expected && !r.overflow));
    assert!(records[1].stream);
}

#[tokio::test]
async fn responses_count_exactly_as_json_and_as_a_stream() {
    let sim = start(100_000).await;
    let call =
        json!({"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"});
    let body = json!({"model": "gpt-5-codex", "instructions": "Be brief.", "store": false, "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Run the tests."}]},
        call,
        {"type": "function_call_output", "call_id": "c1", "output": "ok: 12 passed"},
    ]});
    let expected = message("system", "Be brief.")
        + message("user", "Run the tests.")
        + message("function_call", &call.to_string())
        + message("function_call_output", "ok: 12 passed");
    let (status, answer) = post_json(&sim, WireShape::OpenAiResponses, &body).await;
    assert_eq!(status, 200);
    assert_eq!(answer["status"], json!("completed"));
    assert_eq!(answer["usage"]["input_tokens"], json!(expected));
    assert_eq!(answer["usage"]["input_tokens_details"]["cached_tokens"], json!(0));
    assert_eq!(answer["usage"]["output_tokens"], json!(o200k(REPLY)));
    assert_eq!(answer["output"][0]["content"][0]["text"], json!(REPLY));

    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let events = post_stream(&sim, WireShape::OpenAiResponses, &streamed).await;
    let names: Vec<&str> = events.iter().filter_map(|(name, _)| name.as_deref()).collect();
    assert_eq!(names.first(), Some(&"response.created"));
    assert_eq!(names.last(), Some(&"response.completed"));
    let deltas: String = events
        .iter()
        .filter(|(name, _)| name.as_deref() == Some("response.output_text.delta"))
        .filter_map(|(_, e)| e["delta"].as_str())
        .collect();
    assert_eq!(deltas, REPLY);
    let completed = &events.last().expect("events").1["response"];
    assert_eq!(completed["usage"]["input_tokens"], json!(expected));

    // The host's streaming Responses client reads the stream end to end.
    let codex = CodexNativeCompactor::new(&sim.openai_base_url(), "gpt-5-codex", "sk-test")
        .expect("config")
        .with_http_client(direct_http());
    let summary = codex.summarize(&summary_request()).await.expect("summarizes");
    assert_eq!((summary.text.as_str(), summary.finish_reason), (REPLY, FinishReason::Stop));
}

#[tokio::test]
async fn anthropic_counts_exactly_as_json_and_as_a_stream() {
    let sim = start(200_000).await;
    let tool_use =
        json!({"type": "tool_use", "id": "tu_1", "name": "shell", "input": {"cmd": "ls"}});
    let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": "Be brief.", "messages": [
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "content": [tool_use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": "Cargo.toml"}]},
    ]});
    let expected = message("system", "Be brief.")
        + message("user", "List the files.")
        + message("assistant", &tool_use.to_string())
        + message("user", "Cargo.toml");
    let (status, answer) = post_json(&sim, WireShape::AnthropicMessages, &body).await;
    assert_eq!(status, 200);
    assert_eq!(answer["usage"]["input_tokens"], json!(expected));
    assert_eq!(answer["usage"]["cache_read_input_tokens"], json!(0));
    assert_eq!(answer["usage"]["cache_creation_input_tokens"], json!(0));
    assert_eq!(answer["usage"]["output_tokens"], json!(o200k(REPLY)));
    assert_eq!(answer["content"][0]["text"], json!(REPLY));
    assert_eq!(answer["stop_reason"], json!("end_turn"));

    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let events = post_stream(&sim, WireShape::AnthropicMessages, &streamed).await;
    let names: Vec<&str> = events.iter().filter_map(|(name, _)| name.as_deref()).collect();
    assert_eq!(names.first(), Some(&"message_start"));
    assert_eq!(names.last(), Some(&"message_stop"));
    assert_eq!(events[0].1["message"]["usage"]["input_tokens"], json!(expected));
    let text: String = events
        .iter()
        .filter_map(|(_, e)| e.pointer("/delta/text").and_then(Value::as_str))
        .collect();
    assert_eq!(text, REPLY);
    let delta = events.iter().find(|(name, _)| name.as_deref() == Some("message_delta"));
    assert_eq!(delta.map(|(_, e)| e["usage"]["output_tokens"].clone()), Some(json!(o200k(REPLY))));

    // The host's Anthropic client reads the answer end to end.
    let client = AnthropicSummarizer::new(&sim.base_url(), "claude-sonnet-4-5", "sk-ant-test")
        .expect("config")
        .with_http_client(direct_http());
    let summary = client.summarize(&summary_request()).await.expect("summarizes");
    assert_eq!((summary.text.as_str(), summary.finish_reason), (REPLY, FinishReason::Stop));
}

#[tokio::test]
async fn the_chat_summarizer_talks_to_the_simulator_end_to_end() {
    let sim = start(100_000).await;
    let client = OpenAiChatSummarizer::new(&sim.openai_base_url(), "gpt-4.1", "sk-test")
        .expect("config")
        .with_http_client(direct_http());
    let request = summary_request();
    let summary = client.summarize(&request).await.expect("summarizes");
    assert_eq!((summary.text.as_str(), summary.finish_reason), (REPLY, FinishReason::Stop));
    let body = client.request_body(&request).expect("maps");
    let expected: u64 = body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| message(m["role"].as_str().expect("role"), m["content"].as_str().expect("text")))
        .sum();
    let records = sim.records();
    assert_eq!(records.len(), 1);
    assert_eq!((records[0].input_tokens, records[0].output_tokens), (expected, o200k(REPLY)));
    assert_eq!(records[0].model, "gpt-4.1");
    sim.shutdown().await;
}

#[tokio::test]
async fn the_records_endpoint_and_the_cli_serve_the_log() {
    let sim = start(100_000).await;
    let body = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]});
    post_json(&sim, WireShape::OpenAiChat, &body).await;
    let url = format!("{}/v1/simulator/records", sim.base_url());
    let log: Value = direct_http().get(url).send().await.expect("get").json().await.expect("json");
    assert_eq!(log[0]["inputTokens"], json!(message("user", "hi")));
    assert_eq!(log[0]["shape"], json!("openai-chat"));

    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_contextfold"))
        .args(["provider-sim", "--listen", "127.0.0.1:0", "--context-window", "50"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawns");
    let mut line = String::new();
    let stdout = child.stdout.take().expect("stdout");
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).expect("line");
    let addr = line.trim().to_owned();
    let long =
        json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "word ".repeat(100)}]});
    let answer = direct_http()
        .post(format!("http://{addr}/v1/chat/completions"))
        .json(&long)
        .send()
        .await
        .expect("sends");
    let status = answer.status().as_u16();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(status, 400, "50-token window: an overflow");
}

/// A PNG header of `width` x `height` (enough for the size sniffer).
fn png(width: u32, height: u32) -> String {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    bytes.extend(width.to_be_bytes());
    bytes.extend(height.to_be_bytes());
    bytes.extend([8, 6, 0, 0, 0, 0, 0, 0, 0]);
    contextfold_core::event::encode_base64(&bytes)
}

#[tokio::test]
async fn images_count_by_each_providers_rule() {
    let sim = start(100_000).await;
    let data = png(1024, 1024);
    let chat = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{data}")}}]}]});
    let (_, answer) = post_json(&sim, WireShape::OpenAiChat, &chat).await;
    // OpenAI's worked example: 1024 x 1024 at high detail is 765 tokens.
    assert_eq!(answer["usage"]["prompt_tokens"], json!(message("user", "What is this?") + 765));
    let anthropic = json!({"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
        {"type": "text", "text": "What is this?"}]}]});
    let (_, answer) = post_json(&sim, WireShape::AnthropicMessages, &anthropic).await;
    // Anthropic: width x height / 750, rounded up.
    let area = (1024 * 1024_u64).div_ceil(750);
    assert_eq!(answer["usage"]["input_tokens"], json!(message("user", "What is this?") + area));
}

#[tokio::test]
async fn summaries_and_model_steps_arrive_after_their_configured_latency() {
    // Issue 39: a summarizer request (it carries contextfold's transcript) waits the
    // summarizer latency, any other request the model latency; both are lower bounds.
    let config = contextfold_host::simulator::SimulatorConfig {
        context_window: 100_000,
        reply_text: REPLY.to_owned(),
        summarizer_latency_ms: 300,
        model_latency_ms: 150,
        ..Default::default()
    };
    let sim = contextfold_host::simulator::Simulator::start(config).await.expect("starts");
    let client = OpenAiChatSummarizer::new(&sim.openai_base_url(), "gpt-4.1", "sk-test")
        .expect("config")
        .with_http_client(direct_http());
    let started = std::time::Instant::now();
    client.summarize(&summary_request()).await.expect("summarizes");
    let summary_ms = started.elapsed().as_millis();
    assert!(summary_ms >= 300, "the summary arrived after {summary_ms} ms");
    let started = std::time::Instant::now();
    let body = json!({"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]});
    let response = direct_http()
        .post(format!("{}/chat/completions", sim.openai_base_url()))
        .json(&body)
        .send()
        .await
        .expect("answers");
    assert_eq!(response.status(), 200);
    let step_ms = started.elapsed().as_millis();
    assert!(step_ms >= 150, "the step arrived after {step_ms} ms");
    assert_eq!(sim.records().len(), 2);
    sim.shutdown().await;
}
