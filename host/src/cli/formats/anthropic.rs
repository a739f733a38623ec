//! Anthropic Messages: import of a conversation, the core's
//! (`contextfold_core::projection::import_anthropic`; rules in its docs and in `docs/cli.md`;
//! the mapping to a request is the core's `OutputFormat::Anthropic`).
//!
//! This module adapts it to the CLI: import errors carry the core's codes (`anthropic_import_shape`,
//! `anthropic_import_unsupported_block`, `anthropic_import_unknown_tool_use`,
//! `anthropic_import_duplicate_tool_use`, `anthropic_import_duplicate_tool_result`), the same
//! in every runtime.

use contextfold_core::projection::{AnthropicImportError, import_anthropic as core_import};
use serde_json::Value;

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
