//! The AI SDK (v6) `ModelMessage[]`: import and mapping.
//!
//! Import: `system` (string) → `system_note`; `user` (string or `text` parts) → `user_text`,
//! starting a turn; `assistant` (string or parts `text`, `reasoning`, `tool-call`,
//! `tool-result` of provider-executed tools) → one model response; `tool` (`tool-result` parts)
//! → `tool_result`. A tool output `{type: text|json|error-text|error-json|content, value}` keeps
//! its value (`error-*` sets `isError`); `execution-denied` becomes an error result with its
//! reason. `providerOptions` of a message is kept in each of its events' metadata, and of a
//! reasoning part as its `providerData`. Image and file parts are refused.

use contextfold_core::EventContent;
use contextfold_core::projection::{Message, Part, Role};
use serde_json::{Map, Value, json};

use super::{EventSink, FormatError, str_field};

const BAD_SHAPE: &str = "ai_sdk_invalid_shape";
const UNSUPPORTED: &str = "ai_sdk_unsupported_part";

/// Imports an AI SDK `ModelMessage[]` (or `{messages: [...]}`) into `sink`.
pub fn import_ai_sdk(document: &Value, sink: &mut EventSink) -> Result<(), FormatError> {
    let messages = match document {
        Value::Array(list) => list,
        Value::Object(body) => match body.get("messages") {
            Some(Value::Array(list)) => list,
            _ => {
                return Err(FormatError::new(
                    BAD_SHAPE,
                    "$.messages",
                    "expected an array of messages",
                ));
            }
        },
        _ => return Err(FormatError::new(BAD_SHAPE, "$", "expected an array of ModelMessages")),
    };
    for (index, message) in messages.iter().enumerate() {
        let path = format!("$[{index}]");
        let role = str_field(message, "role", &path, BAD_SHAPE)?;
        let metadata = message.get("providerOptions").map(|options| {
            let mut map = Map::new();
            map.insert("providerOptions".into(), options.clone());
            map
        });
        let parts = parts_of(message, &path)?;
        match role {
            "system" => {
                let text = message.get("content").and_then(Value::as_str).ok_or_else(|| {
                    FormatError::new(
                        BAD_SHAPE,
                        format!("{path}.content"),
                        "system content must be a string",
                    )
                })?;
                sink.push(EventContent::SystemNote { text: text.to_owned() }, metadata);
            }
            "user" => {
                sink.new_turn();
                for (i, part) in parts.iter().enumerate() {
                    let part_path = format!("{path}.content[{i}]");
                    if part.get("type").and_then(Value::as_str) != Some("text") {
                        return Err(unsupported(part, part_path));
                    }
                    let text = str_field(part, "text", &part_path, BAD_SHAPE)?.to_owned();
                    sink.push(EventContent::UserText { text }, metadata.clone());
                }
            }
            "assistant" => {
                sink.begin_response();
                for (i, part) in parts.iter().enumerate() {
                    let content = assistant_part(part, &format!("{path}.content[{i}]"))?;
                    sink.push(content, metadata.clone());
                }
                sink.end_response();
            }
            "tool" => {
                for (i, part) in parts.iter().enumerate() {
                    let part_path = format!("{path}.content[{i}]");
                    if part.get("type").and_then(Value::as_str) != Some("tool-result") {
                        return Err(unsupported(part, part_path));
                    }
                    let (call_id, tool_name, output, is_error) = tool_result(part, &part_path)?;
                    sink.push(
                        EventContent::ToolResult { call_id, tool_name, output, is_error },
                        metadata.clone(),
                    );
                }
            }
            other => {
                return Err(FormatError::new(
                    BAD_SHAPE,
                    format!("{path}.role"),
                    format!("unknown role `{other}`"),
                ));
            }
        }
    }
    Ok(())
}

fn parts_of(message: &Value, path: &str) -> Result<Vec<Value>, FormatError> {
    match message.get("content") {
        Some(Value::String(text)) => Ok(vec![json!({"type": "text", "text": text})]),
        Some(Value::Array(parts)) => Ok(parts.clone()),
        _ => Err(FormatError::new(
            BAD_SHAPE,
            format!("{path}.content"),
            "expected a string or parts",
        )),
    }
}

fn assistant_part(part: &Value, path: &str) -> Result<EventContent, FormatError> {
    let hosted = part.get("providerExecuted").and_then(Value::as_bool).unwrap_or(false);
    Ok(match part.get("type").and_then(Value::as_str) {
        Some("text") => EventContent::AssistantText {
            text: str_field(part, "text", path, BAD_SHAPE)?.to_owned(),
        },
        Some("reasoning") => EventContent::Reasoning {
            text: str_field(part, "text", path, BAD_SHAPE)?.to_owned(),
            provider_data: part.get("providerOptions").cloned(),
        },
        Some("tool-call") => {
            let call_id = str_field(part, "toolCallId", path, BAD_SHAPE)?.to_owned();
            let tool_name = str_field(part, "toolName", path, BAD_SHAPE)?.to_owned();
            let input = part.get("input").cloned().unwrap_or(json!({}));
            if hosted {
                EventContent::HostedToolCall { call_id, tool_name, input }
            } else {
                EventContent::ToolCall { call_id, tool_name, input }
            }
        }
        Some("tool-result") => {
            let (call_id, tool_name, output, is_error) = tool_result(part, path)?;
            EventContent::HostedToolResult { call_id, tool_name, output, is_error }
        }
        _ => return Err(unsupported(part, path.to_owned())),
    })
}

fn tool_result(part: &Value, path: &str) -> Result<(String, String, Value, bool), FormatError> {
    let call_id = str_field(part, "toolCallId", path, BAD_SHAPE)?.to_owned();
    let tool_name = str_field(part, "toolName", path, BAD_SHAPE)?.to_owned();
    let output = part
        .get("output")
        .ok_or_else(|| FormatError::new(BAD_SHAPE, format!("{path}.output"), "missing output"))?;
    let kind = str_field(output, "type", &format!("{path}.output"), BAD_SHAPE)?;
    let value = output.get("value").cloned().unwrap_or(Value::Null);
    let (output, is_error) = match kind {
        "text" | "json" | "content" => (value, false),
        "error-text" | "error-json" => (value, true),
        "execution-denied" => {
            let reason = output.get("reason").and_then(Value::as_str).unwrap_or("no reason given");
            (Value::String(format!("execution denied: {reason}")), true)
        }
        other => {
            return Err(FormatError::new(
                UNSUPPORTED,
                format!("{path}.output.type"),
                format!("unknown output type `{other}`"),
            ));
        }
    };
    Ok((call_id, tool_name, output, is_error))
}

fn unsupported(part: &Value, path: String) -> FormatError {
    let kind = part.get("type").and_then(Value::as_str).unwrap_or("<missing>");
    FormatError::new(UNSUPPORTED, path, format!("part type `{kind}` cannot be imported"))
}

/// Maps neutral messages to AI SDK `ModelMessage[]`. A V3 checkpoint's provider state becomes an
/// assistant `openai.compaction` custom part carrying `itemId` / `encryptedContent` in
/// `providerOptions.openai`.
pub fn to_ai_sdk(messages: &[Message]) -> Result<Vec<Value>, FormatError> {
    let mut out = Vec::with_capacity(messages.len());
    for (index, message) in messages.iter().enumerate() {
        let path = format!("$[{index}]");
        match message.role {
            Role::System => {
                out.push(json!({"role": "system", "content": joined_text(message, &path)?}))
            }
            Role::User => {
                let parts: Vec<Value> = texts(message, &path)?
                    .into_iter()
                    .map(|t| json!({"type": "text", "text": t}))
                    .collect();
                out.push(json!({"role": "user", "content": parts}));
            }
            Role::Assistant | Role::Tool => {
                let mut parts = Vec::new();
                for part in &message.parts {
                    parts.push(part_of(part));
                }
                let role = if message.role == Role::Tool { "tool" } else { "assistant" };
                out.push(json!({"role": role, "content": parts}));
            }
        }
    }
    Ok(out)
}

fn part_of(part: &Part) -> Value {
    match part {
        Part::Text { text } => json!({"type": "text", "text": text}),
        Part::Reasoning { text, provider_data } => {
            let mut value = json!({"type": "reasoning", "text": text});
            if let Some(data) = provider_data {
                value["providerOptions"] = data.clone();
            }
            value
        }
        Part::ToolCall { call_id, tool_name, input, hosted } => {
            let mut value = json!({"type": "tool-call", "toolCallId": call_id, "toolName": tool_name, "input": input});
            if *hosted {
                value["providerExecuted"] = Value::Bool(true);
            }
            value
        }
        Part::ToolResult { call_id, tool_name, output, is_error, .. } => {
            let output = match (output, is_error) {
                (Value::String(text), false) => json!({"type": "text", "value": text}),
                (Value::String(text), true) => json!({"type": "error-text", "value": text}),
                (value, false) => json!({"type": "json", "value": value}),
                (value, true) => json!({"type": "error-json", "value": value}),
            };
            json!({"type": "tool-result", "toolCallId": call_id, "toolName": tool_name, "output": output})
        }
        Part::ProviderState { state } => {
            let contextfold_core::ProviderState::OpenaiCodexRemoteV2 {
                item_id,
                encrypted_content,
                ..
            } = state
            else {
                return json!({"type": "custom", "kind": state.kind_name()});
            };
            json!({
                "type": "custom",
                "kind": "openai.compaction",
                "providerOptions": {"openai": {"itemId": item_id, "encryptedContent": encrypted_content}},
            })
        }
    }
}

fn texts(message: &Message, path: &str) -> Result<Vec<String>, FormatError> {
    message
        .parts
        .iter()
        .map(|part| match part {
            Part::Text { text } => Ok(text.clone()),
            _ => {
                Err(FormatError::new(UNSUPPORTED, path, "system and user messages hold text only"))
            }
        })
        .collect()
}

fn joined_text(message: &Message, path: &str) -> Result<String, FormatError> {
    Ok(texts(message, path)?.join("\n\n"))
}
