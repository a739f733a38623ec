//! Wire formats of the CLI: imports into RuntimeEvents and mappings of the core's neutral
//! [`Message`](contextfold_core::projection::Message)s to provider requests.
//!
//! OpenAI Chat Completions comes from the core (`projection::openai_chat`); Anthropic Messages,
//! the AI SDK `ModelMessage` and OpenAI Responses input items are implemented here. Each import
//! is lossless for what its format carries and refuses anything it cannot carry (images, files,
//! unknown parts) with a [`FormatError`] instead of dropping it. Rules: `docs/cli.md`.

pub mod ai_sdk;
pub mod anthropic;
pub mod openai_responses;
mod sink;

pub use sink::EventSink;

/// A document could not be imported, or messages could not be mapped to a format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {detail}")]
pub struct FormatError {
    /// Stable snake_case code (e.g. `anthropic_unsupported_block`).
    pub code: &'static str,
    /// JSON path of the offending value (`$.messages[3].content[0]`).
    pub path: String,
    /// What was wrong.
    pub detail: String,
}

impl FormatError {
    pub(crate) fn new(
        code: &'static str,
        path: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        Self { code, path: path.into(), detail: detail.into() }
    }
}

/// Reads an object field as a string, or fails with `code`.
pub(crate) fn str_field<'a>(
    value: &'a serde_json::Value,
    field: &str,
    path: &str,
    code: &'static str,
) -> Result<&'a str, FormatError> {
    value
        .get(field)
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| FormatError::new(code, format!("{path}.{field}"), "expected a string"))
}
