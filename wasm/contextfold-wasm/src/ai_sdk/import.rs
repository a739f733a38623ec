//! Importing AI SDK `ModelMessage[]` (v5/v6) as [`RuntimeEvent`]s.
//!
//! Identity follows the core's Chat Completions import exactly ([`ImportContext`]): one event
//! per part, `seq` counting from `first_seq`, one turn per user message, and all events of one
//! assistant message sharing the response id `<response_id_prefix><seq of its first event>`.
//!
//! Mapping: system → `system_note`; user text (a string or text parts) → `user_text`, one
//! event per part; assistant `text` → `assistant_text`, `reasoning` → `reasoning` with the part's
//! `providerOptions` as `providerData`, `tool-call` → `tool_call` (or `hosted_tool_call` when
//! `providerExecuted`), `tool-result` → `hosted_tool_result`; tool `tool-result` → `tool_result`.
//! Tool outputs: `text`/`json` keep their value, `error-text`/`error-json` set `isError`, and
//! `content` and `execution-denied` are kept whole (the latter with `isError`) so they project
//! back unchanged. Every other part's and message's `providerOptions` is kept in the event's
//! `metadata` (`providerOptions`, `messageProviderOptions`). Parts the event model cannot hold
//! (images, files, approvals, custom parts) and malformed shapes are typed errors: nothing is
//! dropped silently.

use std::collections::{HashMap, HashSet};

use contextfold_core::event::{EventContent, RuntimeEvent};
use contextfold_core::projection::openai_chat::ImportContext;
use serde_json::{Map, Value};

use super::{CONTENT_OUTPUT, DENIED_OUTPUT, provider_options_metadata};

/// Why `ModelMessage[]` could not be imported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelMessageImportError {
    /// A value does not have the expected shape.
    #[error("{path}: expected {expected}")]
    Shape {
        /// JSON path of the value.
        path: String,
        /// What was expected.
        expected: String,
    },
    /// A message role other than system, user, assistant or tool.
    #[error("messages[{index}]: unknown role `{role}`")]
    UnknownRole {
        /// Message index.
        index: usize,
        /// The role.
        role: String,
    },
    /// A part the event model cannot hold.
    #[error("{path}: `{part_type}` parts cannot be imported into the event log")]
    UnsupportedPart {
        /// JSON path of the part.
        path: String,
        /// Its `type`.
        part_type: String,
    },
    /// A tool result answers no earlier call.
    #[error("messages[{index}]: tool result for unknown call `{call_id}`")]
    UnknownToolCallId {
        /// Message index.
        index: usize,
        /// The call id.
        call_id: String,
    },
    /// Two calls share an id.
    #[error("messages[{index}]: tool call id `{call_id}` is used twice")]
    DuplicateToolCallId {
        /// Message index.
        index: usize,
        /// The call id.
        call_id: String,
    },
    /// A call is answered twice.
    #[error("messages[{index}]: second result for call `{call_id}`")]
    DuplicateToolResult {
        /// Message index.
        index: usize,
        /// The call id.
        call_id: String,
    },
}

impl ModelMessageImportError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Shape { .. } => "model_message_shape",
            Self::UnknownRole { .. } => "model_message_unknown_role",
            Self::UnsupportedPart { .. } => "model_message_unsupported_part",
            Self::UnknownToolCallId { .. } => "model_message_unknown_tool_call_id",
            Self::DuplicateToolCallId { .. } => "model_message_duplicate_tool_call_id",
            Self::DuplicateToolResult { .. } => "model_message_duplicate_tool_result",
        }
    }
}

type Result<T> = std::result::Result<T, ModelMessageImportError>;

fn shape(path: &str, expected: &str) -> ModelMessageImportError {
    ModelMessageImportError::Shape { path: path.to_owned(), expected: expected.to_owned() }
}

/// Imports `ModelMessage[]` (see the module docs for the rules).
pub fn import_model_messages(messages: &Value, ids: &ImportContext) -> Result<Vec<RuntimeEvent>> {
    let list = messages.as_array().ok_or_else(|| shape("$", "an array of ModelMessages"))?;
    let mut importer = Importer {
        ids,
        events: Vec::new(),
        turn: ids.first_turn,
        turn_has_user: false,
        calls: HashMap::new(),
        answered: HashSet::new(),
    };
    for (index, message) in list.iter().enumerate() {
        importer.message(index, message)?;
    }
    Ok(importer.events)
}

struct Importer<'a> {
    ids: &'a ImportContext,
    events: Vec<RuntimeEvent>,
    turn: u64,
    turn_has_user: bool,
    /// Tool name and hostedness of every call seen so far, by call id.
    calls: HashMap<String, (String, bool)>,
    answered: HashSet<String>,
}

/// One message being imported: its index, path and message-level provider options.
struct Source<'m> {
    index: usize,
    path: String,
    message: &'m Map<String, Value>,
}

impl Importer<'_> {
    fn next_seq(&self) -> u64 {
        self.ids.first_seq + self.events.len() as u64
    }

    fn emit(
        &mut self,
        source: &Source<'_>,
        part: Option<&Map<String, Value>>,
        content: EventContent,
        response_id: Option<String>,
    ) {
        let mut metadata = Map::new();
        provider_options_metadata(&mut metadata, "messageProviderOptions", source.message);
        if let Some(part) = part
            && !matches!(content, EventContent::Reasoning { .. })
        {
            provider_options_metadata(&mut metadata, "providerOptions", part);
        }
        let seq = self.next_seq();
        let ids = self.ids;
        self.events.push(RuntimeEvent {
            session_id: ids.session_id.clone(),
            run_id: format!("{}{}", ids.run_id_prefix, self.turn),
            turn_id: format!("{}{}", ids.turn_id_prefix, self.turn),
            runtime_event_id: format!("{}{}", ids.event_id_prefix, seq),
            seq,
            created_at_ms: None,
            response_id,
            partial: false,
            pinned: false,
            content,
            metadata: (!metadata.is_empty()).then_some(metadata),
        });
    }

    fn message(&mut self, index: usize, value: &Value) -> Result<()> {
        let path = format!("messages[{index}]");
        let message = value.as_object().ok_or_else(|| shape(&path, "a message object"))?;
        let role = message
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| shape(&format!("{path}.role"), "a string"))?;
        let source = Source { index, path, message };
        match role {
            "system" => {
                let text = string_field(message, "content", &source.path)?;
                self.emit(&source, None, EventContent::SystemNote { text }, None);
            }
            "user" => self.user(&source)?,
            "assistant" => self.assistant(&source)?,
            "tool" => self.tool(&source)?,
            other => {
                return Err(ModelMessageImportError::UnknownRole { index, role: other.into() });
            }
        }
        Ok(())
    }

    fn user(&mut self, source: &Source<'_>) -> Result<()> {
        if self.turn_has_user {
            self.turn += 1;
        }
        self.turn_has_user = true;
        if let Some(Value::String(text)) = source.message.get("content") {
            let content = EventContent::UserText { text: text.clone() };
            self.emit(source, None, content, None);
            return Ok(());
        }
        for (position, part, part_type) in parts(source)? {
            let path = format!("{}.content[{position}]", source.path);
            match part_type {
                "text" => {
                    let text = string_field(part, "text", &path)?;
                    self.emit(source, Some(part), EventContent::UserText { text }, None);
                }
                other => return Err(unsupported(&path, other)),
            }
        }
        Ok(())
    }

    fn assistant(&mut self, source: &Source<'_>) -> Result<()> {
        let response_id = Some(format!("{}{}", self.ids.response_id_prefix, self.next_seq()));
        if let Some(Value::String(text)) = source.message.get("content") {
            let content = EventContent::AssistantText { text: text.clone() };
            self.emit(source, None, content, response_id);
            return Ok(());
        }
        for (position, part, part_type) in parts(source)? {
            let path = format!("{}.content[{position}]", source.path);
            let content = match part_type {
                "text" => EventContent::AssistantText { text: string_field(part, "text", &path)? },
                "reasoning" => EventContent::Reasoning {
                    text: string_field(part, "text", &path)?,
                    provider_data: part.get("providerOptions").filter(|v| !v.is_null()).cloned(),
                },
                "tool-call" => self.tool_call(source.index, part, &path)?,
                "tool-result" => self.tool_result(source.index, part, &path, true)?,
                other => return Err(unsupported(&path, other)),
            };
            self.emit(source, Some(part), content, response_id.clone());
        }
        Ok(())
    }

    fn tool(&mut self, source: &Source<'_>) -> Result<()> {
        for (position, part, part_type) in parts(source)? {
            let path = format!("{}.content[{position}]", source.path);
            match part_type {
                "tool-result" => {
                    let content = self.tool_result(source.index, part, &path, false)?;
                    self.emit(source, Some(part), content, None);
                }
                other => return Err(unsupported(&path, other)),
            }
        }
        Ok(())
    }

    fn tool_call(
        &mut self,
        index: usize,
        part: &Map<String, Value>,
        path: &str,
    ) -> Result<EventContent> {
        let call_id = string_field(part, "toolCallId", path)?;
        let tool_name = string_field(part, "toolName", path)?;
        let input = part.get("input").cloned().unwrap_or(Value::Null);
        let hosted = part.get("providerExecuted").and_then(Value::as_bool).unwrap_or(false);
        if self.calls.insert(call_id.clone(), (tool_name.clone(), hosted)).is_some() {
            return Err(ModelMessageImportError::DuplicateToolCallId { index, call_id });
        }
        Ok(if hosted {
            EventContent::HostedToolCall { call_id, tool_name, input }
        } else {
            EventContent::ToolCall { call_id, tool_name, input }
        })
    }

    fn tool_result(
        &mut self,
        index: usize,
        part: &Map<String, Value>,
        path: &str,
        hosted: bool,
    ) -> Result<EventContent> {
        let call_id = string_field(part, "toolCallId", path)?;
        let tool_name = match self.calls.get(&call_id) {
            Some((name, was_hosted)) if *was_hosted == hosted => name.clone(),
            _ => return Err(ModelMessageImportError::UnknownToolCallId { index, call_id }),
        };
        if !self.answered.insert(call_id.clone()) {
            return Err(ModelMessageImportError::DuplicateToolResult { index, call_id });
        }
        let (output, is_error) = tool_output(part.get("output"), &format!("{path}.output"))?;
        Ok(if hosted {
            EventContent::HostedToolResult { call_id, tool_name, output, is_error }
        } else {
            EventContent::ToolResult { call_id, tool_name, output, is_error }
        })
    }
}

/// Reads a tool-result `output` (v5/v6 kinds) as `(output, is_error)`.
fn tool_output(output: Option<&Value>, path: &str) -> Result<(Value, bool)> {
    let object =
        output.and_then(Value::as_object).ok_or_else(|| shape(path, "an output object"))?;
    let kind = object.get("type").and_then(Value::as_str).unwrap_or_default();
    let value = || object.get("value").cloned().unwrap_or(Value::Null);
    match kind {
        "text" => Ok((Value::String(string_field(object, "value", path)?), false)),
        "error-text" => Ok((Value::String(string_field(object, "value", path)?), true)),
        "json" => Ok((value(), false)),
        "error-json" => Ok((value(), true)),
        CONTENT_OUTPUT if object.get("value").is_some_and(Value::is_array) => {
            Ok((Value::Object(object.clone()), false))
        }
        DENIED_OUTPUT => Ok((Value::Object(object.clone()), true)),
        _ => Err(shape(
            path,
            "an output of type text, json, error-text, error-json, content or execution-denied",
        )),
    }
}

/// One part of a message: its position, its object and its `type`.
type PartRef<'m> = (usize, &'m Map<String, Value>, &'m str);

/// The parts of a message's `content` array, with their `type`.
fn parts<'m>(source: &Source<'m>) -> Result<Vec<PartRef<'m>>> {
    let path = format!("{}.content", source.path);
    let list = source
        .message
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| shape(&path, "a string or an array of parts"))?;
    list.iter()
        .enumerate()
        .map(|(position, part)| {
            let part_path = format!("{path}[{position}]");
            let object = part.as_object().ok_or_else(|| shape(&part_path, "a part object"))?;
            let kind = object
                .get("type")
                .and_then(Value::as_str)
                .ok_or_else(|| shape(&format!("{part_path}.type"), "a string"))?;
            Ok((position, object, kind))
        })
        .collect()
}

fn string_field(object: &Map<String, Value>, key: &str, path: &str) -> Result<String> {
    object
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| shape(&format!("{path}.{key}"), "a string"))
}

fn unsupported(path: &str, part_type: &str) -> ModelMessageImportError {
    ModelMessageImportError::UnsupportedPart { path: path.into(), part_type: part_type.into() }
}
