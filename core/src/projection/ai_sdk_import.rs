//! Importing AI SDK `ModelMessage[]` (v5/v6 shapes) as [`RuntimeEvent`]s.
//!
//! Accepted input: a `ModelMessage[]` array, or an object with a `messages` array. Identity
//! follows the Chat Completions import exactly ([`ImportContext`]): one event per part, `seq`
//! counting from `first_seq`, one turn per user message, and all events of one assistant
//! message sharing the response id `<response_id_prefix><seq of its first event>`.
//!
//! Mapping: system → `system_note`; user text (a string or text parts) → `user_text`, one event
//! per part; assistant `text` → `assistant_text`, `reasoning` → `reasoning` with the part's
//! `providerOptions` as `providerData`, `tool-call` → `tool_call` (or `hosted_tool_call` when
//! `providerExecuted`), `tool-result` → `hosted_tool_result`; tool `tool-result` →
//! `tool_result`. Tool outputs: `text`/`json` keep their value, `error-text`/`error-json` set
//! `isError`, and `content` and `execution-denied` are kept whole (the latter with `isError`) so
//! they map back unchanged ([`crate::projection::ai_sdk::tool_output`]). Every other part's and
//! message's `providerOptions` is kept in the event's `metadata` (`providerOptions`,
//! `messageProviderOptions`). User `image` / `file` parts and the media parts of a tool
//! `content` output (`media`, `image-data`, `file-data`, `image-url`, `file-url`) become
//! [`Attachment`](crate::attachment::Attachment)s of the event (base64 and `data:` URLs inline, `http(s)` URLs as URLs). Parts
//! the event model cannot hold (approvals, custom parts, file ids), attachments that fail their
//! checks and malformed shapes are typed errors: nothing is dropped silently.
//!
//! A `tool-call` may reuse the `toolCallId` of an earlier call that was already answered: the
//! event keeps the original id, the next result with that id answers the new call, and the
//! projection renames reused ids in the requests it builds (`<id>_r2`, `<id>_r3`, …, diagnostic
//! `tool_call_id_renamed`). Reuse while the earlier call is still open
//! (`ai_sdk_duplicate_tool_call_id`) and a result for no open call
//! (`ai_sdk_unknown_tool_call_id`) are errors naming the message index.

mod media;

use serde_json::{Map, Value};

use crate::attachment::AttachmentError;
use crate::event::{EventContent, RuntimeEvent};
use crate::projection::ai_sdk::{CONTENT_OUTPUT, DENIED_OUTPUT, copy_provider_options};
use crate::projection::import_state::{ImportState, PairingError};
use crate::projection::openai_chat::{ImportContext, message_array};
use media::{output_attachments, user_attachment};

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
        expected: &'static str,
    },
    /// A message role other than system, user, assistant or tool.
    #[error("messages[{index}]: unknown role `{role}`")]
    UnknownRole {
        /// Message index.
        index: usize,
        /// The role.
        role: String,
    },
    /// A part the event model cannot hold (image, file, approval, custom).
    #[error("{path}: `{part_type}` parts cannot be imported into the event log")]
    UnsupportedPart {
        /// JSON path of the part.
        path: String,
        /// Its `type`.
        part_type: String,
    },
    /// An image or file that cannot be accepted (bad base64, a media type its bytes
    /// contradict, over the size limit, a URL scheme that is not allowed).
    #[error("{path}: {source}")]
    Attachment {
        /// JSON path of the part.
        path: String,
        /// What is wrong with it.
        source: AttachmentError,
    },
    /// A tool result answers no earlier call (of the same hostedness).
    #[error("messages[{index}]: tool result for unknown call `{call_id}`")]
    UnknownToolCallId {
        /// Message index.
        index: usize,
        /// The call id.
        call_id: String,
    },
    /// A call reuses the id of an earlier call that is still open (not answered yet).
    /// Reusing the id of an answered call is accepted.
    #[error("messages[{index}]: tool call id `{call_id}` is reused while its earlier call is open")]
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
            Self::Shape { .. } => "ai_sdk_invalid_shape",
            Self::UnknownRole { .. } => "ai_sdk_unknown_role",
            Self::UnsupportedPart { .. } => "ai_sdk_unsupported_part",
            Self::Attachment { source, .. } => source.code(),
            Self::UnknownToolCallId { .. } => "ai_sdk_unknown_tool_call_id",
            Self::DuplicateToolCallId { .. } => "ai_sdk_duplicate_tool_call_id",
            Self::DuplicateToolResult { .. } => "ai_sdk_duplicate_tool_result",
        }
    }
}

type Result<T> = std::result::Result<T, ModelMessageImportError>;

fn shape(path: impl Into<String>, expected: &'static str) -> ModelMessageImportError {
    ModelMessageImportError::Shape { path: path.into(), expected }
}

/// Imports `ModelMessage[]` (see the module docs for the rules).
///
/// ```
/// use contextfold_core::projection::import_model_messages;
/// use contextfold_core::projection::ImportContext;
/// let messages = serde_json::json!([{ "role": "user", "content": "hi" }]);
/// let events = import_model_messages(&messages, &ImportContext::new("s")).unwrap();
/// assert_eq!(events[0].runtime_event_id, "evt-1");
/// ```
pub fn import_model_messages(messages: &Value, ids: &ImportContext) -> Result<Vec<RuntimeEvent>> {
    let (list, _) = message_array(messages).map_err(|path| match path {
        "messages" => shape(path, "an array of ModelMessages"),
        _ => shape(path, "an array of ModelMessages or an object with `messages`"),
    })?;
    let mut importer = Importer { state: ImportState::new(ids) };
    for (index, message) in list.iter().enumerate() {
        importer.message(index, message)?;
    }
    Ok(importer.state.into_events())
}

struct Importer<'a> {
    /// Keeps the tool name and hostedness of every call, by call id.
    state: ImportState<'a, (String, bool)>,
}

/// One message being imported: its index, JSON path and object.
struct Source<'m> {
    index: usize,
    path: String,
    message: &'m Map<String, Value>,
}

impl Importer<'_> {
    fn emit(
        &mut self,
        source: &Source<'_>,
        part: Option<&Map<String, Value>>,
        content: EventContent,
        response_id: Option<String>,
    ) {
        let mut metadata = Map::new();
        copy_provider_options(&mut metadata, "messageProviderOptions", source.message);
        if let Some(part) = part
            && !matches!(content, EventContent::Reasoning { .. })
        {
            copy_provider_options(&mut metadata, "providerOptions", part);
        }
        self.state.emit(content, response_id).metadata = (!metadata.is_empty()).then_some(metadata);
    }

    fn message(&mut self, index: usize, value: &Value) -> Result<()> {
        let path = format!("messages[{index}]");
        let message = value.as_object().ok_or_else(|| shape(&path, "a message object"))?;
        let role = message
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| shape(format!("{path}.role"), "a string"))?;
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
        self.state.open_user_turn();
        if let Some(Value::String(text)) = source.message.get("content") {
            let content = EventContent::UserText { text: text.clone(), attachments: Vec::new() };
            self.emit(source, None, content, None);
            return Ok(());
        }
        // One event per text part; image and file parts join the event of the text before
        // them (an event of their own when they lead the message).
        let mut pending: Option<(EventContent, &Map<String, Value>)> = None;
        for (position, part, part_type) in parts(source)? {
            let path = format!("{}.content[{position}]", source.path);
            match part_type {
                "text" => {
                    if let Some((content, first)) = pending.take() {
                        self.emit(source, Some(first), content, None);
                    }
                    let text = string_field(part, "text", &path)?;
                    pending =
                        Some((EventContent::UserText { text, attachments: Vec::new() }, part));
                }
                "image" | "file" => {
                    let attachment = user_attachment(part, part_type, &path)?;
                    let (content, _) = pending.get_or_insert_with(|| {
                        (
                            EventContent::UserText { text: String::new(), attachments: Vec::new() },
                            part,
                        )
                    });
                    if let EventContent::UserText { attachments, .. } = content {
                        attachments.push(attachment);
                    }
                }
                other => return Err(unsupported(&path, other)),
            }
        }
        if let Some((content, first)) = pending {
            self.emit(source, Some(first), content, None);
        }
        Ok(())
    }

    fn assistant(&mut self, source: &Source<'_>) -> Result<()> {
        let response_id = Some(self.state.next_response_id());
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
        if self.state.call(&call_id, (tool_name.clone(), hosted)).is_err() {
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
        // A hosted result answers a hosted call, an ordinary result an ordinary one.
        let tool_name = match self.state.answer(&call_id, |(_, was_hosted)| *was_hosted == hosted) {
            Ok((name, _)) => name.clone(),
            Err(PairingError::DuplicateResult) => {
                return Err(ModelMessageImportError::DuplicateToolResult { index, call_id });
            }
            Err(_) => return Err(ModelMessageImportError::UnknownToolCallId { index, call_id }),
        };
        let (output, is_error) = tool_output(part.get("output"), &format!("{path}.output"))?;
        Ok(if hosted {
            EventContent::HostedToolResult { call_id, tool_name, output, is_error }
        } else {
            let (output, attachments) = output_attachments(output, &format!("{path}.output"))?;
            EventContent::ToolResult { call_id, tool_name, output, is_error, attachments }
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
                .ok_or_else(|| shape(format!("{part_path}.type"), "a string"))?;
            Ok((position, object, kind))
        })
        .collect()
}

fn string_field(object: &Map<String, Value>, key: &str, path: &str) -> Result<String> {
    object
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| shape(format!("{path}.{key}"), "a string"))
}

fn unsupported(path: &str, part_type: &str) -> ModelMessageImportError {
    ModelMessageImportError::UnsupportedPart { path: path.into(), part_type: part_type.into() }
}

#[cfg(test)]
mod tests;
