//! Reading the JSON shapes of chat messages (content, tool calls, known fields) and the typed
//! [`ChatImportError`] every shape problem becomes.

use serde_json::{Map, Value};

use crate::attachment::{Attachment, AttachmentError};

/// Why a chat conversation could not be imported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChatImportError {
    /// A value does not have the shape chat defines.
    #[error("{path}: expected {expected}")]
    InvalidShape {
        /// JSON path of the value, e.g. `messages[2].content`.
        path: String,
        /// What was expected there.
        expected: &'static str,
    },
    /// A role chat does not define (or a retired one such as `function`).
    #[error("messages[{index}]: unknown role `{role}`")]
    UnknownRole {
        /// Index of the message.
        index: usize,
        /// The role.
        role: String,
    },
    /// A field this importer does not know; it would otherwise be dropped.
    #[error("{path}: unknown field `{field}`")]
    UnknownField {
        /// JSON path of the object.
        path: String,
        /// The field.
        field: String,
    },
    /// Something chat carries that the event model cannot hold without loss.
    #[error("{path}: {what} cannot be imported without loss")]
    Unsupported {
        /// JSON path of the value.
        path: String,
        /// What it is.
        what: String,
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
    /// Tool-call `arguments` is not a JSON text.
    #[error("{path}: arguments are not valid JSON: {detail}")]
    InvalidArguments {
        /// JSON path of the arguments.
        path: String,
        /// The parser's message.
        detail: String,
    },
    /// A tool message answers a call id no earlier assistant message made.
    #[error("messages[{index}]: tool_call_id `{call_id}` answers no earlier tool call")]
    UnknownToolCallId {
        /// Index of the tool message.
        index: usize,
        /// The call id.
        call_id: String,
    },
    /// A tool call reuses the id of an earlier call that is still open (no tool message
    /// answered it yet). Reusing the id of an answered call is accepted.
    #[error("messages[{index}]: tool call id `{call_id}` is reused while its earlier call is open")]
    DuplicateToolCallId {
        /// Index of the assistant message.
        index: usize,
        /// The call id.
        call_id: String,
    },
    /// Two tool messages answer one call.
    #[error("messages[{index}]: tool call `{call_id}` is answered twice")]
    DuplicateToolResult {
        /// Index of the second tool message.
        index: usize,
        /// The call id.
        call_id: String,
    },
    /// An assistant message with neither content nor tool calls.
    #[error("messages[{index}]: assistant message has neither content nor tool calls")]
    EmptyAssistantMessage {
        /// Index of the message.
        index: usize,
    },
}

impl ChatImportError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            ChatImportError::InvalidShape { .. } => "chat_import_invalid_shape",
            ChatImportError::UnknownRole { .. } => "chat_import_unknown_role",
            ChatImportError::UnknownField { .. } => "chat_import_unknown_field",
            ChatImportError::Unsupported { .. } => "chat_import_unsupported",
            ChatImportError::Attachment { source, .. } => source.code(),
            ChatImportError::InvalidArguments { .. } => "chat_import_invalid_arguments",
            ChatImportError::UnknownToolCallId { .. } => "chat_import_unknown_tool_call_id",
            ChatImportError::DuplicateToolCallId { .. } => "chat_import_duplicate_tool_call_id",
            ChatImportError::DuplicateToolResult { .. } => "chat_import_duplicate_tool_result",
            ChatImportError::EmptyAssistantMessage { .. } => "chat_import_empty_assistant_message",
        }
    }
}

/// `(id, name, parsed arguments)` of one `tool_calls` entry.
pub(super) fn parse_tool_call(
    path: &str,
    call: &Value,
) -> Result<(String, String, Value), ChatImportError> {
    let object = call.as_object().ok_or_else(|| shape(path, "a tool call object"))?;
    check_fields(path, object, &["id", "type", "function", TOOL_CALL_INDEX_FIELD])?;
    match object.get("type") {
        None => {}
        Some(Value::String(kind)) if kind == "function" => {}
        Some(Value::String(kind)) => {
            return Err(unsupported(path, &format!("a `{kind}` tool call")));
        }
        Some(_) => return Err(shape(&format!("{path}.type"), "a string")),
    }
    let id = object
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| shape(&format!("{path}.id"), "a string"))?;
    let function_path = format!("{path}.function");
    let function = object
        .get("function")
        .and_then(Value::as_object)
        .ok_or_else(|| shape(&function_path, "a function object"))?;
    check_fields(&function_path, function, &["name", "arguments"])?;
    let name = function
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| shape(&format!("{function_path}.name"), "a string"))?;
    let arguments_path = format!("{function_path}.arguments");
    let arguments = function
        .get("arguments")
        .and_then(Value::as_str)
        .ok_or_else(|| shape(&arguments_path, "a JSON text"))?;
    let input = crate::json_read::text::value_from_text(arguments).map_err(|e| {
        ChatImportError::InvalidArguments { path: arguments_path, detail: e.to_string() }
    })?;
    Ok((id.to_owned(), name.to_owned(), input))
}

/// A string, or an array of `{"type": "text", "text"}` parts (texts concatenated).
pub(super) fn text_content(path: &str, content: Option<&Value>) -> Result<String, ChatImportError> {
    match content {
        Some(Value::String(text)) => Ok(text.clone()),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for (position, part) in parts.iter().enumerate() {
                let part_path = format!("{path}[{position}]");
                let object =
                    part.as_object().ok_or_else(|| shape(&part_path, "a content part object"))?;
                match object.get("type").and_then(Value::as_str) {
                    Some("text") => {}
                    Some(kind) => {
                        return Err(unsupported(&part_path, &format!("a `{kind}` content part")));
                    }
                    None => return Err(shape(&format!("{part_path}.type"), "a string")),
                }
                check_fields(&part_path, object, &["type", "text"])?;
                let part_text = object
                    .get("text")
                    .and_then(Value::as_str)
                    .ok_or_else(|| shape(&format!("{part_path}.text"), "a string"))?;
                text.push_str(part_text);
            }
            Ok(text)
        }
        _ => Err(shape(path, "a string or an array of text parts")),
    }
}

/// The text and attachments of a user message's `content`: a string, or text parts (joined),
/// `image_url` parts (`url`: a data URL or an `http(s)` URL; `detail` kept) and `file` parts
/// (`file_data`: a data URL, with `filename`; a `file_id` names bytes elsewhere and is refused).
pub(super) fn user_content(
    path: &str,
    content: Option<&Value>,
) -> Result<(String, Vec<Attachment>), ChatImportError> {
    let Some(Value::Array(parts)) = content else {
        return text_content(path, content).map(|text| (text, Vec::new()));
    };
    let (mut text, mut attachments) = (String::new(), Vec::new());
    for (position, part) in parts.iter().enumerate() {
        let part_path = format!("{path}[{position}]");
        let object = part.as_object().ok_or_else(|| shape(&part_path, "a content part object"))?;
        let bad = |source| ChatImportError::Attachment { path: part_path.clone(), source };
        match object.get("type").and_then(Value::as_str) {
            Some("text") => {
                check_fields(&part_path, object, &["type", "text"])?;
                let part_text = object
                    .get("text")
                    .and_then(Value::as_str)
                    .ok_or_else(|| shape(&format!("{part_path}.text"), "a string"))?;
                text.push_str(part_text);
            }
            Some("image_url") => {
                check_fields(&part_path, object, &["type", "image_url"])?;
                let image = object.get("image_url").and_then(Value::as_object);
                let url = image.and_then(|i| i.get("url")).and_then(Value::as_str);
                let url =
                    url.ok_or_else(|| shape(&format!("{part_path}.image_url.url"), "a string"))?;
                let detail = image.and_then(|i| i.get("detail")).and_then(Value::as_str);
                let attachment =
                    Attachment::from_url(url, None, None).and_then(Attachment::into_image);
                attachments.push(attachment.map_err(bad)?.with_detail(detail.map(str::to_owned)));
            }
            Some("file") => {
                check_fields(&part_path, object, &["type", "file"])?;
                let file = object.get("file").and_then(Value::as_object);
                let field = |key: &str| file.and_then(|f| f.get(key)).and_then(Value::as_str);
                if field("file_id").is_some() {
                    return Err(unsupported(&part_path, "a file given by `file_id`"));
                }
                let data = field("file_data")
                    .ok_or_else(|| shape(&format!("{part_path}.file.file_data"), "a data URL"))?;
                let name = field("filename").map(str::to_owned);
                let attachment = if data.starts_with("data:") {
                    Attachment::from_url(data, None, name)
                } else {
                    Attachment::from_base64(None, data, name)
                };
                attachments.push(attachment.map_err(bad)?);
            }
            Some(kind) => return Err(unsupported(&part_path, &format!("a `{kind}` content part"))),
            None => return Err(shape(&format!("{part_path}.type"), "a string")),
        }
    }
    Ok((text, attachments))
}

/// Extra message field LiteLLM (and so agents built on it, e.g. mini-swe-agent) adds to every
/// message it hands back: provider-specific extras that are not part of the chat wire format
/// and are not sent back to the provider. Tolerated on every message and ignored.
pub(super) const PROVIDER_SPECIFIC_FIELDS: &str = "provider_specific_fields";

/// Extra `tool_calls[]` field: the call's position in a streamed response (a delta's `index`,
/// kept when the deltas are merged). The entry's place in the array already says it, so it is
/// tolerated and ignored.
pub(super) const TOOL_CALL_INDEX_FIELD: &str = "index";

/// Checks a message object's fields: `allowed`, plus the tolerated extra
/// [`PROVIDER_SPECIFIC_FIELDS`]; any other field is [`ChatImportError::UnknownField`].
pub(super) fn check_message_fields(
    path: &str,
    object: &Map<String, Value>,
    allowed: &[&str],
) -> Result<(), ChatImportError> {
    match object
        .keys()
        .find(|key| key.as_str() != PROVIDER_SPECIFIC_FIELDS && !allowed.contains(&key.as_str()))
    {
        Some(field) => {
            Err(ChatImportError::UnknownField { path: path.to_owned(), field: field.clone() })
        }
        None => Ok(()),
    }
}

/// Checks that `object` has no field outside `allowed` ([`ChatImportError::UnknownField`]).
pub(super) fn check_fields(
    path: &str,
    object: &Map<String, Value>,
    allowed: &[&str],
) -> Result<(), ChatImportError> {
    match object.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(field) => {
            Err(ChatImportError::UnknownField { path: path.to_owned(), field: field.clone() })
        }
        None => Ok(()),
    }
}

/// A field chat defines that the event model cannot carry: accepted only when absent or null.
pub(super) fn require_absent(
    path: &str,
    object: &Map<String, Value>,
    field: &str,
    what: &str,
) -> Result<(), ChatImportError> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(()),
        Some(_) => Err(unsupported(&format!("{path}.{field}"), what)),
    }
}

pub(super) fn shape(path: &str, expected: &'static str) -> ChatImportError {
    ChatImportError::InvalidShape { path: path.to_owned(), expected }
}

pub(super) fn unsupported(path: &str, what: &str) -> ChatImportError {
    ChatImportError::Unsupported { path: path.to_owned(), what: what.to_owned() }
}
