//! [`EventSink`]: assigns ids, seq numbers, turns and response ids to imported events.

use contextfold_core::{EventContent, RuntimeEvent};
use serde_json::{Map, Value};

/// Collects imported events with consecutive `seq` numbers and deterministic ids:
/// event `evt-<seq>`, turn `turn-<n>`, run `run-<n>`, response `resp-<seq of first event>`.
#[derive(Debug, Clone)]
pub struct EventSink {
    session_id: String,
    next_seq: u64,
    turn: u64,
    turn_open: bool,
    response_id: Option<String>,
    events: Vec<RuntimeEvent>,
}

impl EventSink {
    /// A sink whose first event gets `first_seq` and whose first turn is number `first_turn`.
    pub fn new(session_id: &str, first_seq: u64, first_turn: u64) -> Self {
        Self {
            session_id: session_id.to_owned(),
            next_seq: first_seq,
            turn: first_turn,
            turn_open: false,
            response_id: None,
            events: Vec::new(),
        }
    }

    /// Starts a new turn (a user request); the first call opens turn `first_turn`.
    pub fn new_turn(&mut self) {
        if self.turn_open {
            self.turn += 1;
        }
        self.turn_open = true;
    }

    /// Starts a model response: following events share one response id.
    pub fn begin_response(&mut self) {
        self.response_id = Some(format!("resp-{}", self.next_seq));
    }

    /// Ends the current model response.
    pub fn end_response(&mut self) {
        self.response_id = None;
    }

    /// Appends an event with optional metadata.
    pub fn push(&mut self, content: EventContent, metadata: Option<Map<String, Value>>) {
        self.turn_open = true;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.events.push(RuntimeEvent {
            session_id: self.session_id.clone(),
            run_id: format!("run-{}", self.turn),
            turn_id: format!("turn-{}", self.turn),
            runtime_event_id: format!("evt-{seq}"),
            seq,
            created_at_ms: None,
            response_id: self.response_id.clone(),
            partial: false,
            pinned: false,
            content,
            metadata,
        });
    }

    /// Whether any event was pushed.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The imported events.
    pub fn finish(self) -> Vec<RuntimeEvent> {
        self.events
    }
}
