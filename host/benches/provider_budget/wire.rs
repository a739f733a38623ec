//! Request bodies in the two wire shapes, sending them to a `SimulatedProvider`, and billing
//! what it reports.

use contextfold_core::calibration::UsageReport;
use contextfold_core::projection::Message;
use contextfold_core::projection::anthropic::to_anthropic;
use contextfold_core::projection::openai_chat::to_openai_chat;
use contextfold_host::providers::overflow::overflow_facts;
use contextfold_host::providers::usage::{UsageWire, usage_report};
use contextfold_host::simulator::{RequestRecord, SimulatedProvider, WireShape};
use serde_json::{Value, json};

use crate::session::BenchResult;

/// Output cap of the billing replays (the replays' window is large: they never overflow).
const REPLAY_MAX_TOKENS: u64 = 1_000;

/// An OpenAI Chat Completions body with a `prompt_cache_key` (one cache per session).
pub(crate) fn chat_body(messages: &[Message], model: &str) -> BenchResult<String> {
    Ok(chat_body_with(messages, model, REPLAY_MAX_TOKENS)?.to_string())
}

fn chat_body_with(messages: &[Message], model: &str, max_tokens: u64) -> BenchResult<Value> {
    Ok(json!({
        "model": model,
        "max_tokens": max_tokens,
        "messages": to_openai_chat(messages)?,
        "prompt_cache_key": format!("contextfold-bench-{model}"),
    }))
}

/// An Anthropic Messages body with one `cache_control` breakpoint on the last block of the
/// last message (a client that wants its growing history cached).
pub(crate) fn anthropic_body(messages: &[Message], model: &str) -> BenchResult<String> {
    let history = to_anthropic(messages)?;
    let mut messages = history.messages;
    mark_cache_breakpoint(&mut messages);
    let mut body = json!({"model": model, "max_tokens": REPLAY_MAX_TOKENS, "messages": messages});
    if let Some(system) = history.system {
        body["system"] = Value::String(system);
    }
    Ok(body.to_string())
}

fn mark_cache_breakpoint(messages: &mut [Value]) {
    let Some(content) = messages.last_mut().and_then(|m| m.get_mut("content")) else { return };
    if let Value::String(text) = content {
        *content = json!([{"type": "text", "text": text}]);
    }
    if let Some(Value::Object(block)) = content.as_array_mut().and_then(|b| b.last_mut()) {
        block.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
}

/// Sends one Chat body (its `max_tokens` replaced by `max_tokens`) and reads the answer as a
/// client does: the usage, or the overflow's counts.
pub(crate) fn send(
    provider: &SimulatedProvider,
    shape: WireShape,
    body: &str,
    max_tokens: u64,
) -> BenchResult<UsageReport> {
    let mut value: Value = serde_json::from_str(body)?;
    value["max_tokens"] = json!(max_tokens);
    let answer = provider.answer(shape, value.to_string().as_bytes());
    let parsed: Value = serde_json::from_str(&answer.body)?;
    if answer.status == 200 {
        let wire = match shape {
            WireShape::AnthropicMessages => UsageWire::Anthropic,
            _ => UsageWire::OpenAiChat,
        };
        return usage_report(wire, &parsed).ok_or_else(|| "the simulator reported no usage".into());
    }
    let facts = overflow_facts(answer.body.as_bytes())
        .ok_or_else(|| format!("HTTP {}: {}", answer.status, answer.body))?;
    let limit = facts.context_window.saturating_sub(facts.output_tokens.unwrap_or(max_tokens));
    Ok(UsageReport::Overflow {
        counted_tokens: Some(facts.input_tokens),
        limit_tokens: Some(limit),
    })
}

/// Billed-equivalent input of a request log. OpenAI style: uncached x1, cached x0.1.
/// Anthropic style: uncached x1, cache read x0.1, cache write x1.25. Refused requests are not
/// billed.
pub(crate) fn billed(records: &[RequestRecord], shape: WireShape) -> f64 {
    records
        .iter()
        .filter(|r| !r.overflow)
        .map(|r| {
            let cached = r.cached_tokens as f64;
            match shape {
                WireShape::AnthropicMessages => {
                    let write = r.cache_write_tokens as f64;
                    let uncached = r.input_tokens as f64 - cached - write;
                    uncached + 0.1 * cached + 1.25 * write
                }
                _ => (r.input_tokens as f64 - cached) + 0.1 * cached,
            }
        })
        .sum()
}
