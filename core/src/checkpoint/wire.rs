//! The checkpoint's JSON shape, shared by V2 and V3 (the projection field differs): serde's
//! derive, every object refusing keys it does not know.

use serde::{Deserialize, Serialize};

use super::{CheckpointProjection, Coverage, HighWater, HistoryCompactCheckpoint, ProviderState};

/// A checkpoint as written and read; the schema rules are checked after reading.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct CheckpointWire {
    pub(super) schema_version: u32,
    pub(super) checkpoint_id: String,
    pub(super) session_id: String,
    pub(super) created_at_ms: u64,
    pub(super) high_water: HighWater,
    pub(super) coverage: Coverage,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) provider_state: Option<ProviderState>,
    pub(super) limitations: Vec<String>,
    pub(super) estimated_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) previous_checkpoint_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) produced_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) manifest: Option<super::ProjectionManifest>,
}

impl From<&HistoryCompactCheckpoint> for CheckpointWire {
    fn from(checkpoint: &HistoryCompactCheckpoint) -> Self {
        let (summary, provider_state) = match &checkpoint.projection {
            CheckpointProjection::Summary(text) => (Some(text.clone()), None),
            CheckpointProjection::ProviderState(state) => (None, Some(state.clone())),
        };
        CheckpointWire {
            schema_version: checkpoint.schema_version(),
            checkpoint_id: checkpoint.checkpoint_id.clone(),
            session_id: checkpoint.session_id.clone(),
            created_at_ms: checkpoint.created_at_ms,
            high_water: checkpoint.high_water.clone(),
            coverage: checkpoint.coverage.clone(),
            summary,
            provider_state,
            limitations: checkpoint.limitations.clone(),
            estimated_tokens: checkpoint.estimated_tokens,
            previous_checkpoint_id: checkpoint.previous_checkpoint_id.clone(),
            produced_by: checkpoint.produced_by.clone(),
            manifest: checkpoint.manifest.clone(),
        }
    }
}

#[cfg(test)]
mod tests;
