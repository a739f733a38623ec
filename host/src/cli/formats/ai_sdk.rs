//! The AI SDK (v5/v6) `ModelMessage[]`: import and mapping, both the core's
//! (`contextfold_core::projection::to_model_messages`; rules in its docs and in `docs/cli.md`).
//!
//! This module only adapts the core's functions to the CLI: errors become [`FormatError`]s
//! with the core's stable codes (`ai_sdk_invalid_shape`, `ai_sdk_unsupported_part`, …).

use contextfold_core::projection::{
    Message, ModelMessageImportError, import_model_messages, to_model_messages,
};
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

/// Maps neutral messages to AI SDK `ModelMessage[]`. A V3 checkpoint's provider state becomes
/// the assistant `openai.compaction` custom part (`providerOptions.openai.itemId` /
/// `encryptedContent`), never text.
pub fn to_ai_sdk(messages: &[Message]) -> Result<Vec<Value>, FormatError> {
    Ok(to_model_messages(messages))
}
