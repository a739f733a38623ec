//! Continuation quality: what the next model call still knows after a compaction.
//!
//! A checkpoint's coverage is proven by counts and digests; what it *kept* is measured here,
//! from the source: [`artifacts`] extracts the exact paths, commands, error lines, identifiers,
//! constraint sentences and plan lines of the folded events, and [`retention`] checks which of
//! them a summary or a whole request still carries verbatim. The extractive summarizer chooses
//! what to keep from the same artifacts, the quality gate scores every summary with them, and
//! the continuation-quality benchmark (`bench/quality.sh`) scores requests of contextfold and of
//! the baselines (truncation, observation masking) with them.

pub(crate) mod artifacts;
pub(crate) mod gate;
pub(crate) mod retention;

pub use artifacts::{Artifact, ArtifactClass, extract_artifacts};
pub use gate::QUALITY_GATE_VERSION;
pub(crate) use gate::{GateOutcome, covered_score, gate_summary};
pub use retention::{ClassRetention, Retention, visible_text};

#[cfg(test)]
mod tests;
