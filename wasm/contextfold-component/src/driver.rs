//! What the blocking and the step-driven exports share: building the transaction's input and
//! turning its effects and outcome into WIT values.

use contextfold_core::budget::CalibratedEstimator;
use contextfold_core::compaction::{
    AppendFailure, CompactInput, Compaction, CompactionOutcome, MalformedInputCircuit,
    OutcomeKind as CoreOutcome, SummarizeEffect, SummaryResponse as CoreSummary,
};
use contextfold_core::{CharEstimator, HistoryCompactCheckpoint, RuntimeEvent};

use crate::contextfold::compaction::types::{
    AppendError, CompactResult, CompactionError, CompactorKind, ModelFacts, OutcomeKind,
    ProviderFailure, ProviderIdentity, SummarizeRequest, SummaryResponse, Trigger,
};
use crate::convert;

/// The inputs of one transaction, as the WIT records carry them.
pub(crate) struct TransactionParams<'a> {
    pub(crate) trigger: Trigger,
    pub(crate) current_turn: Option<String>,
    pub(crate) model: &'a ModelFacts,
    pub(crate) provider: &'a ProviderIdentity,
    pub(crate) compactor: CompactorKind,
    pub(crate) checkpoint_id: String,
    pub(crate) now_ms: u64,
    pub(crate) summarizer_label: Option<String>,
    pub(crate) circuit_json: Option<String>,
    pub(crate) calibration_json: Option<String>,
    /// A checkpoint an earlier `prepare` transaction built, as JSON.
    pub(crate) prepared: Option<String>,
}

/// The transaction, measuring with the session's calibrated estimate.
pub(crate) type Transaction = Compaction<'static, CalibratedEstimator<CharEstimator>>;

/// Plans the transaction over `events` and `checkpoint`.
pub(crate) fn start(
    params: TransactionParams<'_>,
    events: Vec<RuntimeEvent>,
    checkpoint: Option<HistoryCompactCheckpoint>,
) -> Result<Transaction, CompactionError> {
    let circuit = convert::parse_circuit(params.circuit_json.as_deref())?;
    let prepared = convert::parse_optional_checkpoint(params.prepared.as_deref())?;
    let calibration = convert::parse_calibration(params.calibration_json.as_deref())?;
    let provider = convert::provider_identity(params.provider);
    let estimator = calibration.estimator(CharEstimator, &provider.provider, &provider.model_id);
    let input = CompactInput {
        trigger: convert::trigger(params.trigger),
        events: events.into(),
        current_turn_id: params.current_turn,
        checkpoint,
        model: convert::model_facts(params.model)?,
        provider,
        compactor: convert::compactor(params.compactor),
        new_checkpoint_id: params.checkpoint_id,
        now_ms: params.now_ms,
        provider_options: None,
        summarizer_label: params.summarizer_label,
        circuit,
        prepared,
    };
    Compaction::start_with_estimator(input, estimator).map_err(|error| convert::start_error(&error))
}

/// The WIT form of a summarize effect; `events` is the log the transaction was started on.
pub(crate) fn summarize_request(
    effect: &SummarizeEffect,
    events: &[RuntimeEvent],
) -> SummarizeRequest {
    let end = effect.fold.end.min(events.len());
    let start = effect.fold.start.min(end);
    SummarizeRequest {
        request_json: serde_json::to_string(&effect.request).unwrap_or_default(),
        previous_summary: effect.previous_summary.clone(),
        fold_start: start as u64,
        fold_end: end as u64,
        target_tokens: effect.target_tokens,
        fold_events: convert::events_to_json(&events[start..end]),
        carried_events: convert::events_to_json(&picked(events, &effect.carried)),
        replayed_events: convert::events_to_json(&picked(events, &effect.replayed_head)),
    }
}

/// The events at `indexes` of `events` (an index past the end is skipped).
fn picked(events: &[RuntimeEvent], indexes: &[usize]) -> Vec<RuntimeEvent> {
    indexes.iter().filter_map(|&i| events.get(i)).cloned().collect()
}

/// A summarizer's WIT answer as the core takes it.
pub(crate) fn summary_result(
    result: Result<SummaryResponse, ProviderFailure>,
) -> Result<CoreSummary, contextfold_core::compaction::ProviderFailure> {
    result
        .map(|answer| CoreSummary {
            text: answer.text,
            finish_reason: convert::finish_reason(&answer.finish),
        })
        .map_err(convert::provider_failure)
}

/// An append's WIT answer as the core takes it.
pub(crate) fn append_result(result: Result<(), AppendError>) -> Result<(), AppendFailure> {
    result.map_err(|error| match error {
        AppendError::Conflict(message) => AppendFailure { conflict: true, message },
        AppendError::Failed(message) => AppendFailure { conflict: false, message },
    })
}

/// The WIT result of a finished transaction.
pub(crate) fn compact_result(
    outcome: &CompactionOutcome,
    circuit: &MalformedInputCircuit,
) -> CompactResult {
    CompactResult {
        outcome: match outcome.outcome {
            CoreOutcome::Recorded => OutcomeKind::Recorded,
            CoreOutcome::Skipped => OutcomeKind::Skipped,
            CoreOutcome::FailedOpen => OutcomeKind::FailedOpen,
            CoreOutcome::Exhausted => OutcomeKind::Exhausted,
            CoreOutcome::Cancelled => OutcomeKind::Cancelled,
            CoreOutcome::Prepared => OutcomeKind::Prepared,
        },
        reason: outcome.reason.as_str().to_owned(),
        outcome_json: serde_json::to_string(outcome).unwrap_or_default(),
        circuit_json: convert::circuit_to_json(circuit),
    }
}
