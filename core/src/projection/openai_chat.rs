//! OpenAI Chat Completions: mapping projected [`Message`]s to chat messages, and importing a
//! chat conversation as [`RuntimeEvent`](crate::event::RuntimeEvent)s (see [`import_openai_chat`]).
//!
//! Mapping rules of [`to_openai_chat`]:
//!
//! - system and user messages → `{"role", "content"}`; content is a string when the message has
//!   one text part, an array of `{"type": "text", "text"}` parts when it has several;
//! - an assistant message → `{"role": "assistant", "content": <text, parts or null>,
//!   "tool_calls": [{"id", "type": "function", "function": {"name", "arguments"}}]}` where
//!   `arguments` is the JSON text of the call input; `tool_calls` is left out when there are none;
//! - each tool result → one `{"role": "tool", "tool_call_id", "content"}` right after the
//!   assistant message holding its call; content is a string output as is, any other output as
//!   its JSON text, and an error is prefixed with [`TOOL_ERROR_PREFIX`] so the model sees the
//!   failure;
//! - reasoning parts are dropped (chat has no field for them); an assistant message left with no
//!   text and no call is left out;
//! - a hosted call/result pair is lowered to an ordinary function call and its tool message (the
//!   only way chat can carry it). To keep chronology, an assistant message is split after a hosted
//!   result that is followed by more text or calls, so the grounded text comes after the output;
//! - a [`Part::ProviderState`] is a typed error: a V3 checkpoint never replays on chat.
//!
//! The output is checked as it is built: every call gets exactly one tool message before the
//! next non-tool message, and every tool message answers a call of the assistant message before
//! it. Input that breaks this (it never comes from [`materialize`](super::materialize)) is a
//! typed [`ChatMappingError`].

mod chat_shape;
mod import;
#[cfg(test)]
mod tests;

use crate::json_text::json_text;
use std::collections::HashSet;

use serde_json::{Map, Value, json};

use crate::attachment::Attachment;
use crate::projection::message::{Message, Part, Role};

pub(crate) use import::message_array;
pub use import::{ChatImportError, ImportContext, import_openai_chat};

/// Prefix of the content of a tool message whose result is an error.
pub(crate) const TOOL_ERROR_PREFIX: &str = "Tool error: ";

/// Why messages cannot be mapped to Chat Completions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChatMappingError {
    /// A message carries provider-native compact state (a V3 checkpoint), which chat cannot
    /// replay; reproject from raw events instead.
    #[error("message {index} carries provider-native state, which Chat Completions cannot replay")]
    ProviderStateUnsupported {
        /// Index of the message.
        index: usize,
    },
    /// A part of a kind the message's role cannot carry on chat.
    #[error("message {index} ({role}) holds a `{part}` part, which chat cannot carry there")]
    UnsupportedPart {
        /// Index of the message.
        index: usize,
        /// Role of the message.
        role: &'static str,
        /// Kind of the part.
        part: &'static str,
    },
    /// A call has no result among the tool messages right after it (or, hosted, in its message).
    #[error("tool call `{call_id}` in message {index} has no result")]
    UnansweredToolCall {
        /// Index of the assistant message.
        index: usize,
        /// The call id.
        call_id: String,
    },
    /// A result answers no call of the assistant message before it.
    #[error("tool result `{call_id}` in message {index} answers no preceding call")]
    OrphanToolResult {
        /// Index of the message holding the result.
        index: usize,
        /// The call id the result names.
        call_id: String,
    },
    /// Two calls share one call id.
    #[error("tool call id `{call_id}` in message {index} is used twice")]
    DuplicateToolCall {
        /// Index of the assistant message holding the second call.
        index: usize,
        /// The call id.
        call_id: String,
    },
    /// A file known only by its URL in a place where chat needs the bytes (`file` parts carry
    /// `file_data`, never a URL).
    #[error("message {index} holds a `{media_type}` file known only by URL; chat needs its bytes")]
    AttachmentNeedsBytes {
        /// Index of the message.
        index: usize,
        /// Media type of the file.
        media_type: String,
    },
    /// Two results answer one call.
    #[error("tool call `{call_id}` is answered twice (message {index})")]
    DuplicateToolResult {
        /// Index of the message holding the second result.
        index: usize,
        /// The call id.
        call_id: String,
    },
}

impl ChatMappingError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            ChatMappingError::ProviderStateUnsupported { .. } => "chat_provider_state_unsupported",
            ChatMappingError::UnsupportedPart { .. } => "chat_unsupported_part",
            ChatMappingError::UnansweredToolCall { .. } => "chat_unanswered_tool_call",
            ChatMappingError::OrphanToolResult { .. } => "chat_orphan_tool_result",
            ChatMappingError::DuplicateToolCall { .. } => "chat_duplicate_tool_call",
            ChatMappingError::DuplicateToolResult { .. } => "chat_duplicate_tool_result",
            ChatMappingError::AttachmentNeedsBytes { .. } => "attachment_url_not_allowed",
        }
    }
}

/// Maps provider-neutral messages to Chat Completions messages (see the module docs).
///
/// ```
/// use contextfold_core::projection::{Message, Role, to_openai_chat};
/// let chat = to_openai_chat(&[Message::text(Role::User, "hi")]).unwrap();
/// assert_eq!(chat, [serde_json::json!({"role": "user", "content": "hi"})]);
/// ```
pub fn to_openai_chat(messages: &[Message]) -> Result<Vec<Value>, ChatMappingError> {
    let provider_state = messages
        .iter()
        .position(|m| m.parts.iter().any(|p| matches!(p, Part::ProviderState { .. })));
    if let Some(index) = provider_state {
        return Err(ChatMappingError::ProviderStateUnsupported { index });
    }
    let mut out = Vec::with_capacity(messages.len());
    let mut seen_calls = HashSet::new();
    let mut index = 0;
    while index < messages.len() {
        let message = &messages[index];
        match message.role {
            Role::User if message.parts.iter().any(|p| matches!(p, Part::Attachment { .. })) => {
                let content = user_content(index, message)?;
                out.push(json!({ "role": "user", "content": content }));
                index += 1;
            }
            Role::System | Role::User => {
                let content = text_content(index, message)?;
                out.push(json!({ "role": role_name(message.role), "content": content }));
                index += 1;
            }
            Role::Tool => {
                // Every tool message right after an assistant message is consumed with it.
                if let Some(part) = message.parts.first() {
                    return Err(match part {
                        Part::ToolResult { call_id, .. } => {
                            ChatMappingError::OrphanToolResult { index, call_id: call_id.clone() }
                        }
                        other => unsupported(index, Role::Tool, other),
                    });
                }
                index += 1;
            }
            Role::Assistant => {
                let end = messages[index + 1..]
                    .iter()
                    .position(|m| m.role != Role::Tool)
                    .map_or(messages.len(), |offset| index + 1 + offset);
                lower_assistant(
                    index,
                    message,
                    &messages[index + 1..end],
                    &mut seen_calls,
                    &mut out,
                )?;
                index = end;
            }
        }
    }
    Ok(out)
}

/// The chat content of a tool result: string output as is, an AI SDK `content` output of text
/// parts as their text, other output as JSON text, errors prefixed with [`TOOL_ERROR_PREFIX`].
pub(crate) fn tool_result_content(output: &Value, is_error: bool) -> String {
    let body = match output {
        Value::String(text) => text.clone(),
        other => content_output_text(other).unwrap_or_else(|| json_text(other)),
    };
    if is_error { format!("{TOOL_ERROR_PREFIX}{body}") } else { body }
}

/// The text of an AI SDK `content` output whose parts are all text (their texts, one per
/// line), so a result imported from the AI SDK reads as text on every other wire format.
fn content_output_text(output: &Value) -> Option<String> {
    let map = output.as_object()?;
    if map.get("type").and_then(Value::as_str) != Some(crate::projection::ai_sdk::CONTENT_OUTPUT) {
        return None;
    }
    let texts: Option<Vec<&str>> = map
        .get("value")?
        .as_array()?
        .iter()
        .map(|part| match part.get("type").and_then(Value::as_str) {
            Some("text") => part.get("text").and_then(Value::as_str),
            _ => None,
        })
        .collect();
    Some(texts?.join("\n"))
}

/// One chat assistant message under construction.
#[derive(Default)]
struct Segment<'a> {
    texts: Vec<&'a str>,
    calls: Vec<(&'a str, &'a str, &'a Value, bool)>,
}

/// A recorded result waiting to be emitted after its call.
struct PendingResult<'a> {
    /// Index of the message holding it.
    index: usize,
    call_id: &'a str,
    output: &'a Value,
    is_error: bool,
    hosted: bool,
    emitted: bool,
    /// Chat tool messages carry only text: attachments go as their stand-ins.
    attachments: &'a [Attachment],
}

/// Lowers one assistant message and the tool messages right after it. Each chat assistant
/// message is followed by the results of its calls in recorded order: hosted results (inside the
/// message) first, then the tool messages' results.
fn lower_assistant(
    index: usize,
    message: &Message,
    tool_messages: &[Message],
    seen_calls: &mut HashSet<String>,
    out: &mut Vec<Value>,
) -> Result<(), ChatMappingError> {
    let mut results: Vec<PendingResult<'_>> = Vec::new();
    let mut answered_once: HashSet<(&str, bool)> = HashSet::new();
    let mut segments = Vec::new();
    let mut segment = Segment::default();
    let mut after_hosted_result = false;
    for part in &message.parts {
        let starts_content = matches!(part, Part::Text { .. } | Part::ToolCall { .. });
        if starts_content && after_hosted_result {
            segments.push(std::mem::take(&mut segment));
            after_hosted_result = false;
        }
        match part {
            Part::Text { text } => segment.texts.push(text),
            Part::Reasoning { .. } => {}
            Part::ToolCall { call_id, tool_name, input, hosted } => {
                if !seen_calls.insert(call_id.clone()) {
                    let call_id = call_id.clone();
                    return Err(ChatMappingError::DuplicateToolCall { index, call_id });
                }
                segment.calls.push((call_id, tool_name, input, *hosted));
            }
            Part::ToolResult { call_id, output, is_error, hosted: true, .. } => {
                if !answered_once.insert((call_id, true)) {
                    let call_id = call_id.clone();
                    return Err(ChatMappingError::DuplicateToolResult { index, call_id });
                }
                let is_error = *is_error;
                results.push(PendingResult {
                    index,
                    call_id,
                    output,
                    is_error,
                    hosted: true,
                    emitted: false,
                    attachments: &[],
                });
                after_hosted_result = true;
            }
            Part::ToolResult { .. } | Part::ProviderState { .. } | Part::Attachment { .. } => {
                return Err(unsupported(index, Role::Assistant, part));
            }
        }
    }
    segments.push(segment);
    for (offset, tool) in tool_messages.iter().enumerate() {
        let tool_index = index + 1 + offset;
        for part in &tool.parts {
            let Part::ToolResult { call_id, output, is_error, hosted: false, attachments, .. } =
                part
            else {
                return Err(unsupported(tool_index, Role::Tool, part));
            };
            if !answered_once.insert((call_id, false)) {
                let call_id = call_id.clone();
                return Err(ChatMappingError::DuplicateToolResult { index: tool_index, call_id });
            }
            let is_error = *is_error;
            let pending = PendingResult {
                index: tool_index,
                call_id,
                output,
                is_error,
                hosted: false,
                emitted: false,
                attachments,
            };
            results.push(pending);
        }
    }
    for segment in segments {
        if segment.texts.is_empty() && segment.calls.is_empty() {
            continue;
        }
        let mut chat = Map::new();
        chat.insert("role".into(), json!("assistant"));
        let content =
            if segment.texts.is_empty() { Value::Null } else { texts_value(&segment.texts) };
        chat.insert("content".into(), content);
        if !segment.calls.is_empty() {
            let calls = segment.calls.iter().map(|(id, name, input, _)| {
                json!({
                    "id": id,
                    "type": "function",
                    "function": { "name": name, "arguments": input.to_string() },
                })
            });
            chat.insert("tool_calls".into(), Value::Array(calls.collect()));
        }
        out.push(Value::Object(chat));
        let wanted: HashSet<(&str, bool)> =
            segment.calls.iter().map(|(id, _, _, hosted)| (*id, *hosted)).collect();
        let mut answered = HashSet::new();
        for result in
            results.iter_mut().filter(|r| !r.emitted && wanted.contains(&(r.call_id, r.hosted)))
        {
            result.emitted = true;
            answered.insert(result.call_id);
            out.push(json!({
                "role": "tool",
                "tool_call_id": result.call_id,
                "content": with_stand_ins(
                    tool_result_content(result.output, result.is_error),
                    result.attachments,
                ),
            }));
        }
        if let Some((call_id, ..)) = segment.calls.iter().find(|(id, ..)| !answered.contains(id)) {
            return Err(ChatMappingError::UnansweredToolCall {
                index,
                call_id: (*call_id).to_owned(),
            });
        }
    }
    // A result left over answers no call of this message.
    if let Some(result) = results.iter().find(|r| !r.emitted) {
        let call_id = result.call_id.to_owned();
        return Err(ChatMappingError::OrphanToolResult { index: result.index, call_id });
    }
    Ok(())
}

/// Content of a system or user message: every part must be text.
fn text_content(index: usize, message: &Message) -> Result<Value, ChatMappingError> {
    let mut texts = Vec::with_capacity(message.parts.len());
    for part in &message.parts {
        match part {
            Part::Text { text } => texts.push(text.as_str()),
            other => return Err(unsupported(index, message.role, other)),
        }
    }
    Ok(texts_value(&texts))
}

/// A user message with attachments: an array of `text`, `image_url` (a data URL or the image's
/// URL, with its `detail`) and `file` (`file_data` as a data URL, with `filename`) parts. A file
/// known only by URL cannot be sent: chat file parts need the bytes.
fn user_content(index: usize, message: &Message) -> Result<Value, ChatMappingError> {
    let mut parts = Vec::with_capacity(message.parts.len());
    for part in &message.parts {
        let value = match part {
            Part::Text { text } => json!({ "type": "text", "text": text }),
            Part::Attachment { attachment } if attachment.is_archived() => {
                json!({ "type": "text", "text": attachment.stand_in("") })
            }
            Part::Attachment { attachment } if attachment.is_image() => {
                let url = attachment.data_url().or_else(|| attachment.url.clone());
                let mut image = json!({ "url": url });
                if let Some(detail) = &attachment.detail {
                    image["detail"] = json!(detail);
                }
                json!({ "type": "image_url", "image_url": image })
            }
            Part::Attachment { attachment } => {
                let Some(data_url) = attachment.data_url() else {
                    return Err(ChatMappingError::AttachmentNeedsBytes {
                        index,
                        media_type: attachment.media_type.clone(),
                    });
                };
                let mut file = json!({ "file_data": data_url });
                if let Some(name) = &attachment.name {
                    file["filename"] = json!(name);
                }
                json!({ "type": "file", "file": file })
            }
            other => return Err(unsupported(index, message.role, other)),
        };
        parts.push(value);
    }
    Ok(Value::Array(parts))
}

/// `content` followed by the stand-in of each attachment, one per line.
fn with_stand_ins(mut content: String, attachments: &[Attachment]) -> String {
    for attachment in attachments {
        content.push('\n');
        content.push_str(&attachment.stand_in(""));
    }
    content
}

/// One text → a string (none → `""`); several → an array of text parts.
fn texts_value(texts: &[&str]) -> Value {
    match texts {
        [] => json!(""),
        [one] => json!(one),
        many => {
            Value::Array(many.iter().map(|text| json!({ "type": "text", "text": text })).collect())
        }
    }
}

fn unsupported(index: usize, role: Role, part: &Part) -> ChatMappingError {
    ChatMappingError::UnsupportedPart { index, role: role_name(role), part: part_kind(part) }
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

fn part_kind(part: &Part) -> &'static str {
    match part {
        Part::Text { .. } => "text",
        Part::Reasoning { .. } => "reasoning",
        Part::ToolCall { hosted: false, .. } => "tool-call",
        Part::ToolCall { hosted: true, .. } => "hosted-tool-call",
        Part::ToolResult { hosted: false, .. } => "tool-result",
        Part::ToolResult { hosted: true, .. } => "hosted-tool-result",
        Part::ProviderState { .. } => "provider-state",
        Part::Attachment { .. } => "attachment",
    }
}
