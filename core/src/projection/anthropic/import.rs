//! Importing an Anthropic Messages conversation as [`RuntimeEvent`]s.
//!
//! Accepted input: a request body `{system?, messages}` (other fields such as `model` or `tools`
//! are not history and are ignored) or a bare `messages` array. Ids follow [`ImportContext`]
//! exactly as for chat imports: one turn per user message that carries text, one response id per
//! assistant message.
//!
//! Mapping: `system` → `system_note`; user `text` → `user_text`; `tool_result` → `tool_result`
//! (its `content` as text, `is_error` kept); assistant `text` → `assistant_text`; `thinking` →
//! `reasoning` with `providerData: {signature}`; `redacted_thinking` → `reasoning` with empty
//! text and `providerData: {redactedData}`; `tool_use` → `tool_call`; `server_tool_use` →
//! `hosted_tool_call`; a `*_tool_result` block in an assistant message → `hosted_tool_result`.
//! `image` and `document` blocks (in user messages and inside `tool_result` content) become
//! [`Attachment`]s of the user text before them or of the result (sources `base64`, `url` and,
//! for documents, `text`). A `file` source, unknown block types, attachments that fail their
//! checks and malformed shapes are typed errors: nothing is dropped silently.
//!
//! A `tool_use` may reuse the id of an earlier tool use that was already answered: the event
//! keeps the original id, the next `tool_result` with that id answers the new one, and the
//! projection renames reused ids in the requests it builds (`<id>_r2`, `<id>_r3`, …, diagnostic
//! `tool_call_id_renamed`). Reuse while the earlier tool use is open
//! (`anthropic_import_duplicate_tool_use`) and a result for no open tool use
//! (`anthropic_import_unknown_tool_use`) are errors whose path names the message index
//! (`messages[i].content[j]`).

mod media;

use serde_json::{Value, json};

use crate::attachment::{Attachment, AttachmentError};
use crate::event::{EventContent, RuntimeEvent};
use crate::projection::import_state::{ImportState, PairingError};
use crate::projection::openai_chat::{ImportContext, message_array};
pub(crate) use media::{block_attachment, result_content};

/// Why an Anthropic conversation cannot be imported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnthropicImportError {
    /// A value has the wrong shape.
    #[error("{path}: expected {expected}")]
    Shape {
        /// JSON path of the value.
        path: String,
        /// What was expected.
        expected: &'static str,
    },
    /// An image or document that cannot be accepted (bad base64, a media type its bytes
    /// contradict, over the size limit, a URL scheme that is not allowed).
    #[error("{path}: {source}")]
    Attachment {
        /// JSON path of the block.
        path: String,
        /// What is wrong with it.
        source: AttachmentError,
    },
    /// A block the event model cannot hold (an unknown type, a `file` source).
    #[error("{path}: unsupported content block `{kind}`")]
    UnsupportedBlock {
        /// JSON path of the block.
        path: String,
        /// Its `type`.
        kind: String,
    },
    /// A tool result names no earlier tool call (of its kind: a `tool_result` answers a
    /// `tool_use`, a `*_tool_result` a `server_tool_use`).
    #[error("{path}: tool_result for unknown tool_use_id `{id}`")]
    UnknownToolUse {
        /// JSON path of the block.
        path: String,
        /// The id.
        id: String,
    },
    /// A tool use reuses the id of an earlier one that is still open (not answered yet).
    /// Reusing the id of an answered tool use is accepted.
    #[error("{path}: tool_use id `{id}` is reused while its earlier tool use is open")]
    DuplicateToolUse {
        /// JSON path of the block.
        path: String,
        /// The id.
        id: String,
    },
    /// A second result for one tool use.
    #[error("{path}: second result for tool_use_id `{id}`")]
    DuplicateToolResult {
        /// JSON path of the block.
        path: String,
        /// The id.
        id: String,
    },
}

impl AnthropicImportError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            AnthropicImportError::Shape { .. } => "anthropic_import_shape",
            AnthropicImportError::UnsupportedBlock { .. } => "anthropic_import_unsupported_block",
            AnthropicImportError::Attachment { source, .. } => source.code(),
            AnthropicImportError::UnknownToolUse { .. } => "anthropic_import_unknown_tool_use",
            AnthropicImportError::DuplicateToolUse { .. } => "anthropic_import_duplicate_tool_use",
            AnthropicImportError::DuplicateToolResult { .. } => {
                "anthropic_import_duplicate_tool_result"
            }
        }
    }
}

fn shape(path: impl Into<String>, expected: &'static str) -> AnthropicImportError {
    AnthropicImportError::Shape { path: path.into(), expected }
}

/// Imports an Anthropic Messages conversation (see the module docs for the rules).
pub fn import_anthropic(
    conversation: &Value,
    ids: &ImportContext,
) -> Result<Vec<RuntimeEvent>, AnthropicImportError> {
    let (messages, body) = message_array(conversation).map_err(|path| match path {
        "messages" => shape(path, "an array of messages"),
        _ => shape(path, "a messages array or a request object"),
    })?;
    let system = body.and_then(|body| body.get("system"));
    let mut out = Importer { state: ImportState::new(ids) };
    match system {
        None | Some(Value::Null) => {}
        Some(Value::String(text)) => {
            out.emit(EventContent::SystemNote { text: text.clone() }, None)
        }
        Some(Value::Array(blocks)) => {
            for (i, block) in blocks.iter().enumerate() {
                let text = block_text(block, &format!("system[{i}]"))?;
                out.emit(EventContent::SystemNote { text }, None);
            }
        }
        Some(_) => return Err(shape("system", "a string or text blocks")),
    }
    for (index, message) in messages.iter().enumerate() {
        let path = format!("messages[{index}]");
        let role =
            message.get("role").and_then(Value::as_str).ok_or_else(|| shape(&path, "a role"))?;
        let blocks = match message.get("content") {
            Some(Value::String(text)) => vec![json!({"type": "text", "text": text})],
            Some(Value::Array(blocks)) => blocks.clone(),
            _ => return Err(shape(format!("{path}.content"), "a string or an array of blocks")),
        };
        match role {
            "user" => out.user(&path, &blocks)?,
            "assistant" => out.assistant(&path, &blocks)?,
            _ => return Err(shape(format!("{path}.role"), "`user` or `assistant`")),
        }
    }
    Ok(out.state.into_events())
}

struct Importer<'a> {
    /// Keeps the tool name of every tool use and whether it is a server tool, by id.
    state: ImportState<'a, (String, bool)>,
}

impl Importer<'_> {
    fn emit(&mut self, content: EventContent, response_id: Option<String>) {
        self.state.emit(content, response_id);
    }

    /// The tool name of the call `id` a result block at `at` answers (`hosted`: a server tool's
    /// result), recording the answer.
    fn answer(&mut self, id: &str, at: &str, hosted: bool) -> Result<String, AnthropicImportError> {
        let (path, id) = (at.to_owned(), id.to_owned());
        match self.state.answer(&id, |(_, server)| *server == hosted) {
            Ok((tool_name, _)) => Ok(tool_name.clone()),
            Err(PairingError::DuplicateResult) => {
                Err(AnthropicImportError::DuplicateToolResult { path, id })
            }
            Err(_) => Err(AnthropicImportError::UnknownToolUse { path, id }),
        }
    }

    fn user(&mut self, path: &str, blocks: &[Value]) -> Result<(), AnthropicImportError> {
        let mut message_has_text = false;
        // The user text being built: `image` / `document` blocks join the text before them.
        let mut pending: Option<(String, Vec<Attachment>)> = None;
        for (i, block) in blocks.iter().enumerate() {
            let at = format!("{path}.content[{i}]");
            let kind = block_type(block, &at)?;
            if matches!(kind, "text" | "image" | "document") && !message_has_text {
                // One turn per user message that carries text or attachments.
                self.state.open_user_turn();
                message_has_text = true;
            }
            match kind {
                "text" => {
                    self.flush_user(&mut pending);
                    pending = Some((block_text(block, &at)?, Vec::new()));
                }
                "image" | "document" => {
                    let attachment = block_attachment(block, &at)?;
                    pending.get_or_insert_with(Default::default).1.push(attachment);
                }
                "tool_result" => {
                    self.flush_user(&mut pending);
                    let id = str_field(block, "tool_use_id", &at)?;
                    let tool_name = self.answer(&id, &at, false)?;
                    let (output, attachments) = result_content(block, &at)?;
                    let is_error = block.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                    let call_id = id;
                    let content = EventContent::ToolResult {
                        call_id,
                        tool_name,
                        output,
                        is_error,
                        attachments,
                    };
                    self.emit(content, None);
                }
                other => return Err(unsupported(&at, other)),
            }
        }
        self.flush_user(&mut pending);
        Ok(())
    }

    fn flush_user(&mut self, pending: &mut Option<(String, Vec<Attachment>)>) {
        if let Some((text, attachments)) = pending.take() {
            self.emit(EventContent::UserText { text, attachments }, None);
        }
    }

    fn assistant(&mut self, path: &str, blocks: &[Value]) -> Result<(), AnthropicImportError> {
        let response = self.state.next_response_id();
        for (i, block) in blocks.iter().enumerate() {
            let at = format!("{path}.content[{i}]");
            if let Some(content) = plain_assistant_block(block, &at)? {
                self.emit(content, Some(response.clone()));
                continue;
            }
            let content = match block_type(block, &at)? {
                kind @ ("tool_use" | "server_tool_use") => {
                    let call_id = str_field(block, "id", &at)?;
                    let tool_name = str_field(block, "name", &at)?;
                    let input =
                        block.get("input").cloned().unwrap_or(Value::Object(Default::default()));
                    let hosted = kind == "server_tool_use";
                    if self.state.call(&call_id, (tool_name.clone(), hosted)).is_err() {
                        return Err(AnthropicImportError::DuplicateToolUse {
                            path: at,
                            id: call_id,
                        });
                    }
                    if !hosted {
                        EventContent::ToolCall { call_id, tool_name, input }
                    } else {
                        EventContent::HostedToolCall { call_id, tool_name, input }
                    }
                }
                kind if kind.ends_with("_tool_result") => {
                    let call_id = str_field(block, "tool_use_id", &at)?;
                    let tool_name = self.answer(&call_id, &at, true)?;
                    let output = block.get("content").cloned().unwrap_or(Value::Null);
                    EventContent::HostedToolResult { call_id, tool_name, output, is_error: false }
                }
                other => return Err(unsupported(&at, other)),
            };
            self.emit(content, Some(response.clone()));
        }
        Ok(())
    }
}

/// The event of an assistant block that answers and opens no call: `text` → `assistant_text`,
/// `thinking` → `reasoning` with `providerData: {signature}`, `redacted_thinking` → `reasoning`
/// with empty text and `providerData: {redactedData}`; `None` for any other block type.
pub(crate) fn plain_assistant_block(
    block: &Value,
    at: &str,
) -> Result<Option<EventContent>, AnthropicImportError> {
    Ok(Some(match block_type(block, at)? {
        "text" => EventContent::AssistantText { text: block_text(block, at)? },
        "thinking" => EventContent::Reasoning {
            text: str_field(block, "thinking", at)?,
            provider_data: Some(
                json!({"signature": block.get("signature").cloned().unwrap_or(Value::Null)}),
            ),
        },
        "redacted_thinking" => EventContent::Reasoning {
            text: String::new(),
            provider_data: Some(json!({"redactedData": str_field(block, "data", at)?})),
        },
        _ => return Ok(None),
    }))
}

fn block_type<'a>(block: &'a Value, at: &str) -> Result<&'a str, AnthropicImportError> {
    block.get("type").and_then(Value::as_str).ok_or_else(|| shape(at, "a block with a `type`"))
}

fn block_text(block: &Value, at: &str) -> Result<String, AnthropicImportError> {
    match block_type(block, at)? {
        "text" => str_field(block, "text", at),
        other => Err(unsupported(at, other)),
    }
}

fn str_field(block: &Value, field: &str, at: &str) -> Result<String, AnthropicImportError> {
    block
        .get(field)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| shape(format!("{at}.{field}"), "a string"))
}

fn unsupported(at: &str, kind: &str) -> AnthropicImportError {
    AnthropicImportError::UnsupportedBlock { path: at.to_owned(), kind: kind.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projection::anthropic::to_anthropic;
    use crate::projection::materialize::materialize;

    #[test]
    fn round_trips_a_tool_conversation() {
        let request = json!({
            "system": "be brief",
            "messages": [
                {"role": "user", "content": "read a.rs"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "open it", "signature": "sig"},
                    {"type": "tool_use", "id": "tu1", "name": "read", "input": {"path": "a.rs"}}
                ]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": "fn a() {}"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "it defines a"}]}
            ]
        });
        let events = import_anthropic(&request, &ImportContext::new("s")).expect("imports");
        let kinds: Vec<&str> = events.iter().map(|e| e.content.kind_name()).collect();
        assert_eq!(
            kinds,
            ["system_note", "user_text", "reasoning", "tool_call", "tool_result", "assistant_text"]
        );
        let history = to_anthropic(&materialize(None, &events, &[]).messages).expect("maps");
        assert_eq!(history.system.as_deref(), Some("be brief"));
        assert_eq!(
            json!(history.messages),
            request["messages"]
                .clone()
                .as_array()
                .map(|m| {
                    let mut m = m.clone();
                    m[0] =
                        json!({"role": "user", "content": [{"type": "text", "text": "read a.rs"}]});
                    m[2]["content"][0]["is_error"] = json!(false);
                    json!(m)
                })
                .expect("array")
        );
    }

    #[test]
    fn one_turn_per_user_message_with_text() {
        let body = json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "c"},
        ]});
        let events = import_anthropic(&body, &ImportContext::new("s")).expect("import");
        let turns: Vec<&str> = events.iter().map(|e| e.turn_id.as_str()).collect();
        assert_eq!(turns, ["turn-0", "turn-0", "turn-0", "turn-1"]);
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        let ids = ImportContext::new("s");
        let image = json!([{"role": "user", "content": [{"type": "image", "source": {}}]}]);
        assert_eq!(
            import_anthropic(&image, &ids).expect_err("image").code(),
            "anthropic_import_unsupported_block"
        );
        let orphan =
            json!([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x"}]}]);
        assert_eq!(
            import_anthropic(&orphan, &ids).expect_err("orphan").code(),
            "anthropic_import_unknown_tool_use"
        );
        assert_eq!(
            import_anthropic(&json!(3), &ids).expect_err("shape").code(),
            "anthropic_import_shape"
        );
    }

    /// Every result answers exactly one earlier tool use of its kind: a replayed log with a
    /// reused id or a second result would be refused by the provider.
    #[test]
    fn tool_pairing_is_checked() {
        let ids = ImportContext::new("s");
        let call =
            |id: &str, kind: &str| json!({"type": kind, "id": id, "name": "shell", "input": {}});
        let result = |id: &str| json!({"type": "tool_result", "tool_use_id": id, "content": "ok"});
        let code = |messages: Value| import_anthropic(&messages, &ids).expect_err("refused").code();
        let twice = json!([{"role": "assistant", "content": [call("a", "tool_use"), call("a", "tool_use")]}]);
        assert_eq!(code(twice), "anthropic_import_duplicate_tool_use");
        let answered_twice = json!([
            {"role": "assistant", "content": [call("a", "tool_use")]},
            {"role": "user", "content": [result("a")]},
            {"role": "user", "content": [result("a")]},
        ]);
        assert_eq!(code(answered_twice), "anthropic_import_duplicate_tool_result");
        let server_answered_by_user = json!([
            {"role": "assistant", "content": [call("s1", "server_tool_use")]},
            {"role": "user", "content": [result("s1")]},
        ]);
        assert_eq!(code(server_answered_by_user), "anthropic_import_unknown_tool_use");
        let error = import_anthropic(
            &json!([{"role": "assistant", "content": [call("a", "tool_use"), call("a", "tool_use")]}]),
            &ids,
        )
        .expect_err("refused");
        assert_eq!(
            error.to_string(),
            "messages[0].content[1]: tool_use id `a` is reused while its earlier tool use is open"
        );
    }
}
