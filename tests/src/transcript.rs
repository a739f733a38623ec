//! Whole compaction transcripts with scripted provider and ledger answers.
//!
//! Input: `{trigger, events, currentTurnId?, checkpoint?, model, provider, compactor,
//! checkpointId, nowMs, summarizerLabel?, circuit?, script: [answer…]}`. The driver answers
//! each effect with the next script entry:
//! - summarize: `{"summary": "extractive"}` (the core's extractive summarizer on the effect's
//!   fold, finish `stop`), `{"summary": {"text", "finish"}}`, `{"failure": {"kind",
//!   "message"}}` or `{"cancel": true}`;
//! - compact natively: `{"native": [output items]}`, a failure, or a cancel;
//! - append: `{"append": "ok"}` or `{"append": {"conflict", "message"}}`.
//!
//! Output: `{effects: [{effect: "summarize", request, previousSummary, foldStart, foldEnd,
//! targetTokens} | {effect: "compact_natively", request} | {effect: "append_checkpoint",
//! checkpoint}], outcome, circuit}`, or `{error: code}`.

use contextfold_core::RuntimeEvent;
use contextfold_core::compaction::{
    AppendFailure, CompactInput, Compaction, Compactor, Effect, FinishReason,
    MalformedInputCircuit, ProviderFailure, Step, SummarizeEffect, SummaryResponse, Trigger,
    extractive_summary_for,
};
use serde_json::{Value, json};

use crate::ops::{checkpoint_of, current_turn_of, events_of, model_of, provider_of};

/// What a script entry tells the driver to do.
enum Action<T, E> {
    Answer(Result<T, E>),
    Cancel,
}

fn failure(entry: &Value) -> Option<ProviderFailure> {
    serde_json::from_value(entry.get("failure")?.clone()).ok()
}

fn summary_action(
    entry: &Value,
    events: &[RuntimeEvent],
    effect: &SummarizeEffect,
) -> Result<Action<SummaryResponse, ProviderFailure>, String> {
    if entry.get("cancel").is_some() {
        return Ok(Action::Cancel);
    }
    if let Some(failure) = failure(entry) {
        return Ok(Action::Answer(Err(failure)));
    }
    match &entry["summary"] {
        Value::String(kind) if kind == "extractive" => Ok(Action::Answer(Ok(SummaryResponse {
            text: extractive_summary_for(events, effect),
            finish_reason: FinishReason::Stop,
        }))),
        Value::Object(answer) => Ok(Action::Answer(Ok(SummaryResponse {
            text: answer.get("text").and_then(Value::as_str).unwrap_or_default().to_owned(),
            finish_reason: FinishReason::parse(
                answer.get("finish").and_then(Value::as_str).unwrap_or_default(),
            ),
        }))),
        _ => Err("script_mismatch".into()),
    }
}

fn native_action(entry: &Value) -> Result<Action<Vec<Value>, ProviderFailure>, String> {
    if entry.get("cancel").is_some() {
        return Ok(Action::Cancel);
    }
    if let Some(failure) = failure(entry) {
        return Ok(Action::Answer(Err(failure)));
    }
    let items = entry["native"].as_array().ok_or("script_mismatch")?;
    Ok(Action::Answer(Ok(items.clone())))
}

fn append_answer(entry: &Value) -> Result<Result<(), AppendFailure>, String> {
    match &entry["append"] {
        Value::String(ok) if ok == "ok" => Ok(Ok(())),
        Value::Object(_) => serde_json::from_value(entry["append"].clone())
            .map(Err)
            .map_err(|_| "script_mismatch".to_owned()),
        _ => Err("script_mismatch".into()),
    }
}

/// The transaction's input from a transcript input.
pub fn compact_input(input: &Value) -> Result<CompactInput<'static>, String> {
    let parse = |key: &str| -> Result<Value, String> {
        input.get(key).cloned().ok_or_else(|| format!("missing_{key}"))
    };
    let trigger: Trigger = serde_json::from_value(parse("trigger")?).map_err(|_| "trigger")?;
    let compactor: Compactor =
        serde_json::from_value(parse("compactor")?).map_err(|_| "compactor")?;
    let circuit: MalformedInputCircuit = match &input["circuit"] {
        Value::Null => MalformedInputCircuit::new(),
        value => serde_json::from_value(value.clone()).map_err(|_| "circuit_invalid")?,
    };
    Ok(CompactInput {
        trigger,
        events: events_of(input)?.into(),
        current_turn_id: current_turn_of(input).map(str::to_owned),
        checkpoint: checkpoint_of(input, "checkpoint")?,
        model: model_of(input)?,
        provider: provider_of(input)?.ok_or("provider_missing")?,
        compactor,
        new_checkpoint_id: input["checkpointId"].as_str().unwrap_or_default().to_owned(),
        now_ms: input["nowMs"].as_u64().unwrap_or(0),
        provider_options: None,
        summarizer_label: input["summarizerLabel"].as_str().map(str::to_owned),
        circuit,
        prepared: None,
    })
}

/// Runs a transcript on the native core.
pub fn run_native(input: &Value) -> Result<Value, String> {
    let compact = compact_input(input)?;
    let events = compact.events.clone();
    let mut tx = Compaction::start(compact).map_err(|e| match e {
        contextfold_core::compaction::StartError::Log(log) => log.code().to_owned(),
        other => format!("start:{other}"),
    })?;
    let script = input["script"].as_array().cloned().unwrap_or_default();
    let mut answers = script.iter();
    let mut effects = Vec::new();
    let driver = |e: contextfold_core::compaction::DriverError| e.code().to_owned();
    let outcome = loop {
        let step = tx.poll().map_err(driver)?;
        if let Step::Done(outcome) = step {
            break outcome;
        }
        let entry = answers.next().ok_or("script_exhausted")?;
        match step {
            Step::Effect(Effect::Summarize(effect)) => {
                effects.push(json!({
                    "effect": "summarize",
                    "request": effect.request,
                    "previousSummary": effect.previous_summary,
                    "foldStart": effect.fold.start,
                    "foldEnd": effect.fold.end,
                    "targetTokens": effect.target_tokens,
                }));
                match summary_action(entry, &events, &effect)? {
                    Action::Answer(answer) => tx.handle_summary(answer).map_err(driver)?,
                    Action::Cancel => {
                        tx.cancel();
                    }
                }
            }
            Step::Effect(Effect::CompactNatively(request)) => {
                effects.push(json!({ "effect": "compact_natively", "request": request }));
                match native_action(entry)? {
                    Action::Answer(answer) => tx.handle_native(answer).map_err(driver)?,
                    Action::Cancel => {
                        tx.cancel();
                    }
                }
            }
            Step::Effect(Effect::AppendCheckpoint(checkpoint)) => {
                effects.push(json!({
                    "effect": "append_checkpoint", "checkpoint": checkpoint.to_value(),
                }));
                tx.handle_append(append_answer(entry)?).map_err(driver)?;
            }
            Step::Done(_) => unreachable!("handled above"),
        }
    };
    let circuit = tx.into_circuit();
    Ok(json!({ "effects": effects, "outcome": outcome, "circuit": circuit }))
}
