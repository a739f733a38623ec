//! [`EventSink`]: where imported events get their ids, and where they are collected.

use contextfold_core::RuntimeEvent;
use contextfold_core::projection::ImportContext;

/// Collects imported events. Ids follow the core's [`ImportContext`] defaults: event
/// `evt-<seq>`, turn `turn-<n>`, run `run-<n>`, response `resp-<seq of its first event>`, with
/// `seq` counting from `first_seq` and turns from `first_turn`.
#[derive(Debug, Clone)]
pub struct EventSink {
    ids: ImportContext,
    events: Vec<RuntimeEvent>,
}

impl EventSink {
    /// A sink whose first event gets `first_seq` and whose first turn is number `first_turn`.
    pub fn new(session_id: &str, first_seq: u64, first_turn: u64) -> Self {
        let mut ids = ImportContext::new(session_id);
        ids.first_seq = first_seq;
        ids.first_turn = first_turn;
        Self { ids, events: Vec::new() }
    }

    /// The id scheme the core's imports use for this sink.
    pub fn ids(&self) -> &ImportContext {
        &self.ids
    }

    /// Appends events a core import produced with [`EventSink::ids`]; later imports continue
    /// after them.
    pub fn extend(&mut self, events: Vec<RuntimeEvent>) {
        if let Some(last) = events.last() {
            self.ids.first_seq = last.seq + 1;
        }
        self.events.extend(events);
    }

    /// Whether any event was imported.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The imported events.
    pub fn finish(self) -> Vec<RuntimeEvent> {
        self.events
    }
}
