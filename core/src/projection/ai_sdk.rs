//! The Vercel AI SDK's `ModelMessage` (v5/v6 shapes): mapping projected [`Message`]s to
//! `ModelMessage[]` ([`to_model_messages`]) and importing `ModelMessage[]` as events
//! ([`import_model_messages`], rules in [`crate::projection::ai_sdk_import`]).
//!
//! Mapping rules of [`to_model_messages`]:
//!
//! - system → `{ role: "system", content }` (its texts joined by a blank line);
//! - user → `{ role: "user", content }`: a string for one text part, else an array of parts;
//! - assistant → parts `text`, `reasoning` (an object `providerData` becomes the part's
//!   `providerOptions`), `tool-call` (`providerExecuted: true` when hosted) and, for a hosted
//!   result, `tool-result`;
//! - a V3 checkpoint's [`Part::ProviderState`] → the AI SDK's OpenAI compaction custom part
//!   `{ type: "custom", kind: "openai.compaction", providerOptions: { openai: { itemId,
//!   encryptedContent } } }`, never text;
//! - tool → `tool-result` parts whose `output` is chosen by [`tool_output`]: an output imported
//!   whole (`content`, `execution-denied`) comes back unchanged; a string is `text` (or
//!   `error-text`), any other JSON `json` (or `error-json`).
//!
//! ```
//! use contextfold_core::projection::to_model_messages;
//! use contextfold_core::projection::{Message, Role};
//! let messages = to_model_messages(&[Message::text(Role::User, "hi")]);
//! assert_eq!(messages[0], serde_json::json!({ "role": "user", "content": "hi" }));
//! ```

use crate::json_text::json_text;
use serde_json::{Map, Value, json};

use crate::attachment::Attachment;
use crate::checkpoint::ProviderState;
use crate::projection::message::{Message, Part, Role};

pub use crate::projection::ai_sdk_import::{ModelMessageImportError, import_model_messages};
pub use text::write_model_messages;

mod text;

/// `type` of a tool output kept whole in the log as `{ type: "content", value: [...] }`.
pub(crate) const CONTENT_OUTPUT: &str = "content";
/// `type` of a tool output kept whole in the log as `{ type: "execution-denied", reason? }`.
pub(crate) const DENIED_OUTPUT: &str = "execution-denied";
/// `kind` of the AI SDK custom part carrying an OpenAI compaction item.
pub(crate) const OPENAI_COMPACTION_KIND: &str = "openai.compaction";

/// Writes projected messages as AI SDK `ModelMessage`s.
pub fn to_model_messages(messages: &[Message]) -> Vec<Value> {
    into_model_messages(messages.to_vec())
}

/// [`to_model_messages`] of messages the caller owns: their strings and JSON values move into
/// the result instead of being copied (what a binding that serializes the result wants).
pub fn into_model_messages(messages: Vec<Message>) -> Vec<Value> {
    messages.into_iter().map(model_message).collect()
}

/// A JSON object of `fields`, in their order.
fn object<const N: usize>(fields: [(&str, Value); N]) -> Value {
    Value::Object(fields.into_iter().map(|(key, value)| (key.to_owned(), value)).collect())
}

fn model_message(message: Message) -> Value {
    let role = match message.role {
        Role::System => {
            return object([("role", "system".into()), ("content", system_text(&message).into())]);
        }
        Role::User => {
            let mut parts = message.parts;
            if let [Part::Text { text }] = parts.as_mut_slice() {
                let text = std::mem::take(text);
                return object([("role", "user".into()), ("content", Value::String(text))]);
            }
            return object([("role", "user".into()), ("content", model_parts(parts))]);
        }
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    object([("role", role.into()), ("content", model_parts(message.parts))])
}

/// A system message's content: its texts joined by a blank line.
fn system_text(message: &Message) -> String {
    let texts: Vec<&str> = message
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n\n")
}

fn model_parts(parts: Vec<Part>) -> Value {
    Value::Array(parts.into_iter().map(model_part).collect())
}

fn model_part(part: Part) -> Value {
    match part {
        Part::Text { text } => object([("type", "text".into()), ("text", Value::String(text))]),
        Part::Reasoning { text, provider_data } => {
            let mut out = object([("type", "reasoning".into()), ("text", Value::String(text))]);
            if let Some(Value::Object(options)) = provider_data {
                out["providerOptions"] = reasoning_provider_options(&options);
            }
            out
        }
        Part::ToolCall { call_id, tool_name, input, hosted } => {
            let mut out = object([
                ("type", "tool-call".into()),
                ("toolCallId", Value::String(call_id)),
                ("toolName", Value::String(tool_name)),
                ("input", input),
            ]);
            if hosted {
                out["providerExecuted"] = Value::Bool(true);
            }
            out
        }
        Part::ToolResult { call_id, tool_name, output, is_error, attachments, .. } => {
            let mut output = owned_tool_output(output, is_error);
            if !attachments.is_empty() {
                output = with_media(output, &attachments);
            }
            object([
                ("type", "tool-result".into()),
                ("toolCallId", Value::String(call_id)),
                ("toolName", Value::String(tool_name)),
                ("output", output),
            ])
        }
        Part::Attachment { attachment } => user_media_part(&attachment),
        Part::ProviderState { state } => compaction_part(&state),
    }
}

/// A user `image` part (images) or `file` part (anything else): inline bytes as base64, a URL
/// as its string. An archived attachment the host did not hydrate goes as its text stand-in.
fn user_media_part(attachment: &Attachment) -> Value {
    let data = match (&attachment.data, &attachment.url) {
        (Some(data), _) => data.clone(),
        (None, Some(url)) => url.clone(),
        (None, None) => {
            let text = attachment.stand_in("");
            return object([("type", "text".into()), ("text", Value::String(text))]);
        }
    };
    let mut part = if attachment.is_image() {
        object([("type", "image".into()), ("image", Value::String(data))])
    } else {
        object([("type", "file".into()), ("data", Value::String(data))])
    };
    part["mediaType"] = Value::String(attachment.media_type.clone());
    if let Some(name) = &attachment.name {
        part["filename"] = Value::String(name.clone());
    }
    part
}

/// A tool output with the attachments appended as `content` media parts (`image-data`,
/// `file-data`, `image-url`, `file-url`); a non-`content` output becomes its first part.
fn with_media(output: Value, attachments: &[Attachment]) -> Value {
    let mut items = match output {
        Value::Object(mut map)
            if map.get("type").and_then(Value::as_str) == Some(CONTENT_OUTPUT) =>
        {
            match map.remove("value") {
                Some(Value::Array(items)) => items,
                _ => Vec::new(),
            }
        }
        Value::Object(map) => {
            let text = match map.get("value") {
                Some(Value::String(text)) => text.clone(),
                Some(other) => json_text(other),
                None => json_text(&Value::Object(map.clone())),
            };
            vec![object([("type", "text".into()), ("text", Value::String(text))])]
        }
        other => {
            vec![object([("type", "text".into()), ("text", Value::String(json_text(&other)))])]
        }
    };
    items.retain(|item| item.get("text").is_none_or(|text| text != ""));
    for attachment in attachments {
        let kind = if attachment.is_image() { "image" } else { "file" };
        let mut part = match (&attachment.data, &attachment.url) {
            (Some(data), _) => object([
                ("type", format!("{kind}-data").into()),
                ("data", Value::String(data.clone())),
                ("mediaType", Value::String(attachment.media_type.clone())),
            ]),
            (None, Some(url)) => object([
                ("type", format!("{kind}-url").into()),
                ("url", Value::String(url.clone())),
            ]),
            (None, None) => {
                object([("type", "text".into()), ("text", Value::String(attachment.stand_in("")))])
            }
        };
        if let (Some(name), "file") = (&attachment.name, kind) {
            part["filename"] = Value::String(name.clone());
        }
        items.push(part);
    }
    object([("type", CONTENT_OUTPUT.into()), ("value", Value::Array(items))])
}

/// The `providerOptions` of a reasoning part from its `providerData`: Anthropic replay data
/// recorded flat by the Anthropic import (`{ signature }` or `{ redactedData }`) is nested under
/// `anthropic`, where the AI SDK's Anthropic provider reads it; anything else is copied as is.
pub(crate) fn reasoning_provider_options(provider_data: &Map<String, Value>) -> Value {
    let anthropic_flat = ["signature", "redactedData"]
        .iter()
        .any(|key| provider_data.get(*key).is_some_and(Value::is_string))
        && !provider_data.contains_key("anthropic");
    if anthropic_flat {
        json!({ "anthropic": provider_data })
    } else {
        Value::Object(provider_data.clone())
    }
}

/// The AI SDK custom part carrying a V3 checkpoint's provider state.
pub(crate) fn compaction_part(state: &ProviderState) -> Value {
    match state {
        ProviderState::OpenaiCodexRemoteV2 { item_id, encrypted_content, .. } => json!({
            "type": "custom",
            "kind": OPENAI_COMPACTION_KIND,
            "providerOptions": {
                "openai": { "itemId": item_id, "encryptedContent": encrypted_content }
            },
        }),
        // A future state kind has no AI SDK part yet: an opaque custom part, never text.
        #[allow(unreachable_patterns)]
        other => json!({ "type": "custom", "kind": other.kind_name() }),
    }
}

#[allow(dead_code)] // the rule the module docs name; the crate calls `owned_tool_output`
/// The `output` of a tool-result part (see the module docs).
pub(crate) fn tool_output(output: &Value, is_error: bool) -> Value {
    owned_tool_output(output.clone(), is_error)
}

/// [`tool_output`] of an output the caller owns (moved into the result).
fn owned_tool_output(output: Value, is_error: bool) -> Value {
    if is_whole_output(&output) {
        return output;
    }
    object([("type", output_kind(&output, is_error).into()), ("value", output)])
}

/// The `type` of a tool output that is not kept whole: `text` for a string, `json` for any
/// other JSON, each `error-` for an error.
fn output_kind(output: &Value, is_error: bool) -> &'static str {
    match (output, is_error) {
        (Value::String(_), false) => "text",
        (Value::String(_), true) => "error-text",
        (_, false) => "json",
        (_, true) => "error-json",
    }
}

/// Whether a logged output is an AI SDK `content` or `execution-denied` output kept whole.
pub(crate) fn is_whole_output(output: &Value) -> bool {
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

/// Copies the `providerOptions` of an AI SDK object into event metadata under `key`.
pub(crate) fn copy_provider_options(
    metadata: &mut Map<String, Value>,
    key: &str,
    source: &Map<String, Value>,
) {
    if let Some(options) = source.get("providerOptions").filter(|v| !v.is_null()) {
        metadata.insert(key.to_owned(), options.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projection::openai_chat::ImportContext;

    fn state() -> ProviderState {
        ProviderState::OpenaiCodexRemoteV2 {
            connection_slug: "c".into(),
            model_id: "m".into(),
            item_id: "cmp_1".into(),
            encrypted_content: "enc".into(),
        }
    }

    #[test]
    fn v3_state_is_the_openai_compaction_part_never_text() {
        let messages = to_model_messages(&[Message {
            role: Role::Assistant,
            parts: vec![Part::ProviderState { state: state() }],
        }]);
        assert_eq!(
            messages[0]["content"][0],
            json!({ "type": "custom", "kind": "openai.compaction",
                    "providerOptions": { "openai": { "itemId": "cmp_1", "encryptedContent": "enc" } } })
        );
        assert!(!messages.iter().any(|m| m.to_string().contains("\"type\":\"text\"")));
    }

    #[test]
    fn user_and_system_shapes() {
        let user = Message {
            role: Role::User,
            parts: vec![Part::Text { text: "a".into() }, Part::Text { text: "b".into() }],
        };
        let system = Message {
            role: Role::System,
            parts: vec![Part::Text { text: "x".into() }, Part::Text { text: "y".into() }],
        };
        let out = to_model_messages(&[system, user]);
        assert_eq!(out[0], json!({ "role": "system", "content": "x\n\ny" }));
        assert_eq!(out[1]["content"][1], json!({ "type": "text", "text": "b" }));
    }

    #[test]
    fn anthropic_replay_data_is_nested_for_the_ai_sdk() {
        let flat = json!({ "signature": "sig" });
        let nested = json!({ "anthropic": { "signature": "sig" } });
        let openai = json!({ "openai": { "itemId": "rs_1" } });
        for (data, expected) in [(&flat, &nested), (&nested, &nested), (&openai, &openai)] {
            let map = data.as_object().expect("object");
            assert_eq!(&reasoning_provider_options(map), expected);
        }
    }

    #[test]
    fn tool_outputs_choose_their_kind() {
        assert_eq!(tool_output(&json!("ok"), false)["type"], "text");
        assert_eq!(tool_output(&json!("bad"), true)["type"], "error-text");
        assert_eq!(tool_output(&json!({ "n": 1 }), false)["type"], "json");
        assert_eq!(tool_output(&json!([1]), true)["type"], "error-json");
        let denied = json!({ "type": "execution-denied", "reason": "no" });
        assert_eq!(tool_output(&denied, true), denied);
        let content = json!({ "type": "content", "value": [{ "type": "text", "text": "t" }] });
        assert_eq!(tool_output(&content, false), content);
        // An object that merely has a `type` key is ordinary JSON.
        let look_alike = json!({ "type": "content", "value": "not an array" });
        assert_eq!(tool_output(&look_alike, false)["type"], "json");
    }

    #[test]
    fn import_then_export_keeps_every_part() {
        let messages = json!([
            { "role": "system", "content": "be brief" },
            { "role": "user", "content": "hi" },
            { "role": "assistant", "content": [
                { "type": "reasoning", "text": "think", "providerOptions": { "openai": { "itemId": "rs_1" } } },
                { "type": "tool-call", "toolCallId": "c1", "toolName": "ls", "input": { "p": "." } },
                { "type": "tool-call", "toolCallId": "h1", "toolName": "web", "input": {}, "providerExecuted": true },
                { "type": "tool-result", "toolCallId": "h1", "toolName": "web", "output": { "type": "json", "value": { "hits": 2 } } },
            ] },
            { "role": "tool", "content": [
                { "type": "tool-result", "toolCallId": "c1", "toolName": "ls",
                  "output": { "type": "content", "value": [{ "type": "text", "text": "a.rs" }] } },
            ] },
        ]);
        let events = import_model_messages(&messages, &ImportContext::new("s")).expect("import");
        assert_eq!(events.len(), 7);
        let projected = crate::projection::materialize::materialize(None, &events, &[]);
        let back = to_model_messages(&projected.messages);
        assert_eq!(back[0], messages[0]);
        assert_eq!(back[1], messages[1]);
        assert_eq!(back[2]["content"][0], messages[2]["content"][0]);
        assert_eq!(back[2]["content"][2]["providerExecuted"], json!(true));
        assert_eq!(back[3]["content"][0]["output"], messages[3]["content"][0]["output"]);
    }
}
