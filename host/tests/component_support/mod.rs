//! Shared by the component tests: where the built components are, and the mapping of each
//! conformance vector op onto the component's WIT exports.

#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;

use contextfold_core::RuntimeEvent;
use contextfold_core::compaction::{
    FinishReason as CoreFinish, ProviderFailure as CoreFailure, extractive_summary_of,
};
use contextfold_host::component::bindings::contextfold::compaction::types::{
    AppendError, CompactorKind, ModelFacts, ProviderIdentity, SummaryResponse, Trigger,
};
use contextfold_host::component::bindings::exports::contextfold::compaction::compaction_steps::{
    Effect, SessionInput, Step,
};
use contextfold_host::component::bindings::exports::contextfold::compaction::projection::{
    PrefixOptions, ProjectRequest, ReplayDecision, ReplayPlan, ReplayRequest,
};
use contextfold_host::component::{
    ComponentError, ComponentRunner, ExtractiveProvider, MemoryLedger, Plugin, RunnerLimits,
    failure_to_wit, finish_to_wit,
};
use serde_json::{Value, json};

/// The directory the components are built into (`scripts/test-component.sh`).
pub fn components_dir() -> PathBuf {
    std::env::var_os("CONTEXTFOLD_COMPONENTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/components"))
}

/// A runner for one built component; fails loudly when it was not built. Compiled once per
/// file and limits for the whole test binary (cranelift takes seconds per compilation in a
/// debug build; a runner is cheap to clone, and each plugin made from it has its own store).
pub fn runner(file: &str, limits: RunnerLimits) -> ComponentRunner {
    static COMPILED: std::sync::Mutex<Vec<(String, RunnerLimits, ComponentRunner)>> =
        std::sync::Mutex::new(Vec::new());
    let mut compiled = COMPILED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, _, runner)) = compiled.iter().find(|(f, l, _)| f == file && *l == limits) {
        return runner.clone();
    }
    let path = components_dir().join(file);
    assert!(path.exists(), "{} is missing: run scripts/test-component.sh", path.display());
    let runner = ComponentRunner::from_file(&path, limits).expect("the component loads");
    compiled.push((file.to_owned(), limits, runner.clone()));
    runner
}

/// A plugin of the real compactor with an in-memory ledger and the extractive provider.
pub fn compactor_plugin(ledger: MemoryLedger) -> Plugin {
    runner("contextfold_compactor.wasm", RunnerLimits::default()).plugin(ledger, ExtractiveProvider)
}

/// Reads a vector file of `tests/vectors/`.
pub fn vectors(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors").join(name);
    let text = std::fs::read_to_string(&path).expect("vector file");
    serde_json::from_str(&text).expect("vector JSON")
}

fn text(value: &Value) -> String {
    serde_json::to_string(value).expect("JSON serializes")
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

fn model(input: &Value) -> ModelFacts {
    ModelFacts {
        context_window: input["model"]["contextWindow"].as_u64(),
        fixed_overhead_tokens: input["model"]["fixedOverheadTokens"].as_u64().unwrap_or(0),
        prepare_at_percent: input["model"]["prepareAtPercent"].as_u64(),
    }
}

fn provider(input: &Value) -> Option<ProviderIdentity> {
    let p = &input["provider"];
    p.is_object().then(|| ProviderIdentity {
        provider: p["provider"].as_str().unwrap_or_default().into(),
        connection_slug: p["connectionSlug"].as_str().unwrap_or_default().into(),
        model_id: p["modelId"].as_str().unwrap_or_default().into(),
    })
}

fn optional_text(value: &Value) -> Option<String> {
    (!value.is_null()).then(|| text(value))
}

fn plan_json(plan: &ReplayPlan) -> Value {
    json!({
        "covered": plan.covered,
        "checkpointTokens": plan.checkpoint_tokens,
        "sourceTokens": plan.source_tokens,
        "replayTokens": plan.replay_tokens,
        "currentTokens": plan.current_tokens,
    })
}

/// Evaluates one vector op through the component: the same JSON shapes as the native
/// reference (`tests/src/ops.rs`).
pub fn evaluate(plugin: &mut Plugin, op: &str, input: &Value) -> Value {
    let result = match op {
        "select_safe_prefix" => select_prefix(plugin, input),
        "evaluate_replay" => replay(plugin, input),
        "project" => project(plugin, input),
        "validate_summary" => validate(plugin, input),
        "compaction" => transcript(plugin, input),
        other => Ok(json!({ "error": format!("unknown_op:{other}") })),
    };
    result.unwrap_or_else(|error| match error {
        ComponentError::Guest(guest) => json!({ "error": guest.code }),
        other => json!({ "error": other.code() }),
    })
}

type Out = Result<Value, ComponentError>;

fn select_prefix(plugin: &mut Plugin, input: &Value) -> Out {
    let events = text(&input["events"]);
    let current = input["currentTurnId"].as_str().map(str::to_owned);
    let options = PrefixOptions {
        current_turn: current.clone(),
        reserve_tail_tokens: input["reserveTailTokens"].as_u64().unwrap_or(0),
        reserve_tail_turns: input["reserveTailTurns"].as_u64().unwrap_or(0) as u32,
    };
    let prefix = plugin.select_safe_prefix(&events, &options)?;
    let cuts = plugin.safe_boundaries(&events, current.as_deref())?;
    Ok(json!({
        "prefix": prefix.map(|p| json!({"end": p.end, "turnCount": p.turn_count})),
        "safeBoundaries": cuts,
    }))
}

fn replay(plugin: &mut Plugin, input: &Value) -> Out {
    let events = text(&input["events"]);
    let checkpoint = text(&input["checkpoint"]);
    let matched = match plugin.match_checkpoint(&checkpoint, &events)? {
        Ok(covered) => json!({ "covered": covered }),
        Err(diagnostic) => json!({ "mismatch": diagnostic.code }),
    };
    let request = ReplayRequest {
        events,
        current_turn: input["currentTurnId"].as_str().map(str::to_owned),
        checkpoint,
        model: model(input),
        provider: provider(input),
    };
    Ok(match plugin.evaluate_replay(&request)? {
        ReplayDecision::Accepted(plan) => json!({
            "match": matched, "decision": "accepted", "code": null, "plan": plan_json(&plan),
        }),
        ReplayDecision::Rejected(rejection) => json!({
            "match": matched,
            "decision": "rejected",
            "code": rejection.diagnostic.code,
            "plan": rejection.plan.as_ref().map(plan_json),
        }),
    })
}

fn project(plugin: &mut Plugin, input: &Value) -> Out {
    let request = ProjectRequest {
        events: text(&input["events"]),
        current_turn: input["currentTurnId"].as_str().map(str::to_owned),
        checkpoint: optional_text(&input["checkpoint"]),
        model: model(input),
        provider: provider(input),
        fail_open: input["failOpen"].as_bool().unwrap_or(false),
        calibration_json: None,
    };
    Ok(uncalibrated(parse(&plugin.project(&request)?)))
}

/// A projection without its measurement fields, which the core's projection does not carry:
/// without a calibration they must say ratio 1.0 and repeat `estimatedTokens` (otherwise they
/// stay, and the comparison with the vector fails).
fn uncalibrated(mut projection: Value) -> Value {
    let unit = projection["ratioPermille"] == 1000
        && projection["uncalibratedTokens"] == projection["estimatedTokens"];
    if let (true, Some(fields)) = (unit, projection.as_object_mut()) {
        fields.remove("ratioPermille");
        fields.remove("uncalibratedTokens");
    }
    projection
}

fn validate(plugin: &mut Plugin, input: &Value) -> Out {
    let finish = finish_to_wit(CoreFinish::parse(input["finish"].as_str().unwrap_or_default()));
    let answer = plugin.validate_summary(
        input["text"].as_str().unwrap_or_default(),
        &finish,
        input["foldTokens"].as_u64().unwrap_or(0),
    )?;
    Ok(match answer {
        Ok(tokens) => json!({ "estimatedTokens": tokens }),
        Err(defect) => json!({ "defect": defect.code }),
    })
}

fn trigger(name: &str) -> Trigger {
    match name {
        "pre-turn" => Trigger::PreTurn,
        "mid-turn" => Trigger::MidTurn,
        "overflow" => Trigger::Overflow,
        "prepare" => Trigger::Prepare,
        _ => Trigger::Manual,
    }
}

/// The step session input of a transcript vector.
pub fn session_input(input: &Value) -> SessionInput {
    SessionInput {
        trigger: trigger(input["trigger"].as_str().unwrap_or_default()),
        events: text(&input["events"]),
        current_turn: input["currentTurnId"].as_str().map(str::to_owned),
        checkpoint: optional_text(&input["checkpoint"]),
        model: model(input),
        provider: provider(input).expect("transcripts name a provider"),
        compactor: match input["compactor"].as_str() {
            Some("openai-codex-native") => CompactorKind::OpenaiCodexNative,
            _ => CompactorKind::TextSummary,
        },
        checkpoint_id: input["checkpointId"].as_str().unwrap_or_default().into(),
        now_ms: input["nowMs"].as_u64().unwrap_or(0),
        summarizer_label: input["summarizerLabel"].as_str().map(str::to_owned),
        circuit_json: optional_text(&input["circuit"]),
        calibration_json: None,
        prepared: None,
    }
}

fn failure(entry: &Value) -> Option<CoreFailure> {
    serde_json::from_value(entry.get("failure")?.clone()).ok()
}

/// Drives a transcript through the `compaction-session` resource with the scripted answers.
fn transcript(plugin: &mut Plugin, input: &Value) -> Out {
    let session = plugin.start_session(&session_input(input))?;
    let script = input["script"].as_array().cloned().unwrap_or_default();
    let mut answers = script.iter();
    let mut effects = Vec::new();
    let done = loop {
        let effect = match plugin.poll(&session)? {
            Step::Done(result) => break result,
            Step::Effect(effect) => effect,
        };
        let Some(entry) = answers.next() else {
            return Ok(json!({ "error": "script_exhausted" }));
        };
        let cancel = entry.get("cancel").is_some();
        match effect {
            Effect::Summarize(request) => {
                effects.push(json!({
                    "effect": "summarize",
                    "request": parse(&request.request_json),
                    "previousSummary": request.previous_summary,
                    "foldStart": request.fold_start,
                    "foldEnd": request.fold_end,
                    "targetTokens": request.target_tokens,
                }));
                if cancel {
                    plugin.cancel(&session)?;
                    continue;
                }
                let answer = if let Some(f) = failure(entry) {
                    Err(failure_to_wit(f))
                } else if entry["summary"] == "extractive" {
                    let events = |json: &str| RuntimeEvent::array_from_text(json).expect("events");
                    let text = extractive_summary_of(
                        request.previous_summary.as_deref(),
                        &events(&request.carried_events),
                        &events(&request.fold_events),
                        &events(&request.replayed_events),
                        request.target_tokens,
                    );
                    Ok(SummaryResponse { text, finish: finish_to_wit(CoreFinish::Stop) })
                } else {
                    let s = &entry["summary"];
                    Ok(SummaryResponse {
                        text: s["text"].as_str().unwrap_or_default().into(),
                        finish: finish_to_wit(CoreFinish::parse(
                            s["finish"].as_str().unwrap_or_default(),
                        )),
                    })
                };
                plugin.resume_summary(&session, &answer)?;
            }
            Effect::CompactNatively(request) => {
                effects.push(json!({ "effect": "compact_natively", "request": parse(&request) }));
                if cancel {
                    plugin.cancel(&session)?;
                    continue;
                }
                let answer = match failure(entry) {
                    Some(f) => Err(failure_to_wit(f)),
                    None => Ok(entry["native"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|item| item.to_string())
                        .collect()),
                };
                plugin.resume_native(&session, &answer)?;
            }
            Effect::AppendCheckpoint(checkpoint) => {
                effects.push(
                    json!({ "effect": "append_checkpoint", "checkpoint": parse(&checkpoint) }),
                );
                let answer = match &entry["append"] {
                    Value::Object(f) if f.get("conflict") == Some(&Value::Bool(true)) => {
                        Err(AppendError::Conflict(f["message"].as_str().unwrap_or_default().into()))
                    }
                    Value::Object(f) => {
                        Err(AppendError::Failed(f["message"].as_str().unwrap_or_default().into()))
                    }
                    _ => Ok(()),
                };
                plugin.resume_append(&session, &answer)?;
            }
        }
    };
    plugin.drop_session(session)?;
    Ok(json!({
        "effects": effects,
        "outcome": parse(&done.outcome_json),
        "circuit": parse(&done.circuit_json),
    }))
}

/// A ledger with one session's events.
pub fn ledger_with(session: &str, events: Vec<RuntimeEvent>) -> MemoryLedger {
    let ledger = MemoryLedger::default();
    ledger.set_events(session, events);
    ledger
}
