//! The projection manifest: how a checkpoint's projection was made and what it kept.
//!
//! A checkpoint proves *which* events it covers (counts, boundary, digest); its manifest records
//! *how* the projection of them was produced (summarizer identity, prompt version, the shape of
//! the summarizer request, the token estimator) and, for text summaries, what the source-bearing
//! quality gate measured (scores per artifact class, the artifacts still lost, the gate's
//! version). It is metadata about a projection, never a source of truth: nothing replays from
//! it, and a checkpoint without one (written before manifests existed, or by another writer)
//! is as valid as one with it. JSON: the checkpoint's optional `manifest` object, camelCase,
//! unknown keys refused (see `docs/events.md`).

use serde::{Deserialize, Serialize};

/// Version of the manifest's own shape.
pub const MANIFEST_VERSION: u32 = 1;

/// How a checkpoint's projection was produced and what it kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProjectionManifest {
    /// [`MANIFEST_VERSION`] of the writer.
    pub version: u32,
    /// The summarizer: `extractive`, `text-summary:<model>`, or the provider route of a
    /// provider-native compaction (`openai_codex_remote_v2:<model>`).
    pub summarizer: String,
    /// [`crate::compaction::summary_template::SUMMARY_PROMPT_VERSION`] of the prompt a text
    /// summary was asked with; `None` for provider-native state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_version: Option<u32>,
    /// `sha256:<hex>` of the summarizer request's shape: its purpose, the role of each message
    /// and the instruction text (not the events), so two checkpoints asked the same way have
    /// the same hash.
    pub request_shape: String,
    /// The token estimator's name ([`crate::budget::TokenEstimator::name`]).
    pub estimator: String,
    /// What the quality gate measured; `None` for provider-native state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<QualityRecord>,
}

/// Kept and looked-for artifacts of one class, or of all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Score {
    /// Artifacts found verbatim.
    pub kept: u32,
    /// Artifacts looked for.
    pub total: u32,
}

impl Score {
    /// The share kept, in whole percent (100 when nothing was looked for).
    pub fn percent(self) -> u32 {
        if self.total == 0 {
            100
        } else {
            u32::try_from(u64::from(self.kept) * 100 / u64::from(self.total)).unwrap_or(100)
        }
    }
}

/// Scores per artifact class, and pooled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scores {
    /// The task's constraint sentences.
    pub constraint: Score,
    /// Lines of the newest plan.
    pub plan: Score,
    /// Error lines of tool results.
    pub error: Score,
    /// Commands as issued.
    pub command: Score,
    /// Paths someone referred to.
    pub path: Score,
    /// Identifiers the model used.
    pub identifier: Score,
    /// All classes pooled.
    pub overall: Score,
}

/// What the source-bearing quality gate measured for a text summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QualityRecord {
    /// [`crate::quality::QUALITY_GATE_VERSION`].
    pub gate_version: u32,
    /// [`crate::quality::gate::RETENTION_THRESHOLD_PERCENT`] in force.
    pub threshold_percent: u32,
    /// Retention of the newly folded events' artifacts in the summarizer's own text.
    pub before: Scores,
    /// The same, in the summary as recorded (after a repair request and the exact-artifacts
    /// list, when either happened).
    pub after: Scores,
    /// Retention of the artifacts of the whole covered prefix (its newest
    /// `COVERED_SCORE_WINDOW` events) in the recorded summary: what a rolling
    /// chain still knows.
    pub covered: Score,
    /// The best `covered` percent of the chain since its last full re-compaction (this
    /// checkpoint's own included): the high water the decay trigger compares with.
    pub chain_best_percent: u32,
    /// Artifacts of the newly folded events still lost, `<class>: <text>`, highest priority
    /// first, at most [`MAX_LOST_LISTED`].
    pub lost: Vec<String>,
    /// Artifacts the gate appended, copied from the log.
    pub appended: u32,
    /// A repair request naming the missing artifacts was sent to the summarizer.
    pub repair_requested: bool,
    /// This summary re-compacted the chain from the start of the log (the decay trigger).
    pub recompacted: bool,
}

/// At most this many lost artifacts are listed in a manifest.
pub const MAX_LOST_LISTED: usize = 20;
