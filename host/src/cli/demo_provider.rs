//! The demo's model provider: the loopback provider simulator ([`crate::simulator`]), driven
//! in-process, counting every request with a real tokenizer and answering with each API's
//! usage or context-length error. The demo speaks OpenAI Chat Completions to its first model
//! and Anthropic Messages to the model the user switches to.

use contextfold_core::budget::UsageReport;
use contextfold_core::projection::{Message, to_anthropic, to_openai_chat};
use serde_json::{Value, json};

use super::CliError;
use crate::providers::overflow::overflow_facts;
use crate::providers::usage::{UsageWire, usage_report};
use crate::simulator::{SimulatedProvider, SimulatorConfig, WireShape};

/// What the simulated provider answered to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DemoAnswer {
    /// A response, with its reported usage.
    Usage(UsageReport),
    /// A context-length refusal, with the counts the error message gave.
    Overflow(UsageReport),
}

/// One simulated model: its wire shape, id and output cap.
#[derive(Debug)]
pub(crate) struct DemoModel {
    /// The wire protocol the model is spoken to in.
    pub(crate) shape: WireShape,
    /// The request's `model`.
    pub(crate) model_id: String,
    /// The output cap sent with each request (the runtime's reserve).
    pub(crate) max_tokens: u64,
    provider: SimulatedProvider,
}

impl DemoModel {
    /// A model of `context_window` tokens whose provider counts `count_scale_permille`
    /// thousandths of the `o200k_base` count and takes `model_latency_ms` to answer.
    pub(crate) fn new(
        shape: WireShape,
        model_id: &str,
        context_window: u64,
        max_tokens: u64,
        count_scale_permille: u32,
        model_latency_ms: u64,
    ) -> Self {
        let config = SimulatorConfig {
            context_window,
            reply_text: "Working on it.".into(),
            count_scale_permille,
            model_latency_ms,
            ..SimulatorConfig::default()
        };
        Self {
            shape,
            model_id: model_id.to_owned(),
            max_tokens,
            provider: SimulatedProvider::new(config),
        }
    }

    /// The simulator's request log.
    pub(crate) fn provider(&self) -> &SimulatedProvider {
        &self.provider
    }

    /// Sends `messages` as one request, waits as long as the model takes, and reads the
    /// answer as a client would.
    pub(crate) async fn request(&self, messages: &[Message]) -> Result<DemoAnswer, CliError> {
        let (body, wire) = match self.shape {
            WireShape::AnthropicMessages => {
                let mut history = to_anthropic(messages).map_err(|e| demo_error(e.to_string()))?;
                mark_cache_breakpoint(&mut history.messages);
                let mut body = json!({
                    "model": self.model_id,
                    "max_tokens": self.max_tokens,
                    "messages": history.messages,
                });
                if let Some(system) = history.system {
                    body["system"] = Value::String(system);
                }
                (body, UsageWire::Anthropic)
            }
            _ => {
                let chat = to_openai_chat(messages).map_err(|e| demo_error(e.to_string()))?;
                let body = json!({
                    "model": self.model_id,
                    "max_tokens": self.max_tokens,
                    "messages": chat,
                    "prompt_cache_key": "contextfold-demo",
                });
                (body, UsageWire::OpenAiChat)
            }
        };
        let answer = self.provider.answer(self.shape, body.to_string().as_bytes());
        tokio::time::sleep(answer.latency).await;
        let parsed: Value = serde_json::from_str(&answer.body)
            .map_err(|e| demo_error(format!("the simulator answered non-JSON: {e}")))?;
        if answer.status != 200 && !is_overflow(answer.status, answer.body.as_bytes()) {
            return Err(demo_error(format!("HTTP {}: {}", answer.status, answer.body)));
        }
        if answer.status == 200 {
            return usage_report(wire, &parsed)
                .map(DemoAnswer::Usage)
                .ok_or_else(|| demo_error("the simulator reported no usage".into()));
        }
        // The limit the input exceeded is the window less the requested output.
        let (counted_tokens, limit_tokens) = match overflow_facts(answer.body.as_bytes()) {
            Some(facts) => (
                Some(facts.input_tokens),
                Some(
                    facts
                        .context_window
                        .saturating_sub(facts.output_tokens.unwrap_or(self.max_tokens)),
                ),
            ),
            None => (None, None),
        };
        Ok(DemoAnswer::Overflow(UsageReport::Overflow { counted_tokens, limit_tokens }))
    }
}

/// Puts Anthropic's one cache breakpoint (`cache_control`) on the last block of the last
/// message, as a client that wants its growing history cached does: the next request reads
/// everything up to it.
fn mark_cache_breakpoint(messages: &mut [Value]) {
    let Some(content) = messages.last_mut().and_then(|m| m.get_mut("content")) else { return };
    if let Value::String(text) = content {
        *content = json!([{"type": "text", "text": text}]);
    }
    if let Some(Value::Object(block)) = content.as_array_mut().and_then(|blocks| blocks.last_mut())
    {
        block.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
}

fn is_overflow(status: u16, body: &[u8]) -> bool {
    crate::providers::classify::classify_http(
        status,
        &crate::providers::classify::ErrorDetail::from_body(body),
    ) == contextfold_core::compaction::ProviderFailureKind::Overflow
}

fn demo_error(detail: String) -> CliError {
    CliError::Demo { detail }
}
