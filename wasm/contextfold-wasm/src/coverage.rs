//! Which prefix a checkpoint may cover, and whether a checkpoint replays: the bindings of
//! [`contextfold_core::checkpoint::select_safe_prefix`],
//! [`contextfold_core::checkpoint::safe_boundaries`] and
//! [`contextfold_core::checkpoint::evaluate_replay`]. Conversion and error mapping only; the
//! argument and result shapes are those of the conformance ops (`tests/src/ops.rs`).

use contextfold_core::Diagnostic;
use contextfold_core::binding::evaluate_replay_with;
use contextfold_core::budget::{CharEstimator, ContextBudget, ModelFacts};
use contextfold_core::checkpoint::{
    FullVerificationWith, PrefixOptions, ReplayPlan, safe_boundaries as core_safe_boundaries,
    select_safe_prefix as core_select_safe_prefix, split_current_turn,
};
use contextfold_core::compaction::ProviderIdentity;
use contextfold_core::event::validate_log;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use wasm_bindgen::prelude::*;

use crate::convert::{BindingError, json_from_js, json_to_js, to_js};
use crate::hash_engine::BindingEngine;
use crate::session::checkpoint_from_json;
use crate::{events_from_js, events_from_json};

/// Options of [`select_safe_prefix`] (`{ currentTurnId?, reserveTailTokens?, reserveTailTurns? }`,
/// nothing else).
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

/// Reads [`select_safe_prefix`]'s options.
fn read_prefix_options(value: Value) -> Result<PrefixOptions, String> {
    let args: PrefixArgs = serde_json::from_value(value).map_err(|e| e.to_string())?;
    let turns = args.reserve_tail_turns.unwrap_or(0);
    Ok(PrefixOptions {
        current_turn_id: args.current_turn_id,
        reserve_tail_tokens: args.reserve_tail_tokens.unwrap_or(0),
        reserve_tail_turns: usize::try_from(turns)
            .map_err(|_| format!("reserveTailTurns {turns} is beyond usize"))?,
    })
}

/// The largest safe prefix that leaves the reserved tail raw: `{ end, turnCount }` (the
/// checkpoint would cover `events.slice(0, end)`), or `null` when none exists. Throws
/// `log_current_turn_not_suffix` when the current turn's events are not the log's suffix.
#[wasm_bindgen(js_name = selectSafePrefix)]
pub fn select_safe_prefix(events: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    let events = events_from_js(events)?;
    let options = read_prefix_options(json_from_js(options, "prefix options")?)
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
/// nothing else), the events as JSON values.
#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReplayArgs {
    events: Vec<Value>,
    checkpoint: Value,
    #[serde(default)]
    current_turn_id: Option<String>,
    #[serde(default)]
    model: Option<ModelFacts>,
    #[serde(default)]
    provider: Option<ProviderIdentity>,
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
    let args = serde_json::from_value::<ReplayArgs>(json_from_js(input, "replay input")?)
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
    use super::*;

    #[test]
    fn options_accept_the_documented_shapes_only() {
        let options = read_prefix_options(json!({ "currentTurnId": "t", "reserveTailTurns": 2 }));
        assert_eq!(
            options,
            Ok(PrefixOptions {
                current_turn_id: Some("t".into()),
                reserve_tail_tokens: 0,
                reserve_tail_turns: 2
            })
        );
        assert!(read_prefix_options(json!({ "reserveTail": 2 })).is_err());
        assert!(read_prefix_options(json!({ "reserveTailTokens": -1 })).is_err());
        let replay = json!({ "events": [], "checkpoint": null, "model": null });
        assert!(serde_json::from_value::<ReplayArgs>(replay).is_ok());
        assert!(serde_json::from_value::<ReplayArgs>(json!({ "events": [] })).is_err());
        let unknown = json!({ "events": [], "checkpoint": {}, "extra": 1 });
        assert!(serde_json::from_value::<ReplayArgs>(unknown).is_err());
    }
}
