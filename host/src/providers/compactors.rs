//! The provider clients as the session runtime's capabilities: [`Summarizer`] for the text
//! summarizers (OpenAI Chat Completions, Anthropic Messages, and the Codex Responses text
//! fallback) and [`NativeCompactor`] for Codex remote compaction v2.
//!
//! Each implementation sends the core's ready-to-send request unchanged; the fold itself
//! (`effect`, `events`) is only for offline summarizers and is ignored here.

use contextfold_core::RuntimeEvent;
use contextfold_core::compaction::{
    NativeRequest, ProviderFailure, SummarizeEffect, SummaryRequest, SummaryResponse,
};
use serde_json::Value;

use super::{AnthropicSummarizer, CodexNativeCompactor, OpenAiChatSummarizer};
use crate::runtime::{NativeCompactor, Summarizer};

/// `impl Summarizer` for a client whose inherent `summarize(&SummaryRequest)` sends the
/// core's request as is.
macro_rules! summarizer_by_request {
    ($client:ty) => {
        impl Summarizer for $client {
            async fn summarize(
                &self,
                request: &SummaryRequest,
                _effect: &SummarizeEffect,
                _events: &[RuntimeEvent],
            ) -> Result<SummaryResponse, ProviderFailure> {
                <$client>::summarize(self, request).await
            }
        }
    };
}

summarizer_by_request!(OpenAiChatSummarizer);
summarizer_by_request!(AnthropicSummarizer);
// The text-summary fallback of a Codex session, over the same Responses connection.
summarizer_by_request!(CodexNativeCompactor);

impl NativeCompactor for CodexNativeCompactor {
    async fn compact(&self, request: &NativeRequest) -> Result<Vec<Value>, ProviderFailure> {
        CodexNativeCompactor::compact(self, request).await
    }
}
