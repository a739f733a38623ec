//! The Vercel AI SDK's `ModelMessage` (v5/v6 shapes) ↔ the core's neutral messages and events.
//!
//! Pure mapping, no policy: [`to_model_messages`] writes projected [`Message`]s as
//! `ModelMessage[]`, and [`import::import_model_messages`] reads `ModelMessage[]` as
//! [`RuntimeEvent`](contextfold_core::RuntimeEvent)s. Meant to move into the core.
//!
//! Export rules:
//! - system → `{ role: "system", content }` (texts joined by a blank line);
//! - user → `{ role: "user", content }`, a string for one text part, else text parts;
//! - assistant → parts `text`, `reasoning` (its `providerData` object becomes the part's
//!   `providerOptions`), `tool-call` (`providerExecuted: true` when hosted) and, for a hosted
//!   result, `tool-result`; a V3 checkpoint becomes the OpenAI compaction custom part
//!   `{ type: "custom", kind: "openai.compaction", providerOptions: { openai: { itemId,
//!   encryptedContent } } }`, never text;
//! - tool → `tool-result` parts whose `output` is chosen by [`tool_output`].

pub mod import;

use contextfold_core::checkpoint::ProviderState;
use contextfold_core::projection::{Message, Part, Role};
use serde_json::{Map, Value, json};

/// `type` of an output wrapped as `{ type: "content", value: [...] }` in the log.
pub const CONTENT_OUTPUT: &str = "content";
/// `type` of an output wrapped as `{ type: "execution-denied", reason? }` in the log.
pub const DENIED_OUTPUT: &str = "execution-denied";

/// Writes projected messages as AI SDK `ModelMessage`s.
pub fn to_model_messages(messages: &[Message]) -> Vec<Value> {
    messages.iter().map(model_message).collect()
}

fn model_message(message: &Message) -> Value {
    match message.role {
        Role::System => {
            let texts: Vec<&str> = message.parts.iter().filter_map(part_text).collect();
            json!({ "role": "system", "content": texts.join("\n\n") })
        }
        Role::User => {
            let content = match message.parts.as_slice() {
                [Part::Text { text }] => Value::String(text.clone()),
                parts => Value::Array(parts.iter().map(assistant_part).collect()),
            };
            json!({ "role": "user", "content": content })
        }
        Role::Assistant => {
            let parts: Vec<Value> = message.parts.iter().map(assistant_part).collect();
            json!({ "role": "assistant", "content": parts })
        }
        Role::Tool => {
            let parts: Vec<Value> = message.parts.iter().map(assistant_part).collect();
            json!({ "role": "tool", "content": parts })
        }
    }
}

fn part_text(part: &Part) -> Option<&str> {
    match part {
        Part::Text { text } => Some(text),
        _ => None,
    }
}

fn assistant_part(part: &Part) -> Value {
    match part {
        Part::Text { text } => json!({ "type": "text", "text": text }),
        Part::Reasoning { text, provider_data } => {
            let mut out = json!({ "type": "reasoning", "text": text });
            if let Some(Value::Object(options)) = provider_data {
                out["providerOptions"] = Value::Object(options.clone());
            }
            out
        }
        Part::ToolCall { call_id, tool_name, input, hosted } => {
            let mut out = json!({
                "type": "tool-call", "toolCallId": call_id, "toolName": tool_name, "input": input,
            });
            if *hosted {
                out["providerExecuted"] = Value::Bool(true);
            }
            out
        }
        Part::ToolResult { call_id, tool_name, output, is_error, .. } => json!({
            "type": "tool-result",
            "toolCallId": call_id,
            "toolName": tool_name,
            "output": tool_output(output, *is_error),
        }),
        Part::ProviderState { state } => compaction_part(state),
    }
}

/// The AI SDK custom part carrying an OpenAI compaction item.
pub fn compaction_part(state: &ProviderState) -> Value {
    match state {
        ProviderState::OpenaiCodexRemoteV2 { item_id, encrypted_content, .. } => json!({
            "type": "custom",
            "kind": "openai.compaction",
            "providerOptions": {
                "openai": { "itemId": item_id, "encryptedContent": encrypted_content }
            },
        }),
        // ProviderState is non-exhaustive: a future variant has no AI SDK part yet, so it is
        // written as an opaque custom part that no provider will render as text.
        #[allow(unreachable_patterns)]
        other => json!({ "type": "custom", "kind": other.kind_name() }),
    }
}

/// The `output` of a tool-result part: `{ type: "content", value: [...] }` and
/// `{ type: "execution-denied", reason? }` outputs recorded by [`import`] come back as those
/// kinds; otherwise a string is `text` (or `error-text`), anything else `json` (or `error-json`).
pub fn tool_output(output: &Value, is_error: bool) -> Value {
    if is_wrapped_output(output) {
        return output.clone();
    }
    match (output, is_error) {
        (Value::String(text), false) => json!({ "type": "text", "value": text }),
        (Value::String(text), true) => json!({ "type": "error-text", "value": text }),
        (value, false) => json!({ "type": "json", "value": value }),
        (value, true) => json!({ "type": "error-json", "value": value }),
    }
}

/// Whether a logged output is an AI SDK `content` or `execution-denied` output kept whole.
pub fn is_wrapped_output(output: &Value) -> bool {
    let Some(map) = output.as_object() else { return false };
    let only = |allowed: &[&str]| map.keys().all(|key| allowed.contains(&key.as_str()));
    match map.get("type").and_then(Value::as_str) {
        Some(CONTENT_OUTPUT) => {
            map.get("value").is_some_and(Value::is_array)
                && only(&["type", "value", "providerOptions"])
        }
        Some(DENIED_OUTPUT) => only(&["type", "reason", "providerOptions"]),
        _ => false,
    }
}

/// Copies `providerOptions` of an AI SDK object into event metadata under `key`.
pub fn provider_options_metadata(
    metadata: &mut Map<String, Value>,
    key: &str,
    source: &Map<String, Value>,
) {
    if let Some(options) = source.get("providerOptions").filter(|v| !v.is_null()) {
        metadata.insert(key.to_owned(), options.clone());
    }
}
