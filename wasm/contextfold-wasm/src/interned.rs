//! Long strings of events that cross into wasm once, then travel as references.
//!
//! An agent projects the same, growing array of event objects on every request. Sent as JSON
//! text each time, every tool output would be escaped by `JSON.stringify`, copied into wasm
//! memory and unescaped by the parser on every call, although JS strings never change. So the
//! wrapper (`pkg/interned.js`) sends each string of at least 256 UTF-16 units once
//! ([`intern_string`], which returns its id; the wrapper keys the id by the string's content)
//! and writes a reference in its place in the events' JSON text: the string
//! [`REFERENCE_PREFIX`] followed by the id in decimal. It does so only when no other string of
//! those events starts with that prefix, and only for well-formed strings (a lone surrogate has
//! no UTF-8 form and must fail as it does in JSON).
//!
//! [`events_from_interned_json`] parses such a text and puts every referenced string back before
//! the core sees the events, so every result (digests included) is the one of the full text.
//! `keep_texts` leaves the references of the events' texts in place instead, for a projection
//! that only needs their estimates ([`ReferenceEstimator`]; see `crate::project`). Any failure
//! (the text is not plain typed events, an id is unknown, an event kind this module does not
//! know, an attachment whose inline data was interned and so fails its check while parsed) is
//! [`BindingError::InternedUnreadable`], on which the wrapper sends the full text instead:
//! errors and their messages are then exactly the full text's.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use contextfold_core::binding::value_from_text;
use contextfold_core::budget::{CharEstimator, TokenEstimator};
use contextfold_core::event::{EventContent, RuntimeEvent};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use crate::convert::BindingError;
use crate::shared_strings::utf16_length;

/// What the wrapper writes in place of an interned string, before its id.
pub const REFERENCE_PREFIX: &str = "\u{0}\u{1}cf:";

/// One interned string, with what a projection needs of it without reading it.
struct Interned {
    text: String,
    /// [`CharEstimator`]'s estimate of `text`.
    estimate: u64,
    /// Its length in UTF-16 code units (what JS `length` says).
    utf16_length: usize,
}

thread_local! {
    /// The interned strings by id (`None`: released), and the released ids to reuse.
    static STRINGS: RefCell<Vec<Option<Interned>>> = const { RefCell::new(Vec::new()) };
    static FREE_IDS: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
}

/// Keeps `text` until [`release_strings`] and returns its id. Ids are unique in the module, so
/// any number of wrappers can intern into it.
#[wasm_bindgen(js_name = internString)]
pub fn intern_string(text: String) -> u32 {
    let interned = Interned {
        estimate: CharEstimator.estimate_text(&text),
        utf16_length: utf16_length(&text),
        text,
    };
    STRINGS.with_borrow_mut(|strings| match FREE_IDS.with_borrow_mut(Vec::pop) {
        Some(id) => {
            strings[id as usize] = Some(interned);
            id
        }
        None => {
            strings.push(Some(interned));
            u32::try_from(strings.len() - 1).expect("fewer than 2^32 strings")
        }
    })
}

/// Forgets the strings of these ids (their memory and ids are reused). The events kept from
/// the last projection are dropped too, since their text could name a reused id.
#[wasm_bindgen(js_name = releaseStrings)]
pub fn release_strings(ids: &[u32]) {
    crate::kept_events::forget();
    STRINGS.with_borrow_mut(|strings| {
        FREE_IDS.with_borrow_mut(|free| {
            for &id in ids {
                if let Some(slot) = strings.get_mut(id as usize).filter(|slot| slot.is_some()) {
                    *slot = None;
                    free.push(id);
                }
            }
        });
    });
}

/// Parses events from JSON text holding references (see the module docs) and resolves them all.
pub fn events_from_interned_json(text: &str) -> Result<Vec<RuntimeEvent>, BindingError> {
    let mut events = parse(text)?;
    STRINGS.with_borrow(|strings| {
        events.iter_mut().try_for_each(|event| {
            each_string(event, &mut |text, _| resolve(text, strings), &mut |text| {
                resolve(text, strings)
            })
        })
    })?;
    Ok(events)
}

/// Leaves the references of the texts of `events` in place (see [`TextSlot`]), resolving every
/// other string, and records in `sources` where each referenced string first occurs (the
/// events' indexes counted from `first_index`).
pub(crate) fn keep_texts(
    events: &mut [RuntimeEvent],
    first_index: usize,
    sources: &mut HashMap<usize, (usize, TextSlot)>,
) -> Result<(), BindingError> {
    STRINGS.with_borrow(|strings| {
        events.iter_mut().enumerate().try_for_each(|(offset, event)| {
            let mut keep = |text: &mut String, slot: TextSlot| match reference_id(text) {
                None => Ok(()),
                Some(id) if strings.get(id).is_some_and(Option::is_some) => {
                    sources.entry(id).or_insert((first_index + offset, slot));
                    Ok(())
                }
                Some(_) => {
                    Err(BindingError::InternedUnreadable(format!("unknown reference {text:?}")))
                }
            };
            each_string(event, &mut keep, &mut |text| resolve(text, strings))
        })
    })
}

/// Runs `f` with an estimator that knows the interned strings' estimates and a lookup of their
/// UTF-16 lengths.
pub fn with_kept_references<T>(f: impl FnOnce(&ReferenceEstimator<'_>) -> T) -> T {
    STRINGS.with_borrow(|strings| f(&ReferenceEstimator { strings, leaked: Cell::new(false) }))
}

/// [`CharEstimator`], with the estimate of an interned string for its reference. A reference
/// inside a longer text (a text the core built from an event's, such as a runtime note's)
/// cannot be estimated: it is recorded in [`ReferenceEstimator::leaked`].
pub struct ReferenceEstimator<'a> {
    strings: &'a [Option<Interned>],
    leaked: Cell<bool>,
}

impl std::fmt::Debug for ReferenceEstimator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReferenceEstimator").field("leaked", &self.leaked.get()).finish()
    }
}

/// Whether JSON `text` holds a reference, escaped once or more: `\\u0001cf:` (the escape of its
/// `U+0001`, which JSON writers always escape). Finds each backslash eight bytes at a time.
pub fn json_holds_reference(text: &str) -> bool {
    const ESCAPED: &[u8] = b"\\u0001cf:";
    let bytes = text.as_bytes();
    let is_reference = |at: usize| bytes.get(at..).is_some_and(|rest| rest.starts_with(ESCAPED));
    let (words, tail) = bytes.as_chunks::<8>();
    for (index, word) in words.iter().enumerate() {
        // A byte of `word` is zero where `word` has a backslash (exact, no carry between bytes).
        let diff = u64::from_le_bytes(*word) ^ 0x5c5c_5c5c_5c5c_5c5c;
        const LOW: u64 = 0x7f7f_7f7f_7f7f_7f7f;
        let mut found = !(((diff & LOW).wrapping_add(LOW)) | diff | LOW);
        while found != 0 {
            if is_reference(8 * index + (found.trailing_zeros() / 8) as usize) {
                return true;
            }
            found &= found - 1;
        }
    }
    let tail_start = bytes.len() - tail.len();
    tail.iter().enumerate().any(|(k, &byte)| byte == b'\\' && is_reference(tail_start + k))
}

impl ReferenceEstimator<'_> {
    /// A reference was estimated inside a longer text: the projection must be redone with the
    /// strings themselves.
    pub fn leaked(&self) -> bool {
        self.leaked.get()
    }

    /// The UTF-16 length of the string a reference stands for, if `text` is one.
    pub fn referenced_length(&self, text: &str) -> Option<usize> {
        Some(self.interned(text)?.utf16_length)
    }

    fn interned(&self, text: &str) -> Option<&Interned> {
        self.strings.get(reference_id(text)?)?.as_ref()
    }
}

impl TokenEstimator for ReferenceEstimator<'_> {
    fn estimate_text(&self, text: &str) -> u64 {
        if let Some(interned) = self.interned(text) {
            return interned.estimate;
        }
        if text.contains(REFERENCE_PREFIX) {
            self.leaked.set(true);
        }
        CharEstimator.estimate_text(text)
    }

    fn name(&self) -> String {
        CharEstimator.name()
    }
}

/// Where a text an event may keep as a reference is: the caller's string is read from there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextSlot {
    /// `content.text`.
    Text,
    /// `content.input`, a string.
    Input,
    /// `content.output`, a string.
    Output,
}

impl TextSlot {
    /// The slot's path in the event.
    pub fn path(self) -> [&'static str; 2] {
        match self {
            TextSlot::Text => ["content", "text"],
            TextSlot::Input => ["content", "input"],
            TextSlot::Output => ["content", "output"],
        }
    }
}

/// The id of a reference (the whole string is the prefix and a decimal id).
pub fn reference_id(text: &str) -> Option<usize> {
    let digits = text.strip_prefix(REFERENCE_PREFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Events of JSON text (an array), typed; any failure is [`BindingError::InternedUnreadable`].
pub(crate) fn parse(text: &str) -> Result<Vec<RuntimeEvent>, BindingError> {
    if let Some(events) = RuntimeEvent::array_from_text(text) {
        return Ok(events);
    }
    let unreadable = |detail: String| BindingError::InternedUnreadable(detail);
    match value_from_text(text).map_err(|e| unreadable(e.to_string()))? {
        Value::Array(values) => values
            .into_iter()
            .map(|value| RuntimeEvent::from_value(value).map_err(|e| unreadable(e.to_string())))
            .collect(),
        _ => Err(unreadable("the interned events are not an array".to_owned())),
    }
}

/// Puts the referenced string in place of `text` when `text` is a reference.
fn resolve(text: &mut String, strings: &[Option<Interned>]) -> Result<(), BindingError> {
    if !text.starts_with(REFERENCE_PREFIX) {
        return Ok(());
    }
    match reference_id(text).and_then(|id| strings.get(id)?.as_ref()) {
        Some(interned) => {
            text.clone_from(&interned.text);
            Ok(())
        }
        None => Err(BindingError::InternedUnreadable(format!("unknown reference {text:?}"))),
    }
}

type Visit<'a> = dyn FnMut(&mut String) -> Result<(), BindingError> + 'a;
type VisitText<'a> = dyn FnMut(&mut String, TextSlot) -> Result<(), BindingError> + 'a;

/// Calls `text` on the texts of `event` (its [`TextSlot`]s) and `other` on every other string
/// value (not on object keys, which are never references).
fn each_string(
    event: &mut RuntimeEvent,
    text: &mut VisitText<'_>,
    other: &mut Visit<'_>,
) -> Result<(), BindingError> {
    other(&mut event.session_id)?;
    other(&mut event.run_id)?;
    other(&mut event.turn_id)?;
    other(&mut event.runtime_event_id)?;
    if let Some(response_id) = &mut event.response_id {
        other(response_id)?;
    }
    for value in event.metadata.iter_mut().flat_map(|m| m.values_mut()) {
        each_value_string(value, other)?;
    }
    match &mut event.content {
        EventContent::UserText { text: body, .. }
        | EventContent::AssistantText { text: body }
        | EventContent::SystemNote { text: body } => text(body, TextSlot::Text),
        EventContent::Reasoning { text: body, provider_data } => {
            text(body, TextSlot::Text)?;
            provider_data.as_mut().map_or(Ok(()), |data| each_value_string(data, other))
        }
        EventContent::RuntimeNote { code, text: body } => {
            other(code)?;
            text(body, TextSlot::Text)
        }
        EventContent::ToolCall { call_id, tool_name, input }
        | EventContent::HostedToolCall { call_id, tool_name, input } => {
            other(call_id)?;
            other(tool_name)?;
            match input {
                Value::String(body) => text(body, TextSlot::Input),
                value => each_value_string(value, other),
            }
        }
        EventContent::ToolResult { call_id, tool_name, output, .. }
        | EventContent::HostedToolResult { call_id, tool_name, output, .. } => {
            other(call_id)?;
            other(tool_name)?;
            match output {
                Value::String(body) => text(body, TextSlot::Output),
                value => each_value_string(value, other),
            }
        }
        unknown => Err(BindingError::InternedUnreadable(format!(
            "no reference resolution for `{}` events",
            unknown.kind_name()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_is_found_in_json_text_escaped_once_or_more_at_every_offset() {
        let reference = format!("{REFERENCE_PREFIX}12");
        for pad in 0..20 {
            let once =
                serde_json::to_string(&format!("{}{reference}", "x".repeat(pad))).expect("json");
            let twice = serde_json::to_string(&once).expect("json");
            assert!(json_holds_reference(&once), "{pad} {once}");
            assert!(json_holds_reference(&twice), "{pad} {twice}");
            let clean = format!(r#"{{"a":"{}\n\u0002cf: u0001cf:","b":"\\"}}"#, "y".repeat(pad));
            assert!(!json_holds_reference(&clean), "{pad} {clean}");
        }
    }

    use serde_json::json;

    fn reference(id: u32) -> String {
        format!("{REFERENCE_PREFIX}{id}")
    }

    #[test]
    fn ids_are_unique_until_released_then_reused() {
        let a = intern_string("a".repeat(300));
        let b = intern_string("b".repeat(300));
        assert_ne!(a, b);
        release_strings(&[a, a]);
        let c = intern_string("c".repeat(300));
        assert_eq!(c, a, "a released id is reused once");
        assert_ne!(intern_string("d".repeat(300)), a);
    }

    fn events_text(output: Value, text: &str) -> String {
        json!([
            { "sessionId": "s", "runId": "r", "turnId": "t", "runtimeEventId": "e1", "seq": 1,
              "content": { "type": "user_text", "text": text } },
            { "sessionId": "s", "runId": "r", "turnId": "t", "runtimeEventId": "e2", "seq": 2,
              "content": { "type": "tool_result", "callId": "c", "toolName": "x", "output": output } }
        ])
        .to_string()
    }

    #[test]
    fn a_reference_is_the_prefix_and_a_decimal_id_only() {
        assert_eq!(reference_id(&reference(42)), Some(42));
        for text in
            ["", "42", "\u{0}\u{1}cf:", "\u{0}\u{1}cf:4a", "\u{0}\u{1}cf:-1", "x\u{0}\u{1}cf:1"]
        {
            assert_eq!(reference_id(text), None, "{text:?}");
        }
    }

    #[test]
    fn resolving_puts_every_interned_string_back() {
        let long = "🚀 output ".repeat(40);
        let a = intern_string(long.clone());
        let b = intern_string("a nested string".repeat(20));
        let output = json!({ "lines": [reference(b)], "n": 1 });
        let events = events_from_interned_json(&events_text(output, &reference(a))).unwrap();
        assert_eq!(events[0].content, EventContent::user_text(long));
        let EventContent::ToolResult { output, .. } = &events[1].content else { panic!() };
        assert_eq!(output["lines"][0], json!("a nested string".repeat(20)));
        release_strings(&[a, b]);
    }

    #[test]
    fn kept_texts_stay_references_and_know_their_first_event() {
        let a = intern_string("x".repeat(300));
        let b = intern_string("nested ".repeat(50));
        let output = json!({ "lines": [reference(b)] });
        let kept = crate::kept_events::read_fresh(&events_text(output, &reference(a))).unwrap();
        assert_eq!(kept.events[0].content, EventContent::user_text(reference(a)));
        let EventContent::ToolResult { output, .. } = &kept.events[1].content else { panic!() };
        assert_eq!(
            output["lines"][0],
            json!("nested ".repeat(50)),
            "strings inside values resolve"
        );
        assert_eq!(kept.sources.get(&(a as usize)), Some(&(0, TextSlot::Text)));
        assert!(!kept.sources.contains_key(&(b as usize)));
        release_strings(&[a, b]);
    }

    #[test]
    fn an_unknown_or_released_reference_is_unreadable() {
        let id = intern_string("y".repeat(300));
        release_strings(&[id]);
        for read in [
            |text: &str| events_from_interned_json(text).map(drop),
            |text: &str| crate::kept_events::read_fresh(text).map(drop),
        ] {
            let error = read(&events_text(json!("short"), &reference(id))).unwrap_err();
            assert_eq!(error.code(), "interned_events_unreadable");
            let error = read("[{\"not\": \"an event\"}]").unwrap_err();
            assert_eq!(error.code(), "interned_events_unreadable");
        }
    }

    #[test]
    fn the_estimator_knows_references_and_flags_one_inside_a_text() {
        let text = "测试 mixed ascii text ".repeat(30);
        let id = intern_string(text.clone());
        with_kept_references(|estimator| {
            assert_eq!(estimator.estimate_text(&reference(id)), CharEstimator.estimate_text(&text));
            assert_eq!(estimator.referenced_length(&reference(id)), Some(utf16_length(&text)));
            assert_eq!(estimator.estimate_text("plain"), CharEstimator.estimate_text("plain"));
            assert!(!estimator.leaked());
            estimator.estimate_text(&format!("[runtime:x] {}", reference(id)));
            assert!(estimator.leaked());
        });
        release_strings(&[id]);
    }
}
