//! Anthropic Messages: import of a conversation and mapping of neutral messages to a request.
//!
//! Import takes `{"system"?, "messages": [...]}` or a bare array of messages. `system` (a string
//! or text blocks) becomes `system_note` events. A user message with text starts a new turn; a
//! user message holding only `tool_result` blocks continues the turn. Each assistant message is
//! one model response. Blocks: `text`, `thinking` (its `signature` kept as `providerData`),
//! `redacted_thinking` (its `data` kept as `providerData`), `tool_use`, `tool_result`
//! (`is_error` kept; text-block content joined), `server_tool_use` and `*_tool_result`
//! (hosted calls). Any other block (images, documents) is refused.

use contextfold_core::EventContent;
use contextfold_core::projection::openai_chat::tool_result_content;
use contextfold_core::projection::{Message, Part, Role};
use serde_json::{Map, Value, json};

use super::{EventSink, FormatError, str_field};

const BAD_SHAPE: &str = "anthropic_invalid_shape";
const UNSUPPORTED: &str = "anthropic_unsupported_block";

/// Imports an Anthropic Messages conversation into `sink`.
pub fn import_anthropic(document: &Value, sink: &mut EventSink) -> Result<(), FormatError> {
    let (system, messages) = match document {
        Value::Array(list) => (None, list),
        Value::Object(body) => match body.get("messages") {
            Some(Value::Array(list)) => (body.get("system"), list),
            _ => {
                return Err(FormatError::new(
                    BAD_SHAPE,
                    "$.messages",
                    "expected an array of messages",
                ));
            }
        },
        _ => {
            return Err(FormatError::new(
                BAD_SHAPE,
                "$",
                "expected an object with `messages` or an array",
            ));
        }
    };
    match system {
        None | Some(Value::Null) => {}
        Some(Value::String(text)) => {
            sink.push(EventContent::SystemNote { text: text.clone() }, None)
        }
        Some(Value::Array(blocks)) => {
            for (index, block) in blocks.iter().enumerate() {
                let path = format!("$.system[{index}]");
                if block.get("type").and_then(Value::as_str) != Some("text") {
                    return Err(FormatError::new(UNSUPPORTED, path, "system blocks must be text"));
                }
                let text = str_field(block, "text", &path, BAD_SHAPE)?;
                sink.push(EventContent::SystemNote { text: text.to_owned() }, None);
            }
        }
        Some(_) => {
            return Err(FormatError::new(
                BAD_SHAPE,
                "$.system",
                "expected a string or text blocks",
            ));
        }
    }
    for (index, message) in messages.iter().enumerate() {
        let path = format!("$.messages[{index}]");
        let role = str_field(message, "role", &path, BAD_SHAPE)?;
        let blocks = blocks_of(message, &path)?;
        match role {
            "user" => import_user(&blocks, &path, sink)?,
            "assistant" => {
                sink.begin_response();
                for (i, block) in blocks.iter().enumerate() {
                    import_assistant_block(block, &format!("{path}.content[{i}]"), sink)?;
                }
                sink.end_response();
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

fn blocks_of(message: &Value, path: &str) -> Result<Vec<Value>, FormatError> {
    match message.get("content") {
        Some(Value::String(text)) => Ok(vec![json!({"type": "text", "text": text})]),
        Some(Value::Array(blocks)) => Ok(blocks.clone()),
        _ => Err(FormatError::new(
            BAD_SHAPE,
            format!("{path}.content"),
            "expected a string or blocks",
        )),
    }
}

fn import_user(blocks: &[Value], path: &str, sink: &mut EventSink) -> Result<(), FormatError> {
    let starts_turn = blocks.iter().any(|b| b.get("type").and_then(Value::as_str) == Some("text"));
    if starts_turn || sink.is_empty() {
        sink.new_turn();
    }
    for (index, block) in blocks.iter().enumerate() {
        let path = format!("{path}.content[{index}]");
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let text = str_field(block, "text", &path, BAD_SHAPE)?;
                sink.push(EventContent::UserText { text: text.to_owned() }, None);
            }
            Some("tool_result") => {
                let call_id = str_field(block, "tool_use_id", &path, BAD_SHAPE)?.to_owned();
                let output = result_content(block.get("content"), &path)?;
                let is_error = block.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                let tool_name = block.get("name").and_then(Value::as_str).unwrap_or("").to_owned();
                sink.push(EventContent::ToolResult { call_id, tool_name, output, is_error }, None);
            }
            other => return Err(unsupported_block(other, path)),
        }
    }
    Ok(())
}

fn import_assistant_block(
    block: &Value,
    path: &str,
    sink: &mut EventSink,
) -> Result<(), FormatError> {
    let kind = block.get("type").and_then(Value::as_str);
    let content = match kind {
        Some("text") => EventContent::AssistantText {
            text: str_field(block, "text", path, BAD_SHAPE)?.to_owned(),
        },
        Some("thinking") => EventContent::Reasoning {
            text: str_field(block, "thinking", path, BAD_SHAPE)?.to_owned(),
            provider_data: block.get("signature").map(|s| json!({"signature": s})),
        },
        Some("redacted_thinking") => EventContent::Reasoning {
            text: String::new(),
            provider_data: Some(
                json!({"redactedData": block.get("data").cloned().unwrap_or(Value::Null)}),
            ),
        },
        Some("tool_use") => EventContent::ToolCall {
            call_id: str_field(block, "id", path, BAD_SHAPE)?.to_owned(),
            tool_name: str_field(block, "name", path, BAD_SHAPE)?.to_owned(),
            input: block.get("input").cloned().unwrap_or(json!({})),
        },
        Some("server_tool_use") => EventContent::HostedToolCall {
            call_id: str_field(block, "id", path, BAD_SHAPE)?.to_owned(),
            tool_name: str_field(block, "name", path, BAD_SHAPE)?.to_owned(),
            input: block.get("input").cloned().unwrap_or(json!({})),
        },
        Some(other) if other.ends_with("_tool_result") => EventContent::HostedToolResult {
            call_id: str_field(block, "tool_use_id", path, BAD_SHAPE)?.to_owned(),
            tool_name: other.trim_end_matches("_tool_result").to_owned(),
            output: block.get("content").cloned().unwrap_or(Value::Null),
            is_error: false,
        },
        other => return Err(unsupported_block(other, path.to_owned())),
    };
    sink.push(content, None);
    Ok(())
}

fn result_content(content: Option<&Value>, path: &str) -> Result<Value, FormatError> {
    match content {
        None | Some(Value::Null) => Ok(Value::String(String::new())),
        Some(Value::String(text)) => Ok(Value::String(text.clone())),
        Some(Value::Array(blocks)) => {
            let mut texts = Vec::new();
            for (index, block) in blocks.iter().enumerate() {
                let path = format!("{path}.content[{index}]");
                if block.get("type").and_then(Value::as_str) != Some("text") {
                    return Err(FormatError::new(
                        UNSUPPORTED,
                        path,
                        "tool_result content must be text",
                    ));
                }
                texts.push(str_field(block, "text", &path, BAD_SHAPE)?.to_owned());
            }
            Ok(Value::String(texts.join("\n")))
        }
        Some(_) => Err(FormatError::new(
            BAD_SHAPE,
            format!("{path}.content"),
            "expected a string or text blocks",
        )),
    }
}

fn unsupported_block(kind: Option<&str>, path: String) -> FormatError {
    FormatError::new(
        UNSUPPORTED,
        path,
        format!("block type {:?} cannot be imported", kind.unwrap_or("<missing>")),
    )
}

/// Maps neutral messages to an Anthropic Messages request body `{system, messages}`.
///
/// Leading system messages become `system`; later system messages become user text
/// `[system note] …`. Tool results go in user messages as `tool_result` blocks; consecutive
/// messages of one role are merged so roles alternate. Reasoning is replayed as a `thinking`
/// block only when it carries a signature. Provider-native (V3) state is refused.
pub fn to_anthropic(messages: &[Message]) -> Result<Value, FormatError> {
    let mut system: Vec<String> = Vec::new();
    let mut out: Vec<(String, Vec<Value>)> = Vec::new();
    let mut leading = true;
    for (index, message) in messages.iter().enumerate() {
        if message.role == Role::System && leading {
            for part in &message.parts {
                match part {
                    Part::Text { text } => system.push(text.clone()),
                    _ => {
                        return Err(FormatError::new(
                            "anthropic_unsupported_part",
                            format!("$[{index}]"),
                            "system messages hold text only",
                        ));
                    }
                }
            }
            continue;
        }
        leading = false;
        let role = if message.role == Role::Assistant { "assistant" } else { "user" };
        let mut blocks = Vec::new();
        for part in &message.parts {
            if let Some(block) = block_of(message.role, part, index)? {
                blocks.push(block);
            }
        }
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last, existing)) if last == role => existing.extend(blocks),
            _ => out.push((role.to_owned(), blocks)),
        }
    }
    let messages: Vec<Value> =
        out.into_iter().map(|(role, content)| json!({"role": role, "content": content})).collect();
    let mut body = Map::new();
    if !system.is_empty() {
        body.insert("system".into(), Value::String(system.join("\n\n")));
    }
    body.insert("messages".into(), Value::Array(messages));
    Ok(Value::Object(body))
}

fn block_of(role: Role, part: &Part, index: usize) -> Result<Option<Value>, FormatError> {
    Ok(Some(match part {
        Part::Text { text } if role == Role::System => {
            json!({"type": "text", "text": format!("[system note] {text}")})
        }
        Part::Text { text } => json!({"type": "text", "text": text}),
        Part::Reasoning { text, provider_data } => {
            match provider_data.as_ref().and_then(|d| d.get("signature")) {
                Some(signature) => {
                    json!({"type": "thinking", "thinking": text, "signature": signature})
                }
                None => return Ok(None),
            }
        }
        Part::ToolCall { call_id, tool_name, input, .. } => {
            json!({"type": "tool_use", "id": call_id, "name": tool_name, "input": input})
        }
        Part::ToolResult { call_id, output, is_error, .. } => json!({
            "type": "tool_result",
            "tool_use_id": call_id,
            "content": tool_result_content(output, false),
            "is_error": is_error,
        }),
        Part::ProviderState { .. } => {
            return Err(FormatError::new(
                "anthropic_provider_state_unsupported",
                format!("$[{index}]"),
                "provider-native (V3) checkpoint state cannot be sent to Anthropic",
            ));
        }
    }))
}
