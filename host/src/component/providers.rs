//! The offline provider: the core's extractive summarizer, no key and no network.

use contextfold_core::compaction::{
    FinishReason, NativeRequest, ProviderFailure, ProviderFailureKind, SummaryResponse,
    extractive_summary_of,
};
use serde_json::Value;

use crate::component::traits::{Provider, SummarizeCall};

/// Answers summaries with [`extractive_summary_of`]; rejects native compaction (it has no
/// provider-native state). Pair it with `summarizer_label = "extractive"`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExtractiveProvider;

impl Provider for ExtractiveProvider {
    fn summarize(&mut self, call: &SummarizeCall) -> Result<SummaryResponse, ProviderFailure> {
        let text = extractive_summary_of(
            call.previous_summary.as_deref(),
            &call.carried_events,
            &call.fold_events,
            &call.replayed_events,
            call.target_tokens,
        );
        Ok(SummaryResponse { text, finish_reason: FinishReason::Stop })
    }

    fn compact_natively(
        &mut self,
        _request: &NativeRequest,
    ) -> Result<Vec<Value>, ProviderFailure> {
        Err(ProviderFailure {
            kind: ProviderFailureKind::Rejected,
            message: "the extractive provider has no native compaction".into(),
        })
    }
}
