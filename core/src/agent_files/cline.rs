//! Cline's and Roo Code's `api_conversation_history.json` read as events.
//!
//! The file is one JSON array of Anthropic messages (`{role, content: string | blocks}`, with
//! extra keys such as `ts` that are not history). It is read by the core's Anthropic import
//! ([`crate::projection::import_anthropic`]) after one normalization:
//!
//! - **Text tool results.** Cline answers a `tool_use` with user *text*, not a `tool_result`
//!   block: the user message after the assistant's tool uses holds text blocks such as
//!   `[read_file for 'src/x.ts'] Result:\n…`, or `Tool [read_file] was not executed because …`
//!   for a tool use it refused. Each such block answers an open tool use of the message just
//!   before: the first one whose name is the header's, else the first one still open (headers
//!   do not always spell the tool's name: `[subagents]` answers `use_subagents`). It becomes a
//!   `tool_result` block holding the whole text (and the `image` blocks right after it: a
//!   browser screenshot); `is_error` is set for a refused tool and for a result saying the tool
//!   failed or the user denied it. Blocks answering nothing (the `<environment_details>` Cline
//!   appends, the user's own words, results beyond the open tool uses) stay user text, so each
//!   tool-result message still opens a turn as any user message with text. A tool use answered
//!   by nothing stays open (the projection repairs it, as for a task interrupted by the user).
//!   Older Cline wrote tools as XML tags in assistant text, with no `tool_use` at all: nothing is
//!   paired, it imports as text.
//! - **Thinking.** A `thinking` block whose `thinking` is `null` or missing (Cline writes that
//!   for redacted or empty reasoning) gets an empty text.
//!
//! The file reports no usage (Cline keeps it in `ui_messages.json`). Errors of the Anthropic
//! import become [`SessionFileError`]s whose `line` is the 1-based message index.

#[cfg(test)]
mod tests;

use serde_json::{Value, json};

use super::{ImportedSession, SessionFileError, SessionFormat};
use crate::projection::{AnthropicImportError, ImportContext, import_anthropic};

/// Whether `text` is a JSON array whose first element is an object with `role` and `content`.
pub(super) fn looks_like(text: &str) -> bool {
    if !text.trim_start().starts_with('[') {
        return false;
    }
    let Ok(Value::Array(messages)) = super::parse_json(text) else {
        return false;
    };
    messages
        .first()
        .and_then(Value::as_object)
        .is_some_and(|first| first.contains_key("role") && first.contains_key("content"))
}

/// Reads a history (see the module docs for the rules).
pub(super) fn import(text: &str, ids: &ImportContext) -> Result<ImportedSession, SessionFileError> {
    let value = super::parse_json(text)
        .map_err(|error| SessionFileError::Syntax { line: 1, detail: error.to_string() })?;
    let Value::Array(mut messages) = value else {
        let expected = "an array of messages";
        return Err(SessionFileError::Shape { line: 1, path: "$".into(), expected });
    };
    normalize(&mut messages);
    let events = import_anthropic(&Value::Array(messages), ids).map_err(anthropic_error)?;
    Ok(ImportedSession {
        format: SessionFormat::Cline,
        events,
        usage: Vec::new(),
        linked: Vec::new(),
        diagnostics: Vec::new(),
    })
}

/// Rewrites Cline's text tool results as `tool_result` blocks and fills null thinking texts.
fn normalize(messages: &mut [Value]) {
    // (id, name) of the tool uses of the assistant message just read.
    let mut open: Vec<(String, String)> = Vec::new();
    for message in messages.iter_mut() {
        match message.get("role").and_then(Value::as_str) {
            Some("assistant") => open = assistant_uses(message),
            Some("user") if !open.is_empty() => {
                pair_results(message, std::mem::take(&mut open));
            }
            _ => open.clear(),
        }
    }
}

/// The tool uses of an assistant message, in order; fills `null` thinking texts on the way.
fn assistant_uses(message: &mut Value) -> Vec<(String, String)> {
    let Some(Value::Array(blocks)) = message.get_mut("content") else {
        return Vec::new();
    };
    let mut uses = Vec::new();
    for block in blocks.iter_mut() {
        let Some(block) = block.as_object_mut() else { continue };
        match block.get("type").and_then(Value::as_str) {
            Some("thinking") if !block.get("thinking").is_some_and(Value::is_string) => {
                block.insert("thinking".into(), Value::String(String::new()));
            }
            Some("tool_use") => {
                let field = |key: &str| block.get(key).and_then(Value::as_str).map(str::to_owned);
                if let (Some(id), Some(name)) = (field("id"), field("name")) {
                    uses.push((id, name));
                }
            }
            _ => {}
        }
    }
    uses
}

/// Turns the text results in a user message into `tool_result` blocks answering `open`.
fn pair_results(message: &mut Value, mut open: Vec<(String, String)>) {
    let blocks = match message.get_mut("content") {
        Some(Value::Array(blocks)) => std::mem::take(blocks),
        Some(Value::String(text)) => vec![json!({"type": "text", "text": std::mem::take(text)})],
        _ => return,
    };
    // Tool uses this message already answers with real `tool_result` blocks.
    open.retain(|(id, _)| {
        !blocks.iter().any(|block| {
            block.get("type").and_then(Value::as_str) == Some("tool_result")
                && block.get("tool_use_id").and_then(Value::as_str) == Some(id)
        })
    });
    let mut out: Vec<Value> = Vec::with_capacity(blocks.len());
    // Index in `out` of the result the blocks just before were turned into.
    let mut last_result: Option<usize> = None;
    for block in blocks {
        let kind = block.get("type").and_then(Value::as_str);
        if kind == Some("image")
            && let Some(at) = last_result
            && let Some(Value::Array(content)) = out[at].get_mut("content")
        {
            content.push(block);
            continue;
        }
        let header = match (kind, block.get("text").and_then(Value::as_str)) {
            (Some("text"), Some(text)) => result_header(text),
            _ => None,
        };
        let answered = header.and_then(|(name, is_error)| {
            let at = open.iter().position(|(_, open_name)| open_name == name);
            let at = at.or(if open.is_empty() { None } else { Some(0) })?;
            Some((open.remove(at).0, is_error))
        });
        match answered {
            Some((id, is_error)) => {
                out.push(json!({
                    "type": "tool_result",
                    "tool_use_id": id,
                    "content": [block],
                    "is_error": is_error,
                }));
                last_result = Some(out.len() - 1);
            }
            None => {
                out.push(block);
                last_result = None;
            }
        }
    }
    message["content"] = Value::Array(out);
}

/// The tool name a text result names, and whether it reports a failure: `[name for …] Result:`,
/// `[name] Result:` or `Tool [name] was not executed …`.
fn result_header(text: &str) -> Option<(&str, bool)> {
    if let Some(rest) = text.strip_prefix("Tool [") {
        let (name, after) = rest.split_once(']')?;
        return (after.starts_with(" was not executed") && is_tool_name(name))
            .then_some((name, true));
    }
    let rest = text.strip_prefix('[')?;
    let end = rest.find([']', ' '])?;
    let name = &rest[..end];
    let (_, body) = rest.split_once("] Result:")?;
    if !is_tool_name(name) {
        return None;
    }
    let body = body.trim_start();
    let failed = ["The tool execution failed", "The user denied this operation"]
        .iter()
        .any(|start| body.starts_with(start));
    Some((name, failed))
}

/// A tool name as Cline spells them (`read_file`, `use_mcp_tool`, `browser-action`).
fn is_tool_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// An Anthropic import error as a session file error: `line` is the 1-based index of the
/// message its path (`messages[i]…`) names, 1 when it names none.
fn anthropic_error(error: AnthropicImportError) -> SessionFileError {
    let line = |path: &str| {
        path.strip_prefix("messages[")
            .and_then(|rest| rest.split_once(']'))
            .and_then(|(index, _)| index.parse::<usize>().ok())
            .map_or(1, |index| index + 1)
    };
    match error {
        AnthropicImportError::Shape { path, expected } => {
            SessionFileError::Shape { line: line(&path), path, expected }
        }
        AnthropicImportError::UnsupportedBlock { path, kind } => {
            SessionFileError::Unsupported { line: line(&path), kind }
        }
        AnthropicImportError::Attachment { path, source } => {
            SessionFileError::Attachment { line: line(&path), source }
        }
        AnthropicImportError::UnknownToolUse { path, id } => SessionFileError::CallPairing {
            line: line(&path),
            call_id: id,
            problem: "result for no open call",
        },
        AnthropicImportError::DuplicateToolUse { path, id } => SessionFileError::CallPairing {
            line: line(&path),
            call_id: id,
            problem: "id reused while open",
        },
        AnthropicImportError::DuplicateToolResult { path, id } => SessionFileError::CallPairing {
            line: line(&path),
            call_id: id,
            problem: "second result",
        },
    }
}
