//! [`project`]: the next request's history in one of the core's wire formats.
//!
//! The options are the core's [`ProjectOptions`], the projection the core's
//! [`project_calibrated`], the formats the core's [`OutputFormat`]. This file only reads the
//! arguments and hands the result back: its long strings through the UTF-16 table (see
//! [`crate::string_table`]), the rest as JSON text.

use contextfold_core::Diagnostic;
use contextfold_core::binding::{
    JsonWriter, PathStep, StringHook, value_from_text, write_json_text, write_model_messages,
};
use contextfold_core::budget::{CharEstimator, TokenEstimator};
use contextfold_core::checkpoint::{FullVerificationWith, PrefixVerifier};
use contextfold_core::event::RuntimeEvent;
use contextfold_core::projection::{
    Message, OutputFormat, ProjectInput, ProjectOptions, ReplayedCheckpoint, project_calibrated,
};
use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use crate::convert::{self, BindingError};
use crate::hash_engine::BindingEngine;
use crate::jsonl::JsonlEvents;
use crate::measure::JsCounter;
use crate::session::checkpoint_from_json;
use crate::shared_strings::{SharedString, StringSources};
use crate::string_table::{MIN_TABLE_BYTES, OutputTable, TableString, steps_of};

/// Projects the next request's history: `options` are the core's [`ProjectOptions`], `events`
/// JSONL bytes or an array (see [`crate::events_with_lines`]; `undefined`: none) →
/// `{ messages, system?, estimatedTokens, uncalibratedTokens, ratioPermille, historyBudget,
/// fits, checkpoint, omittedEvents, diagnostics }`. `count_tokens`: the caller's counter (see
/// [`crate::measure`]).
#[wasm_bindgen]
pub fn project(
    options: JsValue,
    events: JsValue,
    count_tokens: Option<js_sys::Function>,
) -> Result<JsValue, JsValue> {
    let exact = !options.is_string() || convert::is_exact_tape(&events);
    let counter = count_tokens.map(JsCounter::new);
    let mut verifier = FullVerificationWith::<BindingEngine>::default();
    let options = convert::from_js::<ProjectOptions>(options, "project input")?;
    let events = match events.is_undefined() {
        true => JsonlEvents { events: Vec::new(), lines: Vec::new() },
        false => crate::events_with_lines(events)?,
    };
    let source = Source { jsonl: Some(&events), counter: counter.as_ref(), exact, held: None };
    Ok(project_events(&events.events, options, source, &mut verifier)?)
}

/// Where a projection's events came from and how it measures and answers.
#[derive(Clone, Copy)]
pub(crate) struct Source<'a> {
    /// The JSONL input the events were read from, to locate a broken log rule at its line.
    pub(crate) jsonl: Option<&'a JsonlEvents>,
    /// The caller's `countTokens`, measuring instead of the built-in estimate.
    pub(crate) counter: Option<&'a JsCounter>,
    /// The input held a `BigInt`: the result goes back as a value (see [`convert::to_js`]).
    pub(crate) exact: bool,
    /// Per event, whether the wrapper holds its JS copy (an `EventLog`'s events appended as
    /// objects): their long strings are left out of the result and listed in `sharedStrings`
    /// (see [`crate::shared_strings`]).
    pub(crate) held: Option<&'a [bool]>,
}

/// Projects `events` with `options` (the core's calibrated projection, verifying with
/// `verifier`) and hands the result to the wrapper.
pub(crate) fn project_events(
    events: &[RuntimeEvent],
    options: ProjectOptions,
    source: Source<'_>,
    verifier: &mut dyn PrefixVerifier,
) -> Result<JsValue, BindingError> {
    let base: &dyn TokenEstimator = match source.counter {
        Some(counter) => counter,
        None => &CharEstimator,
    };
    let checkpoint =
        options.checkpoint.filter(|v| !v.is_null()).map(checkpoint_from_json).transpose()?;
    let model = options.model.unwrap_or_default();
    let input = ProjectInput {
        events,
        current_turn_id: options.current_turn_id.as_deref(),
        checkpoint: checkpoint.as_ref(),
        model: &model,
        provider: options.provider.as_ref(),
        fail_open: options.fail_open.unwrap_or(false),
    };
    let calibrated = project_calibrated(&input, base, options.calibration.as_ref(), verifier)
        .map_err(|e| match source.jsonl {
            Some(jsonl) => jsonl.log_error(e),
            None => BindingError::core(e.code(), e),
        })?;
    if let Some(counter) = source.counter {
        counter.check()?;
    }
    let mut projection = calibrated.projection;
    let format = options.format.unwrap_or_default();
    let mut table = (!source.exact).then(OutputTable::reuse);
    let held = source.held.filter(|held| !source.exact && held.contains(&true));
    let sources = held.map(|held| StringSources::of_held(events, |i| held.get(i) == Some(&true)));
    let (mut moved, mut shared, mut system) = (Vec::new(), Vec::new(), None);
    let messages = if let (OutputFormat::AiSdk, Some(table)) = (format, table.as_mut()) {
        let messages = &projection.messages;
        Messages::Text(ai_sdk_text(messages, sources.as_ref(), table, &mut moved, &mut shared))
    } else {
        let formatted = format
            .render(std::mem::take(&mut projection.messages))
            .map_err(|e| BindingError::core(e.code, e))?;
        system = formatted.system;
        let mut messages = Value::Array(formatted.messages);
        if let Some(sources) = &sources {
            shared = sources.share(&mut messages);
        }
        if let Some(table) = table.as_mut() {
            moved = table.move_long_strings(&mut messages);
        }
        Messages::Value(messages)
    };
    let output = ProjectOutput {
        messages: &messages,
        system,
        estimated_tokens: projection.estimated_tokens,
        uncalibrated_tokens: calibrated.uncalibrated_tokens,
        ratio_permille: calibrated.ratio_permille,
        history_budget: projection.history_budget,
        fits: projection.fits,
        checkpoint: &projection.checkpoint,
        omitted_events: projection.omitted_events,
        diagnostics: &projection.diagnostics,
        shared_strings: sources.is_some().then_some(shared),
        table_strings: Some(moved).filter(|moved| !moved.is_empty()),
    };
    match table.filter(|_| output.table_strings.is_some()) {
        None if source.exact => Ok(convert::to_js(&output.to_value()?, "projection")?),
        None => Ok(convert::json_text_to_js(output.to_json()?)),
        Some(table) => Ok(table.to_js(&output.to_json()?)),
    }
}

/// The AI SDK messages of `messages` as JSON text, written straight from the projected
/// messages. Each string an event the wrapper holds has (`sources`) is left out and listed in
/// `shared`; each other long string moves into `table` and is listed in `moved`.
fn ai_sdk_text(
    messages: &[Message],
    sources: Option<&StringSources<'_>>,
    table: &mut OutputTable,
    moved: &mut Vec<TableString>,
    shared: &mut Vec<SharedString>,
) -> String {
    let mut take = |path: &[PathStep<'_>], text: &str| {
        if let Some(found) = sources.and_then(|s| s.share_string(text, || steps_of(path))) {
            shared.push(found);
            return true;
        }
        let long = text.len() >= MIN_TABLE_BYTES;
        if long {
            moved.push(table.push_string(steps_of(path), text));
        }
        long
    };
    let hook: Option<StringHook<'_>> = Some(&mut take);
    let mut writer = JsonWriter::new(String::new(), hook);
    write_model_messages(messages, &mut writer);
    writer.finish()
}

/// A projection's messages in the requested format: JSON text written straight from the
/// projected messages (AI SDK messages without `BigInt`s), or a value.
enum Messages {
    Text(String),
    Value(Value),
}

/// The result of [`project`], borrowing the projection (nothing is copied twice).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProjectOutput<'a> {
    /// Written by [`ProjectOutput::to_json`] (nearly all of the output, and the hot path).
    #[serde(skip)]
    messages: &'a Messages,
    /// Anthropic only: the top-level `system` text, or `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<Option<String>>,
    estimated_tokens: u64,
    uncalibrated_tokens: u64,
    ratio_permille: u32,
    history_budget: u64,
    fits: bool,
    /// `null` when no checkpoint replays.
    checkpoint: &'a Option<ReplayedCheckpoint>,
    omitted_events: u64,
    diagnostics: &'a [Diagnostic],
    /// The strings left out of `messages` for the wrapper to put back from the events it holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    shared_strings: Option<Vec<SharedString>>,
    /// The strings moved into the UTF-16 table, for the wrapper to put back.
    #[serde(skip_serializing_if = "Option::is_none")]
    table_strings: Option<Vec<TableString>>,
}

impl ProjectOutput<'_> {
    /// The output's JSON text: `messages` first, written by the core's non-generic writer
    /// (fast in a module built for size), the small rest by serde_json.
    fn to_json(&self) -> Result<String, BindingError> {
        let rest = serde_json::to_string(self).map_err(Self::error)?;
        let mut json = String::with_capacity(rest.len() + 64);
        json.push_str("{\"messages\":");
        match self.messages {
            Messages::Text(text) => json.push_str(text),
            Messages::Value(value) => write_json_text(value, &mut json),
        }
        // `rest` is an object with at least `estimatedTokens`: its members follow.
        json.push(',');
        json.push_str(rest.strip_prefix('{').unwrap_or(&rest));
        Ok(json)
    }

    /// The output as one JSON value, `messages` first (for results holding `BigInt`s).
    fn to_value(&self) -> Result<Value, BindingError> {
        let mut value = serde_json::Map::new();
        let messages = match self.messages {
            Messages::Value(value) => value.clone(),
            Messages::Text(text) => value_from_text(text).map_err(Self::error)?,
        };
        value.insert("messages".into(), messages);
        // A struct serializes to an object: its members follow.
        if let Value::Object(rest) = serde_json::to_value(self).map_err(Self::error)? {
            value.extend(rest);
        }
        Ok(Value::Object(value))
    }

    fn error(error: impl ToString) -> BindingError {
        BindingError::Output { what: "projection".into(), detail: error.to_string() }
    }
}
