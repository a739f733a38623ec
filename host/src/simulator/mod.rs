//! A loopback provider simulator: OpenAI Chat Completions, OpenAI Responses and Anthropic
//! Messages on 127.0.0.1, counting input tokens exactly (`o200k_base`), caching prefixes at each
//! provider's granularity, and failing with each API's context-length error. See
//! `docs/simulator.md`.
//!
//! - [`Simulator::start`] serves `POST /v1/chat/completions`, `POST /v1/responses` and
//!   `POST /v1/messages` (JSON, or an event stream with `"stream": true`), plus
//!   `GET /v1/simulator/records` (the request log as JSON), until
//!   [`SimulatorHandle::shutdown`] or the handle is dropped;
//! - [`SimulatedProvider`] is the same provider without a socket: [`SimulatedProvider::answer`]
//!   takes a request body and returns the status and body the server would send;
//! - every request leaves a [`RequestRecord`]: counted input, cached, written and output
//!   tokens, and whether it overflowed.
//!
//! Counting is in `counting` (the rendering), caching in [`cache`] (the rules and their
//! sources), answers in `wire`, the lossy summarizer mode in [`lossy`].

pub mod cache;
mod counting;
pub mod lossy;
mod server;
mod summarizer;
mod wire;

use std::net::SocketAddr;
use std::sync::{Mutex, PoisonError};

use serde::Serialize;
use serde_json::Value;

pub use counting::MESSAGE_FRAME_TOKENS;
pub use server::{MAX_REQUEST_BYTES, Simulator, SimulatorHandle};
pub use summarizer::LatentSummarizer;
pub use wire::RESPONSES_OVERFLOW_MESSAGE;

/// The three wire protocols the simulator speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum WireShape {
    /// OpenAI Chat Completions, `POST /v1/chat/completions` (`openai-chat` in JSON).
    #[serde(rename = "openai-chat")]
    OpenAiChat,
    /// OpenAI Responses, `POST /v1/responses` (`openai-responses`).
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// Anthropic Messages, `POST /v1/messages` (`anthropic-messages`).
    #[serde(rename = "anthropic-messages")]
    AnthropicMessages,
}

impl WireShape {
    /// The path this shape is served on.
    pub fn path(self) -> &'static str {
        match self {
            Self::OpenAiChat => "/v1/chat/completions",
            Self::OpenAiResponses => "/v1/responses",
            Self::AnthropicMessages => "/v1/messages",
        }
    }
}

/// How the simulator behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimulatorConfig {
    /// The model's context window: input plus the requested output cap must fit.
    pub context_window: u64,
    /// The assistant's answer to every request.
    pub reply_text: String,
    /// Output tokens reported for every answer; `None` counts the reply text.
    pub output_tokens: Option<u64>,
    /// Where the server listens ([`Simulator::start`] only).
    pub listen: SocketAddr,
    /// The provider's count in thousandths of the `o200k_base` count (1,000: exactly
    /// `o200k_base`). Models a provider whose own tokenizer counts more or fewer tokens for the
    /// same text, as Anthropic's does; input, cached and written tokens are all scaled.
    pub count_scale_permille: u32,
    /// The lossy summarizer mode: `Some(p)` answers every summarizer request (one carrying
    /// contextfold's `<events>` or `<new_events>` transcript) with a template summary that keeps
    /// `p` percent of each class of the transcript's exact artifacts ([`lossy`]); other
    /// requests still get `reply_text`. `None` (the default): every request gets `reply_text`.
    pub lossy_keep_percent: Option<u8>,
    /// Milliseconds a summarizer request (one carrying contextfold's transcript) takes to be
    /// answered: a remote model writing a summary.
    pub summarizer_latency_ms: u64,
    /// Milliseconds every other request takes to be answered: a model writing an agent step.
    pub model_latency_ms: u64,
}

impl Default for SimulatorConfig {
    fn default() -> Self {
        Self {
            context_window: 128_000,
            reply_text: "Done.".to_owned(),
            output_tokens: None,
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            count_scale_permille: 1_000,
            lossy_keep_percent: None,
            summarizer_latency_ms: 0,
            model_latency_ms: 0,
        }
    }
}

/// One answered request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestRecord {
    /// Position in the log, from 1.
    pub index: u64,
    /// The protocol of the request.
    pub shape: WireShape,
    /// The request's `model`.
    pub model: String,
    /// Whether an event stream was asked for.
    pub stream: bool,
    /// Every input token counted (Anthropic's `input_tokens` is this less read and written).
    pub input_tokens: u64,
    /// Tokens read from the cache.
    pub cached_tokens: u64,
    /// Tokens written to the cache (Anthropic's `cache_creation_input_tokens`).
    pub cache_write_tokens: u64,
    /// Output tokens reported (0 on an error).
    pub output_tokens: u64,
    /// The request's output cap (`max_tokens`, `max_completion_tokens`, `max_output_tokens`).
    pub max_output_tokens: Option<u64>,
    /// Whether it was refused with the context-length error.
    pub overflow: bool,
    /// The HTTP status of the answer.
    pub status: u16,
}

/// An answer as the server sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimulatedAnswer {
    /// HTTP status.
    pub status: u16,
    /// `application/json` or `text/event-stream`.
    pub content_type: &'static str,
    /// The body.
    pub body: String,
    /// How long the provider takes to answer (the configured summarizer or model latency):
    /// the server waits this long before sending it, an in-process caller should too.
    pub latency: std::time::Duration,
}

/// The server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimulatorError {
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl SimulatorError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Bind { .. } => "simulator_bind_failed",
        }
    }
}

#[derive(Debug, Default)]
struct State {
    openai: cache::OpenAiCache,
    anthropic: cache::AnthropicCache,
    records: Vec<RequestRecord>,
    lossy: Vec<lossy::LossySummary>,
}

/// The simulated provider without a socket. Thread-safe; one per simulated session.
#[derive(Debug)]
pub struct SimulatedProvider {
    config: SimulatorConfig,
    state: Mutex<State>,
}

impl SimulatedProvider {
    /// A provider with empty caches and log.
    pub fn new(config: SimulatorConfig) -> Self {
        Self { config, state: Mutex::new(State::default()) }
    }

    /// The configuration.
    pub fn config(&self) -> &SimulatorConfig {
        &self.config
    }

    /// A copy of the request log, oldest first.
    pub fn records(&self) -> Vec<RequestRecord> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).records.clone()
    }

    /// The lossy summaries answered so far, oldest first (empty unless
    /// [`SimulatorConfig::lossy_keep_percent`] is set).
    pub fn lossy_summaries(&self) -> Vec<lossy::LossySummary> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).lossy.clone()
    }

    /// Answers one request `body` of `shape`, records it, and returns what the server sends.
    pub fn answer(&self, shape: WireShape, body: &[u8]) -> SimulatedAnswer {
        let request: Value = match serde_json::from_slice(body) {
            Ok(value @ Value::Object(_)) => value,
            _ => return wire::bad_request(shape, "The request body is not a JSON object."),
        };
        let field = |name: &str| request.get(name).and_then(Value::as_u64);
        let max_output = match shape {
            WireShape::OpenAiChat => field("max_completion_tokens").or_else(|| field("max_tokens")),
            WireShape::OpenAiResponses => field("max_output_tokens"),
            WireShape::AnthropicMessages => field("max_tokens"),
        };
        if shape == WireShape::AnthropicMessages && max_output.is_none() {
            return wire::bad_request(shape, "max_tokens: Field required");
        }
        let stream = request.get("stream").and_then(Value::as_bool).unwrap_or(false);
        let model = request.get("model").and_then(Value::as_str).unwrap_or_default().to_owned();
        // Tokenizing is the expensive part: done before taking the lock.
        let rendering = counting::render(shape, &request);
        let scale = |tokens: u64| tokens * u64::from(self.config.count_scale_permille) / 1_000;
        let input = scale(rendering.tokens.len() as u64);
        let overflow = input + max_output.unwrap_or(0) > self.config.context_window;
        let lossy_answer =
            self.config.lossy_keep_percent.and_then(|keep| lossy::lossy_answer(&request, keep));
        let reply_text = lossy_answer.as_ref().map_or(self.config.reply_text.as_str(), |s| &s.text);
        let reply_tokens = self
            .config
            .output_tokens
            .unwrap_or_else(|| crate::tokenizer::OpenAiTokenizer::o200k_base().count(reply_text));
        let output = max_output.map_or(reply_tokens, |cap| reply_tokens.min(cap));
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let index = state.records.len() as u64 + 1;
        let (usage, answer) = if overflow {
            let answer =
                wire::overflow(shape, input, max_output, self.config.context_window, stream);
            (wire::Usage { input, ..wire::Usage::default() }, answer)
        } else {
            let (cached, written) = match shape {
                WireShape::AnthropicMessages => {
                    let used =
                        state.anthropic.lookup_and_store(&rendering.tokens, &rendering.breakpoints);
                    (used.read, used.written)
                }
                _ => {
                    let key = ["prompt_cache_key", "user"]
                        .iter()
                        .find_map(|name| request.get(*name).and_then(Value::as_str))
                        .unwrap_or_default();
                    (state.openai.lookup_and_store(key, &rendering.tokens), 0)
                }
            };
            let usage =
                wire::Usage { input, cached: scale(cached), written: scale(written), output };
            let include_usage = request
                .pointer("/stream_options/include_usage")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let reply = wire::Reply {
                index,
                model: &model,
                text: reply_text,
                usage,
                capped: output < reply_tokens,
                stream,
                include_usage,
            };
            (usage, wire::success(shape, &reply))
        };
        let summarizing = lossy::transcript_of(&request).is_some();
        let latency_ms = match summarizing {
            true => self.config.summarizer_latency_ms,
            false => self.config.model_latency_ms,
        };
        let answer =
            SimulatedAnswer { latency: std::time::Duration::from_millis(latency_ms), ..answer };
        if let Some(summary) = lossy_answer.clone().filter(|_| !overflow) {
            state.lossy.push(summary);
        }
        state.records.push(RequestRecord {
            index,
            shape,
            model,
            stream,
            input_tokens: usage.input,
            cached_tokens: usage.cached,
            cache_write_tokens: usage.written,
            output_tokens: usage.output,
            max_output_tokens: max_output,
            overflow,
            status: answer.status,
        });
        answer
    }
}
