//! Reading the fields of Claude Code records, and the file errors of what is wrong with them.

use serde_json::{Map, Value, json};

use super::{Record, shape};
use crate::agent_files::SessionFileError;
use crate::agent_files::usage::Counts;
use crate::projection::anthropic::AnthropicImportError;
use crate::projection::import_state::PairingError;

/// The record's `message` object.
pub(super) fn message(record: &Record) -> Option<&Map<String, Value>> {
    record.fields.get("message").and_then(Value::as_object)
}

/// The content blocks of a message (a string content is one `text` block).
pub(super) fn blocks(
    message: &Map<String, Value>,
    line: usize,
) -> Result<Vec<Value>, SessionFileError> {
    match message.get("content") {
        Some(Value::String(text)) => Ok(vec![json!({"type": "text", "text": text})]),
        Some(Value::Array(blocks)) => Ok(blocks.clone()),
        _ => Err(shape(line, "message.content", "a string or an array of blocks")),
    }
}

/// The text of a message whose blocks are all `text` (joined by blank lines).
pub(super) fn joined_text(
    message: &Map<String, Value>,
    line: usize,
) -> Result<String, SessionFileError> {
    let mut texts = Vec::new();
    for block in blocks(message, line)? {
        match (block.get("type").and_then(Value::as_str), block.get("text").and_then(Value::as_str))
        {
            (Some("text"), Some(text)) => texts.push(text.to_owned()),
            (kind, _) => {
                let kind = kind.unwrap_or("untyped").to_owned();
                return Err(SessionFileError::Unsupported { line, kind });
            }
        }
    }
    Ok(texts.join("\n\n"))
}

/// A string field of a record.
pub(super) fn str_at(record: &Record, key: &str) -> Result<String, SessionFileError> {
    let value = record.fields.get(key).and_then(Value::as_str);
    value.map(str::to_owned).ok_or_else(|| shape(record.line, key, "a string"))
}

/// The counts of a `message.usage`: every input token (cache reads and writes included).
pub(super) fn counts(usage: &Value) -> Counts {
    let field = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    let (cached, written) =
        (field("cache_read_input_tokens"), field("cache_creation_input_tokens"));
    Counts {
        input_tokens: field("input_tokens") + cached + written,
        cached_input_tokens: cached,
        cache_write_tokens: written,
        output_tokens: field("output_tokens"),
    }
}

/// A pairing error as the file error of `line`.
pub(super) fn pairing(line: usize, call_id: &str, error: PairingError) -> SessionFileError {
    let problem = match error {
        PairingError::DuplicateCall => "id reused while open",
        PairingError::UnknownCall => "result for no open call",
        PairingError::DuplicateResult => "second result",
    };
    SessionFileError::CallPairing { line, call_id: call_id.to_owned(), problem }
}

/// An error of the Anthropic block helpers as the file error of `line`.
pub(super) fn from_block(line: usize, error: AnthropicImportError) -> SessionFileError {
    match error {
        AnthropicImportError::Shape { path, expected } => {
            SessionFileError::Shape { line, path, expected }
        }
        AnthropicImportError::Attachment { source, .. } => {
            SessionFileError::Attachment { line, source }
        }
        AnthropicImportError::UnsupportedBlock { kind, .. } => {
            SessionFileError::Unsupported { line, kind }
        }
        AnthropicImportError::UnknownToolUse { id, .. } => {
            pairing(line, &id, PairingError::UnknownCall)
        }
        AnthropicImportError::DuplicateToolUse { id, .. } => {
            pairing(line, &id, PairingError::DuplicateCall)
        }
        AnthropicImportError::DuplicateToolResult { id, .. } => {
            pairing(line, &id, PairingError::DuplicateResult)
        }
    }
}
