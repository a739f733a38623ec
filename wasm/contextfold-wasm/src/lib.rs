//! # contextfold-wasm
//!
//! The thin wasm-bindgen binding of `contextfold-core` whose build output is the npm package
//! `contextfold` (see `docs/npm.md`). It converts values and maps errors; every decision and
//! every wire mapping (AI SDK `ModelMessage`, OpenAI Chat and Responses, Anthropic) is the
//! core's. The package's JavaScript wrapper passes arguments as JSON text (see [`convert`]),
//! renames these exports, turns the thrown errors into `ContextfoldError` (with the core's
//! stable `code`) and drives [`CompactionSession`] with an async loop.

/// talc: 2.0 KB smaller gzipped than Rust's default dlmalloc, as fast (docs/performance.md).
#[cfg(all(not(target_feature = "atomics"), target_family = "wasm"))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

pub mod convert;
pub mod coverage;
pub mod event_log;
pub mod hash_engine;
pub mod jsonl;
pub mod measure;
pub mod project;
pub mod session;
pub mod session_file;
pub mod shared_strings;
pub mod string_table;
pub mod tape;

use contextfold_core::binding::match_checkpoint_prefix_with;
use contextfold_core::budget::{CharEstimator, ContextBudget, ModelFacts, estimate_events};
use contextfold_core::checkpoint::{
    RecordedCheckpointEvent, RetractionEvent, is_valid_successor, select_recovered_checkpoint_with,
};
use contextfold_core::compaction::{
    FinishReason, MalformedInputCircuit, extractive_summary_of, validate_summary as core_validate,
};
use contextfold_core::digest::{canonical_event_json, digest_prefix_with, prefix_digests_with};
use contextfold_core::event::{
    LEDGER_TOKENS_ESTIMATOR, LedgerRow, RuntimeEvent, validate_log as core_validate_log,
};
use contextfold_core::projection::{
    ImportContext, ImportOptions, import_anthropic as core_import_anthropic, import_model_messages,
    import_openai_chat, import_openai_responses,
};
use serde_json::{Value, json};
use wasm_bindgen::prelude::*;

use crate::convert::{BindingError, from_js, from_json, json_from_js, json_to_js, to_js};
pub use crate::coverage::{evaluate_replay, safe_boundaries, select_safe_prefix};
pub use crate::event_log::EventLog;
use crate::hash_engine::BindingEngine;
use crate::jsonl::JsonlEvents;
pub use crate::measure::calibrate;
pub use crate::project::project;
pub use crate::session::CompactionSession;
use crate::session::checkpoint_from_json;
pub use crate::session_file::import_session_file;

/// Parses events from JSON values; the error names the index and keeps the core's code.
pub fn events_from_json(values: Vec<Value>) -> Result<Vec<RuntimeEvent>, BindingError> {
    values
        .into_iter()
        .enumerate()
        .map(|(index, mut value)| {
            convert::integral_numbers_as_integers(&mut value);
            RuntimeEvent::from_value(value)
                .map_err(|e| BindingError::core(e.code(), format!("events[{index}]: {e}")))
        })
        .collect()
}

/// An events argument with the JSONL line of each event (none for an array), to locate a
/// broken log rule: JSONL bytes, or an array ([`events_from_js`]).
pub fn events_with_lines(value: JsValue) -> Result<JsonlEvents, BindingError> {
    match jsonl::events_from_jsonl_js(&value) {
        Some(parsed) => parsed,
        None => Ok(JsonlEvents { events: events_from_js(value)?, lines: Vec::new() }),
    }
}

/// Reads an events argument: JSONL bytes (a `Uint8Array`, see [`jsonl`]), or an array: from its
/// text ([`RuntimeEvent::array_from_text`]) or its value tape ([`tape::events_from_tape`]), else
/// as JSON values ([`events_from_json`]).
pub fn events_from_js(value: JsValue) -> Result<Vec<RuntimeEvent>, BindingError> {
    if let Some(parsed) = jsonl::events_from_jsonl_js(&value) {
        return parsed.map(|parsed| parsed.events);
    }
    if let Some(text) = value.as_string()
        && let Some(events) = RuntimeEvent::array_from_text(&text)
    {
        return Ok(events);
    }
    if let Some(tape) = convert::tape_bytes(&value) {
        return tape::events_from_tape(&tape?);
    }
    events_from_json(from_json(json_from_js(value, "events")?, "events")?)
}

/// `SHA-256` source digest (`sha256:<hex>`) of the events, as a checkpoint's coverage records it.
#[wasm_bindgen(js_name = digestPrefix)]
pub fn digest_prefix(events: JsValue) -> Result<String, JsValue> {
    Ok(digest_prefix_with::<BindingEngine>(&events_from_js(events)?))
}

/// The digest of every prefix: `[digest(events[..1]), digest(events[..2]), …]`.
#[wasm_bindgen(js_name = prefixDigests)]
pub fn prefix_digests(events: JsValue) -> Result<Vec<String>, JsValue> {
    Ok(prefix_digests_with::<BindingEngine>(&events_from_js(events)?))
}

/// The canonical JSON text of one event (the digested bytes, without the domain prefix).
#[wasm_bindgen(js_name = canonicalEventJson)]
pub fn canonical_event(event: JsValue) -> Result<String, JsValue> {
    let mut events = events_from_json(vec![convert::json_from_js(event, "event")?])?;
    Ok(canonical_event_json(&events.remove(0)))
}

/// What a ledger stores for each of `events` (the core's `LedgerRow::of`, the rows the native
/// host's SQLite ledger holds): `[{ json, canonical, liveHead, tokens }]`.
#[wasm_bindgen(js_name = ledgerRows)]
pub fn ledger_rows(events: JsValue) -> Result<JsValue, JsValue> {
    let rows = events_from_js(events)?
        .iter()
        .enumerate()
        .map(|(index, event)| {
            LedgerRow::of(event)
                .map_err(|e| BindingError::core(e.code(), format!("events[{index}]: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(to_js(&rows, "ledger rows")?)
}

/// The name of the estimator whose estimates a ledger row's `tokens` hold.
#[wasm_bindgen(js_name = ledgerTokensEstimator)]
pub fn ledger_tokens_estimator() -> String {
    LEDGER_TOKENS_ESTIMATOR.to_owned()
}

/// Checks the structural rules of a log; throws with the core's code when one is broken.
#[wasm_bindgen(js_name = validateLog)]
pub fn validate_log(events: JsValue) -> Result<(), JsValue> {
    let parsed = events_with_lines(events)?;
    core_validate_log(&parsed.events).map_err(|e| parsed.log_error(e).into())
}

/// A core importer: the wire value (`what`) and the id options (the core's [`ImportOptions`]) in,
/// the RuntimeEvents out.
fn import_with(
    wire: JsValue,
    options: JsValue,
    what: &str,
    importer: impl Fn(&Value, &ImportContext) -> Result<Vec<RuntimeEvent>, BindingError>,
) -> Result<JsValue, JsValue> {
    let ids = ImportContext::from(from_js::<ImportOptions>(options, "import options")?);
    Ok(to_js(&importer(&json_from_js(wire, what)?, &ids)?, "events")?)
}

/// Imports AI SDK `ModelMessage[]` as RuntimeEvents (the core's `import_model_messages`).
#[wasm_bindgen(js_name = importModelMessages)]
pub fn import_ai_sdk(messages: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    import_with(messages, options, "messages", |w, ids| {
        import_model_messages(w, ids).map_err(|e| BindingError::core(e.code(), e))
    })
}

/// Imports an OpenAI Chat Completions conversation (the core's `import_openai_chat`).
#[wasm_bindgen(js_name = importOpenAIChat)]
pub fn import_chat(messages: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    import_with(messages, options, "messages", |w, ids| {
        import_openai_chat(w, ids).map_err(|e| BindingError::core(e.code(), e))
    })
}

/// Imports an OpenAI Responses input (the core's `import_openai_responses`).
#[wasm_bindgen(js_name = importOpenAIResponses)]
pub fn import_responses(input: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    import_with(input, options, "input", |w, ids| {
        import_openai_responses(w, ids).map_err(|e| BindingError::core(e.code(), e))
    })
}

/// Imports an Anthropic Messages conversation (the core's `import_anthropic`).
#[wasm_bindgen(js_name = importAnthropic)]
pub fn import_anthropic(body: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    import_with(body, options, "messages", |w, ids| {
        core_import_anthropic(w, ids).map_err(|e| BindingError::core(e.code(), e))
    })
}

/// Checks that `events` starts with exactly the prefix `checkpoint` covers: `{ covered }`, or
/// throws with the mismatch code (e.g. `source_hash_mismatch`).
#[wasm_bindgen(js_name = matchCheckpoint)]
pub fn match_checkpoint(checkpoint: JsValue, events: JsValue) -> Result<JsValue, JsValue> {
    let checkpoint = checkpoint_from_json(json_from_js(checkpoint, "checkpoint")?)?;
    let events = events_from_js(events)?;
    let matched = match_checkpoint_prefix_with::<BindingEngine>(&checkpoint, &events)
        .map_err(|e| BindingError::core(e.code().as_str(), e))?;
    Ok(json_to_js(json!({ "covered": matched.covered }), "match")?)
}

/// Parses and re-serializes a checkpoint (V2 or V3), throwing the core's parse code.
#[wasm_bindgen(js_name = parseCheckpoint)]
pub fn parse_checkpoint(checkpoint: JsValue) -> Result<JsValue, JsValue> {
    let checkpoint = checkpoint_from_json(json_from_js(checkpoint, "checkpoint")?)?;
    Ok(json_to_js(checkpoint.to_value(), "checkpoint")?)
}

/// Throws `successor_conflict` unless `candidate` may follow `tip` (the current checkpoint, or
/// null): the compare-and-swap rule every store applies when it appends a checkpoint, the same
/// rule as the native ledger's.
#[wasm_bindgen(js_name = checkSuccessor)]
pub fn check_successor(tip: JsValue, candidate: JsValue) -> Result<(), JsValue> {
    let tip = match json_from_js(tip, "tip")? {
        Value::Null => None,
        value => Some(checkpoint_from_json(value)?),
    };
    let candidate = checkpoint_from_json(json_from_js(candidate, "candidate")?)?;
    is_valid_successor(tip.as_ref(), &candidate).map_err(|e| BindingError::core(e.code(), e))?;
    Ok(())
}

/// Validates a summarizer completion: `{ text, estimatedTokens }`, or throws the defect code
/// (e.g. `malformed_summary_missing_section`).
#[wasm_bindgen(js_name = validateSummary)]
pub fn validate_summary(
    text: &str,
    finish_reason: &str,
    fold_tokens: f64,
) -> Result<JsValue, JsValue> {
    let finish = FinishReason::parse(finish_reason);
    let validated = core_validate(text, finish, fold_tokens as u64, &CharEstimator)
        .map_err(|e| BindingError::core(e.code().as_str(), e))?;
    Ok(to_js(&validated, "validated summary")?)
}

/// Selects the current checkpoint of a session from its recorded checkpoint events and its
/// retractions (`undefined`: none): `{ checkpoint, eventId, skipped, diagnostics }`.
#[wasm_bindgen(js_name = recoverCheckpoint)]
pub fn recover_checkpoint(
    session_id: &str,
    records: JsValue,
    retractions: JsValue,
) -> Result<JsValue, JsValue> {
    let records: Vec<RecordedCheckpointEvent> = from_js(records, "recorded checkpoint events")?;
    let retractions: Vec<RetractionEvent> = match retractions.is_undefined() {
        true => Vec::new(),
        false => from_js(retractions, "checkpoint retractions")?,
    };
    let recovery = select_recovered_checkpoint_with(session_id, &records, &retractions);
    let value = json!({
        "checkpoint": recovery.selected.as_ref().map(|c| c.to_value()),
        "eventId": recovery.selected_event_id,
        "skipped": recovery.skipped,
        "diagnostics": recovery.diagnostics(),
    });
    Ok(json_to_js(value, "recovery")?)
}

/// The offline extractive summary of `events` (merged into `previousSummary`), within about
/// `targetTokens`; `carried` and `replayed` (events, or `undefined`) are the core's
/// `extractive_summary_of` arguments of the same names.
#[wasm_bindgen(js_name = extractiveSummary)]
pub fn extractive_summary(
    previous_summary: Option<String>,
    events: JsValue,
    target_tokens: f64,
    carried: JsValue,
    replayed: JsValue,
) -> Result<String, JsValue> {
    let optional = |value: JsValue| match value.is_undefined() || value.is_null() {
        true => Ok(Vec::new()),
        false => events_from_js(value),
    };
    let (carried, replayed) = (optional(carried)?, optional(replayed)?);
    let events = events_from_js(events)?;
    let target = target_tokens as u64;
    let previous = previous_summary.as_deref();
    Ok(extractive_summary_of(previous, &carried, &events, &replayed, target))
}

/// Reads model facts (`null` or `undefined`: the defaults).
fn model_from_js(model: JsValue) -> Result<ModelFacts, BindingError> {
    Ok(from_js::<Option<ModelFacts>>(model, "model")?.unwrap_or_default())
}

/// The context budget derived from model facts: `{ contextWindow, reserve, historyBudget }`.
#[wasm_bindgen(js_name = contextBudget)]
pub fn context_budget(model: JsValue) -> Result<JsValue, JsValue> {
    Ok(to_js(&ContextBudget::from_model(&model_from_js(model)?), "budget")?)
}

/// Whether a runtime should prepare the next checkpoint in the background: `historyTokens` (a
/// projection's `estimatedTokens`) at the model's soft threshold (the core's `prepare_due`).
#[wasm_bindgen(js_name = prepareDue)]
pub fn prepare_due(history_tokens: f64, model: JsValue) -> Result<bool, JsValue> {
    Ok(contextfold_core::compaction::prepare_due(history_tokens as u64, &model_from_js(model)?))
}

/// The malformed-input circuit `into` (`null`: empty) with every fingerprint of `other` added
/// (the core's `merge`), for two compactions that ran side by side on copies of one circuit.
#[wasm_bindgen(js_name = mergeCircuits)]
pub fn merge_circuits(into: JsValue, other: JsValue) -> Result<JsValue, JsValue> {
    let read = |value| from_js::<Option<MalformedInputCircuit>>(value, "circuit");
    let (into, other) = (read(into)?.unwrap_or_default(), read(other)?.unwrap_or_default());
    let mut circuit = into;
    circuit.merge(&other);
    Ok(to_js(&circuit, "circuit")?)
}

/// Estimated tokens of events with the core's default estimator.
#[wasm_bindgen(js_name = estimateEvents)]
pub fn estimate(events: JsValue) -> Result<f64, JsValue> {
    Ok(estimate_events(&CharEstimator, &events_from_js(events)?) as f64)
}
