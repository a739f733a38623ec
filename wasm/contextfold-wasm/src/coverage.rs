//! Which prefix a checkpoint may cover, and whether a checkpoint replays: the bindings of
//! [`contextfold_core::safe_prefix::select_safe_prefix`],
//! [`contextfold_core::safe_prefix::safe_boundaries`] and
//! [`contextfold_core::replay::evaluate_replay`]. Conversion and error mapping only; the
//! argument and result shapes are those of the conformance ops (`tests/src/ops.rs`).

use contextfold_core::budget::{CharEstimator, ContextBudget, ModelFacts};
use contextfold_core::compaction::native::ProviderIdentity;
use contextfold_core::diagnostics::Diagnostic;
use contextfold_core::event::validate_log;
use contextfold_core::json_read::{self, Fields, JsonReadError};
use contextfold_core::replay::{ReplayPlan, evaluate_replay_with};
use contextfold_core::safe_prefix::{
    PrefixOptions, safe_boundaries as core_safe_boundaries,
    select_safe_prefix as core_select_safe_prefix, split_current_turn,
};
use contextfold_core::verified_prefix::FullVerificationWith;
use serde::Serialize;
use serde_json::{Value, json};
use wasm_bindgen::prelude::*;

use crate::convert::{BindingError, json_from_js, json_to_js, to_js};
use crate::hash_engine::BindingEngine;
use crate::session::checkpoint_from_json;
use crate::{events_from_js, events_from_json};

/// Options of [`select_safe_prefix`] (`{ currentTurnId?, reserveTailTokens?, reserveTailTurns? }`,
/// nothing else), read by hand (`contextfold_core::json_read`).
fn read_prefix_options(value: &Value) -> Result<PrefixOptions, JsonReadError> {
    const KNOWN: &[&str] = &["currentTurnId", "reserveTailTokens", "reserveTailTurns"];
    let fields = Fields::of(value, "struct PrefixArgs", Some(KNOWN))?;
    let turns = fields.optional("reserveTailTurns", json_read::u64)?.unwrap_or(0);
    Ok(PrefixOptions {
        current_turn_id: fields.optional("currentTurnId", json_read::string)?,
        reserve_tail_tokens: fields.optional("reserveTailTokens", json_read::u64)?.unwrap_or(0),
        reserve_tail_turns: usize::try_from(turns)
            .map_err(|_| JsonReadError(format!("reserveTailTurns {turns} is beyond usize")))?,
    })
}

/// The largest safe prefix that leaves the reserved tail raw: `{ end, turnCount }` (the
/// checkpoint would cover `events.slice(0, end)`), or `null` when none exists. Throws
/// `log_current_turn_not_suffix` when the current turn's events are not the log's suffix.
#[wasm_bindgen(js_name = selectSafePrefix)]
pub fn select_safe_prefix(events: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    let events = events_from_js(events)?;
    let options = read_prefix_options(&json_from_js(options, "prefix options")?)
        .map_err(|e| BindingError::invalid("prefix options", e))?;
    let prefix = core_select_safe_prefix(&events, &options, &CharEstimator)
        .map_err(|e| BindingError::core(e.code(), e))?;
    let value = prefix.map(|p| json!({ "end": p.end, "turnCount": p.turn_count }));
    Ok(json_to_js(value.unwrap_or(Value::Null), "safe prefix")?)
}

/// Every `p` such that a checkpoint may cover `events.slice(0, p)`, ascending (never 0), with
/// no reserved tail. Throws `log_current_turn_not_suffix` like [`select_safe_prefix`].
#[wasm_bindgen(js_name = safeBoundaries)]
pub fn safe_boundaries(events: JsValue, current_turn_id: JsValue) -> Result<JsValue, JsValue> {
    let current_turn_id = match current_turn_id.as_string() {
        Some(id) => Some(id),
        None if current_turn_id.is_null() || current_turn_id.is_undefined() => None,
        None => return Err(BindingError::invalid("currentTurnId", "expected a string").into()),
    };
    let events = events_from_js(events)?;
    let cuts = core_safe_boundaries(&events, current_turn_id.as_deref())
        .map_err(|e| BindingError::core(e.code(), e))?;
    Ok(json_to_js(json!(cuts), "safe boundaries")?)
}

/// Input of [`evaluate_replay`] (`{ events, checkpoint, currentTurnId?, model?, provider? }`,
/// nothing else), read by hand (`contextfold_core::json_read`), the events as JSON values.
#[derive(Debug, PartialEq)]
struct ReplayArgs {
    events: Vec<Value>,
    checkpoint: Value,
    current_turn_id: Option<String>,
    model: Option<ModelFacts>,
    provider: Option<ProviderIdentity>,
}

impl ReplayArgs {
    fn from_json(value: &Value) -> Result<Self, JsonReadError> {
        const KNOWN: &[&str] = &["events", "checkpoint", "currentTurnId", "model", "provider"];
        let fields = Fields::of(value, "struct ReplayArgs", Some(KNOWN))?;
        Ok(ReplayArgs {
            events: fields
                .required("events", |events| json_read::vec(events, |e| Ok(e.clone())))?,
            checkpoint: fields.required("checkpoint", |checkpoint| Ok(checkpoint.clone()))?,
            current_turn_id: fields.optional("currentTurnId", json_read::string)?,
            model: fields.optional("model", ModelFacts::from_json)?,
            provider: fields.optional("provider", ProviderIdentity::from_json)?,
        })
    }
}

/// The result of [`evaluate_replay`].
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReplayDecision {
    /// `accepted` or `rejected`.
    decision: &'static str,
    /// The rejection's reason code; `null` when accepted.
    code: Option<String>,
    /// The replay figures: always when accepted; when rejected, only for a checkpoint that
    /// matched the log and failed on size.
    plan: Option<PlanJson>,
    /// The rejection's diagnostic; `null` when accepted.
    diagnostic: Option<Diagnostic>,
}

/// [`ReplayPlan`] as the package returns it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PlanJson {
    covered: usize,
    checkpoint_tokens: u64,
    source_tokens: u64,
    replay_tokens: u64,
    current_tokens: u64,
}

impl From<&ReplayPlan> for PlanJson {
    fn from(plan: &ReplayPlan) -> Self {
        PlanJson {
            covered: plan.covered,
            checkpoint_tokens: plan.checkpoint_tokens,
            source_tokens: plan.source_tokens,
            replay_tokens: plan.replay_tokens,
            current_tokens: plan.current_tokens,
        }
    }
}

/// The replay gate for the next request: `{ events, checkpoint, currentTurnId?, model?,
/// provider? }` → `{ decision, code, plan, diagnostic }`. A rejection is a result, not an
/// error; it throws only on input the core refuses (an invalid log: `log_*`, an unreadable
/// checkpoint: `checkpoint_*`, a current turn that is not the log's suffix).
#[wasm_bindgen(js_name = evaluateReplay)]
pub fn evaluate_replay(input: JsValue) -> Result<JsValue, JsValue> {
    let args = ReplayArgs::from_json(&json_from_js(input, "replay input")?)
        .map_err(|e| BindingError::invalid("replay input", e))?;
    let events = events_from_json(args.events)?;
    validate_log(&events).map_err(|e| BindingError::core(e.code(), e))?;
    let checkpoint = checkpoint_from_json(args.checkpoint)?;
    let prior_end = split_current_turn(&events, args.current_turn_id.as_deref())
        .map_err(|e| BindingError::core(e.code(), e))?;
    let budget = ContextBudget::from_model(&args.model.unwrap_or_default());
    let decision = match evaluate_replay_with(
        &checkpoint,
        &events,
        prior_end,
        &budget,
        args.provider.as_ref(),
        &CharEstimator,
        &mut FullVerificationWith::<BindingEngine>::default(),
    ) {
        Ok(plan) => ReplayDecision {
            decision: "accepted",
            code: None,
            plan: Some(PlanJson::from(&plan)),
            diagnostic: None,
        },
        Err(rejection) => ReplayDecision {
            decision: "rejected",
            code: Some(rejection.diagnostic.code.as_str().to_owned()),
            plan: rejection.plan.as_ref().map(PlanJson::from),
            diagnostic: Some(rejection.diagnostic),
        },
    };
    Ok(to_js(&decision, "replay decision")?)
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    /// The derive `ReplayArgs::from_json` replaced (with events as values), kept to compare with.
    mod derived {
        use super::*;

        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        pub(super) struct ReplayArgs {
            pub(super) events: Vec<Value>,
            pub(super) checkpoint: Value,
            #[serde(default)]
            pub(super) current_turn_id: Option<String>,
            #[serde(default)]
            pub(super) model: Option<ModelFacts>,
            #[serde(default)]
            pub(super) provider: Option<ProviderIdentity>,
        }
    }

    #[test]
    fn replay_args_read_as_the_derive_read_them() {
        let base = json!({
            "events": [{ "seq": 1 }], "checkpoint": { "schemaVersion": 2 }, "currentTurnId": "t",
            "model": { "contextWindow": 8000 },
            "provider": { "provider": "openai", "connectionSlug": "c", "modelId": "m" },
        });
        let mut accepted = 0;
        for case in crate::test_support::variants(&base, "event") {
            let read = ReplayArgs::from_json(&case);
            if case.is_array() {
                assert!(read.is_err(), "{case}");
                continue;
            }
            match (serde_json::from_value::<derived::ReplayArgs>(case.clone()), read) {
                (Ok(d), Ok(read)) => {
                    let expected = ReplayArgs {
                        events: d.events,
                        checkpoint: d.checkpoint,
                        current_turn_id: d.current_turn_id,
                        model: d.model,
                        provider: d.provider,
                    };
                    assert_eq!(read, expected, "{case}");
                    accepted += 1;
                }
                (Err(derived), Err(read)) => {
                    assert_eq!(read.to_string(), derived.to_string(), "{case}")
                }
                (derived, read) => panic!("{case}: derive {:?}, hand {read:?}", derived.is_ok()),
            }
        }
        assert!(accepted >= 8, "{accepted}");
    }

    /// The derive `read_prefix_options` replaced, kept to compare with.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct PrefixArgs {
        #[serde(default)]
        current_turn_id: Option<String>,
        #[serde(default)]
        reserve_tail_tokens: Option<u64>,
        #[serde(default)]
        reserve_tail_turns: Option<u64>,
    }

    #[test]
    fn prefix_options_read_as_the_derive_read_them() {
        let base = json!({ "currentTurnId": "t", "reserveTailTokens": 10, "reserveTailTurns": 2 });
        for case in crate::test_support::variants(&base, "reserveTail") {
            let read = read_prefix_options(&case);
            if case.is_array() {
                // The derive took a struct written as an array of its fields; refused now.
                assert!(read.is_err(), "{case}");
                continue;
            }
            match (serde_json::from_value::<PrefixArgs>(case.clone()), read) {
                (Ok(derived), Ok(read)) => {
                    let expected = PrefixOptions {
                        current_turn_id: derived.current_turn_id,
                        reserve_tail_tokens: derived.reserve_tail_tokens.unwrap_or(0),
                        reserve_tail_turns: derived.reserve_tail_turns.unwrap_or(0) as usize,
                    };
                    assert_eq!(read, expected, "{case}");
                }
                (Err(derived), Err(read)) => {
                    assert_eq!(read.to_string(), derived.to_string(), "{case}")
                }
                (derived, read) => panic!("{case}: derive {:?}, hand {read:?}", derived.is_ok()),
            }
        }
    }
}
