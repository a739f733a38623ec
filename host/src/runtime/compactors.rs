//! The two provider-facing capabilities the session runtime needs, and the offline default.
//!
//! The providers module implements [`Summarizer`] (OpenAI Chat Completions, Anthropic Messages)
//! and [`NativeCompactor`] (OpenAI Codex remote compaction v2). [`ExtractiveSummarizer`] is the
//! embedded default: no key, no network.
//!
//! Both traits return `Send` futures, so an implementation may be driven from any tokio task;
//! implementations write plain `async fn` bodies.

use std::future::Future;

use contextfold_core::RuntimeEvent;
use contextfold_core::compaction::{
    EXTRACTIVE_PRODUCER, FinishReason, NativeRequest, ProviderFailure, SummarizeEffect,
    SummaryRequest, SummaryResponse, extractive_summary_for,
};

/// Answers the core's text-summary effect.
pub trait Summarizer {
    /// Label recorded as `producedBy` on the checkpoints this summarizer writes; `None` keeps
    /// the core's default (`text-summary:<model>`).
    fn label(&self) -> Option<String> {
        None
    }

    /// Sends `request` (ready-to-send neutral messages) and returns the generated text with its
    /// finish reason. `effect` and `events` (the whole log the transaction was started with;
    /// the fold is `events[effect.fold.start..effect.fold.end]`) are there for offline
    /// summarizers that read the source directly.
    fn summarize(
        &self,
        request: &SummaryRequest,
        effect: &SummarizeEffect,
        events: &[RuntimeEvent],
    ) -> impl Future<Output = Result<SummaryResponse, ProviderFailure>> + Send;
}

/// Answers the core's provider-native compaction effect.
pub trait NativeCompactor {
    /// Sends the Responses `input` items of `request` on the streaming path, consumes the whole
    /// stream, and returns the response's output items (the core admits exactly one compaction
    /// item among them).
    fn compact(
        &self,
        request: &NativeRequest,
    ) -> impl Future<Output = Result<Vec<serde_json::Value>, ProviderFailure>> + Send;
}

/// The offline extractive summarizer: a structured summary built from the folded events
/// themselves (goal from the user's words, progress from calls and results, critical context
/// with exact paths, commands and errors). Checkpoints it writes are labelled
/// [`EXTRACTIVE_PRODUCER`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ExtractiveSummarizer;

impl Summarizer for ExtractiveSummarizer {
    fn label(&self) -> Option<String> {
        Some(EXTRACTIVE_PRODUCER.to_owned())
    }

    async fn summarize(
        &self,
        _request: &SummaryRequest,
        effect: &SummarizeEffect,
        events: &[RuntimeEvent],
    ) -> Result<SummaryResponse, ProviderFailure> {
        let text = extractive_summary_for(events, effect);
        Ok(SummaryResponse { text, finish_reason: FinishReason::Stop })
    }
}

/// A [`NativeCompactor`] for sessions whose provider has none: every request fails as a
/// protocol rejection, so the core falls back to its text summary. Use it with
/// [`contextfold_core::compaction::Compactor::TextSummary`], where it is never called.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoNativeCompactor;

impl NativeCompactor for NoNativeCompactor {
    async fn compact(
        &self,
        _request: &NativeRequest,
    ) -> Result<Vec<serde_json::Value>, ProviderFailure> {
        Err(ProviderFailure {
            kind: contextfold_core::compaction::ProviderFailureKind::Rejected,
            message: "this session has no native compactor".to_owned(),
        })
    }
}
