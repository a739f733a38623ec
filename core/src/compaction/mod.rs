//! The compaction transaction and the pieces it is built from: summary prompt and validation,
//! rolling summarizer input, the malformed-input circuit and provider-native requests.
//!
//! Entry point: [`Compaction`], a sans-IO state machine (its docs state the call order).

mod adoption;
pub(crate) mod circuit;
pub(crate) mod effects;
mod envelope;
#[cfg(test)]
mod envelope_tests;
pub(crate) mod extractive;
mod fold_search;
mod input;
pub(crate) mod native;
mod options;
mod plan;
mod run;
pub(crate) mod summary_request;
pub(crate) mod summary_template;
pub(crate) mod summary_validation;
pub(crate) mod transaction;

pub use adoption::prepare_due;
pub use circuit::{
    CircuitStateError, FingerprintInput, InputFingerprint, MALFORMED_CIRCUIT_CAPACITY,
    MalformedInputCircuit, RequestShape, arms_circuit, fingerprint,
};
pub use effects::{
    AFTER_COMPACTION_SHARE_PERCENT, AppendFailure, Attempt, AttemptKind, CompactionOutcome,
    DriverError, Effect, OutcomeKind, PREPARE_AT_PERCENT, ProviderFailure, ProviderFailureKind,
    RAW_TAIL_SHARE_PERCENT, Step, SummarizeEffect, SummaryResponse, Trigger,
};
pub use extractive::{
    EXTRACTIVE_PRODUCER, extractive_summary, extractive_summary_for, extractive_summary_of,
};
pub use input::{CompactInput, Compactor, StartError};
pub use native::{
    COMPACTION_TRIGGER_TYPE, INTERRUPTED_CALL_OUTPUT, NativeBinding, NativeInputError,
    NativeOutputDefect, NativeRequest, OPENAI_CODEX_PROVIDER, ProviderIdentity, REDACTED,
    accept_native_output, build_native_request, provider_state_matches, redact_provider_state,
};
pub use summary_request::{
    OVERFLOW_RETRY_DIVISOR, OmittedPayload, SummaryInputError, SummaryPurpose, SummaryRequest,
    build_oversized_summary_request, build_repair_request, build_summary_request,
    shrink_for_overflow_retry, summary_payload,
};
pub use summary_template::{
    REPAIR_SEPARATOR, SUMMARY_PROMPT_VERSION, SUMMARY_SECTIONS, SummarySection,
    TOOL_RESULT_OMISSION_MARKER, initial_instructions,
};
pub use summary_validation::{
    FinishReason, SECTION_SYNONYMS, SectionSynonyms, SummaryDefect, ValidatedSummary,
    repair_sizing_samples, validate_summary,
};
pub use transaction::Compaction;

// The summary quality gate, re-exported here.
pub use crate::quality::gate::{EXACT_ARTIFACTS_LINE, RETENTION_THRESHOLD_PERCENT};
pub use crate::quality::{
    Artifact, ArtifactClass, ClassRetention, QUALITY_GATE_VERSION, Retention, extract_artifacts,
    visible_text,
};
pub use options::CompactOptions;
