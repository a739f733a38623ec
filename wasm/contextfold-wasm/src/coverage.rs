//! Which prefix a checkpoint may cover, and whether a checkpoint replays: the bindings of
//! [`contextfold_core::checkpoint::select_safe_prefix`],
//! [`contextfold_core::checkpoint::safe_boundaries`] and
//! [`contextfold_core::checkpoint::evaluate_replay`]. Conversion and error mapping only; the
//! argument and result shapes are those of the conformance ops (`tests/src/ops.rs`); the replay
//! gate's are the core's [`ReplayQuestion`] and [`ReplayDecision`].

use contextfold_core::binding::evaluate_replay_with;
use contextfold_core::budget::{CharEstimator, ContextBudget};
use contextfold_core::checkpoint::{
    FullVerificationWith, PrefixOptions, ReplayDecision, ReplayQuestion,
    safe_boundaries as core_safe_boundaries, select_safe_prefix as core_select_safe_prefix,
    split_current_turn,
};
use contextfold_core::event::validate_log;
use serde_json::{Value, json};
use wasm_bindgen::prelude::*;

use crate::convert::{BindingError, from_js, json_to_js, to_js};
use crate::hash_engine::BindingEngine;
use crate::session::checkpoint_from_json;
use crate::{events_from_js, events_from_json};

/// The largest safe prefix that leaves the reserved tail raw: `{ end, turnCount }` (the
/// checkpoint would cover `events.slice(0, end)`), or `null` when none exists. Throws
/// `log_current_turn_not_suffix` when the current turn's events are not the log's suffix.
#[wasm_bindgen(js_name = selectSafePrefix)]
pub fn select_safe_prefix(events: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    let events = events_from_js(events)?;
    let options = from_js::<PrefixOptions>(options, "prefix options")?;
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

/// The replay gate for the next request: `{ events, checkpoint, currentTurnId?, model?,
/// provider? }` → `{ decision, code, plan, diagnostic }`. A rejection is a result, not an
/// error; it throws only on input the core refuses (an invalid log: `log_*`, an unreadable
/// checkpoint: `checkpoint_*`, a current turn that is not the log's suffix).
#[wasm_bindgen(js_name = evaluateReplay)]
pub fn evaluate_replay(input: JsValue) -> Result<JsValue, JsValue> {
    let args = from_js::<ReplayQuestion>(input, "replay input")?;
    let events = events_from_json(args.events)?;
    validate_log(&events).map_err(|e| BindingError::core(e.code(), e))?;
    let checkpoint = checkpoint_from_json(args.checkpoint)?;
    let prior_end = split_current_turn(&events, args.current_turn_id.as_deref())
        .map_err(|e| BindingError::core(e.code(), e))?;
    let budget = ContextBudget::from_model(&args.model.unwrap_or_default());
    let decision = ReplayDecision::from(evaluate_replay_with(
        &checkpoint,
        &events,
        prior_end,
        &budget,
        args.provider.as_ref(),
        &CharEstimator,
        &mut FullVerificationWith::<BindingEngine>::default(),
    ));
    Ok(to_js(&decision, "replay decision")?)
}
