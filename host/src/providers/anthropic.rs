//! [`AnthropicSummarizer`]: text summaries through the Anthropic Messages API.
//!
//! `POST {base_url}/v1/messages` with `x-api-key: <key>`, `anthropic-version: 2023-06-01` and
//! `{"model", "max_tokens", "system", "messages"}`: system messages of the summary request are
//! joined (blank line between) into the top-level `system` string, the others become user and
//! assistant messages of text blocks.
//!
//! The Messages API requires `max_tokens`. The design imposes no compaction-only output cap, so
//! it is the model's normal maximum output ([`anthropic_max_output_tokens`]) unless
//! [`AnthropicSummarizer::with_max_tokens`] sets another; a `max_tokens` stop is a `Length`
//! finish, which the core's validator rejects rather than admitting a partial summary.

use contextfold_core::compaction::{ProviderFailure, SummaryRequest, SummaryResponse};
use contextfold_core::projection::Message;
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::api_key::ApiKey;
use super::client::{
    ClientBase, KeyHeader, client_builders, finish_reason, json_kind, parse_json, reported,
    split_text_messages,
};
use super::error::{ProviderConfigError, ProviderError};
use super::openai_chat::DEFAULT_SUMMARY_TIMEOUT;

/// Provider label of this client in captures.
pub const ANTHROPIC_PROVIDER: &str = "anthropic";

/// The public Anthropic API base URL (the path `/v1/messages` is appended).
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header value sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// `max_tokens` for a model missing from [`anthropic_max_output_tokens`]'s table.
pub const FALLBACK_ANTHROPIC_MAX_TOKENS: u64 = 8_192;

/// The model's normal maximum output, from Anthropic's model table (matched by id prefix):
///
/// | Model id prefix | Max output tokens |
/// |---|---|
/// | `claude-sonnet-4`, `claude-haiku-4`, `claude-opus-4-5`, `claude-3-7-sonnet` | 64 000 |
/// | `claude-opus-4` | 32 000 |
/// | `claude-3-5-sonnet`, `claude-3-5-haiku` | 8 192 |
/// | `claude-3-opus`, `claude-3-haiku`, `claude-3-sonnet` | 4 096 |
/// | anything else | [`FALLBACK_ANTHROPIC_MAX_TOKENS`] |
pub fn anthropic_max_output_tokens(model: &str) -> u64 {
    const TABLE: &[(&str, u64)] = &[
        ("claude-sonnet-4", 64_000),
        ("claude-haiku-4", 64_000),
        ("claude-3-7-sonnet", 64_000),
        ("claude-opus-4-5", 64_000),
        ("claude-opus-4", 32_000),
        ("claude-3-5-sonnet", 8_192),
        ("claude-3-5-haiku", 8_192),
        ("claude-3-opus", 4_096),
        ("claude-3-haiku", 4_096),
        ("claude-3-sonnet", 4_096),
    ];
    TABLE
        .iter()
        .find(|(prefix, _)| model.starts_with(prefix))
        .map_or(FALLBACK_ANTHROPIC_MAX_TOKENS, |(_, max)| *max)
}

/// An Anthropic Messages summarizer. Cheap to clone (the HTTP pool is shared). Its `Debug`
/// never shows the key.
#[derive(Clone, Debug)]
pub struct AnthropicSummarizer {
    base: ClientBase,
    max_tokens: u64,
}

client_builders!(AnthropicSummarizer);

impl AnthropicSummarizer {
    /// A client for `model` at `base_url` (e.g. [`ANTHROPIC_BASE_URL`]); see the module docs.
    pub fn new(
        base_url: &str,
        model: &str,
        api_key: impl Into<ApiKey>,
    ) -> Result<Self, ProviderConfigError> {
        let base = ClientBase::new(
            base_url,
            model,
            api_key.into(),
            KeyHeader::XApiKey,
            DEFAULT_SUMMARY_TIMEOUT,
        )?;
        Ok(Self { base, max_tokens: anthropic_max_output_tokens(model) })
    }

    /// Sets `max_tokens` (default: [`anthropic_max_output_tokens`] of the model).
    pub fn with_max_tokens(mut self, max_tokens: u64) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// The `max_tokens` sent with every request.
    pub fn max_tokens(&self) -> u64 {
        self.max_tokens
    }

    /// The JSON body sent for `request`.
    pub fn request_body(&self, request: &SummaryRequest) -> Result<Value, ProviderError> {
        let (system, messages) = to_anthropic_messages(&request.messages)?;
        let mut body = json!({ "model": self.base.model, "max_tokens": self.max_tokens, "messages": messages });
        if !system.is_empty() {
            body["system"] = json!(system);
        }
        Ok(body)
    }

    /// Sends one summary request and returns the text blocks and stop reason.
    pub async fn summarize(
        &self,
        request: &SummaryRequest,
    ) -> Result<SummaryResponse, ProviderFailure> {
        let body = self.request_body(request)?;
        let version = (
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        self.base
            .exchange_json(
                ANTHROPIC_PROVIDER,
                "/v1/messages",
                &[version],
                body,
                parse_anthropic_message,
            )
            .await
    }
}

/// Splits neutral messages into the `system` string and user/assistant text messages.
fn to_anthropic_messages(messages: &[Message]) -> Result<(String, Vec<Value>), ProviderError> {
    let (system, turns) = split_text_messages(messages)?;
    let turns = turns
        .into_iter()
        .map(|turn| {
            let content: Vec<Value> =
                turn.texts.iter().map(|text| json!({ "type": "text", "text": text })).collect();
            json!({ "role": turn.role, "content": content })
        })
        .collect();
    Ok((system, turns))
}

/// Reads the text blocks and stop reason of a Messages response.
pub(crate) fn parse_anthropic_message(body: &[u8]) -> Result<SummaryResponse, ProviderError> {
    let value = parse_json(body)?;
    if value.get("type").and_then(Value::as_str) == Some("error") {
        return Err(reported(&value));
    }
    let blocks = match value.get("content") {
        Some(Value::Array(blocks)) => blocks,
        Some(other) => {
            return Err(ProviderError::MalformedResponse(format!(
                "content is {}, not an array of blocks",
                json_kind(other)
            )));
        }
        None => return Err(ProviderError::MalformedResponse("the response has no content".into())),
    };
    let text = blocks
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    Ok(SummaryResponse { text, finish_reason: finish_reason(&value, "stop_reason") })
}

#[cfg(test)]
mod tests {
    use contextfold_core::compaction::{FinishReason, ProviderFailureKind};
    use contextfold_core::projection::Role;

    use super::*;

    #[test]
    fn system_messages_go_to_the_system_field() {
        let messages = [
            Message::text(Role::System, "rules"),
            Message::text(Role::System, "more rules"),
            Message::text(Role::User, "<events>…</events>"),
        ];
        let (system, turns) = to_anthropic_messages(&messages).expect("maps");
        assert_eq!(system, "rules\n\nmore rules");
        assert_eq!(
            turns,
            [json!({"role": "user", "content": [{"type": "text", "text": "<events>…</events>"}]})]
        );
        let only_system = to_anthropic_messages(&messages[..1]).expect_err("no user message");
        assert_eq!(only_system.code(), "request_unmappable");
    }

    #[test]
    fn responses_join_text_blocks_and_map_stop_reasons() {
        let body = json!({"type": "message", "content": [{"type": "thinking", "thinking": "…"}, {"type": "text", "text": "## Goal\n"}, {"type": "text", "text": "x"}], "stop_reason": "max_tokens"});
        let parsed = parse_anthropic_message(body.to_string().as_bytes()).expect("parses");
        assert_eq!(
            parsed,
            SummaryResponse { text: "## Goal\nx".into(), finish_reason: FinishReason::Length }
        );
        let overloaded =
            br#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#;
        let error = parse_anthropic_message(overloaded).expect_err("error body");
        assert_eq!(error.kind(), ProviderFailureKind::Unavailable);
    }

    #[test]
    fn max_tokens_follow_the_model_table() {
        assert_eq!(anthropic_max_output_tokens("claude-sonnet-4-5-20250929"), 64_000);
        assert_eq!(anthropic_max_output_tokens("claude-opus-4-1-20250805"), 32_000);
        assert_eq!(anthropic_max_output_tokens("claude-3-5-haiku-latest"), 8_192);
        assert_eq!(anthropic_max_output_tokens("some-proxy-model"), FALLBACK_ANTHROPIC_MAX_TOKENS);
    }
}
