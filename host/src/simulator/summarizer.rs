//! The offline extractive summarizer answered after a remote model's latency: what the demo and
//! the background-preparation bench summarize with, so a compaction waits as long as it would
//! for an LLM (`SimulatorConfig::summarizer_latency_ms`) while the summary stays the offline
//! one, byte for byte.

use std::time::Duration;

use contextfold_core::RuntimeEvent;
use contextfold_core::compaction::{
    ProviderFailure, SummarizeEffect, SummaryRequest, SummaryResponse,
};

use crate::runtime::{ExtractiveSummarizer, Summarizer};

/// The extractive summary after `latency` (zero: the embedded default exactly).
#[derive(Debug, Clone, Copy, Default)]
pub struct LatentSummarizer {
    latency: Duration,
}

impl LatentSummarizer {
    /// A summarizer answering after `latency_ms` milliseconds.
    pub fn new(latency_ms: u64) -> Self {
        Self { latency: Duration::from_millis(latency_ms) }
    }
}

impl Summarizer for LatentSummarizer {
    fn label(&self) -> Option<String> {
        ExtractiveSummarizer.label()
    }

    async fn summarize(
        &self,
        request: &SummaryRequest,
        effect: &SummarizeEffect,
        events: &[RuntimeEvent],
    ) -> Result<SummaryResponse, ProviderFailure> {
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
        ExtractiveSummarizer.summarize(request, effect, events).await
    }
}
