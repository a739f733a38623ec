//! Request bodies in the two wire shapes, sending them to a `SimulatedProvider`, billing what
//! it reports (row d), and how much of one request comes back as the next one's prefix (row c).

use contextfold_core::budget::UsageReport;
use contextfold_core::projection::{Message, to_anthropic, to_openai_chat};
use contextfold_host::providers::overflow::overflow_facts;
use contextfold_host::providers::usage::{UsageWire, usage_report};
use contextfold_host::simulator::{RequestRecord, SimulatedProvider, WireShape};
use serde_json::{Value, json};

use crate::session::{BenchResult, SentRequest};

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

// Row c: cache reuse between checkpoints. For each pair of consecutive answered requests
// under the same checkpoint, the share of the previous request's serialized message list
// (bytes, each message's JSON one after the other) that comes back as the next request's
// prefix, in OpenAI Chat and Anthropic Messages shapes (without the moving `cache_control`
// mark); a pair below 100% is a break. A pruning epoch is a pair whose pruning diagnostics
// (`stale_tool_results_pruned`, `stale_attachments_pruned`) appear or change. Breaks outside
// epochs are split by where they happen: the first request of a new turn, or within a turn.

/// One session's figures in one wire shape.
#[derive(Debug, Default)]
pub(crate) struct CacheReuse {
    pub(crate) pairs: u64,
    pub(crate) reused_bytes: u64,
    pub(crate) previous_bytes: u64,
    pub(crate) breaks: u64,
    pub(crate) epochs: u64,
    pub(crate) breaks_outside_epochs: u64,
    /// Breaks outside epochs where the next request is the first of a new turn (the live head
    /// of a checkpoint cut inside the previous turn stops being replayed there).
    pub(crate) breaks_at_turn_start: u64,
}

impl CacheReuse {
    /// Bytes of the previous requests that came back, over all pairs.
    pub(crate) fn share(&self) -> f64 {
        if self.previous_bytes == 0 {
            return 1.0;
        }
        self.reused_bytes as f64 / self.previous_bytes as f64
    }
}

/// Which serialization a pair is compared in.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shape {
    Chat,
    Anthropic,
}

fn serialize_messages(messages: &[Message], shape: Shape) -> BenchResult<Vec<u8>> {
    let mut out = Vec::new();
    match shape {
        Shape::Chat => {
            for message in to_openai_chat(messages)? {
                out.extend(message.to_string().into_bytes());
            }
        }
        Shape::Anthropic => {
            let history = to_anthropic(messages)?;
            if let Some(system) = history.system {
                out.extend(serde_json::to_string(&system)?.into_bytes());
            }
            for message in history.messages {
                out.extend(message.to_string().into_bytes());
            }
        }
    }
    Ok(out)
}

/// Measures every pair of `sent` in `shape`.
pub(crate) fn prefix_reuse(sent: &[SentRequest], shape: Shape) -> BenchResult<CacheReuse> {
    let mut reuse = CacheReuse::default();
    let mut previous: Option<(&SentRequest, Vec<u8>)> = None;
    for request in sent {
        let bytes = serialize_messages(&request.messages, shape)?;
        if let Some((before, before_bytes)) = &previous
            && before.checkpoint == request.checkpoint
        {
            let common = before_bytes.iter().zip(&bytes).take_while(|(a, b)| a == b).count() as u64;
            let epoch = before.pruning != request.pruning;
            reuse.pairs += 1;
            reuse.reused_bytes += common;
            reuse.previous_bytes += before_bytes.len() as u64;
            reuse.epochs += u64::from(epoch);
            if common < before_bytes.len() as u64 {
                reuse.breaks += 1;
                reuse.breaks_outside_epochs += u64::from(!epoch);
                reuse.breaks_at_turn_start += u64::from(!epoch && before.turn != request.turn);
            }
        }
        previous = Some((request, bytes));
    }
    Ok(reuse)
}
