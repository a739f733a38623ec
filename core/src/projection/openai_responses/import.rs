//! Importing an OpenAI Responses API `input` (or a request body) as [`RuntimeEvent`]s.
//!
//! Accepted input: an array of input items, or an object with an `input` array (a request
//! body; `instructions`, when a string, becomes a leading `system_note`; other fields such as
//! `model` or `tools` are not history and are ignored). Ids follow [`ImportContext`] exactly as
//! the chat import: one turn per user message, one event per part, and one response id per run
//! of consecutive model items (reasoning, assistant messages, function calls), the way one
//! response's `output` lists them.
//!
//! Mapping: `message` items (the `type` may be omitted, as in the API's easy input form) of role
//! `system` / `developer` → `system_note`; `user` → `user_text`, its `input_image` (`image_url`:
//! a data or `http(s)` URL; `detail` kept) and `input_file` (`file_data` data URL or base64 with
//! `filename`, or `file_url`) parts → attachments of the text before them; `assistant`
//! `output_text` parts → `assistant_text`. `reasoning` → `reasoning` with its summary texts
//! and `providerData: {encrypted_content}` (what `store: false` replay needs);
//! `function_call` → `tool_call` (`arguments` parsed as JSON); `function_call_output` →
//! `tool_result` (a string, or `input_text` / `input_image` / `input_file` parts: texts joined,
//! the rest attachments; an output starting with [`TOOL_ERROR_PREFIX`] sets `isError`). File
//! ids, refusals, hosted tool items and unknown item types are typed errors, as are broken call
//! pairings (a reuse of an id whose call is open, a result for no open call): nothing is
//! dropped silently.

use serde_json::{Map, Value, json};

use crate::attachment::{Attachment, AttachmentError};
use crate::event::{EventContent, RuntimeEvent};
use crate::projection::import_state::ImportState;
use crate::projection::openai_chat::{ImportContext, TOOL_ERROR_PREFIX};

/// Why a Responses input could not be imported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResponsesImportError {
    /// A value does not have the expected shape.
    #[error("{path}: expected {expected}")]
    Shape {
        /// JSON path of the value.
        path: String,
        /// What was expected.
        expected: &'static str,
    },
    /// An item or part the event model cannot hold (file ids, refusals, hosted tool items).
    #[error("{path}: `{kind}` cannot be imported into the event log")]
    Unsupported {
        /// JSON path of the item or part.
        path: String,
        /// Its type.
        kind: String,
    },
    /// An image or file that cannot be accepted.
    #[error("{path}: {source}")]
    Attachment {
        /// JSON path of the part.
        path: String,
        /// What is wrong with it.
        source: AttachmentError,
    },
    /// A function call reuses the id of an earlier call that is still open.
    #[error("input[{index}]: call id `{call_id}` is reused while its earlier call is open")]
    DuplicateCallId {
        /// Item index.
        index: usize,
        /// The call id.
        call_id: String,
    },
    /// A function call output answers no open call (or one already answered).
    #[error("input[{index}]: output for unknown or answered call `{call_id}`")]
    UnknownCallId {
        /// Item index.
        index: usize,
        /// The call id.
        call_id: String,
    },
}

impl ResponsesImportError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Shape { .. } => "responses_import_invalid_shape",
            Self::Unsupported { .. } => "responses_import_unsupported",
            Self::Attachment { source, .. } => source.code(),
            Self::DuplicateCallId { .. } => "responses_import_duplicate_call_id",
            Self::UnknownCallId { .. } => "responses_import_unknown_call_id",
        }
    }
}

type Result<T> = std::result::Result<T, ResponsesImportError>;

fn shape(path: impl Into<String>, expected: &'static str) -> ResponsesImportError {
    ResponsesImportError::Shape { path: path.into(), expected }
}

fn unsupported(path: impl Into<String>, kind: &str) -> ResponsesImportError {
    ResponsesImportError::Unsupported { path: path.into(), kind: kind.into() }
}

/// Imports a Responses `input` (see the module docs).
///
/// ```
/// use contextfold_core::projection::ImportContext;
/// use contextfold_core::projection::import_openai_responses;
/// let input = serde_json::json!([{ "role": "user", "content": "hi" }]);
/// let events = import_openai_responses(&input, &ImportContext::new("s")).unwrap();
/// assert_eq!(events[0].content, contextfold_core::EventContent::user_text("hi"));
/// ```
pub fn import_openai_responses(input: &Value, ids: &ImportContext) -> Result<Vec<RuntimeEvent>> {
    let (items, instructions) = match input {
        Value::Array(items) => (items.as_slice(), None),
        Value::Object(body) => match body.get("input") {
            Some(Value::Array(items)) => (items.as_slice(), body.get("instructions")),
            Some(Value::String(text)) => {
                let mut state = ImportState::<String>::new(ids);
                state.open_user_turn();
                state.emit(EventContent::user_text(text.clone()), None);
                return Ok(state.into_events());
            }
            _ => return Err(shape("input", "an array of input items or a string")),
        },
        _ => return Err(shape("$", "an array of input items or an object with `input`")),
    };
    let mut importer = Importer::new(ids);
    if let Some(Value::String(text)) = instructions {
        importer.state.emit(EventContent::SystemNote { text: text.clone() }, None);
    }
    for (index, item) in items.iter().enumerate() {
        importer.item(index, item)?;
    }
    Ok(importer.into_events())
}

/// Reads Responses items one at a time, keeping the numbering, the turns, the call pairing and
/// the run of model items in progress between them. [`import_openai_responses`] feeds it an
/// `input` array; the Codex rollout reader feeds it the items of a rollout, one line at a time,
/// and adds the items only a rollout holds through [`Importer::model_event`] and
/// [`Importer::other_event`].
pub(crate) struct Importer<'a> {
    /// The tool name of every call, by call id.
    state: ImportState<'a, String>,
    /// The response id of the run of model items in progress.
    response: Option<String>,
}

impl<'a> Importer<'a> {
    /// Nothing read yet; ids from `ids`.
    pub(crate) fn new(ids: &'a ImportContext) -> Self {
        Self { state: ImportState::new(ids), response: None }
    }

    /// The response id of a model item: the open run's, or a new one.
    fn response_id(&mut self) -> String {
        let next = self.state.next_response_id();
        self.response.get_or_insert(next).clone()
    }

    /// The run of model items in progress ends (the next model item starts a new response).
    pub(crate) fn end_response(&mut self) {
        self.response = None;
    }

    /// Appends a model event (part of the response in progress, or of a new one).
    pub(crate) fn model_event(&mut self, content: EventContent) {
        let response = self.response_id();
        self.state.emit(content, Some(response));
    }

    /// Appends an event no model response produced; it ends the run of model items.
    pub(crate) fn other_event(&mut self, content: EventContent) {
        self.end_response();
        self.state.emit(content, None);
    }

    /// Records a call of `tool_name`; `false` when its id is reused while its call is open.
    pub(crate) fn open_call(&mut self, call_id: &str, tool_name: &str) -> bool {
        self.state.call(call_id, tool_name.to_owned()).is_ok()
    }

    /// Records the result answering `call_id` and returns its call's tool name; `None` when no
    /// open call has that id.
    pub(crate) fn answer_call(&mut self, call_id: &str) -> Option<String> {
        self.state.answer(call_id, |_| true).ok().cloned()
    }

    /// The events read so far.
    pub(crate) fn events(&self) -> &[RuntimeEvent] {
        self.state.events()
    }

    /// The events read.
    pub(crate) fn into_events(self) -> Vec<RuntimeEvent> {
        self.state.into_events()
    }

    /// Reads one input item; `index` names it in errors (`input[<index>]`).
    pub(crate) fn item(&mut self, index: usize, value: &Value) -> Result<()> {
        let path = format!("input[{index}]");
        let item = value.as_object().ok_or_else(|| shape(&path, "an input item object"))?;
        let kind = match item.get("type") {
            None if item.contains_key("role") => "message",
            Some(Value::String(kind)) => kind.as_str(),
            _ => return Err(shape(format!("{path}.type"), "a string")),
        };
        let role = item.get("role").and_then(Value::as_str);
        let model_item = match kind {
            "message" => role == Some("assistant"),
            "reasoning" | "function_call" => true,
            _ => false,
        };
        if !model_item {
            self.response = None;
        }
        match (kind, role) {
            ("message", Some("user")) => self.user(&path, item.get("content")),
            ("message", Some("system" | "developer")) => {
                let text = texts(&path, item.get("content"), "input_text")?;
                self.state.emit(EventContent::SystemNote { text }, None);
                Ok(())
            }
            ("message", Some("assistant")) => {
                let text = texts(&path, item.get("content"), "output_text")?;
                let response = self.response_id();
                self.state.emit(EventContent::AssistantText { text }, Some(response));
                Ok(())
            }
            ("message", _) => {
                Err(shape(format!("{path}.role"), "user, system, developer or assistant"))
            }
            ("reasoning", _) => {
                let summary = item.get("summary").and_then(Value::as_array);
                let text: Vec<&str> = summary
                    .into_iter()
                    .flatten()
                    .filter_map(|part| part.get("text").and_then(Value::as_str))
                    .collect();
                let provider_data = item
                    .get("encrypted_content")
                    .filter(|v| v.is_string())
                    .map(|content| json!({ "encrypted_content": content }));
                let content = EventContent::Reasoning { text: text.join("\n"), provider_data };
                let response = self.response_id();
                self.state.emit(content, Some(response));
                Ok(())
            }
            ("function_call", _) => self.function_call(index, &path, item),
            ("function_call_output", _) => self.function_output(index, &path, item),
            (other, _) => Err(unsupported(path, other)),
        }
    }

    fn user(&mut self, path: &str, content: Option<&Value>) -> Result<()> {
        self.state.open_user_turn();
        let parts = match content {
            Some(Value::String(text)) => {
                self.state.emit(EventContent::user_text(text.clone()), None);
                return Ok(());
            }
            Some(Value::Array(parts)) => parts,
            _ => return Err(shape(format!("{path}.content"), "a string or an array of parts")),
        };
        let mut pending: Option<(String, Vec<Attachment>)> = None;
        for (position, part) in parts.iter().enumerate() {
            let part_path = format!("{path}.content[{position}]");
            match part.get("type").and_then(Value::as_str) {
                Some("input_text") => {
                    if let Some((text, attachments)) = pending.take() {
                        self.state.emit(EventContent::UserText { text, attachments }, None);
                    }
                    let text = part.get("text").and_then(Value::as_str);
                    let text =
                        text.ok_or_else(|| shape(format!("{part_path}.text"), "a string"))?;
                    pending = Some((text.to_owned(), Vec::new()));
                }
                Some(_) => {
                    let attachment = input_attachment(part, &part_path)?;
                    pending.get_or_insert_with(Default::default).1.push(attachment);
                }
                None => return Err(shape(format!("{part_path}.type"), "a string")),
            }
        }
        if let Some((text, attachments)) = pending {
            self.state.emit(EventContent::UserText { text, attachments }, None);
        }
        Ok(())
    }

    fn function_call(&mut self, index: usize, path: &str, item: &Map<String, Value>) -> Result<()> {
        let field = |key: &str| {
            item.get(key)
                .and_then(Value::as_str)
                .ok_or_else(|| shape(format!("{path}.{key}"), "a string"))
        };
        let (call_id, tool_name) = (field("call_id")?.to_owned(), field("name")?.to_owned());
        let arguments = field("arguments")?;
        let input = crate::json_read::text::value_from_text(arguments)
            .map_err(|_| shape(format!("{path}.arguments"), "a JSON text"))?;
        if self.state.call(&call_id, tool_name.clone()).is_err() {
            return Err(ResponsesImportError::DuplicateCallId { index, call_id });
        }
        let response = self.response_id();
        self.state.emit(EventContent::ToolCall { call_id, tool_name, input }, Some(response));
        Ok(())
    }

    fn function_output(
        &mut self,
        index: usize,
        path: &str,
        item: &Map<String, Value>,
    ) -> Result<()> {
        let call_id = item.get("call_id").and_then(Value::as_str);
        let call_id = call_id.ok_or_else(|| shape(format!("{path}.call_id"), "a string"))?;
        let tool_name = match self.state.answer(call_id, |_| true) {
            Ok(name) => name.clone(),
            Err(_) => {
                return Err(ResponsesImportError::UnknownCallId { index, call_id: call_id.into() });
            }
        };
        let (text, attachments) = match item.get("output") {
            Some(Value::String(text)) => (text.clone(), Vec::new()),
            Some(Value::Array(parts)) => {
                let (mut texts, mut attachments) = (Vec::new(), Vec::new());
                for (position, part) in parts.iter().enumerate() {
                    let part_path = format!("{path}.output[{position}]");
                    match part.get("type").and_then(Value::as_str) {
                        Some("input_text") => {
                            texts.push(part.get("text").and_then(Value::as_str).unwrap_or_default())
                        }
                        _ => attachments.push(input_attachment(part, &part_path)?),
                    }
                }
                (texts.join("\n"), attachments)
            }
            _ => return Err(shape(format!("{path}.output"), "a string or an array of parts")),
        };
        let (output, is_error) = match text.strip_prefix(TOOL_ERROR_PREFIX) {
            Some(rest) => (rest.to_owned(), true),
            None => (text, false),
        };
        let call_id = call_id.to_owned();
        let output = Value::String(output);
        let content =
            EventContent::ToolResult { call_id, tool_name, output, is_error, attachments };
        self.state.emit(content, None);
        Ok(())
    }
}

/// The joined texts of a message's `content`: a string, or parts of type `kind`.
fn texts(path: &str, content: Option<&Value>, kind: &str) -> Result<String> {
    match content {
        Some(Value::String(text)) => Ok(text.clone()),
        Some(Value::Array(parts)) => {
            let mut out = Vec::with_capacity(parts.len());
            for (position, part) in parts.iter().enumerate() {
                let part_path = format!("{path}.content[{position}]");
                match part.get("type").and_then(Value::as_str) {
                    Some(found) if found == kind || found == "input_text" || found == "text" => {
                        let text = part.get("text").and_then(Value::as_str);
                        out.push(
                            text.ok_or_else(|| shape(format!("{part_path}.text"), "a string"))?,
                        );
                    }
                    Some(other) => return Err(unsupported(part_path, other)),
                    None => return Err(shape(format!("{part_path}.type"), "a string")),
                }
            }
            Ok(out.join(""))
        }
        _ => Err(shape(format!("{path}.content"), "a string or an array of text parts")),
    }
}

/// The attachment of an `input_image` or `input_file` part.
fn input_attachment(part: &Value, path: &str) -> Result<Attachment> {
    let field = |key: &str| part.get(key).and_then(Value::as_str);
    let bad = |source| ResponsesImportError::Attachment { path: path.to_owned(), source };
    if field("file_id").is_some() {
        return Err(unsupported(path, "a file given by `file_id`"));
    }
    match field("type") {
        Some("input_image") => {
            let url = field("image_url")
                .ok_or_else(|| shape(format!("{path}.image_url"), "a data or http(s) URL"))?;
            let detail = field("detail").map(str::to_owned);
            let image = Attachment::from_url(url, None, None).and_then(Attachment::into_image);
            Ok(image.map_err(bad)?.with_detail(detail))
        }
        Some("input_file") => {
            let name = field("filename").map(str::to_owned);
            let result = match (field("file_data"), field("file_url")) {
                (Some(data), _) if data.starts_with("data:") => {
                    Attachment::from_url(data, None, name)
                }
                (Some(data), _) => Attachment::from_base64(None, data, name),
                (None, Some(url)) => Attachment::from_url(url, None, name),
                (None, None) => return Err(shape(path, "`file_data` or `file_url`")),
            };
            result.map_err(bad)
        }
        Some(other) => Err(unsupported(path, other)),
        None => Err(shape(format!("{path}.type"), "a string")),
    }
}
