//! Importing a Chat Completions conversation as [`RuntimeEvent`]s.
//!
//! Accepted input: a JSON array of chat messages, or an object with a `messages` array (a whole
//! request body; its other fields such as `model` or `tools` are not history and are ignored).
//!
//! Events get deterministic identity from [`ImportContext`], never from a clock or randomness:
//!
//! - `seq` counts up from `first_seq`, one per event; the event id is `<event_id_prefix><seq>`;
//! - one turn per user message: turn `n` (counting from `first_turn`) has turn id
//!   `<turn_id_prefix><n>` and run id `<run_id_prefix><n>`. Messages before the first user
//!   message belong to the first turn, and a user message opens a new turn only if the current
//!   one already holds a user message;
//! - all events of one assistant message (its text, then its tool calls) share the response id
//!   `<response_id_prefix><seq of its first event>`, so they project back into one message.
//!
//! Mapping: `system` and `developer` → `system_note` (a developer message comes back as
//! `system`); `user` → `user_text`; `assistant` → `assistant_text` (when content is not null)
//! followed by one `tool_call` per entry of `tool_calls` (`arguments` parsed as JSON); `tool` →
//! `tool_result` named after its call, with `isError` when the content starts with
//! [`TOOL_ERROR_PREFIX`] (the prefix is removed). Content may be a string or an array of text
//! parts, whose texts are concatenated. Whatever chat carries that the event model cannot hold
//! (image/audio/file parts, refusals, participant names, non-function tool calls), unknown
//! fields, unknown roles and malformed shapes are typed [`ChatImportError`]s: nothing is dropped
//! silently.
//!
//! Tolerated extra fields (accepted and ignored, because they are bookkeeping of the client
//! library that wrote the log, not conversation content, and are never sent back to a
//! provider): `provider_specific_fields` on any message (LiteLLM adds it to every message it
//! returns, so logs of agents built on LiteLLM such as mini-swe-agent carry it, usually `null`)
//! and `index` on a `tool_calls[]` entry (the call's position in a streamed response, left over
//! when deltas are merged). Every other field outside the chat format is still
//! `chat_import_unknown_field`.
//!
//! Tool call ids: a call may reuse the id of an earlier call that was already answered (the
//! tool message came before the new call); SWE-agent logs do. The event keeps the original id
//! and the next tool message with that id answers the new call; the projection renames reused
//! ids in the requests it builds (`<id>_r2`, `<id>_r3`, …, diagnostic `tool_call_id_renamed`). Reusing the
//! id of a call that is still unanswered is `chat_import_duplicate_tool_call_id`, and a tool
//! message answering no open call is `chat_import_unknown_tool_call_id` (or
//! `chat_import_duplicate_tool_result` when its call was already answered); both name the
//! message index.

use serde_json::{Map, Value};

use super::TOOL_ERROR_PREFIX;
pub use super::chat_shape::ChatImportError;
use super::chat_shape::{
    check_message_fields, parse_tool_call, require_absent, shape, text_content, unsupported,
    user_content,
};
use crate::event::{EventContent, RuntimeEvent};
use crate::projection::import_state::{ImportState, PairingError};

/// Where imported events get their ids and sequence numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportContext {
    /// Session id of every event.
    pub session_id: String,
    /// Run id of turn `n` is `<run_id_prefix><n>`.
    pub run_id_prefix: String,
    /// Turn id of turn `n` is `<turn_id_prefix><n>`.
    pub turn_id_prefix: String,
    /// Event id is `<event_id_prefix><seq>`.
    pub event_id_prefix: String,
    /// Response id of an assistant message is `<response_id_prefix><seq of its first event>`.
    pub response_id_prefix: String,
    /// `seq` of the first event.
    pub first_seq: u64,
    /// Number of the first turn.
    pub first_turn: u64,
}

impl ImportContext {
    /// Defaults: prefixes `run-`, `turn-`, `evt-`, `resp-`; first seq 1; first turn 0.
    pub fn new(session_id: impl Into<String>) -> Self {
        Self {
            session_id: session_id.into(),
            run_id_prefix: "run-".into(),
            turn_id_prefix: "turn-".into(),
            event_id_prefix: "evt-".into(),
            response_id_prefix: "resp-".into(),
            first_seq: 1,
            first_turn: 0,
        }
    }
}

/// A conversation's messages and, when it came as a request object, that object.
pub(crate) type MessageArray<'v> = (&'v [Value], Option<&'v serde_json::Map<String, Value>>);

/// The message array of an imported conversation: `value` itself when it is an array, or the
/// array in its `messages` field (with that object) when it is a request object. The error is
/// the JSON path where the array is missing: `$` or `messages`.
pub(crate) fn message_array(value: &Value) -> Result<MessageArray<'_>, &'static str> {
    match value {
        Value::Array(list) => Ok((list, None)),
        Value::Object(body) => match body.get("messages") {
            Some(Value::Array(list)) => Ok((list, Some(body))),
            _ => Err("messages"),
        },
        _ => Err("$"),
    }
}

impl ImportContext {
    /// The imported event with sequence number `seq` in turn number `turn`.
    pub fn event(
        &self,
        seq: u64,
        turn: u64,
        content: EventContent,
        response_id: Option<String>,
    ) -> RuntimeEvent {
        RuntimeEvent {
            response_id,
            ..RuntimeEvent::new(
                self.session_id.clone(),
                format!("{}{turn}", self.run_id_prefix),
                format!("{}{turn}", self.turn_id_prefix),
                format!("{}{seq}", self.event_id_prefix),
                seq,
                content,
            )
        }
    }
}

/// Imports a Chat Completions conversation (see the module docs for the rules).
///
/// ```
/// use contextfold_core::projection::{ImportContext, import_openai_chat};
/// let chat = serde_json::json!([{"role": "user", "content": "hi"}]);
/// let events = import_openai_chat(&chat, &ImportContext::new("s")).unwrap();
/// assert_eq!((events[0].runtime_event_id.as_str(), events[0].turn_id.as_str()), ("evt-1", "turn-0"));
/// ```
pub fn import_openai_chat(
    messages: &Value,
    ids: &ImportContext,
) -> Result<Vec<RuntimeEvent>, ChatImportError> {
    let (list, _) = message_array(messages).map_err(|path| match path {
        "messages" => shape(path, "an array of chat messages"),
        _ => shape(path, "an array of chat messages or an object with `messages`"),
    })?;
    let mut importer = Importer { state: ImportState::new(ids) };
    for (index, message) in list.iter().enumerate() {
        importer.message(index, message)?;
    }
    Ok(importer.state.into_events())
}

struct Importer<'a> {
    /// Keeps the tool name of every call, by call id.
    state: ImportState<'a, String>,
}

impl Importer<'_> {
    fn emit(&mut self, content: EventContent, response_id: Option<String>) {
        self.state.emit(content, response_id);
    }

    fn message(&mut self, index: usize, value: &Value) -> Result<(), ChatImportError> {
        let path = format!("messages[{index}]");
        let object = value.as_object().ok_or_else(|| shape(&path, "a message object"))?;
        let role = object
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| shape(&format!("{path}.role"), "a string"))?;
        match role {
            "system" | "developer" => {
                check_message_fields(&path, object, &["role", "content", "name"])?;
                require_absent(&path, object, "name", "a participant name")?;
                let text = text_content(&format!("{path}.content"), object.get("content"))?;
                self.emit(EventContent::SystemNote { text }, None);
            }
            "user" => {
                check_message_fields(&path, object, &["role", "content", "name"])?;
                require_absent(&path, object, "name", "a participant name")?;
                let (text, attachments) =
                    user_content(&format!("{path}.content"), object.get("content"))?;
                self.state.open_user_turn();
                self.emit(EventContent::UserText { text, attachments }, None);
            }
            "assistant" => self.assistant(index, &path, object)?,
            "tool" => self.tool(index, &path, object)?,
            other => return Err(ChatImportError::UnknownRole { index, role: other.to_owned() }),
        }
        Ok(())
    }

    fn assistant(
        &mut self,
        index: usize,
        path: &str,
        object: &Map<String, Value>,
    ) -> Result<(), ChatImportError> {
        let allowed = [
            "role",
            "content",
            "tool_calls",
            "name",
            "refusal",
            "function_call",
            "audio",
            "annotations",
        ];
        check_message_fields(path, object, &allowed)?;
        require_absent(path, object, "name", "a participant name")?;
        require_absent(path, object, "refusal", "a refusal")?;
        require_absent(path, object, "function_call", "a legacy function_call")?;
        require_absent(path, object, "audio", "audio output")?;
        if object
            .get("annotations")
            .is_some_and(|a| !(a.is_null() || a.as_array().is_some_and(Vec::is_empty)))
        {
            return Err(unsupported(&format!("{path}.annotations"), "annotations"));
        }
        let content = match object.get("content") {
            None | Some(Value::Null) => None,
            Some(value) => Some(text_content(&format!("{path}.content"), Some(value))?),
        };
        let calls = match object.get("tool_calls") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(calls)) => {
                let mut parsed = Vec::with_capacity(calls.len());
                for (position, call) in calls.iter().enumerate() {
                    parsed.push(parse_tool_call(&format!("{path}.tool_calls[{position}]"), call)?);
                }
                parsed
            }
            Some(_) => return Err(shape(&format!("{path}.tool_calls"), "an array of tool calls")),
        };
        if content.is_none() && calls.is_empty() {
            return Err(ChatImportError::EmptyAssistantMessage { index });
        }
        let response_id = self.state.next_response_id();
        if let Some(text) = content {
            self.emit(EventContent::AssistantText { text }, Some(response_id.clone()));
        }
        for (call_id, tool_name, input) in calls {
            if self.state.call(&call_id, tool_name.clone()).is_err() {
                return Err(ChatImportError::DuplicateToolCallId { index, call_id });
            }
            self.emit(
                EventContent::ToolCall { call_id, tool_name, input },
                Some(response_id.clone()),
            );
        }
        Ok(())
    }

    fn tool(
        &mut self,
        index: usize,
        path: &str,
        object: &Map<String, Value>,
    ) -> Result<(), ChatImportError> {
        check_message_fields(path, object, &["role", "content", "tool_call_id"])?;
        let call_id = object
            .get("tool_call_id")
            .and_then(Value::as_str)
            .ok_or_else(|| shape(&format!("{path}.tool_call_id"), "a string"))?
            .to_owned();
        let text = text_content(&format!("{path}.content"), object.get("content"))?;
        let tool_name = match self.state.answer(&call_id, |_| true) {
            Ok(tool_name) => tool_name.clone(),
            Err(PairingError::DuplicateResult) => {
                return Err(ChatImportError::DuplicateToolResult { index, call_id });
            }
            Err(_) => return Err(ChatImportError::UnknownToolCallId { index, call_id }),
        };
        let (output, is_error) = match text.strip_prefix(TOOL_ERROR_PREFIX) {
            Some(rest) => (rest.to_owned(), true),
            None => (text, false),
        };
        let content = EventContent::ToolResult {
            call_id,
            tool_name,
            output: Value::String(output),
            is_error,
            attachments: Vec::new(),
        };
        self.emit(content, None);
        Ok(())
    }
}
