//! The portable text summary over the Codex Responses connection: the core's one liveness
//! fallback after a native compaction is refused as a protocol rejection, returns no unique
//! compaction item, or cannot fit (see `docs/providers.md`).
//!
//! It is an ordinary streaming Responses request, without `compaction_trigger`: `POST
//! {base_url}/responses` with `{"model", "instructions", "input", "store": false, "stream":
//! true}`, where `instructions` joins the summary request's system messages and `input` holds
//! its user and assistant messages as `message` items (`input_text` / `output_text` parts).
//! The summary is the text of the completed response's `message` items; the stream is read
//! with the same rules as a native compaction (failures classified, truncation `Unavailable`,
//! `response.incomplete` `Rejected`).

use contextfold_core::compaction::summary_request::SummaryRequest;
use contextfold_core::compaction::summary_validation::FinishReason;
use contextfold_core::compaction::{ProviderFailure, SummaryResponse};
use serde_json::{Value, json};

use super::client::split_text_messages;
use super::codex::CodexNativeCompactor;
use super::error::ProviderError;

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
    /// completed response's messages (finish reason `Stop`: an output-limited response is
    /// `response.incomplete`, a `Rejected` failure).
    pub async fn summarize(
        &self,
        request: &SummaryRequest,
    ) -> Result<SummaryResponse, ProviderFailure> {
        let body = self.summary_request_body(request)?;
        let items = self.stream_response(body).await?;
        Ok(SummaryResponse { text: output_text(&items), finish_reason: FinishReason::Stop })
    }
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
