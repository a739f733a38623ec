//! [`OpenAiChatSummarizer`]: text summaries through OpenAI Chat Completions (or any server that
//! speaks it: vLLM, Ollama, OpenRouter, Azure-style gateways).
//!
//! `POST {base_url}/chat/completions` with `Authorization: Bearer <key>` and
//! `{"model", "messages", "stream": false}`; the messages are the summary request's neutral
//! messages mapped by [`to_openai_chat`]. No output cap is sent unless one is configured
//! ([`OpenAiChatSummarizer::with_max_output_tokens`], sent as `max_completion_tokens`): the
//! design gives compaction the model's normal output limit, and a `length` finish is rejected by
//! the core's validator rather than admitted as a partial summary.

use std::time::Duration;

use contextfold_core::compaction::{ProviderFailure, SummaryRequest, SummaryResponse};
use contextfold_core::projection::to_openai_chat;
use serde_json::{Value, json};

use super::api_key::ApiKey;
use super::client::{
    ClientBase, KeyHeader, client_builders, finish_reason, json_kind, parse_json, reported,
};
use super::error::{ProviderConfigError, ProviderError};

/// Provider label of this client in captures.
pub const OPENAI_CHAT_PROVIDER: &str = "openai-chat";

/// The public OpenAI API base URL (the path `/chat/completions` is appended).
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// Default deadline of one summary call.
pub const DEFAULT_SUMMARY_TIMEOUT: Duration = Duration::from_secs(300);

/// A Chat Completions summarizer. Cheap to clone (the HTTP pool is shared). Its `Debug` never
/// shows the key.
#[derive(Clone, Debug)]
pub struct OpenAiChatSummarizer {
    base: ClientBase,
    max_output_tokens: Option<u64>,
}

client_builders!(OpenAiChatSummarizer);

impl OpenAiChatSummarizer {
    /// A client for `model` at `base_url` (e.g. [`OPENAI_BASE_URL`]); see the module docs.
    pub fn new(
        base_url: &str,
        model: &str,
        api_key: impl Into<ApiKey>,
    ) -> Result<Self, ProviderConfigError> {
        let base = ClientBase::new(
            base_url,
            model,
            api_key.into(),
            KeyHeader::Bearer,
            DEFAULT_SUMMARY_TIMEOUT,
        )?;
        Ok(Self { base, max_output_tokens: None })
    }

    /// Caps the output (`max_completion_tokens`). `None`, the default, sends no cap.
    pub fn with_max_output_tokens(mut self, max_output_tokens: Option<u64>) -> Self {
        self.max_output_tokens = max_output_tokens;
        self
    }

    /// The JSON body sent for `request`.
    pub fn request_body(&self, request: &SummaryRequest) -> Result<Value, ProviderError> {
        let messages = to_openai_chat(&request.messages)
            .map_err(|error| ProviderError::Unmappable(format!("{}: {error}", error.code())))?;
        let mut body = json!({ "model": self.base.model, "messages": messages, "stream": false });
        if let Some(max) = self.max_output_tokens {
            body["max_completion_tokens"] = json!(max);
        }
        Ok(body)
    }

    /// Sends one summary request and returns the completion text and finish reason.
    pub async fn summarize(
        &self,
        request: &SummaryRequest,
    ) -> Result<SummaryResponse, ProviderFailure> {
        let body = self.request_body(request)?;
        self.base
            .exchange_json(
                OPENAI_CHAT_PROVIDER,
                "/chat/completions",
                &[],
                body,
                parse_chat_completion,
            )
            .await
    }
}

/// Reads the first choice of a Chat Completions response.
pub(crate) fn parse_chat_completion(body: &[u8]) -> Result<SummaryResponse, ProviderError> {
    let value = parse_json(body)?;
    let Some(choice) = value.get("choices").and_then(Value::as_array).and_then(|c| c.first())
    else {
        if value.get("error").is_some_and(|error| !error.is_null()) {
            return Err(reported(&value));
        }
        return Err(ProviderError::MalformedResponse("the response has no choices".into()));
    };
    let message = choice.get("message").unwrap_or(&Value::Null);
    let text = match message.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => {
            parts.iter().filter_map(|part| part.get("text").and_then(Value::as_str)).collect()
        }
        Some(Value::Null) | None => {
            message.get("refusal").and_then(Value::as_str).unwrap_or_default().to_owned()
        }
        Some(other) => {
            return Err(ProviderError::MalformedResponse(format!(
                "message content is neither text nor parts: {}",
                json_kind(other)
            )));
        }
    };
    Ok(SummaryResponse { text, finish_reason: finish_reason(choice, "finish_reason") })
}

#[cfg(test)]
mod tests {
    use contextfold_core::compaction::{FinishReason, ProviderFailureKind};

    use super::*;

    #[test]
    fn completions_parse_text_parts_and_finish_reasons() {
        let parsed = |body: Value| parse_chat_completion(body.to_string().as_bytes());
        let plain = parsed(
            json!({"choices": [{"message": {"role": "assistant", "content": "## Goal"}, "finish_reason": "stop"}]}),
        );
        assert_eq!(
            plain,
            Ok(SummaryResponse { text: "## Goal".into(), finish_reason: FinishReason::Stop })
        );
        let parts = parsed(
            json!({"choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}, "finish_reason": "length"}]}),
        );
        assert_eq!(
            parts,
            Ok(SummaryResponse { text: "ab".into(), finish_reason: FinishReason::Length })
        );
        let tools = parsed(
            json!({"choices": [{"message": {"content": null, "tool_calls": []}, "finish_reason": "tool_calls"}]}),
        );
        assert_eq!(
            tools,
            Ok(SummaryResponse { text: String::new(), finish_reason: FinishReason::ToolCalls })
        );
    }

    #[test]
    fn defective_bodies_are_typed_failures() {
        let error = parse_chat_completion(b"{\"choices\": [").expect_err("not JSON");
        assert_eq!(
            (error.code(), error.kind()),
            ("malformed_response", ProviderFailureKind::Unavailable)
        );
        let error = parse_chat_completion(b"{\"id\": \"x\"}").expect_err("no choices");
        assert_eq!(error.code(), "malformed_response");
        let reported =
            br#"{"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}"#;
        let error = parse_chat_completion(reported).expect_err("error body");
        assert_eq!(
            (error.code(), error.kind()),
            ("provider_reported", ProviderFailureKind::RateLimited)
        );
    }
}
