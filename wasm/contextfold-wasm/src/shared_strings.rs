//! Sharing a result's long strings with the caller's own events instead of copying them back.
//!
//! A projection repeats the events' texts and tool outputs verbatim: nearly all of its bytes.
//! Sending them back as JSON text costs a UTF-8 encoding in wasm, a UTF-8 decoding in JS (slow
//! for non-ASCII text) and a `JSON.parse`, although the caller already holds every one of those
//! strings in the events it passed. So, when the wrapper asks for it, each string of the result
//! of at least [`MIN_SHARED_BYTES`] bytes that equals a string of an input event is left out of
//! the JSON text (written as `null`) and listed instead: where it goes in the result, which event
//! holds it and where, and its length in UTF-16 units. The wrapper puts the caller's string back
//! there (a reference: JS strings are immutable), after checking that the event really holds a
//! string of that length at that place. The result is the same value either way.
//!
//! Used by `EventLog::project` for the events appended as objects (the wrapper's
//! `held-strings.js` keeps their long strings): on the bench's 10,000-event session (9.45 MB of
//! tool output) the `EventLog` projection takes 1.08-1.23x the plain-JS time with sharing and
//! 1.41x without it (every long string copied out through the UTF-16 table instead),
//! `bench/npm.sh`, 2026-12-05.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use contextfold_core::binding::utf16_length;
use contextfold_core::event::{EventContent, RuntimeEvent};

use crate::string_table::Step;
use serde::Serialize;
use serde_json::Value;

/// Shorter strings are copied: their share of the bytes is small and each shared string costs
/// a path in the list and a lookup in JS.
pub const MIN_SHARED_BYTES: usize = 256;

/// A [`Step`] borrowing its key while a path is walked; owned only for a string that is shared.
#[derive(Debug, Clone, Copy)]
enum StepRef<'a> {
    Key(&'a str),
    Index(usize),
}

fn owned(path: &[StepRef<'_>]) -> Vec<Step> {
    path.iter()
        .map(|step| match *step {
            StepRef::Key(key) => Step::Key(key.to_owned()),
            StepRef::Index(index) => Step::Index(index),
        })
        .collect()
}

/// A string left out of a value, written as `[event, path, length, at]`: the index of the input
/// event holding the same string, its path in that event as JSON text (the wrapper's key,
/// `JSON.stringify`), its length in UTF-16 code units (what JS `length` says, checked by the
/// wrapper), and its path in the value it was shared from (a projection's `messages`), where
/// the caller's copy goes. An array, not an object: fewer values for `JSON.parse`, thousands of
/// times per projection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SharedString(pub usize, pub String, pub usize, pub Vec<Step>);

/// A string hashed by its length and ends only, and compared a block at a time (wasm's
/// `memcmp` goes byte by byte): long strings are looked up without reading them twice.
struct ByContent<'a>(&'a str);

impl Hash for ByContent<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let bytes = self.0.as_bytes();
        state.write_usize(bytes.len());
        state.write(&bytes[..bytes.len().min(16)]);
        state.write(&bytes[bytes.len().saturating_sub(16)..]);
    }
}

impl PartialEq for ByContent<'_> {
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (self.0.as_bytes(), other.0.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        // Differences are or-ed a word at a time and tested once per 64 bytes: no branch per
        // word and no iterator adapter, so it stays fast where the module is built for size.
        let (a_words, a_rest) = a.as_chunks::<8>();
        let (b_words, b_rest) = b.as_chunks::<8>();
        let mut diff = 0;
        for (index, word) in a_words.iter().enumerate() {
            let other = b_words.get(index).copied().unwrap_or_default();
            diff |= u64::from_ne_bytes(*word) ^ u64::from_ne_bytes(other);
            if index % 8 == 7 && diff != 0 {
                return false;
            }
        }
        diff == 0 && a_rest == b_rest
    }
}

impl Eq for ByContent<'_> {}

/// The long strings of a list of events, by content, with where each one is.
#[derive(Default)]
pub struct StringSources<'a> {
    by_content: HashMap<ByContent<'a>, (usize, Vec<StepRef<'a>>)>,
}

impl std::fmt::Debug for StringSources<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StringSources").field("strings", &self.by_content.len()).finish()
    }
}

impl<'a> StringSources<'a> {
    /// Indexes the long texts, inputs and outputs (the first place of each wins) of the events
    /// for which `held(index)` says the caller holds a JS copy
    /// (an `EventLog`'s events appended as objects, not as JSONL).
    pub fn of_held(events: &'a [RuntimeEvent], held: impl Fn(usize) -> bool) -> Self {
        let mut sources = StringSources::default();
        for (index, event) in events.iter().enumerate().filter(|(index, _)| held(*index)) {
            let mut path = vec![StepRef::Key("content")];
            match &event.content {
                EventContent::UserText { text, .. }
                | EventContent::AssistantText { text }
                | EventContent::SystemNote { text }
                | EventContent::Reasoning { text, .. }
                | EventContent::RuntimeNote { text, .. } => {
                    path.push(StepRef::Key("text"));
                    sources.add(text, index, &path);
                }
                EventContent::ToolCall { input, .. }
                | EventContent::HostedToolCall { input, .. } => {
                    path.push(StepRef::Key("input"));
                    sources.add_value(input, index, &mut path);
                }
                EventContent::ToolResult { output, .. }
                | EventContent::HostedToolResult { output, .. } => {
                    path.push(StepRef::Key("output"));
                    sources.add_value(output, index, &mut path);
                }
                _ => {}
            }
        }
        sources
    }

    fn add(&mut self, text: &'a str, event: usize, path: &[StepRef<'a>]) {
        if text.len() >= MIN_SHARED_BYTES {
            self.by_content.entry(ByContent(text)).or_insert_with(|| (event, path.to_vec()));
        }
    }

    fn add_value(&mut self, value: &'a Value, event: usize, path: &mut Vec<StepRef<'a>>) {
        match value {
            Value::String(text) => self.add(text, event, path),
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    path.push(StepRef::Index(index));
                    self.add_value(item, event, path);
                    path.pop();
                }
            }
            Value::Object(map) => {
                for (key, item) in map {
                    path.push(StepRef::Key(key));
                    self.add_value(item, event, path);
                    path.pop();
                }
            }
            _ => {}
        }
    }

    /// Replaces every long string of `result` found among the sources by `null` and lists it.
    pub fn share(&self, result: &mut Value) -> Vec<SharedString> {
        let mut shared = Vec::new();
        if !self.by_content.is_empty() {
            self.share_in(result, &mut Vec::new(), &mut shared);
        }
        shared
    }

    fn share_in<'v>(
        &self,
        value: &'v mut Value,
        at: &mut Vec<StepRef<'v>>,
        shared: &mut Vec<SharedString>,
    ) {
        match value {
            Value::String(text) => {
                if let Some(found) = self.share_string(text, || owned(at)) {
                    shared.push(found);
                    *value = Value::Null;
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter_mut().enumerate() {
                    at.push(StepRef::Index(index));
                    self.share_in(item, at, shared);
                    at.pop();
                }
            }
            Value::Object(map) => {
                for (key, item) in map.iter_mut() {
                    at.push(StepRef::Key(key));
                    self.share_in(item, at, shared);
                    at.pop();
                }
            }
            _ => {}
        }
    }
}

impl StringSources<'_> {
    /// The shared string for `text` (at `at()` in the result) if an event holds it.
    pub fn share_string(&self, text: &str, at: impl FnOnce() -> Vec<Step>) -> Option<SharedString> {
        if text.len() < MIN_SHARED_BYTES || self.by_content.is_empty() {
            return None;
        }
        let (event, path) = self.by_content.get(&ByContent(text))?;
        let key = serde_json::to_string(&owned(path)).unwrap_or_default();
        Some(SharedString(*event, key, utf16_length(text), at()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn by_content_equality_sees_a_difference_at_every_byte() {
        for length in [0, 1, 7, 8, 9, 63, 64, 65, 130, 300] {
            let text: String = "abcdefghij".repeat(40).chars().take(length).collect();
            assert!(ByContent(&text) == ByContent(&text.clone()), "{length}");
            for at in 0..length {
                let mut other = text.clone().into_bytes();
                other[at] = b'#';
                let other = String::from_utf8(other).expect("ascii");
                assert!(ByContent(&text) != ByContent(&other), "{length} at {at}");
            }
            assert!(ByContent(&text) != ByContent(&format!("{text}!")), "{length} longer");
        }
    }

    #[test]
    fn long_strings_of_events_are_listed_and_nulled() {
        let long = "🚀 output ".repeat(40);
        let event: RuntimeEvent = serde_json::from_value(json!({
            "sessionId": "s", "runId": "r", "turnId": "t", "runtimeEventId": "e", "seq": 1,
            "content": { "type": "tool_result", "callId": "c", "toolName": "x",
                         "output": { "lines": ["short", long] } }
        }))
        .expect("event");
        let events = [event];
        let sources = StringSources::of_held(&events, |_| true);
        let mut result =
            json!({ "messages": [{ "value": long, "other": "short" }], "n": long.len() });
        let shared = sources.share(&mut result);
        assert_eq!(
            result,
            json!({ "messages": [{ "value": null, "other": "short" }], "n": long.len() })
        );
        assert_eq!(shared.len(), 1);
        assert_eq!(
            serde_json::to_value(&shared[0]).expect("json"),
            json!([
                0,
                r#"["content","output","lines",1]"#,
                long.encode_utf16().count(),
                ["messages", 0, "value"]
            ])
        );
    }
}
