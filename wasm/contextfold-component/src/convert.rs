//! Conversions between WIT values and core types, and the mapping of core errors to the WIT
//! `compaction-error` variant (each with the core's stable snake_case code).

use contextfold_core::budget::{Calibration, ModelFacts as CoreModelFacts, UsageFact};
use contextfold_core::compaction::{
    Compactor, DriverError, FinishReason as CoreFinish, MalformedInputCircuit,
    ProviderFailure as CoreFailure, ProviderFailureKind, ProviderIdentity as CoreProviderIdentity,
    StartError, Trigger as CoreTrigger,
};
use contextfold_core::event::LogError;
use contextfold_core::{
    Diagnostic as CoreDiagnostic, HistoryCompactCheckpoint, RuntimeEvent,
    TokenFigures as CoreFigures,
};
use serde_json::Value;

use crate::contextfold::compaction::types::{
    CompactionError, CompactorKind, Diagnostic, ErrorDetail, FinishReason, ModelFacts,
    ProviderFailure, ProviderIdentity, TokenFigures, Trigger,
};

fn detail(code: &str, message: impl Into<String>) -> ErrorDetail {
    ErrorDetail { code: code.to_owned(), message: message.into() }
}

/// Parses a JSON array of RuntimeEvents: straight from the text when it reads that way
/// ([`RuntimeEvent::array_from_text`]), else event by event, the message naming the first bad
/// event's index.
pub(crate) fn parse_events(json: &str) -> Result<Vec<RuntimeEvent>, CompactionError> {
    if let Some(events) = RuntimeEvent::array_from_text(json) {
        return Ok(events);
    }
    let values: Vec<Value> = serde_json::from_str(json).map_err(|error| {
        CompactionError::InvalidEvents(detail(
            "event_syntax",
            format!("events must be a JSON array of events: {error}"),
        ))
    })?;
    values
        .into_iter()
        .enumerate()
        .map(|(index, value)| {
            RuntimeEvent::from_value(value).map_err(|error| {
                CompactionError::InvalidEvents(detail(
                    error.code(),
                    format!("event {index}: {error}"),
                ))
            })
        })
        .collect()
}

/// Serializes events as the JSON array `parse_events` reads.
pub(crate) fn events_to_json(events: &[RuntimeEvent]) -> String {
    serde_json::to_string(events).unwrap_or_else(|_| "[]".to_owned())
}

/// Parses one checkpoint.
pub(crate) fn parse_checkpoint(json: &str) -> Result<HistoryCompactCheckpoint, CompactionError> {
    HistoryCompactCheckpoint::from_json(json).map_err(|error| {
        CompactionError::InvalidCheckpoint(detail(error.code(), error.to_string()))
    })
}

/// Parses an optional checkpoint.
pub(crate) fn parse_optional_checkpoint(
    json: Option<&str>,
) -> Result<Option<HistoryCompactCheckpoint>, CompactionError> {
    json.map(parse_checkpoint).transpose()
}

/// Parses the malformed-input circuit; `None` is an empty circuit.
pub(crate) fn parse_circuit(json: Option<&str>) -> Result<MalformedInputCircuit, CompactionError> {
    match json {
        None => Ok(MalformedInputCircuit::new()),
        Some(text) => serde_json::from_str(text).map_err(|error| {
            CompactionError::InvalidInput(detail(
                "circuit_invalid",
                format!("circuit-json is not a valid malformed-input circuit: {error}"),
            ))
        }),
    }
}

/// Parses the calibration; `None` is an empty calibration (every ratio 1.0).
pub(crate) fn parse_calibration(json: Option<&str>) -> Result<Calibration, CompactionError> {
    match json {
        None => Ok(Calibration::default()),
        Some(text) => serde_json::from_str(text).map_err(|error| {
            CompactionError::InvalidInput(detail(
                "invalid_calibration",
                format!("calibration-json is not a valid calibration: {error}"),
            ))
        }),
    }
}

/// Parses a usage fact and checks what serde cannot (the npm binding checks the same): a named
/// provider and model, and counts that can be true (a response counts at least one input token,
/// cached ones among them).
pub(crate) fn parse_usage_fact(json: &str) -> Result<UsageFact, CompactionError> {
    let invalid =
        |message: String| CompactionError::InvalidInput(detail("invalid_usage_fact", message));
    let fact: UsageFact =
        serde_json::from_str(json).map_err(|e| invalid(format!("invalid usage fact: {e}")))?;
    fact.validate().map_err(|e| invalid(e.to_string()))?;
    Ok(fact)
}

/// The circuit as the JSON `parse_circuit` reads.
pub(crate) fn circuit_to_json(circuit: &MalformedInputCircuit) -> String {
    serde_json::to_string(circuit).unwrap_or_else(|_| "{\"fingerprints\":[]}".to_owned())
}

/// A structurally invalid log.
/// An `invalid-input` error with `code`.
pub(crate) fn invalid_input(code: &str, message: impl Into<String>) -> CompactionError {
    CompactionError::InvalidInput(detail(code, message))
}

pub(crate) fn log_error(error: &LogError) -> CompactionError {
    CompactionError::InvalidLog(detail(error.code(), error.to_string()))
}

/// A failed start of the transaction.
pub(crate) fn start_error(error: &StartError) -> CompactionError {
    match error {
        StartError::Log(log) => log_error(log),
        other => CompactionError::InvalidInput(detail("invalid_input", other.to_string())),
    }
}

/// The driver called the machine out of order.
pub(crate) fn driver_error(error: &DriverError) -> CompactionError {
    CompactionError::Driver(detail(error.code(), error.to_string()))
}

/// A call made after the transaction handed out its outcome.
pub(crate) fn finished_error() -> CompactionError {
    CompactionError::Driver(detail(
        "driver_finished",
        "the transaction is over; its result was already returned by poll",
    ))
}

/// The core's model facts. Read through the core's own JSON form, so a share it refuses
/// (`prepare-at-percent` above 90) is refused here too: `invalid-input` with code
/// `invalid_model_facts`.
pub(crate) fn model_facts(model: &ModelFacts) -> Result<CoreModelFacts, CompactionError> {
    let facts = serde_json::json!({
        "contextWindow": model.context_window,
        "fixedOverheadTokens": model.fixed_overhead_tokens,
        "prepareAtPercent": model.prepare_at_percent,
    });
    serde_json::from_value(facts)
        .map_err(|error| invalid_input("invalid_model_facts", format!("model-facts: {error}")))
}

pub(crate) fn provider_identity(provider: &ProviderIdentity) -> CoreProviderIdentity {
    CoreProviderIdentity {
        provider: provider.provider.clone(),
        connection_slug: provider.connection_slug.clone(),
        model_id: provider.model_id.clone(),
    }
}

pub(crate) fn trigger(trigger: Trigger) -> CoreTrigger {
    match trigger {
        Trigger::Manual => CoreTrigger::Manual,
        Trigger::PreTurn => CoreTrigger::PreTurn,
        Trigger::MidTurn => CoreTrigger::MidTurn,
        Trigger::Overflow => CoreTrigger::Overflow,
        Trigger::Prepare => CoreTrigger::Prepare,
    }
}

pub(crate) fn compactor(kind: CompactorKind) -> Compactor {
    match kind {
        CompactorKind::TextSummary => Compactor::TextSummary,
        CompactorKind::OpenaiCodexNative => Compactor::OpenaiCodexNative,
    }
}

pub(crate) fn finish_reason(finish: &FinishReason) -> CoreFinish {
    match finish {
        FinishReason::Stop => CoreFinish::Stop,
        FinishReason::Length => CoreFinish::Length,
        FinishReason::ContentFilter => CoreFinish::ContentFilter,
        FinishReason::ToolCalls => CoreFinish::ToolCalls,
        FinishReason::Other(value) => CoreFinish::Other(value.clone()),
        FinishReason::Unknown => CoreFinish::Unknown,
    }
}

pub(crate) fn provider_failure(failure: ProviderFailure) -> CoreFailure {
    let (kind, message) = match failure {
        ProviderFailure::Rejected(m) => (ProviderFailureKind::Rejected, m),
        ProviderFailure::Overflow(m) => (ProviderFailureKind::Overflow, m),
        ProviderFailure::Auth(m) => (ProviderFailureKind::Auth, m),
        ProviderFailure::Billing(m) => (ProviderFailureKind::Billing, m),
        ProviderFailure::RateLimited(m) => (ProviderFailureKind::RateLimited, m),
        ProviderFailure::Unavailable(m) => (ProviderFailureKind::Unavailable, m),
        ProviderFailure::Cancelled(m) => (ProviderFailureKind::Cancelled, m),
    };
    CoreFailure { kind, message }
}

pub(crate) fn token_figures(figures: CoreFigures) -> TokenFigures {
    TokenFigures { before: figures.before, after: figures.after, budget: figures.budget }
}

pub(crate) fn diagnostic(diagnostic: &CoreDiagnostic) -> Diagnostic {
    Diagnostic {
        code: diagnostic.code.as_str().to_owned(),
        detail: diagnostic.detail.clone(),
        tokens: diagnostic.tokens.map(token_figures),
    }
}

/// Parses native output items; an item that is not JSON is a protocol rejection.
pub(crate) fn native_items(items: Vec<String>) -> Result<Vec<Value>, CoreFailure> {
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            serde_json::from_str(item).map_err(|error| CoreFailure {
                kind: ProviderFailureKind::Rejected,
                message: format!("native output item {index} is not JSON: {error}"),
            })
        })
        .collect()
}
