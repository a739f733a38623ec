//! The option schema of a compaction as JSON callers write it (the npm package's `compact()`
//! input without its `events`): camelCase keys, nothing else accepted.

use serde::Deserialize;
use serde_json::Value;

use super::circuit::MalformedInputCircuit;
use super::{Compactor, Trigger};
use crate::budget::ModelFacts;
use crate::calibration::Calibration;
use crate::compaction::native::ProviderIdentity;

/// A compaction's options: `{ checkpoint?, model?, trigger, provider?, compactor?,
/// currentTurnId?, checkpointId, nowMs, summarizerLabel?, circuit?, calibration? }`; with the
/// events, they make a [`super::CompactInput`].
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompactOptions {
    /// The current checkpoint, as JSON (read by
    /// [`crate::HistoryCompactCheckpoint::from_value`], which reports its own codes); `null`
    /// is none.
    #[serde(default)]
    pub checkpoint: Option<Value>,
    /// Facts about the model.
    #[serde(default)]
    pub model: Option<ModelFacts>,
    /// Why the compaction runs.
    pub trigger: Trigger,
    /// The provider, connection and model of the requests (none: empty names).
    #[serde(default)]
    pub provider: Option<ProviderIdentity>,
    /// The compactor (text summary by default).
    #[serde(default)]
    pub compactor: Option<Compactor>,
    /// The turn being produced now.
    #[serde(default)]
    pub current_turn_id: Option<String>,
    /// The id of the checkpoint to record.
    pub checkpoint_id: String,
    /// The time of the compaction, in milliseconds since the Unix epoch.
    pub now_ms: u64,
    /// The summarizer's label, recorded in the checkpoint.
    #[serde(default)]
    pub summarizer_label: Option<String>,
    /// The malformed-input circuit of the session's last compaction.
    #[serde(default)]
    pub circuit: Option<MalformedInputCircuit>,
    /// The session's calibration (see [`crate::projection::calibrated_estimator`]).
    #[serde(default)]
    pub calibration: Option<Calibration>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn compact_options_need_a_trigger_an_id_and_a_time() {
        let options: CompactOptions = serde_json::from_value(
            json!({ "trigger": "manual", "checkpointId": "cp-1", "nowMs": 5, "compactor": "text-summary" }),
        )
        .unwrap();
        assert_eq!((options.trigger, options.now_ms), (Trigger::Manual, 5));
        assert!(serde_json::from_value::<CompactOptions>(json!({ "trigger": "manual" })).is_err());
        let extra = json!({ "trigger": "manual", "checkpointId": "c", "nowMs": 1, "events": [] });
        assert!(serde_json::from_value::<CompactOptions>(extra).is_err());
    }
}
