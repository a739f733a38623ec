//! Provider clients: the effects the compaction transaction asks a host to perform.
//!
//! - [`OpenAiChatSummarizer`]: text summaries through OpenAI Chat Completions (any compatible
//!   base URL);
//! - [`AnthropicSummarizer`]: text summaries through the Anthropic Messages API;
//! - [`CodexNativeCompactor`]: OpenAI Codex remote compaction v2 over the streaming Responses
//!   API (`compaction_trigger`, `store: false`, whole stream consumed).
//!
//! The summarizers answer `Effect::Summarize` with
//! `summarize(&SummaryRequest) -> Result<SummaryResponse, ProviderFailure>`; the native
//! compactor answers `Effect::CompactNatively` with
//! `compact(&NativeRequest) -> Result<Vec<Value>, ProviderFailure>`: exactly what
//! `Compaction::handle_summary` and `Compaction::handle_native` take.
//!
//! The clients also implement the session runtime's [`crate::runtime::Summarizer`] and
//! [`crate::runtime::NativeCompactor`]; a [`CodexNativeCompactor`] is both (its text summary is
//! the core's one fallback over the same connection).
//!
//! Every failure is classified for the core's fallback rules ([`classify`], [`ProviderError`]),
//! and an overflow's stated token counts can be read back ([`overflow_facts`]);
//! keys come from the environment ([`openai_api_key_from_env`], [`anthropic_api_key_from_env`])
//! and never appear in `Debug` output, failure messages or captures ([`RequestCapture`]);
//! provider state is redacted from every capture. Calls end on their whole-call timeout, on
//! their idle deadline ([`STREAM_IDLE_TIMEOUT`]: a body or stream that stops sending), or when
//! their [`CancelToken`] fires. See `docs/providers.md`.

mod anthropic;
mod api_key;
mod cancel;
mod capture;
pub mod classify;
mod client;
mod codex;
mod codex_summary;
mod compactors;
mod error;
mod openai_chat;
pub mod overflow;
#[doc(hidden)]
pub mod parse_entry;
mod sse;
mod transport;
pub mod usage;

pub use anthropic::{
    ANTHROPIC_BASE_URL, ANTHROPIC_PROVIDER, ANTHROPIC_VERSION, AnthropicSummarizer,
    FALLBACK_ANTHROPIC_MAX_TOKENS, anthropic_max_output_tokens,
};
pub use api_key::{
    ANTHROPIC_API_KEY_VAR, ApiKey, ApiKeyError, OPENAI_API_KEY_VAR, anthropic_api_key_from_env,
    openai_api_key_from_env,
};
pub use cancel::CancelToken;
pub use capture::{CapturedRequest, MAX_CAPTURED_REQUESTS, RequestCapture};
pub use codex::{CODEX_BASE_URL, CODEX_PROVIDER, CodexNativeCompactor, DEFAULT_NATIVE_TIMEOUT};
pub use error::{ProviderConfigError, ProviderError};
pub use openai_chat::{
    DEFAULT_SUMMARY_TIMEOUT, OPENAI_BASE_URL, OPENAI_CHAT_PROVIDER, OpenAiChatSummarizer,
};
pub use overflow::{OverflowFacts, overflow_facts, overflow_facts_in};
pub use transport::{CONNECT_TIMEOUT, MAX_RESPONSE_BYTES, STREAM_IDLE_TIMEOUT};
