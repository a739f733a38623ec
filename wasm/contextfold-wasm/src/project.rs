//! [`project`]: the next request's history in one of the core's wire formats.

use std::collections::HashMap;

use contextfold_core::budget::{
    Calibration, CharEstimator, ModelFacts, TokenEstimator, UNIT_RATIO_PERMILLE,
};
use contextfold_core::checkpoint::{FullVerificationWith, PrefixVerifier};
use contextfold_core::compaction::ProviderIdentity;
use contextfold_core::event::RuntimeEvent;
use contextfold_core::projection::{ProjectInput, estimate_messages, project_with};
use serde_json::Value;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

use crate::convert::{self, BindingError};
use crate::hash_engine::BindingEngine;
use crate::interned::{ReferenceEstimator, TextSlot, with_kept_references};
use crate::jsonl::JsonlEvents;
use crate::kept_events::{KeptInput, kept_text, with_kept_events};
use crate::measure::{JsCounter, calibrated};
use crate::read_with_events;
use crate::session::checkpoint_from_json;
use crate::shared_strings::StringSources;
pub(crate) use crate::string_table::LongStrings;
use crate::string_table::OutputTable;
use output::{Messages, ProjectOutput, ai_sdk_text, value_messages};

mod output;

/// Input of [`project`], with events typed (`E = RuntimeEvent`) or as JSON values (as read:
/// no other key).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ProjectArgs<E> {
    #[serde(default = "Vec::new")]
    pub(crate) events: Vec<E>,
    #[serde(default)]
    checkpoint: Option<Value>,
    #[serde(default)]
    model: Option<ModelFacts>,
    #[serde(default)]
    current_turn_id: Option<String>,
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    provider: Option<ProviderIdentity>,
    #[serde(default)]
    fail_open: Option<bool>,
    #[serde(default)]
    calibration: Option<Calibration>,
}

impl ProjectArgs<Value> {
    /// Reads the input (serde's derive), its events as JSON values.
    pub(crate) fn from_json(value: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(value)
    }

    /// Reads a JS argument as options without events (`what` names it in errors and
    /// `without_events` says why events are refused).
    pub(crate) fn options_from_js(
        input: JsValue,
        what: &str,
        without_events: &str,
    ) -> Result<ProjectArgs<RuntimeEvent>, BindingError> {
        let args = Self::from_json(convert::json_from_js(input, what)?)
            .map_err(|e| BindingError::invalid(what, e))?;
        if !args.events.is_empty() {
            return Err(BindingError::invalid(what, without_events));
        }
        Ok(args.with_events(Vec::new()))
    }
}

impl<E> ProjectArgs<E> {
    /// The same options with other events.
    pub(crate) fn with_events<F>(self, events: Vec<F>) -> ProjectArgs<F> {
        ProjectArgs {
            events,
            checkpoint: self.checkpoint,
            model: self.model,
            current_turn_id: self.current_turn_id,
            format: self.format,
            provider: self.provider,
            fail_open: self.fail_open,
            calibration: self.calibration,
        }
    }
}

/// Projects the next request's history: `{ events, checkpoint?, model?, currentTurnId?,
/// format?, provider?, failOpen?, calibration? }` → `{ messages, system?, estimatedTokens,
/// uncalibratedTokens, ratioPermille, historyBudget, fits, checkpoint, omittedEvents,
/// diagnostics }`. `format`: `ai-sdk` (default), `openai-chat`, `openai-responses`,
/// `anthropic` or `neutral`. `count_tokens`: the caller's counter (see [`crate::measure`]).
///
/// With `share_strings` (and JSON text input), the long strings the messages copy from the
/// events are left out and listed in `sharedStrings` (see [`crate::shared_strings`]).
///
/// `separate_events`: the events as JSONL bytes (a `Uint8Array`, see [`crate::jsonl`]) or as JSON
/// text holding interned string references (a string, see [`crate::interned`]), `input` then
/// holding no `events`; `undefined` otherwise.
#[wasm_bindgen]
pub fn project(
    input: JsValue,
    share_strings: Option<bool>,
    separate_events: JsValue,
    count_tokens: Option<js_sys::Function>,
) -> Result<JsValue, JsValue> {
    let exact = !input.is_string();
    let counter = count_tokens.map(JsCounter::new);
    let counter = counter.as_ref();
    if separate_events.is_string() || separate_events.is_array() {
        let share = share_strings.unwrap_or(false) && !exact;
        return Ok(project_interned(input, &separate_events, share, counter)?);
    }
    if let Some(parsed) = crate::jsonl::events_from_jsonl_js(&separate_events) {
        let detail = "`events` are given as JSONL; leave them out of the options";
        let args = ProjectArgs::options_from_js(input, "project input", detail)?;
        let parsed = parsed?;
        let strings = LongStrings::for_output(exact);
        return Ok(project_events(&parsed.events, args, exact, strings, Some(&parsed), counter)?);
    }
    let (events, options) = read_with_events(input, "project input")?;
    let args = ProjectArgs::from_json(options)
        .map_err(|e| BindingError::invalid("project input", e))?
        .with_events(Vec::new());
    let events = events.unwrap_or_default();
    let strings = match share_strings.unwrap_or(false) && !exact {
        true => LongStrings::Share,
        false => LongStrings::InText,
    };
    Ok(project_events(&events, args, exact, strings, None, counter)?)
}

/// [`project`] of events sent as JSON text with interned strings (see [`crate::interned`]):
/// without a checkpoint to verify and with `share` (see [`LongStrings::Share`]), the events'
/// texts stay references, estimated from the interned strings and shared back by reference,
/// so the projection never copies them, and the events read are kept for the next call (see
/// [`crate::kept_events`]; the result array then ends with the token naming them). If a
/// reference went into a text the core built from one (it would show in the result), the
/// projection is redone with the strings themselves. With `counter`, the strings are always
/// resolved first (the counter measures each text itself): a continuation then answers as
/// unreadable, and the wrapper sends the whole text.
fn project_interned(
    input: JsValue,
    events: &JsValue,
    share: bool,
    counter: Option<&JsCounter>,
) -> Result<JsValue, BindingError> {
    let read_args = |input: JsValue| {
        let detail = "`events` are given apart; leave them out of the options";
        ProjectArgs::options_from_js(input, "project input", detail)
    };
    let args = read_args(input.clone())?;
    let has_checkpoint = args.checkpoint.as_ref().is_some_and(|c| !c.is_null());
    let mut kept = false;
    if share && !has_checkpoint && counter.is_none() {
        let projected = with_kept_events(kept_input(events)?, |kept| {
            with_kept_references(|estimator| {
                let references = Some((estimator, &kept.sources));
                project_events_with(
                    &kept.events,
                    args,
                    false,
                    LongStrings::Share,
                    None,
                    references,
                    None,
                    None,
                    None,
                )
            })
        });
        let error = match projected {
            Ok((Ok(value), token)) => {
                value.unchecked_ref::<js_sys::Array>().push(&JsValue::from(token));
                return Ok(value);
            }
            Ok((Err(error), _)) => {
                kept = true;
                error
            }
            Err(error) => error,
        };
        match error {
            BindingError::InternedUnreadable(_) => {}
            // An error about an event never quotes a text, but if one did, it quotes the string.
            error if error.to_string().contains(crate::interned::REFERENCE_PREFIX) => {}
            error => return Err(error),
        }
    }
    // The whole text: as sent, or (only given as a continuation) as just kept by this call.
    let text = match events.as_string() {
        Some(text) => text,
        None if kept => kept_text().unwrap_or_default(),
        None => return Err(BindingError::InternedUnreadable("the whole text is needed".into())),
    };
    let events = crate::interned::events_from_interned_json(&text)?;
    let strings = if share { LongStrings::Share } else { LongStrings::InText };
    project_events(&events, read_args(input)?, false, strings, None, counter)
}

/// The events argument of [`project_interned`]: JSON text, or `[token, elements]`.
fn kept_input(events: &JsValue) -> Result<KeptInput, BindingError> {
    if let Some(text) = events.as_string() {
        return Ok(KeptInput::Text(text));
    }
    let unreadable =
        || BindingError::InternedUnreadable("expected text or [token, elements]".into());
    let array =
        events.dyn_ref::<js_sys::Array>().filter(|a| a.length() == 2).ok_or_else(unreadable)?;
    let token =
        array.get(0).as_f64().filter(|t| t.fract() == 0.0 && *t >= 0.0).ok_or_else(unreadable)?;
    let elements = array.get(1).as_string().ok_or_else(unreadable)?;
    Ok(KeptInput::Continue { token: token as u32, elements })
}

/// Projects `events` with the options of `args` (whose own `events` are ignored); `exact`:
/// the input held a `BigInt` (see [`convert::output_to_js`]); `strings`: how the long strings of
/// the messages travel (see [`LongStrings`]); `jsonl`: the
/// JSONL input `events` came from, to locate a broken log rule at its line; `counter`: the
/// caller's `countTokens`, measuring instead of the built-in estimate.
pub(crate) fn project_events(
    events: &[RuntimeEvent],
    args: ProjectArgs<RuntimeEvent>,
    exact: bool,
    strings: LongStrings,
    jsonl: Option<&JsonlEvents>,
    counter: Option<&JsCounter>,
) -> Result<JsValue, BindingError> {
    project_events_with(events, args, exact, strings, jsonl, None, None, counter, None)
}

/// [`project_events`] with the caller's verified-prefix cache (an `EventLog`'s): a checkpoint's
/// covered prefix is hashed once, later projections verify only what was appended. `held[i]`:
/// whether the caller holds a JS copy of event `i` to share strings from
/// ([`LongStrings::ShareElseTable`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn project_events_cached(
    events: &[RuntimeEvent],
    args: ProjectArgs<RuntimeEvent>,
    exact: bool,
    strings: LongStrings,
    verifier: &mut dyn PrefixVerifier,
    counter: Option<&JsCounter>,
    held: &[bool],
) -> Result<JsValue, BindingError> {
    project_events_with(
        events,
        args,
        exact,
        strings,
        None,
        None,
        Some(verifier),
        counter,
        Some(held),
    )
}

/// The kept references of events read by [`crate::kept_events`], with the
/// estimator that knows them.
type ReferenceLookup<'a> = (&'a ReferenceEstimator<'a>, &'a HashMap<usize, (usize, TextSlot)>);

/// [`project_events`], estimating with the estimator of `references` when given (the events'
/// texts are then references) and sharing those back by reference; fails with
/// [`BindingError::InternedUnreadable`] if a reference shows anywhere else in the result.
/// Measures with `counter` (never given with `references`) or the built-in estimate, scaled by
/// the calibration of `args` (see [`crate::measure`]).
#[allow(clippy::too_many_arguments)]
fn project_events_with(
    events: &[RuntimeEvent],
    args: ProjectArgs<RuntimeEvent>,
    exact: bool,
    strings: LongStrings,
    jsonl: Option<&JsonlEvents>,
    references: Option<ReferenceLookup<'_>>,
    verifier: Option<&mut dyn PrefixVerifier>,
    counter: Option<&JsCounter>,
    held: Option<&[bool]>,
) -> Result<JsValue, BindingError> {
    let base: &dyn TokenEstimator = match (references, counter) {
        (Some((estimator, _)), _) => estimator,
        (None, Some(counter)) => counter,
        (None, None) => &CharEstimator,
    };
    let estimator = calibrated(base, args.calibration.as_ref(), args.provider.as_ref());
    let check = || counter.map_or(Ok(()), JsCounter::check);
    let checkpoint =
        args.checkpoint.filter(|v| !v.is_null()).map(checkpoint_from_json).transpose()?;
    let model = args.model.unwrap_or_default();
    let mut projection = project_with(
        &ProjectInput {
            events,
            current_turn_id: args.current_turn_id.as_deref(),
            checkpoint: checkpoint.as_ref(),
            model: &model,
            provider: args.provider.as_ref(),
            fail_open: args.fail_open.unwrap_or(false),
        },
        &estimator,
        verifier.unwrap_or(&mut FullVerificationWith::<BindingEngine>::default()),
    )
    .map_err(|e| match jsonl {
        Some(jsonl) => jsonl.log_error(e),
        None => BindingError::core(e.code(), e),
    })?;
    check()?;
    let uncalibrated_tokens = match estimator.ratio_permille {
        UNIT_RATIO_PERMILLE => projection.estimated_tokens,
        _ => estimate_messages(base, &projection.messages),
    };
    check()?;
    let format = args.format.as_deref().unwrap_or("ai-sdk");
    let sources = strings.shares().then(|| {
        let sources = match held {
            Some(held) => StringSources::of_held(events, |index| held.get(index) == Some(&true)),
            None => StringSources::of(events),
        };
        match references {
            Some((estimator, references)) => sources.with_references(estimator, references),
            None => sources,
        }
    });
    let mut table = strings.tables().then(OutputTable::reuse);
    let (mut shared, mut moved, mut system) = (Vec::new(), Vec::new(), None);
    let messages = if format == "ai-sdk" && !exact {
        let messages = &projection.messages;
        Messages::Text(ai_sdk_text(
            messages,
            sources.as_ref(),
            table.as_mut(),
            &mut shared,
            &mut moved,
        ))
    } else {
        let mut messages;
        (messages, system) = value_messages(format, &mut projection.messages)?;
        if let Some(sources) = &sources {
            shared = sources.share(&mut messages);
        }
        if let Some(table) = table.as_mut() {
            moved = table.move_long_strings(&mut messages);
        }
        Messages::Value(messages)
    };
    let shared_strings = sources.is_some().then_some(shared);
    let table_strings = Some(moved).filter(|moved| !moved.is_empty());
    let output = ProjectOutput {
        messages: &messages,
        system,
        estimated_tokens: projection.estimated_tokens,
        uncalibrated_tokens,
        ratio_permille: estimator.ratio_permille,
        history_budget: projection.history_budget,
        fits: projection.fits,
        checkpoint: &projection.checkpoint,
        omitted_events: projection.omitted_events,
        diagnostics: &projection.diagnostics,
        shared_strings,
        table_strings,
    };
    if let Some((estimator, _)) = references {
        let json = output.to_json()?;
        // The prefix of a reference, as JSON writes it (escaped once or more).
        if estimator.leaked() || crate::interned::json_holds_reference(&json) {
            return Err(BindingError::InternedUnreadable("a reference left its text".into()));
        }
        // The JSON text alone in the reused table (read from wasm memory with one copy).
        return Ok(OutputTable::reuse().to_js(&json));
    }
    match table.filter(|_| output.table_strings.is_some()) {
        None if exact => Ok(convert::to_js(&output.to_value()?, "projection")?),
        None => Ok(convert::json_text_to_js(output.to_json()?)),
        Some(table) => Ok(table.to_js(&output.to_json()?)),
    }
}
