//! The portable text summary over the Codex Responses connection: the core's one liveness
//! fallback after a native compaction is refused as a protocol rejection, returns no unique
//! compaction item, or cannot fit (see `docs/providers.md`).
//!
//! It is an ordinary streaming Responses request, without `compaction_trigger`: `POST
//! {base_url}/responses` with `{"model", "instructions", "input", "store": false, "stream":
//! true}`, where `instructions` joins the summary request's system messages and `input` holds
//! its user and assistant messages as `message` items (`input_text` / `output_text` parts).
//! The summary is the text of the completed response's `message` items; the stream is read
//! with the same rules as a native compaction (failures classified, truncation `Unavailable`),
//! except that a response left incomplete at its output limit (`response.incomplete`, reason
//! `max_output_tokens`) is a summary with finish reason `Length`, which the core refuses as
//! `malformed_summary_length_finish` (with its one repair), like any other provider's.

use contextfold_core::compaction::{
    FinishReason, ProviderFailure, SummaryRequest, SummaryResponse,
};
use serde_json::{Value, json};

use super::client::split_text_messages;
use super::codex::CodexNativeCompactor;
use super::error::ProviderError;

/// `incomplete_details.reason` of a response stopped at its output limit.
const OUTPUT_LIMIT: &str = "max_output_tokens";

impl CodexNativeCompactor {
    /// The JSON body of a text-summary request for `request`.
    pub fn summary_request_body(&self, request: &SummaryRequest) -> Result<Value, ProviderError> {
        let (system, turns) = split_text_messages(&request.messages)?;
        let input: Vec<Value> = turns
            .iter()
            .map(|turn| {
                let kind = if turn.role == "user" { "input_text" } else { "output_text" };
                let content: Vec<Value> =
                    turn.texts.iter().map(|text| json!({ "type": kind, "text": text })).collect();
                json!({ "type": "message", "role": turn.role, "content": content })
            })
            .collect();
        let mut body =
            json!({ "model": self.base.model, "input": input, "store": false, "stream": true });
        if !system.is_empty() {
            body["instructions"] = json!(system);
        }
        Ok(body)
    }

    /// Sends one text-summary request over the Responses stream and returns the text of the
    /// completed response's messages with finish reason `Stop`, or an empty text with finish
    /// reason `Length` when the response stopped at its output limit.
    pub async fn summarize(
        &self,
        request: &SummaryRequest,
    ) -> Result<SummaryResponse, ProviderFailure> {
        let body = self.summary_request_body(request)?;
        match self.stream_response(body).await {
            Ok(items) => {
                Ok(SummaryResponse { text: output_text(&items), finish_reason: FinishReason::Stop })
            }
            Err(failure) if is_output_limit(&failure) => {
                Ok(SummaryResponse { text: String::new(), finish_reason: FinishReason::Length })
            }
            Err(failure) => Err(failure),
        }
    }
}

/// Whether `failure` is the classified form of a response incomplete at its output limit.
fn is_output_limit(failure: &ProviderFailure) -> bool {
    let limit = ProviderFailure::from(ProviderError::Incomplete(OUTPUT_LIMIT.into()));
    failure.kind == limit.kind && failure.message == limit.message
}

/// The `output_text` parts of every `message` item, in order.
fn output_text(items: &[Value]) -> String {
    items
        .iter()
        .filter(|item| item.get("type").and_then(Value::as_str) == Some("message"))
        .filter_map(|item| item.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|part| part.get("type").and_then(Value::as_str) == Some("output_text"))
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_output_limit_counts_as_a_length_finish() {
        let limit = ProviderFailure::from(ProviderError::Incomplete(OUTPUT_LIMIT.into()));
        let filtered = ProviderFailure::from(ProviderError::Incomplete("content_filter".into()));
        assert!(is_output_limit(&limit));
        assert!(!is_output_limit(&filtered));
    }

    #[test]
    fn only_message_text_is_read() {
        let items = [
            json!({"type": "reasoning", "id": "rs", "summary": [{"type": "summary_text", "text": "no"}]}),
            json!({"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "## Goal\n"}, {"type": "refusal", "refusal": "no"},
                {"type": "output_text", "text": "x"}]}),
        ];
        assert_eq!(output_text(&items), "## Goal\nx");
    }
}
