//! Wire formats of the CLI: imports into RuntimeEvents (the mappings of the core's neutral
//! messages to provider requests are the core's `OutputFormat`, shared with the npm package).
//!
//! Every import is the core's (`contextfold_core::projection::{openai_chat, anthropic,
//! ai_sdk}`), shared with the npm package; these modules only adapt ids
//! ([`EventSink`]) and errors ([`FormatError`]) to the CLI. Each import is lossless for what its
//! format carries and refuses anything it cannot carry (images, files, unknown parts) with a
//! typed error instead of dropping it. Rules: `docs/cli.md`.

pub mod ai_sdk;
pub mod anthropic;
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
