//! Importing an Anthropic Messages conversation as [`RuntimeEvent`]s.
//!
//! Accepted input: an array of messages, or a request body `{ system?, messages }` (`system` a
//! string or text blocks). Identity follows the core's Chat Completions import
//! ([`ImportContext`]); a user message opens a new turn only when it holds text (tool results
//! continue the turn). Mapping: `system` → `system_note`; user `text` → `user_text`;
//! `tool_result` → `tool_result` (text blocks joined, `is_error` kept); assistant `text` →
//! `assistant_text`, `thinking` → `reasoning` with `providerData` `{ anthropic: { signature } }`,
//! `redacted_thinking` → empty `reasoning` with `{ anthropic: { redactedData } }`, `tool_use` →
//! `tool_call`, `server_tool_use` → `hosted_tool_call` and any `*_tool_result` block →
//! `hosted_tool_result`. Images, documents and unknown blocks are typed errors.

use std::collections::HashMap;

use contextfold_core::event::{EventContent, RuntimeEvent};
use contextfold_core::projection::openai_chat::ImportContext;
use serde_json::{Value, json};

use crate::convert::BindingError;

fn shape(path: &str, expected: &str) -> BindingError {
    BindingError::core("anthropic_shape", format!("{path}: expected {expected}"))
}

/// Imports an Anthropic conversation (see the module docs for the rules).
pub fn import_anthropic(
    body: &Value,
    ids: &ImportContext,
) -> Result<Vec<RuntimeEvent>, BindingError> {
    let (system, list) = match body {
        Value::Array(list) => (None, list),
        Value::Object(object) => match object.get("messages") {
            Some(Value::Array(list)) => (object.get("system").filter(|s| !s.is_null()), list),
            _ => return Err(shape("messages", "an array of messages")),
        },
        _ => return Err(shape("$", "an array of messages or `{ system, messages }`")),
    };
    let mut importer = Importer {
        ids,
        events: Vec::new(),
        turn: ids.first_turn,
        has_user: false,
        calls: HashMap::new(),
    };
    if let Some(system) = system {
        let text = match system {
            Value::String(text) => text.clone(),
            other => block_texts(other, "system")?,
        };
        importer.emit(EventContent::SystemNote { text }, None);
    }
    for (index, message) in list.iter().enumerate() {
        importer.message(index, message)?;
    }
    Ok(importer.events)
}

struct Importer<'a> {
    ids: &'a ImportContext,
    events: Vec<RuntimeEvent>,
    turn: u64,
    has_user: bool,
    /// Tool name and hostedness of each call, by id.
    calls: HashMap<String, (String, bool)>,
}

impl Importer<'_> {
    fn emit(&mut self, content: EventContent, response_id: Option<String>) {
        let seq = self.ids.first_seq + self.events.len() as u64;
        self.events.push(RuntimeEvent {
            session_id: self.ids.session_id.clone(),
            run_id: format!("{}{}", self.ids.run_id_prefix, self.turn),
            turn_id: format!("{}{}", self.ids.turn_id_prefix, self.turn),
            runtime_event_id: format!("{}{}", self.ids.event_id_prefix, seq),
            seq,
            created_at_ms: None,
            response_id,
            partial: false,
            pinned: false,
            content,
            metadata: None,
        });
    }

    fn message(&mut self, index: usize, value: &Value) -> Result<(), BindingError> {
        let path = format!("messages[{index}]");
        let object = value.as_object().ok_or_else(|| shape(&path, "a message object"))?;
        let role = object.get("role").and_then(Value::as_str).unwrap_or_default();
        let blocks: Vec<Value> = match object.get("content") {
            Some(Value::String(text)) => vec![json!({ "type": "text", "text": text })],
            Some(Value::Array(blocks)) => blocks.clone(),
            _ => return Err(shape(&format!("{path}.content"), "a string or content blocks")),
        };
        match role {
            "user" => self.user(&path, &blocks),
            "assistant" => self.assistant(&path, &blocks),
            other => Err(BindingError::core(
                "anthropic_unknown_role",
                format!("{path}: unknown role `{other}`"),
            )),
        }
    }

    fn user(&mut self, path: &str, blocks: &[Value]) -> Result<(), BindingError> {
        if blocks.iter().any(|b| b["type"] == "text") {
            if self.has_user {
                self.turn += 1;
            }
            self.has_user = true;
        }
        for (position, block) in blocks.iter().enumerate() {
            let path = format!("{path}.content[{position}]");
            match block["type"].as_str().unwrap_or_default() {
                "text" => {
                    let text = string(block, "text", &path)?;
                    self.emit(EventContent::UserText { text }, None);
                }
                "tool_result" => {
                    let call_id = string(block, "tool_use_id", &path)?;
                    let Some((tool_name, false)) = self.calls.remove(&call_id) else {
                        return Err(BindingError::core(
                            "anthropic_unknown_tool_use_id",
                            format!("{path}: no open tool_use `{call_id}`"),
                        ));
                    };
                    let output = match block.get("content") {
                        None | Some(Value::Null) => Value::String(String::new()),
                        Some(Value::String(text)) => Value::String(text.clone()),
                        Some(other) => {
                            Value::String(block_texts(other, &format!("{path}.content"))?)
                        }
                    };
                    let is_error = block.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                    self.emit(
                        EventContent::ToolResult { call_id, tool_name, output, is_error },
                        None,
                    );
                }
                other => return Err(unsupported(&path, other)),
            }
        }
        Ok(())
    }

    fn assistant(&mut self, path: &str, blocks: &[Value]) -> Result<(), BindingError> {
        let response_id = Some(format!(
            "{}{}",
            self.ids.response_id_prefix,
            self.ids.first_seq + self.events.len() as u64
        ));
        for (position, block) in blocks.iter().enumerate() {
            let path = format!("{path}.content[{position}]");
            let kind = block["type"].as_str().unwrap_or_default();
            let content = match kind {
                "text" => EventContent::AssistantText { text: string(block, "text", &path)? },
                "thinking" => EventContent::Reasoning {
                    text: string(block, "thinking", &path)?,
                    provider_data: Some(
                        json!({ "anthropic": { "signature": block.get("signature").cloned().unwrap_or(Value::Null) } }),
                    ),
                },
                "redacted_thinking" => EventContent::Reasoning {
                    text: String::new(),
                    provider_data: Some(
                        json!({ "anthropic": { "redactedData": string(block, "data", &path)? } }),
                    ),
                },
                "tool_use" | "server_tool_use" => {
                    let call_id = string(block, "id", &path)?;
                    let tool_name = string(block, "name", &path)?;
                    let input = block.get("input").cloned().unwrap_or(Value::Null);
                    let hosted = kind == "server_tool_use";
                    if self.calls.insert(call_id.clone(), (tool_name.clone(), hosted)).is_some() {
                        return Err(BindingError::core(
                            "anthropic_duplicate_tool_use_id",
                            format!("{path}: tool_use id `{call_id}` is used twice"),
                        ));
                    }
                    if hosted {
                        EventContent::HostedToolCall { call_id, tool_name, input }
                    } else {
                        EventContent::ToolCall { call_id, tool_name, input }
                    }
                }
                hosted if hosted.ends_with("_tool_result") => {
                    let call_id = string(block, "tool_use_id", &path)?;
                    let Some((tool_name, true)) = self.calls.remove(&call_id) else {
                        return Err(BindingError::core(
                            "anthropic_unknown_tool_use_id",
                            format!("{path}: no open server_tool_use `{call_id}`"),
                        ));
                    };
                    let output = block.get("content").cloned().unwrap_or(Value::Null);
                    let is_error = output
                        .get("type")
                        .and_then(Value::as_str)
                        .is_some_and(|t| t.ends_with("_error"));
                    EventContent::HostedToolResult { call_id, tool_name, output, is_error }
                }
                other => return Err(unsupported(&path, other)),
            };
            self.emit(content, response_id.clone());
        }
        Ok(())
    }
}

fn string(block: &Value, key: &str, path: &str) -> Result<String, BindingError> {
    block
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| shape(&format!("{path}.{key}"), "a string"))
}

/// Joins the texts of an array of text blocks; any other block is an error.
fn block_texts(value: &Value, path: &str) -> Result<String, BindingError> {
    let blocks = value.as_array().ok_or_else(|| shape(path, "a string or text blocks"))?;
    let mut texts = Vec::with_capacity(blocks.len());
    for (position, block) in blocks.iter().enumerate() {
        let block_path = format!("{path}[{position}]");
        match block["type"].as_str().unwrap_or_default() {
            "text" => texts.push(string(block, "text", &block_path)?),
            other => return Err(unsupported(&block_path, other)),
        }
    }
    Ok(texts.join("\n"))
}

fn unsupported(path: &str, kind: &str) -> BindingError {
    BindingError::core(
        "anthropic_unsupported_block",
        format!("{path}: `{kind}` blocks cannot be imported into the event log"),
    )
}
