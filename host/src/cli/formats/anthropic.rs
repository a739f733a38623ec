//! Anthropic Messages: import of a conversation and mapping of neutral messages to a request,
//! both the core's (`contextfold_core::projection::to_anthropic`; rules in its docs and in
//! `docs/cli.md`).
//!
//! This module adapts them to the CLI: the mapping is written as the request body fragment
//! `{system?, messages}`, and import errors carry the core's codes (`anthropic_import_shape`,
//! `anthropic_import_unsupported_block`, `anthropic_import_unknown_tool_use`,
//! `anthropic_import_duplicate_tool_use`, `anthropic_import_duplicate_tool_result`), the same
//! in every runtime.

use contextfold_core::projection::{
    AnthropicImportError, Message, import_anthropic as core_import, to_anthropic as core_map,
};
use serde_json::{Map, Value};

use super::{EventSink, FormatError};

/// Imports an Anthropic conversation (`{system?, messages}` or an array) into `sink`.
pub fn import_anthropic(document: &Value, sink: &mut EventSink) -> Result<(), FormatError> {
    let events = core_import(document, sink.ids()).map_err(import_error)?;
    sink.extend(events);
    Ok(())
}

fn import_error(error: AnthropicImportError) -> FormatError {
    let path = match &error {
        AnthropicImportError::Shape { path, .. }
        | AnthropicImportError::UnsupportedBlock { path, .. }
        | AnthropicImportError::Attachment { path, .. }
        | AnthropicImportError::UnknownToolUse { path, .. }
        | AnthropicImportError::DuplicateToolUse { path, .. }
        | AnthropicImportError::DuplicateToolResult { path, .. } => path.clone(),
        _ => "$".to_owned(),
    };
    FormatError::new(error.code(), path, error.to_string())
}

/// Maps neutral messages to an Anthropic Messages request body `{system?, messages}`.
/// Provider-native (V3) state is refused (`anthropic_provider_state_unsupported`).
pub fn to_anthropic(messages: &[Message]) -> Result<Value, FormatError> {
    let history = core_map(messages)
        .map_err(|error| FormatError::new(error.code(), "$", error.to_string()))?;
    let mut body = Map::new();
    if let Some(system) = history.system {
        body.insert("system".into(), Value::String(system));
    }
    body.insert("messages".into(), Value::Array(history.messages));
    Ok(Value::Object(body))
}
