//! The compaction transaction and the pieces it is built from: summary prompt and validation,
//! rolling summarizer input, the malformed-input circuit and provider-native requests.
//!
//! Entry point: [`Compaction`], a sans-IO state machine (see [`transaction`] for the call order).

pub(crate) mod circuit;
pub(crate) mod effects;
pub(crate) mod extractive;
mod fold_search;
pub(crate) mod native;
mod plan;
mod run;
pub(crate) mod summary_request;
pub(crate) mod summary_template;
pub(crate) mod summary_validation;
pub(crate) mod transaction;

pub use circuit::{
    FingerprintInput, InputFingerprint, MALFORMED_CIRCUIT_CAPACITY, MalformedInputCircuit,
    RequestShape, arms_circuit, fingerprint,
};
pub use effects::{
    AFTER_COMPACTION_SHARE_PERCENT, AppendFailure, Attempt, AttemptKind, CompactionOutcome, Effect,
    OutcomeKind, ProviderFailure, ProviderFailureKind, RAW_TAIL_SHARE_PERCENT, SummarizeEffect,
    SummaryResponse, Trigger,
};
pub use extractive::{EXTRACTIVE_PRODUCER, extractive_summary};
pub use native::{
    COMPACTION_TRIGGER_TYPE, INTERRUPTED_CALL_OUTPUT, NativeBinding, NativeInputError,
    NativeOutputDefect, NativeRequest, OPENAI_CODEX_PROVIDER, ProviderIdentity, REDACTED,
    accept_native_output, build_native_request, provider_state_matches, redact_provider_state,
};
pub use summary_request::{
    OVERFLOW_RETRY_DIVISOR, SummaryInputError, SummaryPurpose, SummaryRequest,
    TOOL_RESULT_OMISSION_MARKER, build_oversized_summary_request, build_repair_request,
    build_summary_request, shrink_for_overflow_retry, summary_payload,
};
pub use summary_template::{
    REPAIR_SEPARATOR, SUMMARY_PROMPT_VERSION, SUMMARY_SECTIONS, initial_instructions,
};
pub use summary_validation::{
    FinishReason, SECTION_SYNONYMS, SummaryDefect, repair_sizing_samples, validate_summary,
};
pub use transaction::{CompactInput, Compaction, Compactor, DriverError, StartError, Step};

// The summary quality gate, re-exported here.
pub use crate::quality::gate::{EXACT_ARTIFACTS_LINE, RETENTION_THRESHOLD_PERCENT};
pub use crate::quality::{
    Artifact, ArtifactClass, ClassRetention, QUALITY_GATE_VERSION, Retention, extract_artifacts,
    visible_text,
};
