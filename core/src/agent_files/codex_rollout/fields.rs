//! Reading the fields of rollout items, and the errors that name their line.

use serde_json::{Map, Value};

use super::super::SessionFileError;
use crate::projection::ResponsesImportError;

/// How the user messages Codex injects (not typed by the user) begin.
const INJECTED_PREFIXES: [&str; 3] =
    ["<environment_context>", "<user_instructions>", "# AGENTS.md instructions"];

/// The text of a user message Codex injected (environment context, AGENTS.md), if it is one.
pub(super) fn injected_text(item: &Map<String, Value>) -> Option<String> {
    if item.get("role").and_then(Value::as_str) != Some("user") {
        return None;
    }
    let parts = item.get("content")?.as_array()?;
    let mut texts = Vec::with_capacity(parts.len());
    for part in parts {
        if part.get("type").and_then(Value::as_str) != Some("input_text") {
            return None;
        }
        texts.push(part.get("text")?.as_str()?);
    }
    let first = texts.first()?.trim_start();
    INJECTED_PREFIXES.iter().any(|prefix| first.starts_with(prefix)).then(|| texts.join(""))
}

/// The string `key` of an item, or a shape error naming `payload.<key>`.
pub(super) fn str_field(
    line: usize,
    item: &Map<String, Value>,
    key: &'static str,
) -> Result<String, SessionFileError> {
    match item.get(key) {
        Some(Value::String(value)) => Ok(value.clone()),
        _ => Err(SessionFileError::Shape {
            line,
            path: format!("payload.{key}"),
            expected: "a string",
        }),
    }
}

/// A shape error on `line`.
pub(super) fn shape(line: usize, path: &str, expected: &'static str) -> SessionFileError {
    SessionFileError::Shape { line, path: path.to_owned(), expected }
}

/// A Responses import error on `line` as a session file error (paths start at `payload`).
pub(super) fn responses_error(line: usize, error: ResponsesImportError) -> SessionFileError {
    let prefix = format!("input[{line}]");
    match error {
        ResponsesImportError::Shape { path, expected } => {
            SessionFileError::Shape { line, path: path.replacen(&prefix, "payload", 1), expected }
        }
        ResponsesImportError::Unsupported { kind, .. } => {
            SessionFileError::Unsupported { line, kind }
        }
        ResponsesImportError::Attachment { source, .. } => {
            SessionFileError::Attachment { line, source }
        }
        ResponsesImportError::DuplicateCallId { call_id, .. } => {
            SessionFileError::CallPairing { line, call_id, problem: "id reused while open" }
        }
        ResponsesImportError::UnknownCallId { call_id, .. } => {
            SessionFileError::CallPairing { line, call_id, problem: "result for no open call" }
        }
    }
}
