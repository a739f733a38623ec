//! [`EventLog`]: a session's events kept in wasm memory, for agents that append as they go.
//!
//! Each event crosses the JS/wasm boundary once, when appended; the source digest is kept
//! incrementally by the core's [`PrefixHasher`], so [`EventLog::digest`] costs nothing however
//! long the log, and [`EventLog::project`] sends no events across the boundary. The log only
//! holds events and hands them to the core: every append is checked by the core's
//! [`LogValidator`] (the rules of `validate_log` over the whole log, checking only the new
//! events), and a projection verifies only what its [`VerifiedPrefix`] has not seen, so an
//! agent step costs O(new events) however long the session.

use contextfold_core::checkpoint::{CheckedLog, VerifiedPrefix};
use contextfold_core::digest::PrefixHasher;
use contextfold_core::event::{LogValidator, RuntimeEvent};
use wasm_bindgen::prelude::*;

use crate::convert::{from_js, to_js};
use crate::hash_engine::BindingEngine;
use crate::jsonl::{JsonlEvents, located_log_error};
use crate::measure::JsCounter;
use crate::project::{Source, project_events};
use crate::session::CompactionSession;

/// An append-only event log held in wasm memory, with its running source digest.
#[wasm_bindgen]
#[derive(Debug)]
pub struct EventLog {
    events: Vec<RuntimeEvent>,
    /// Per event: whether the wrapper holds its JS copy (appended as objects, not JSONL), so a
    /// projection may leave its long strings out for the wrapper to put back.
    held: Vec<bool>,
    /// The log's structure, checked incrementally.
    validator: LogValidator,
    hasher: PrefixHasher<BindingEngine>,
    /// How many events `hasher` has read: the rest are hashed by the next [`EventLog::digest`]
    /// (a log only projected, as the stateless `project()`'s hidden log, never hashes).
    hashed: usize,
    /// What projections have verified of the log (checkpoint prefixes are hashed once).
    verified: VerifiedPrefix<BindingEngine>,
}

impl Default for EventLog {
    fn default() -> Self {
        EventLog {
            events: Vec::new(),
            held: Vec::new(),
            validator: LogValidator::default(),
            hasher: PrefixHasher::with_engine(BindingEngine::default()),
            hashed: 0,
            verified: VerifiedPrefix::with_engine(),
        }
    }
}

#[wasm_bindgen]
impl EventLog {
    /// An empty log.
    #[wasm_bindgen(constructor)]
    pub fn new() -> EventLog {
        EventLog::default()
    }

    /// Appends events (JSON text of an array, from the wrapper). The whole log must stay valid
    /// (`validateLog`'s rules); otherwise nothing is appended and the core's code is thrown.
    /// Returns the new length. `held`: the wrapper keeps the long strings of these events (the
    /// JS objects the text was written from), see [`EventLog::project`].
    ///
    /// JSONL events (a `Uint8Array`, see [`crate::jsonl`]) are appended the same way; an error
    /// about one of them names its line.
    pub fn append(&mut self, events: JsValue, held: bool) -> Result<u32, JsValue> {
        let JsonlEvents { events, lines } = crate::events_with_lines(events)?;
        let first_new = self.events.len();
        if let Err(error) = self.validator.append(&events) {
            let line_of = |index: usize| lines.get(index.checked_sub(first_new)?).copied();
            return Err(located_log_error(error, line_of).into());
        }
        self.held.resize(self.held.len() + events.len(), held);
        self.events.extend(events);
        Ok(self.len())
    }

    /// Starts a compaction over the log's events without sending them across again: `input` is
    /// the compaction input with `events: []` (see `CompactionSession`'s constructor).
    #[wasm_bindgen(js_name = startCompaction)]
    pub fn start_compaction(
        &self,
        input: JsValue,
        count_tokens: Option<js_sys::Function>,
    ) -> Result<CompactionSession, JsValue> {
        CompactionSession::over_events(input, self.events.clone(), count_tokens)
    }

    /// The number of events.
    #[wasm_bindgen(getter, js_name = length)]
    pub fn len(&self) -> u32 {
        u32::try_from(self.events.len()).unwrap_or(u32::MAX)
    }

    /// Whether the log holds no event.
    #[wasm_bindgen(js_name = isEmpty)]
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The source digest of the whole log (`digestPrefix(events)`), kept incrementally: only
    /// the events appended since the last digest are hashed.
    pub fn digest(&mut self) -> String {
        for event in &self.events[self.hashed..] {
            self.hasher.push(event);
        }
        self.hashed = self.events.len();
        self.hasher.digest()
    }

    /// The events (JSON text for the wrapper).
    pub fn events(&self) -> Result<JsValue, JsValue> {
        Ok(to_js(&self.events, "events")?)
    }

    /// Projects the log: the options of `project()` without `events`; `count_tokens`: the
    /// caller's counter (see [`crate::measure`]). The long strings of the events the wrapper
    /// holds are left out and listed (`sharedStrings`, see [`crate::shared_strings`]), the
    /// others come back through the UTF-16 table (see [`crate::string_table`]).
    pub fn project(
        &mut self,
        options: JsValue,
        count_tokens: Option<js_sys::Function>,
    ) -> Result<JsValue, JsValue> {
        let exact = !options.is_string();
        let options = from_js(options, "project options")?;
        let counter = count_tokens.map(JsCounter::new);
        let held = Some(self.held.as_slice());
        let source = Source { jsonl: None, counter: counter.as_ref(), exact, held };
        // Every append was validated: the projection does not validate the log again.
        let mut verifier = CheckedLog(&mut self.verified);
        Ok(project_events(&self.events, options, source, &mut verifier)?)
    }
}
