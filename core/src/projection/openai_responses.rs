//! OpenAI Responses API: mapping projected [`Message`]s to `input` items.
//!
//! Mapping rules of [`to_openai_responses`] (requests are sent with `store: false`, so every item
//! is resent inline):
//!
//! - system → `{"type":"message","role":"developer","content":[{"type":"input_text","text"}]}`
//!   (the V2 checkpoint block and notes are history context, not the system prompt);
//! - user → a `message` item with `input_text` parts, and `input_image` / `input_file` parts for
//!   its attachments; assistant text → a `message` item with `output_text` parts;
//! - reasoning → a `reasoning` item (`encrypted_content`, empty `summary`) only when its provider
//!   data carries the encrypted content `store: false` needs to replay it — flat
//!   `encrypted_content`/`encryptedContent`, or `openai.reasoningEncryptedContent` as AI SDK
//!   `providerOptions` carry it; otherwise dropped;
//! - a tool call → `{"type":"function_call","call_id","name","arguments":<JSON text>}`; its result
//!   → `{"type":"function_call_output","call_id","output":<text>}` (errors prefixed like chat;
//!   with attachments, `output` is an array: `input_text`, then `input_image` / `input_file`);
//! - a hosted call/result pair is lowered to an ordinary `function_call` + `function_call_output`
//!   (the Responses converter cannot resend provider-executed results under `store: false`);
//! - a V3 checkpoint's [`Part::ProviderState`] → the provider's own compaction item
//!   `{"type":"compaction","id","encrypted_content"}`, never text.

mod import;

use serde_json::{Value, json};

pub(crate) use import::Importer as ResponsesItems;
pub use import::{ResponsesImportError, import_openai_responses};

use crate::attachment::Attachment;
use crate::checkpoint::ProviderState;
use crate::projection::message::{Message, Part, Role};
use crate::projection::openai_chat::tool_result_content;

/// Maps messages to Responses API input items.
pub fn to_openai_responses(messages: &[Message]) -> Vec<Value> {
    let mut items = Vec::new();
    for message in messages {
        let mut texts: Vec<Value> = Vec::new();
        let kind = if message.role == Role::Assistant { "output_text" } else { "input_text" };
        for part in &message.parts {
            match part {
                Part::Text { text } => texts.push(json!({"type": kind, "text": text})),
                Part::Attachment { attachment } => texts.push(input_part(attachment)),
                Part::Reasoning { provider_data, .. } => {
                    flush(&mut items, message.role, &mut texts);
                    if let Some(content) = provider_data.as_ref().and_then(encrypted_content) {
                        items.push(json!({"type": "reasoning", "encrypted_content": content, "summary": []}));
                    }
                }
                Part::ToolCall { call_id, tool_name, input, .. } => {
                    flush(&mut items, message.role, &mut texts);
                    items.push(json!({
                        "type": "function_call",
                        "call_id": call_id,
                        "name": tool_name,
                        "arguments": input.to_string(),
                    }));
                }
                Part::ToolResult { call_id, output, is_error, attachments, .. } => {
                    flush(&mut items, message.role, &mut texts);
                    let text = tool_result_content(output, *is_error);
                    let output = if attachments.is_empty() {
                        Value::String(text)
                    } else {
                        let mut parts = vec![json!({"type": "input_text", "text": text})];
                        parts.extend(attachments.iter().map(input_part));
                        Value::Array(parts)
                    };
                    items.push(json!({
                        "type": "function_call_output",
                        "call_id": call_id,
                        "output": output,
                    }));
                }
                Part::ProviderState { state } => {
                    flush(&mut items, message.role, &mut texts);
                    items.push(compaction_item(state));
                }
            }
        }
        flush(&mut items, message.role, &mut texts);
    }
    items
}

/// The Responses compaction item that replays provider-native state.
pub(crate) fn compaction_item(state: &ProviderState) -> Value {
    match state {
        ProviderState::OpenaiCodexRemoteV2 { item_id, encrypted_content, .. } => {
            json!({"type": "compaction", "id": item_id, "encrypted_content": encrypted_content})
        }
    }
}

/// The encrypted reasoning content of reasoning provider data: flat `encrypted_content` or
/// `encryptedContent`, or `reasoningEncryptedContent` nested under `openai` (as AI SDK
/// `providerOptions` carry it); the flat keys win when several are present.
fn encrypted_content(data: &Value) -> Option<&str> {
    ["encrypted_content", "encryptedContent"]
        .iter()
        .find_map(|key| data.get(*key).and_then(Value::as_str))
        .or_else(|| {
            data.get("openai")
                .and_then(|nested| nested.get("reasoningEncryptedContent"))
                .and_then(Value::as_str)
        })
}

fn flush(items: &mut Vec<Value>, role: Role, texts: &mut Vec<Value>) {
    if texts.is_empty() {
        return;
    }
    let role = match role {
        Role::System => "developer",
        Role::User | Role::Tool => "user",
        Role::Assistant => "assistant",
    };
    let content: Vec<Value> = std::mem::take(texts);
    items.push(json!({"type": "message", "role": role, "content": content}));
}

/// The input part of an attachment: `input_image` (`image_url`: a data URL or the URL;
/// `detail`, `auto` by default) or `input_file` (`file_data` as a data URL with `filename`, or
/// `file_url`). An archived attachment the host did not hydrate goes as its text stand-in.
fn input_part(attachment: &Attachment) -> Value {
    let url = attachment.data_url().or_else(|| attachment.url.clone());
    let Some(url) = url else {
        return json!({"type": "input_text", "text": attachment.stand_in("")});
    };
    if attachment.is_image() {
        let detail = attachment.detail.as_deref().unwrap_or("auto");
        return json!({"type": "input_image", "image_url": url, "detail": detail});
    }
    let mut part = if attachment.data.is_some() {
        json!({"type": "input_file", "file_data": url})
    } else {
        json!({"type": "input_file", "file_url": url})
    };
    if let Some(name) = &attachment.name {
        part["filename"] = json!(name);
    }
    part
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LogBuilder;
    use crate::projection::materialize::materialize;

    #[test]
    fn maps_text_calls_results_and_state() {
        let mut log = LogBuilder::new("s");
        log.turn("t1").user("list files");
        log.response(Some("r1")).reasoning("hmm").tool_call("c1", "ls", json!({"dir": "."}));
        log.response(None).tool_result("c1", "ls", json!("a.rs\nb.rs"));
        log.response(Some("r2")).assistant("two files").response(None);
        let messages = materialize(None, log.events(), &[]).messages;
        let items = to_openai_responses(&messages);
        let types: Vec<&str> = items.iter().filter_map(|i| i["type"].as_str()).collect();
        assert_eq!(types, ["message", "function_call", "function_call_output", "message"]);
        assert_eq!(items[1]["arguments"], json!("{\"dir\":\".\"}"));
        assert_eq!(items[2]["output"], json!("a.rs\nb.rs"));
        assert_eq!(items[3]["content"][0]["type"], json!("output_text"));

        let state = ProviderState::OpenaiCodexRemoteV2 {
            connection_slug: "c".into(),
            model_id: "m".into(),
            item_id: "cmp_1".into(),
            encrypted_content: "gAAA".into(),
        };
        let items = to_openai_responses(&[Message {
            role: Role::Assistant,
            parts: vec![Part::ProviderState { state }],
        }]);
        assert_eq!(
            items,
            vec![json!({"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAA"})]
        );
    }

    #[test]
    fn reasoning_replays_only_with_encrypted_content() {
        let part = |data: Option<Value>| Message {
            role: Role::Assistant,
            parts: vec![Part::Reasoning { text: "t".into(), provider_data: data }],
        };
        assert!(to_openai_responses(&[part(None)]).is_empty());
        let items = to_openai_responses(&[part(Some(json!({"encrypted_content": "x"})))]);
        assert_eq!(items[0]["type"], json!("reasoning"));
        let nested = json!({"openai": {"itemId": "rs_1", "reasoningEncryptedContent": "enc"}});
        assert_eq!(
            to_openai_responses(&[part(Some(nested))]),
            vec![json!({"type": "reasoning", "encrypted_content": "enc", "summary": []})]
        );
        let id_only = json!({"openai": {"itemId": "rs_1"}});
        assert!(to_openai_responses(&[part(Some(id_only))]).is_empty());
        let other_provider = json!({"anthropic": {"reasoningEncryptedContent": "enc"}});
        assert!(to_openai_responses(&[part(Some(other_provider))]).is_empty());
    }
}
