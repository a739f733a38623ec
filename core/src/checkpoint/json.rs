//! The checkpoint's JSON, read and written by hand (see [`crate::json_read`]): every object
//! refuses keys it does not know, as the derives it replaced did.

use serde_json::{Map, Value};

use super::ProviderState;
use super::{Boundary, CheckpointProjection, Coverage, HighWater, HistoryCompactCheckpoint};
use crate::json_read::{Fields, JsonReadError, string, u32, u64, unknown_variant, vec};

/// The JSON shape shared by V2 and V3 (the projection field differs), as read.
pub(super) struct CheckpointWire {
    pub(super) schema_version: u32,
    pub(super) checkpoint_id: String,
    pub(super) session_id: String,
    pub(super) created_at_ms: u64,
    pub(super) high_water: HighWater,
    pub(super) coverage: Coverage,
    pub(super) summary: Option<String>,
    pub(super) provider_state: Option<ProviderState>,
    pub(super) limitations: Vec<String>,
    pub(super) estimated_tokens: u64,
    pub(super) previous_checkpoint_id: Option<String>,
    pub(super) produced_by: Option<String>,
    pub(super) manifest: Option<super::ProjectionManifest>,
}

const CHECKPOINT_FIELDS: &[&str] = &[
    "schemaVersion",
    "checkpointId",
    "sessionId",
    "createdAtMs",
    "highWater",
    "coverage",
    "summary",
    "providerState",
    "limitations",
    "estimatedTokens",
    "previousCheckpointId",
    "producedBy",
    "manifest",
];

/// Reads the fields of a checkpoint; the schema rules are the caller's.
pub(super) fn wire_from_json(value: &Value) -> Result<CheckpointWire, JsonReadError> {
    let fields = Fields::of(value, "struct CheckpointWire", Some(CHECKPOINT_FIELDS))?;
    Ok(CheckpointWire {
        schema_version: fields.required("schemaVersion", u32)?,
        checkpoint_id: fields.required("checkpointId", string)?,
        session_id: fields.required("sessionId", string)?,
        created_at_ms: fields.required("createdAtMs", u64)?,
        high_water: fields.required("highWater", HighWater::from_json)?,
        coverage: fields.required("coverage", Coverage::from_json)?,
        summary: fields.optional("summary", string)?,
        provider_state: fields.optional("providerState", ProviderState::from_json)?,
        limitations: fields.required("limitations", |v| vec(v, string))?,
        estimated_tokens: fields.required("estimatedTokens", u64)?,
        previous_checkpoint_id: fields.optional("previousCheckpointId", string)?,
        produced_by: fields.optional("producedBy", string)?,
        manifest: fields.optional("manifest", manifest)?,
    })
}

/// The documented JSON of a checkpoint, its keys in the documented order.
pub(super) fn checkpoint_to_json(checkpoint: &HistoryCompactCheckpoint) -> Value {
    let mut map = Map::new();
    map.insert("schemaVersion".into(), checkpoint.schema_version().into());
    map.insert("checkpointId".into(), checkpoint.checkpoint_id.clone().into());
    map.insert("sessionId".into(), checkpoint.session_id.clone().into());
    map.insert("createdAtMs".into(), checkpoint.created_at_ms.into());
    map.insert("highWater".into(), checkpoint.high_water.to_json());
    map.insert("coverage".into(), checkpoint.coverage.to_json());
    match &checkpoint.projection {
        CheckpointProjection::Summary(text) => map.insert("summary".into(), text.clone().into()),
        CheckpointProjection::ProviderState(state) => {
            map.insert("providerState".into(), state.to_json())
        }
    };
    let limitations = checkpoint.limitations.iter().map(|l| Value::from(l.clone())).collect();
    map.insert("limitations".into(), Value::Array(limitations));
    map.insert("estimatedTokens".into(), checkpoint.estimated_tokens.into());
    if let Some(previous) = &checkpoint.previous_checkpoint_id {
        map.insert("previousCheckpointId".into(), previous.clone().into());
    }
    if let Some(produced_by) = &checkpoint.produced_by {
        map.insert("producedBy".into(), produced_by.clone().into());
    }
    if let Some(manifest) = &checkpoint.manifest {
        let value = serde_json::to_value(manifest).unwrap_or(Value::Null);
        map.insert("manifest".into(), value);
    }
    Value::Object(map)
}

/// The manifest, read by its serde derive (metadata, read rarely).
fn manifest(value: &Value) -> Result<super::ProjectionManifest, JsonReadError> {
    serde_json::from_value(value.clone()).map_err(|e| JsonReadError(e.to_string()))
}

fn object<const N: usize>(entries: [(&str, Value); N]) -> Value {
    Value::Object(entries.into_iter().map(|(key, value)| (key.to_owned(), value)).collect())
}

impl HighWater {
    /// Reads `{ "name", "seq" }` (no other key).
    pub fn from_json(value: &Value) -> Result<Self, JsonReadError> {
        let fields = Fields::of(value, "struct HighWater", Some(&["name", "seq"]))?;
        Ok(HighWater { name: fields.required("name", string)?, seq: fields.required("seq", u64)? })
    }

    /// `{ "name", "seq" }`.
    pub fn to_json(&self) -> Value {
        object([("name", self.name.clone().into()), ("seq", self.seq.into())])
    }
}

crate::serde_via_value!(HighWater);

impl Coverage {
    /// Reads `{ "eventCount", "turnCount", "through", "sourceDigest" }` (no other key).
    pub fn from_json(value: &Value) -> Result<Self, JsonReadError> {
        let known: &[&str] = &["eventCount", "turnCount", "through", "sourceDigest"];
        let fields = Fields::of(value, "struct Coverage", Some(known))?;
        Ok(Coverage {
            event_count: fields.required("eventCount", u64)?,
            turn_count: fields.required("turnCount", u64)?,
            through: fields.required("through", Boundary::from_json)?,
            source_digest: fields.required("sourceDigest", string)?,
        })
    }

    /// `{ "eventCount", "turnCount", "through", "sourceDigest" }`.
    pub fn to_json(&self) -> Value {
        object([
            ("eventCount", self.event_count.into()),
            ("turnCount", self.turn_count.into()),
            ("through", self.through.to_json()),
            ("sourceDigest", self.source_digest.clone().into()),
        ])
    }
}

crate::serde_via_value!(Coverage);

impl Boundary {
    /// Reads `{ "runId", "turnId", "runtimeEventId" }` (no other key).
    pub fn from_json(value: &Value) -> Result<Self, JsonReadError> {
        let known: &[&str] = &["runId", "turnId", "runtimeEventId"];
        let fields = Fields::of(value, "struct Boundary", Some(known))?;
        Ok(Boundary {
            run_id: fields.required("runId", string)?,
            turn_id: fields.required("turnId", string)?,
            runtime_event_id: fields.required("runtimeEventId", string)?,
        })
    }

    /// `{ "runId", "turnId", "runtimeEventId" }`.
    pub fn to_json(&self) -> Value {
        object([
            ("runId", self.run_id.clone().into()),
            ("turnId", self.turn_id.clone().into()),
            ("runtimeEventId", self.runtime_event_id.clone().into()),
        ])
    }
}

crate::serde_via_value!(Boundary);

const PROVIDER_STATE_KINDS: &[&str] = &["openai_codex_remote_v2"];
const CODEX_FIELDS: &[&str] = &["kind", "connectionSlug", "modelId", "itemId", "encryptedContent"];

impl ProviderState {
    /// Reads provider state: `kind` names the variant, whose fields sit beside it.
    pub fn from_json(value: &Value) -> Result<Self, JsonReadError> {
        let fields = Fields::of(value, "internally tagged enum ProviderState", None)?;
        let kind = fields.tag("kind")?;
        if kind != PROVIDER_STATE_KINDS[0] {
            return Err(unknown_variant(kind, PROVIDER_STATE_KINDS));
        }
        let fields = Fields::of(value, "struct variant ProviderState", Some(CODEX_FIELDS))?;
        Ok(ProviderState::OpenaiCodexRemoteV2 {
            connection_slug: fields.required("connectionSlug", string)?,
            model_id: fields.required("modelId", string)?,
            item_id: fields.required("itemId", string)?,
            encrypted_content: fields.required("encryptedContent", string)?,
        })
    }

    /// The state as JSON, `kind` first.
    pub fn to_json(&self) -> Value {
        match self {
            ProviderState::OpenaiCodexRemoteV2 {
                connection_slug,
                model_id,
                item_id,
                encrypted_content,
            } => object([
                ("kind", self.kind_name().into()),
                ("connectionSlug", connection_slug.clone().into()),
                ("modelId", model_id.clone().into()),
                ("itemId", item_id.clone().into()),
                ("encryptedContent", encrypted_content.clone().into()),
            ]),
        }
    }
}

crate::serde_via_value!(ProviderState);

#[cfg(test)]
mod tests;
