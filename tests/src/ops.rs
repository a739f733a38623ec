//! The JSON-in/JSON-out operations the conformance vectors exercise, evaluated by the native
//! core. Every runtime (the wasmtime component, the npm package) must map the same `input` to
//! the same `expected` JSON; this module is the reference and what the generator records.
//!
//! Ops and their shapes (all keys camelCase):
//! - `select_safe_prefix`: `{events, currentTurnId?, reserveTailTokens, reserveTailTurns}` →
//!   `{prefix: {end, turnCount} | null, safeBoundaries: [n]}`;
//! - `evaluate_replay`: `{events, currentTurnId?, checkpoint, model, provider?}` →
//!   `{match: {covered} | {mismatch: code}, decision: "accepted"|"rejected", code, plan}`;
//! - `project`: `{events, currentTurnId?, checkpoint?, model, provider?, failOpen}` → the
//!   projection JSON (materialized messages, tokens, diagnostics);
//! - `validate_summary`: `{text, finish, foldTokens}` → `{estimatedTokens}` | `{defect: code}`;
//! - `compaction`: a transcript (see [`crate::transcript`]).
//!
//! An input the core rejects yields `{error: code}`.

use contextfold_core::checkpoint::{
    PrefixOptions, ReplayPlan, evaluate_replay, match_checkpoint_prefix, safe_boundaries,
    select_safe_prefix, split_current_turn,
};
use contextfold_core::compaction::{FinishReason, ProviderIdentity, validate_summary};
use contextfold_core::event::validate_log;
use contextfold_core::projection::{ProjectInput, project};
use contextfold_core::{
    CharEstimator, ContextBudget, HistoryCompactCheckpoint, ModelFacts, RuntimeEvent,
};
use serde_json::{Value, json};

/// Evaluates one op on its input with the native core.
pub fn evaluate(op: &str, input: &Value) -> Value {
    let result = match op {
        "select_safe_prefix" => select_prefix_op(input),
        "evaluate_replay" => replay_op(input),
        "project" => project_op(input),
        "validate_summary" => Ok(validate_op(input)),
        "compaction" => crate::transcript::run_native(input),
        other => Err(format!("unknown_op:{other}")),
    };
    result.unwrap_or_else(|code| json!({ "error": code }))
}

type OpResult = Result<Value, String>;

/// The events of `input["events"]`.
pub fn events_of(input: &Value) -> Result<Vec<RuntimeEvent>, String> {
    let list = input["events"].as_array().ok_or("event_syntax")?;
    list.iter()
        .map(|value| RuntimeEvent::from_value(value.clone()).map_err(|e| e.code().to_owned()))
        .collect()
}

/// `input["currentTurnId"]`, if a string.
pub fn current_turn_of(input: &Value) -> Option<&str> {
    input["currentTurnId"].as_str()
}

/// `input[key]` as a checkpoint, if present and not null.
pub fn checkpoint_of(input: &Value, key: &str) -> Result<Option<HistoryCompactCheckpoint>, String> {
    match &input[key] {
        Value::Null => Ok(None),
        value => HistoryCompactCheckpoint::from_value(value.clone())
            .map(Some)
            .map_err(|e| e.code().to_owned()),
    }
}

/// `input["model"]`.
pub fn model_of(input: &Value) -> Result<ModelFacts, String> {
    serde_json::from_value(input["model"].clone()).map_err(|_| "model_invalid".to_owned())
}

/// `input["provider"]`, if present and not null.
pub fn provider_of(input: &Value) -> Result<Option<ProviderIdentity>, String> {
    match &input["provider"] {
        Value::Null => Ok(None),
        value => {
            serde_json::from_value(value.clone()).map(Some).map_err(|_| "provider_invalid".into())
        }
    }
}

fn select_prefix_op(input: &Value) -> OpResult {
    let events = events_of(input)?;
    let options = PrefixOptions {
        current_turn_id: current_turn_of(input).map(str::to_owned),
        reserve_tail_tokens: input["reserveTailTokens"].as_u64().unwrap_or(0),
        reserve_tail_turns: input["reserveTailTurns"].as_u64().unwrap_or(0) as usize,
    };
    let prefix =
        select_safe_prefix(&events, &options, &CharEstimator).map_err(|e| e.code().to_owned())?;
    let cuts = safe_boundaries(&events, options.current_turn_id.as_deref())
        .map_err(|e| e.code().to_owned())?;
    Ok(json!({
        "prefix": prefix.map(|p| json!({"end": p.end, "turnCount": p.turn_count})),
        "safeBoundaries": cuts,
    }))
}

/// The JSON of a replay plan.
pub fn plan_json(plan: &ReplayPlan) -> Value {
    json!({
        "covered": plan.covered,
        "checkpointTokens": plan.checkpoint_tokens,
        "sourceTokens": plan.source_tokens,
        "replayTokens": plan.replay_tokens,
        "currentTokens": plan.current_tokens,
    })
}

fn replay_op(input: &Value) -> OpResult {
    let events = events_of(input)?;
    validate_log(&events).map_err(|e| e.code().to_owned())?;
    let checkpoint = checkpoint_of(input, "checkpoint")?.ok_or("checkpoint_missing")?;
    let matched = match match_checkpoint_prefix(&checkpoint, &events) {
        Ok(m) => json!({ "covered": m.covered }),
        Err(mismatch) => json!({ "mismatch": mismatch.code().as_str() }),
    };
    let prior_end =
        split_current_turn(&events, current_turn_of(input)).map_err(|e| e.code().to_owned())?;
    let budget = ContextBudget::from_model(&model_of(input)?);
    let provider = provider_of(input)?;
    let decision = evaluate_replay(
        &checkpoint,
        &events,
        prior_end,
        &budget,
        provider.as_ref(),
        &CharEstimator,
    );
    Ok(match decision {
        Ok(plan) => json!({
            "match": matched, "decision": "accepted", "code": null, "plan": plan_json(&plan),
        }),
        Err(rejection) => json!({
            "match": matched,
            "decision": "rejected",
            "code": rejection.diagnostic.code.as_str(),
            "plan": rejection.plan.as_ref().map(plan_json),
        }),
    })
}

fn project_op(input: &Value) -> OpResult {
    let events = events_of(input)?;
    let checkpoint = checkpoint_of(input, "checkpoint")?;
    let model = model_of(input)?;
    let provider = provider_of(input)?;
    let request = ProjectInput {
        events: &events,
        current_turn_id: current_turn_of(input),
        checkpoint: checkpoint.as_ref(),
        model: &model,
        provider: provider.as_ref(),
        fail_open: input["failOpen"].as_bool().unwrap_or(false),
    };
    let projection = project(&request, &CharEstimator).map_err(|e| e.code().to_owned())?;
    serde_json::to_value(projection).map_err(|_| "projection_unserializable".into())
}

fn validate_op(input: &Value) -> Value {
    let text = input["text"].as_str().unwrap_or_default();
    let finish = FinishReason::parse(input["finish"].as_str().unwrap_or_default());
    let fold_tokens = input["foldTokens"].as_u64().unwrap_or(0);
    match validate_summary(text, finish, fold_tokens, &CharEstimator) {
        Ok(summary) => json!({ "estimatedTokens": summary.estimated_tokens }),
        Err(defect) => json!({ "defect": defect.code().as_str() }),
    }
}
