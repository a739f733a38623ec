//! The option schemas of the projection and import entry points, as the npm package (and any
//! JSON caller) writes them: camelCase keys, nothing else accepted.

use serde::Deserialize;
use serde_json::Value;

use super::OutputFormat;
use super::openai_chat::ImportContext;
use crate::budget::ModelFacts;
use crate::calibration::Calibration;
use crate::compaction::native::ProviderIdentity;

/// The options of a projection (`project()` without its `events`): `{ checkpoint?, model?,
/// currentTurnId?, format?, provider?, failOpen?, calibration? }`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProjectOptions {
    /// The checkpoint to replay, as JSON (read by
    /// [`crate::HistoryCompactCheckpoint::from_value`], which reports its own codes); `null`
    /// is none.
    #[serde(default)]
    pub checkpoint: Option<Value>,
    /// Facts about the model (its window sets the budget).
    #[serde(default)]
    pub model: Option<ModelFacts>,
    /// The turn being produced now.
    #[serde(default)]
    pub current_turn_id: Option<String>,
    /// The wire format of the messages (AI SDK by default).
    #[serde(default)]
    pub format: Option<OutputFormat>,
    /// The provider, connection and model of the request.
    #[serde(default)]
    pub provider: Option<ProviderIdentity>,
    /// Fail-open mode (see [`super::ProjectInput::fail_open`]).
    #[serde(default)]
    pub fail_open: Option<bool>,
    /// The session's calibration (see [`super::project_calibrated`]).
    #[serde(default)]
    pub calibration: Option<Calibration>,
}

/// The id options of the importers: `{ sessionId, runIdPrefix?, turnIdPrefix?,
/// eventIdPrefix?, responseIdPrefix?, firstSeq?, firstTurn? }`; an id left out keeps the
/// default of [`ImportContext::new`].
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImportOptions {
    /// Session id of every event.
    pub session_id: String,
    /// See [`ImportContext::run_id_prefix`].
    #[serde(default)]
    pub run_id_prefix: Option<String>,
    /// See [`ImportContext::turn_id_prefix`].
    #[serde(default)]
    pub turn_id_prefix: Option<String>,
    /// See [`ImportContext::event_id_prefix`].
    #[serde(default)]
    pub event_id_prefix: Option<String>,
    /// See [`ImportContext::response_id_prefix`].
    #[serde(default)]
    pub response_id_prefix: Option<String>,
    /// See [`ImportContext::first_seq`].
    #[serde(default)]
    pub first_seq: Option<u64>,
    /// See [`ImportContext::first_turn`].
    #[serde(default)]
    pub first_turn: Option<u64>,
}

impl From<ImportOptions> for ImportContext {
    fn from(options: ImportOptions) -> Self {
        let mut ids = ImportContext::new(options.session_id);
        ids.run_id_prefix = options.run_id_prefix.unwrap_or(ids.run_id_prefix);
        ids.turn_id_prefix = options.turn_id_prefix.unwrap_or(ids.turn_id_prefix);
        ids.event_id_prefix = options.event_id_prefix.unwrap_or(ids.event_id_prefix);
        ids.response_id_prefix = options.response_id_prefix.unwrap_or(ids.response_id_prefix);
        ids.first_seq = options.first_seq.unwrap_or(ids.first_seq);
        ids.first_turn = options.first_turn.unwrap_or(ids.first_turn);
        ids
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ids(value: Value) -> Result<ImportContext, serde_json::Error> {
        serde_json::from_value::<ImportOptions>(value).map(ImportContext::from)
    }

    #[test]
    fn import_options_accept_the_documented_shape_only() {
        let read = ids(json!({ "sessionId": "s", "firstSeq": 5, "runIdPrefix": null })).unwrap();
        let defaults = ImportContext::new("s");
        assert_eq!((read.first_seq, &read.run_id_prefix), (5, &defaults.run_id_prefix));
        assert!(ids(json!({ "sessionID": "s" })).is_err());
        assert!(ids(json!({ "sessionId": "s", "firstTurn": -1 })).is_err());
        assert!(ids(json!({ "sessionId": "s", "extra": 1 })).is_err());
    }

    #[test]
    fn project_options_name_their_format() {
        let options: ProjectOptions =
            serde_json::from_value(json!({ "format": "anthropic", "failOpen": true })).unwrap();
        assert_eq!(
            (options.format, options.fail_open),
            (Some(OutputFormat::Anthropic), Some(true))
        );
        assert!(serde_json::from_value::<ProjectOptions>(json!({ "events": [] })).is_err());
    }
}
