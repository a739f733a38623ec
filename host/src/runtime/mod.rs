//! The session runtime: turns the four triggers (pre-turn, mid-turn, provider overflow,
//! manual) into one Compact command and drives the core's compaction transaction against the
//! SQLite store and a [`Summarizer`] / [`NativeCompactor`].
//!
//! Runtime facts: a compaction's outcome and diagnostics are recorded as an AgentRun event of
//! kind `compaction_outcome_recorded` (never model-visible); only a failed manual compaction
//! adds a model-visible `runtime_note` (the core's `failure_note`).

mod compactors;
mod error;
mod log_cache;
mod manual;
mod prepare;
mod session;
mod stop;
mod transaction;
mod usage;

pub use crate::preparation::PreparationStats;
pub use compactors::{ExtractiveSummarizer, NativeCompactor, NoNativeCompactor, Summarizer};
pub use error::RuntimeError;
pub use session::{BaseEstimator, Clock, ProjectionReport, SessionConfig, SessionRuntime};
pub use stop::StopSignal;
pub use transaction::{CompactionReport, PreparationState};
pub use usage::exact_estimator_for;
