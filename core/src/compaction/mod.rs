//! The compaction transaction and the pieces it is built from: summary prompt and validation,
//! rolling summarizer input, the malformed-input circuit and provider-native requests.
//!
//! Entry point: [`Compaction`], a sans-IO state machine (see [`transaction`] for the call order).

pub mod circuit;
pub mod effects;
pub mod extractive;
mod fold_search;
pub mod native;
mod options;
mod plan;
mod run;
pub mod summary_request;
pub mod summary_template;
pub mod summary_validation;
pub mod transaction;

pub use effects::{
    AFTER_COMPACTION_SHARE_PERCENT, AppendFailure, Attempt, AttemptKind, CompactionOutcome, Effect,
    OutcomeKind, ProviderFailure, ProviderFailureKind, RAW_TAIL_SHARE_PERCENT, SummarizeEffect,
    SummaryResponse, Trigger,
};
pub use options::CompactOptions;
pub use transaction::{CompactInput, Compaction, Compactor, DriverError, StartError, Step};
