//! Narrow, pure entry points to the parsers of provider responses, for the fuzz tests
//! (`host/tests/reliability/fault_fuzz_providers.rs`): the same functions the clients run on the bytes they
//! read, without HTTP. Not a stable API.

use contextfold_core::compaction::SummaryResponse;
use serde_json::Value;

use super::codex::{ResponsesReader, parse_response_json};
use super::error::ProviderError;

/// A Chat Completions success body, as [`crate::providers::OpenAiChatSummarizer`] reads it.
pub fn chat_completion(body: &[u8]) -> Result<SummaryResponse, ProviderError> {
    super::openai_chat::parse_chat_completion(body)
}

/// An Anthropic Messages success body, as [`crate::providers::AnthropicSummarizer`] reads it.
pub fn anthropic_message(body: &[u8]) -> Result<SummaryResponse, ProviderError> {
    super::anthropic::parse_anthropic_message(body)
}

/// A Responses event stream fed in chunks of `chunk` bytes (at least 1), as
/// [`crate::providers::CodexNativeCompactor`] reads it: the completed response's output items.
pub fn responses_stream(body: &[u8], chunk: usize) -> Result<Vec<Value>, ProviderError> {
    let mut reader = ResponsesReader::new();
    for piece in body.chunks(chunk.max(1)) {
        reader.push(piece, &mut ())?;
    }
    reader.finish()
}

/// An `application/json` answer on the Responses streaming path.
pub fn responses_json(body: &[u8]) -> Result<Vec<Value>, ProviderError> {
    parse_response_json(body, &mut ())
}

/// The failure of a non-success `status` with `error_body`, classified as every client does
/// (always [`ProviderError::Status`]).
pub fn error_body(status: u16, error_body: &[u8]) -> ProviderError {
    super::transport::status_error(status, error_body)
}
