//! Long strings of events that cross into wasm once, then travel as references.
//!
//! An agent projects the same, growing array of event objects on every request. Sent as JSON
//! text each time, every tool output would be escaped by `JSON.stringify`, copied into wasm
//! memory and unescaped by the parser on every call, although JS strings never change. So the
//! wrapper (`pkg/interned.js`) sends each string of at least 256 UTF-16 units once
//! ([`intern_string`], under an id it keys by the string's content) and writes a reference in its
//! place in the events' JSON text: the string [`REFERENCE_PREFIX`] followed by the id in decimal.
//! It does so only when no other string of those events starts with that prefix, and only for
//! well-formed strings (a lone surrogate has no UTF-8 form and must fail as it does in JSON).
//!
//! [`events_from_interned_json`] parses such a text and puts every referenced string back before
//! the core sees the events, so every result (digests included) is the one of the full text. Any
//! failure (the text is not plain typed events, an id is unknown, an event kind this module does
//! not know) is [`BindingError::InternedUnreadable`], on which the wrapper sends the full text
//! instead: errors and their messages are then exactly the full text's.

use std::cell::RefCell;

use contextfold_core::event::{EventContent, RuntimeEvent};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use crate::convert::BindingError;

/// What the wrapper writes in place of an interned string, before its id.
pub const REFERENCE_PREFIX: &str = "\u{0}\u{1}cf:";

thread_local! {
    /// The interned strings by id (`None`: released or never sent).
    static STRINGS: RefCell<Vec<Option<String>>> = const { RefCell::new(Vec::new()) };
}

/// Keeps `text` under `id` until [`release_strings`] (replacing what the id held).
#[wasm_bindgen(js_name = internString)]
pub fn intern_string(id: u32, text: String) {
    STRINGS.with_borrow_mut(|strings| {
        let index = id as usize;
        if strings.len() <= index {
            strings.resize(index + 1, None);
        }
        strings[index] = Some(text);
    });
}

/// Forgets the strings of these ids (their memory is reused).
#[wasm_bindgen(js_name = releaseStrings)]
pub fn release_strings(ids: &[u32]) {
    STRINGS.with_borrow_mut(|strings| {
        for &id in ids {
            if let Some(slot) = strings.get_mut(id as usize) {
                *slot = None;
            }
        }
    });
}

/// Parses events from JSON text holding references (see the module docs) and resolves them.
pub fn events_from_interned_json(text: &str) -> Result<Vec<RuntimeEvent>, BindingError> {
    let mut events: Vec<RuntimeEvent> =
        serde_json::from_str(text).map_err(|e| BindingError::InternedUnreadable(e.to_string()))?;
    STRINGS.with_borrow(|strings| {
        let mut resolve = |text: &mut String| resolve(text, strings);
        events.iter_mut().try_for_each(|event| each_string(event, &mut resolve))
    })?;
    Ok(events)
}

/// Puts the referenced string in place of `text` when `text` is a reference.
fn resolve(text: &mut String, strings: &[Option<String>]) -> Result<(), BindingError> {
    let Some(id) = text.strip_prefix(REFERENCE_PREFIX) else {
        return Ok(());
    };
    let found = id.parse::<usize>().ok().and_then(|id| strings.get(id)?.as_ref());
    match found {
        Some(interned) => {
            text.clone_from(interned);
            Ok(())
        }
        None => Err(BindingError::InternedUnreadable(format!("unknown string reference {id}"))),
    }
}

type Visit<'a> = dyn FnMut(&mut String) -> Result<(), BindingError> + 'a;

/// Calls `visit` on every string value of `event` (not on object keys, which are never
/// references).
fn each_string(event: &mut RuntimeEvent, visit: &mut Visit<'_>) -> Result<(), BindingError> {
    visit(&mut event.session_id)?;
    visit(&mut event.run_id)?;
    visit(&mut event.turn_id)?;
    visit(&mut event.runtime_event_id)?;
    if let Some(response_id) = &mut event.response_id {
        visit(response_id)?;
    }
    for value in event.metadata.iter_mut().flat_map(|m| m.values_mut()) {
        each_value_string(value, visit)?;
    }
    match &mut event.content {
        EventContent::UserText { text }
        | EventContent::AssistantText { text }
        | EventContent::SystemNote { text } => visit(text),
        EventContent::Reasoning { text, provider_data } => {
            visit(text)?;
            provider_data.as_mut().map_or(Ok(()), |data| each_value_string(data, visit))
        }
        EventContent::RuntimeNote { code, text } => {
            visit(code)?;
            visit(text)
        }
        EventContent::ToolCall { call_id, tool_name, input }
        | EventContent::HostedToolCall { call_id, tool_name, input } => {
            visit(call_id)?;
            visit(tool_name)?;
            each_value_string(input, visit)
        }
        EventContent::ToolResult { call_id, tool_name, output, .. }
        | EventContent::HostedToolResult { call_id, tool_name, output, .. } => {
            visit(call_id)?;
            visit(tool_name)?;
            each_value_string(output, visit)
        }
        other => Err(BindingError::InternedUnreadable(format!(
            "no reference resolution for `{}` events",
            other.kind_name()
        ))),
    }
}

/// Calls `visit` on every string inside a JSON value.
fn each_value_string(value: &mut Value, visit: &mut Visit<'_>) -> Result<(), BindingError> {
    match value {
        Value::String(text) => visit(text),
        Value::Array(items) => items.iter_mut().try_for_each(|item| each_value_string(item, visit)),
        Value::Object(members) => {
            members.values_mut().try_for_each(|member| each_value_string(member, visit))
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
    }
}
