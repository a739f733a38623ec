//! The offline extractive summarizer answered after a remote model's latency: what the demo and
//! the background-preparation bench summarize with, so a compaction waits as long as it would
//! for an LLM (`SimulatorConfig::summarizer_latency_ms`) while the summary stays the offline
//! one, byte for byte.

use std::time::Duration;

use contextfold_core::RuntimeEvent;
use contextfold_core::compaction::{
    EXTRACTIVE_PRODUCER, FinishReason, ProviderFailure, SummarizeEffect, SummaryRequest,
    SummaryResponse, extractive_summary_for,
};

use crate::runtime::Summarizer;

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
        Some(EXTRACTIVE_PRODUCER.to_owned())
    }

    async fn summarize(
        &self,
        _request: &SummaryRequest,
        effect: &SummarizeEffect,
        events: &[RuntimeEvent],
    ) -> Result<SummaryResponse, ProviderFailure> {
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
        let text = extractive_summary_for(events, effect);
        Ok(SummaryResponse { text, finish_reason: FinishReason::Stop })
    }
}
