//! `HistoryCompactCheckpoint`: a durable, lossy projection of an ordered prefix of the log.
//!
//! Schema V2 carries a text summary; schema V3 carries provider-native state from a closed
//! union (today only `openai_codex_remote_v2`). Both carry the same identity, high water,
//! coverage (counts, through-boundary, SHA-256 source digest), limitations, estimate and
//! lineage. Parsing rejects unknown schema versions with a typed error so that an older reader
//! falls back to raw history instead of guessing.

// The coverage proof, recovery and the replay gate, re-exported here.
pub use crate::prefix_match::{
    EventKeys, PrefixMatch, PrefixMismatch, PrefixSweep, SweepResult, coverage_of,
    match_checkpoint_prefix, match_checkpoint_prefix_from,
};
pub use crate::recovery::{
    RecordedCheckpointEvent, Recovery, RetractionEvent, RetractionPayload, SkipReason,
    SkippedCheckpoint, SuccessorError, is_valid_successor, select_recovered_checkpoint,
    select_recovered_checkpoint_with,
};
pub use crate::replay::{
    ReplayDecision, ReplayPlan, ReplayQuestion, ReplayRejection, checkpoint_tokens, evaluate_replay,
};
pub use crate::safe_prefix::{
    Fold, PrefixOptions, SafePrefix, safe_boundaries, select_fitting_tail, select_safe_prefix,
    split_current_turn, turn_count,
};
pub use crate::verified_prefix::{
    CheckedLog, FullVerification, FullVerificationWith, PrefixVerifier, VerifiedCoverage,
    VerifiedPrefix,
};

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod manifest;
mod wire;

pub use manifest::{
    MANIFEST_VERSION, MAX_LOST_LISTED, ProjectionManifest, QualityRecord, Score, Scores,
};

/// Schema version of text-summary checkpoints.
pub const SCHEMA_V2: u32 = 2;
/// Schema version of provider-state checkpoints.
pub const SCHEMA_V3: u32 = 3;

/// The identity of one event, used as a checkpoint's `through` boundary.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Boundary {
    /// Run id of the last covered event.
    pub run_id: String,
    /// Turn id of the last covered event.
    pub turn_id: String,
    /// Event id of the last covered event.
    pub runtime_event_id: String,
}

/// Which ordered prefix of the log a checkpoint covers, and the proof.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Coverage {
    /// Number of events in the covered prefix.
    pub event_count: u64,
    /// Number of distinct turns touched by the covered prefix.
    pub turn_count: u64,
    /// The last covered event.
    pub through: Boundary,
    /// `sha256:<hex>` over the canonical serialization of the prefix (see `docs/digest.md`).
    pub source_digest: String,
}

/// Which high-water decision produced a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HighWater {
    /// The trigger that crossed it: `manual`, `pre_turn`, `mid_turn` or `overflow`.
    pub name: String,
    /// `seq` of the last covered event: the high-water mark in the log.
    pub seq: u64,
}

/// Provider-native compact state (schema V3). A closed union: a new provider needs a new,
/// validated variant.
/// JSON: `{ "kind": "openai_codex_remote_v2", "connectionSlug", "modelId", "itemId",
/// "encryptedContent" }`, no other keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum ProviderState {
    #[serde(rename_all = "camelCase")]
    /// One OpenAI Codex remote compaction (v2) output item.
    OpenaiCodexRemoteV2 {
        /// Connection the state was produced on.
        connection_slug: String,
        /// Model the state was produced by.
        model_id: String,
        /// Provider item id of the compaction output.
        item_id: String,
        /// Opaque encrypted content; never rendered as text, never logged.
        encrypted_content: String,
    },
}

impl ProviderState {
    /// Stable name of the variant.
    pub fn kind_name(&self) -> &'static str {
        match self {
            ProviderState::OpenaiCodexRemoteV2 { .. } => "openai_codex_remote_v2",
        }
    }

    /// The connection and model the state is bound to.
    pub fn binding(&self) -> (&str, &str) {
        match self {
            ProviderState::OpenaiCodexRemoteV2 { connection_slug, model_id, .. } => {
                (connection_slug, model_id)
            }
        }
    }
}

/// The projection value of a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckpointProjection {
    /// Schema V2: a structured continuation summary.
    Summary(String),
    /// Schema V3: provider-native state.
    ProviderState(ProviderState),
}

/// A durable projection of an ordered prefix of the RuntimeEvent log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryCompactCheckpoint {
    /// Unique id (supplied by the host).
    pub checkpoint_id: String,
    /// Session the checkpoint belongs to.
    pub session_id: String,
    /// Creation time in milliseconds since the Unix epoch (supplied by the host).
    pub created_at_ms: u64,
    /// The high-water decision that produced it.
    pub high_water: HighWater,
    /// The covered prefix and its proof.
    pub coverage: Coverage,
    /// Summary (V2) or provider state (V3).
    pub projection: CheckpointProjection,
    /// What the projection cannot promise (e.g. "exact wording remains in the ledger").
    pub limitations: Vec<String>,
    /// Estimated model-visible tokens of the projection when it was accepted.
    pub estimated_tokens: u64,
    /// Checkpoint this one succeeds (rolling update or equal-coverage rewrite).
    pub previous_checkpoint_id: Option<String>,
    /// What produced the projection, e.g. `extractive`, `openai-chat:gpt-4.1`.
    pub produced_by: Option<String>,
    /// How the projection was made and what it kept (metadata, never replayed).
    pub manifest: Option<ProjectionManifest>,
}

impl HistoryCompactCheckpoint {
    /// Schema version implied by the projection value.
    pub fn schema_version(&self) -> u32 {
        match self.projection {
            CheckpointProjection::Summary(_) => SCHEMA_V2,
            CheckpointProjection::ProviderState(_) => SCHEMA_V3,
        }
    }

    /// The text summary, for V2 checkpoints.
    pub fn summary(&self) -> Option<&str> {
        match &self.projection {
            CheckpointProjection::Summary(text) => Some(text),
            CheckpointProjection::ProviderState(_) => None,
        }
    }

    /// The provider state, for V3 checkpoints.
    pub fn provider_state(&self) -> Option<&ProviderState> {
        match &self.projection {
            CheckpointProjection::Summary(_) => None,
            CheckpointProjection::ProviderState(state) => Some(state),
        }
    }

    /// Serializes to the documented JSON value (see `docs/events.md`): `schemaVersion`,
    /// identity, `highWater`, `coverage`, `summary` (V2) or `providerState` (V3),
    /// `limitations`, `estimatedTokens`, then the optional lineage fields and `manifest` when
    /// set.
    pub fn to_value(&self) -> Value {
        crate::json_read::text::to_value(&wire::CheckpointWire::from(self)).unwrap_or(Value::Null)
    }

    /// Serializes to compact JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(&wire::CheckpointWire::from(self)).unwrap_or_default()
    }

    /// Parses the documented JSON text.
    pub fn from_json(json: &str) -> Result<Self, CheckpointParseError> {
        let value = crate::json_read::text::value_from_text(json)
            .map_err(|e| CheckpointParseError::Syntax(e.to_string()))?;
        Self::from_value(value)
    }

    /// Parses the documented JSON value. Unknown schema versions are a typed error.
    pub fn from_value(value: Value) -> Result<Self, CheckpointParseError> {
        let version = value
            .get("schemaVersion")
            .and_then(Value::as_u64)
            .ok_or(CheckpointParseError::MissingSchemaVersion)?;
        if version != u64::from(SCHEMA_V2) && version != u64::from(SCHEMA_V3) {
            return Err(CheckpointParseError::UnsupportedSchemaVersion(version));
        }
        let wire: wire::CheckpointWire = serde_json::from_value(value)
            .map_err(|e| CheckpointParseError::Invalid(e.to_string()))?;
        let projection = match (wire.schema_version, wire.summary, wire.provider_state) {
            (SCHEMA_V2, Some(summary), None) => CheckpointProjection::Summary(summary),
            (SCHEMA_V3, None, Some(state)) => CheckpointProjection::ProviderState(state),
            (SCHEMA_V2, _, _) => {
                return Err(CheckpointParseError::Invalid(
                    "schema 2 needs `summary` and no `providerState`".into(),
                ));
            }
            _ => {
                return Err(CheckpointParseError::Invalid(
                    "schema 3 needs `providerState` and no `summary`".into(),
                ));
            }
        };
        if !wire.coverage.source_digest.starts_with("sha256:")
            || wire.coverage.source_digest.len() != 71
        {
            return Err(CheckpointParseError::Invalid(
                "sourceDigest must be sha256:<64 hex>".into(),
            ));
        }
        if wire.coverage.event_count == 0 {
            return Err(CheckpointParseError::Invalid("coverage.eventCount must be > 0".into()));
        }
        Ok(Self {
            checkpoint_id: wire.checkpoint_id,
            session_id: wire.session_id,
            created_at_ms: wire.created_at_ms,
            high_water: wire.high_water,
            coverage: wire.coverage,
            projection,
            limitations: wire.limitations,
            estimated_tokens: wire.estimated_tokens,
            previous_checkpoint_id: wire.previous_checkpoint_id,
            produced_by: wire.produced_by,
            manifest: wire.manifest,
        })
    }
}

/// Why a checkpoint could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointParseError {
    /// The text is not JSON.
    #[error("checkpoint is not valid JSON: {0}")]
    Syntax(String),
    /// `schemaVersion` is missing.
    #[error("checkpoint has no schemaVersion")]
    MissingSchemaVersion,
    /// A schema this reader does not understand: fall back to raw history.
    #[error("unsupported checkpoint schema version {0}")]
    UnsupportedSchemaVersion(u64),
    /// A field is missing, unknown or of the wrong shape.
    #[error("invalid checkpoint: {0}")]
    Invalid(String),
}

impl CheckpointParseError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            CheckpointParseError::Syntax(_) => "checkpoint_syntax",
            CheckpointParseError::MissingSchemaVersion => "checkpoint_missing_schema_version",
            CheckpointParseError::UnsupportedSchemaVersion(_) => "checkpoint_schema_unsupported",
            CheckpointParseError::Invalid(_) => "checkpoint_invalid",
        }
    }
}

/// Serde uses the documented JSON form, with the schema-version check of [`HistoryCompactCheckpoint::from_value`].
impl Serialize for HistoryCompactCheckpoint {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        wire::CheckpointWire::from(self).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for HistoryCompactCheckpoint {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        HistoryCompactCheckpoint::from_value(value).map_err(serde::de::Error::custom)
    }
}
