//! The AI SDK (v5/v6) `ModelMessage[]`: import, the core's
//! (`contextfold_core::projection::import_model_messages`; rules in its docs and in
//! `docs/cli.md`; the mapping is the core's `OutputFormat::AiSdk`).
//!
//! This module only adapts the core's import to the CLI: errors become [`FormatError`]s
//! with the core's stable codes (`ai_sdk_invalid_shape`, `ai_sdk_unsupported_part`, …).

use contextfold_core::projection::{ModelMessageImportError, import_model_messages};
use serde_json::Value;

use super::{EventSink, FormatError};

/// Imports an AI SDK `ModelMessage[]` (or `{messages: [...]}`) into `sink`.
pub fn import_ai_sdk(document: &Value, sink: &mut EventSink) -> Result<(), FormatError> {
    let events = import_model_messages(document, sink.ids()).map_err(import_error)?;
    sink.extend(events);
    Ok(())
}

fn import_error(error: ModelMessageImportError) -> FormatError {
    let path = match &error {
        ModelMessageImportError::Shape { path, .. }
        | ModelMessageImportError::UnsupportedPart { path, .. }
        | ModelMessageImportError::Attachment { path, .. } => format!("$.{path}"),
        _ => "$".to_owned(),
    };
    FormatError::new(error.code(), path, error.to_string())
}
