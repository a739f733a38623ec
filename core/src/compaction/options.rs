//! The option schema of a compaction as JSON callers write it (the npm package's `compact()`
//! input without its `events`): camelCase keys, nothing else accepted.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::circuit::MalformedInputCircuit;
use super::{CompactInput, Compactor, Trigger};
use crate::budget::ModelFacts;
use crate::calibration::Calibration;
use crate::checkpoint::{CheckpointParseError, HistoryCompactCheckpoint};
use crate::compaction::native::ProviderIdentity;
use crate::event::RuntimeEvent;

/// A compaction's options: `{ checkpoint?, model?, trigger, provider?, compactor?,
/// currentTurnId?, checkpointId, nowMs, summarizerLabel?, circuit?, calibration?, prepared? }`;
/// with the events, they make a [`CompactInput`] ([`CompactOptions::into_input`]).
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
    /// A checkpoint a background preparation built (an outcome `prepared`'s checkpoint, as
    /// JSON; `null` is none): see [`CompactInput::prepared`].
    #[serde(default)]
    pub prepared: Option<Value>,
}

impl CompactOptions {
    /// The transaction input of these options over `events`: the checkpoints read by
    /// [`HistoryCompactCheckpoint::from_value`] (whose error is the first one that does not
    /// parse), no provider as empty names, the text summary as the default compactor. The
    /// calibration comes apart: the host builds its estimator from it.
    pub fn into_input(
        self,
        events: Cow<'_, [RuntimeEvent]>,
    ) -> Result<(CompactInput<'_>, Option<Calibration>), CheckpointParseError> {
        let read = |value: Option<Value>| {
            value.filter(|v| !v.is_null()).map(HistoryCompactCheckpoint::from_value).transpose()
        };
        let provider = self.provider.unwrap_or_else(|| ProviderIdentity {
            provider: String::new(),
            connection_slug: String::new(),
            model_id: String::new(),
        });
        let input = CompactInput {
            trigger: self.trigger,
            events,
            current_turn_id: self.current_turn_id,
            checkpoint: read(self.checkpoint)?,
            model: self.model.unwrap_or_default(),
            provider,
            compactor: self.compactor.unwrap_or(Compactor::TextSummary),
            new_checkpoint_id: self.checkpoint_id,
            now_ms: self.now_ms,
            provider_options: None,
            summarizer_label: self.summarizer_label,
            circuit: self.circuit.unwrap_or_default(),
            prepared: read(self.prepared)?,
        };
        Ok((input, self.calibration))
    }
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

    #[test]
    fn into_input_reads_the_checkpoints_and_fills_the_defaults() {
        let options: CompactOptions = serde_json::from_value(
            json!({ "trigger": "prepare", "checkpointId": "cp-1", "nowMs": 5, "checkpoint": null }),
        )
        .unwrap();
        let (input, calibration) = options.into_input(Vec::new().into()).unwrap();
        assert_eq!((input.trigger, input.compactor), (Trigger::Prepare, Compactor::TextSummary));
        assert!(input.checkpoint.is_none() && input.prepared.is_none() && calibration.is_none());
        assert_eq!(input.provider.model_id, "");
        let broken =
            json!({ "trigger": "mid-turn", "checkpointId": "c", "nowMs": 1, "prepared": {} });
        let options: CompactOptions = serde_json::from_value(broken).unwrap();
        let error = options.into_input(Vec::new().into()).unwrap_err();
        assert_eq!(error.code(), "checkpoint_missing_schema_version");
    }
}
