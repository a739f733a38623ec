//! [`LogBuilder`]: a small helper for hosts and tests that appends well-formed events with
//! consecutive `seq` numbers and deterministic ids (`e<seq>`), so examples stay short.

use serde_json::Value;

use crate::event::{EventContent, RuntimeEvent};

/// Builds an ordered session log. Ids and times are derived from `seq`, never random.
#[derive(Debug, Clone)]
pub struct LogBuilder {
    session_id: String,
    run_id: String,
    turn_id: String,
    response_id: Option<String>,
    next_seq: u64,
    events: Vec<RuntimeEvent>,
}

impl LogBuilder {
    /// Starts a log for `session_id` in turn `t0` / run `r0`.
    pub fn new(session_id: &str) -> Self {
        Self {
            session_id: session_id.to_owned(),
            run_id: "r0".into(),
            turn_id: "t0".into(),
            response_id: None,
            next_seq: 1,
            events: Vec::new(),
        }
    }

    /// Continues an existing log (next `seq` after its last event).
    pub fn extend(events: Vec<RuntimeEvent>) -> Self {
        let mut builder = Self::new(events.first().map_or("s", |e| e.session_id.as_str()));
        if let Some(last) = events.last() {
            builder.next_seq = last.seq + 1;
            builder.run_id = last.run_id.clone();
            builder.turn_id = last.turn_id.clone();
        }
        builder.events = events;
        builder
    }

    /// Starts a new turn; its run id is `run-<turn_id>`. Clears the response id.
    pub fn turn(&mut self, turn_id: &str) -> &mut Self {
        self.turn_id = turn_id.to_owned();
        self.run_id = format!("run-{turn_id}");
        self.response_id = None;
        self
    }

    /// Sets the model response id stamped on the following events (`None` to clear).
    pub fn response(&mut self, response_id: Option<&str>) -> &mut Self {
        self.response_id = response_id.map(str::to_owned);
        self
    }

    /// Appends an event with the given content and returns it for further tweaks
    /// (`partial`, `pinned`, `metadata`).
    pub fn push(&mut self, content: EventContent) -> &mut RuntimeEvent {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.events.push(RuntimeEvent {
            created_at_ms: Some(1_700_000_000_000 + seq * 1_000),
            response_id: self.response_id.clone(),
            ..RuntimeEvent::new(
                self.session_id.clone(),
                self.run_id.clone(),
                self.turn_id.clone(),
                format!("e{seq}"),
                seq,
                content,
            )
        });
        let last = self.events.len() - 1;
        &mut self.events[last]
    }

    /// Appends user text.
    pub fn user(&mut self, text: &str) -> &mut Self {
        self.push(EventContent::UserText { text: text.into(), attachments: Vec::new() });
        self
    }

    /// Appends assistant text.
    pub fn assistant(&mut self, text: &str) -> &mut Self {
        self.push(EventContent::AssistantText { text: text.into() });
        self
    }

    /// Appends reasoning.
    pub fn reasoning(&mut self, text: &str) -> &mut Self {
        self.push(EventContent::Reasoning { text: text.into(), provider_data: None });
        self
    }

    /// Appends a tool call.
    pub fn tool_call(&mut self, call_id: &str, tool_name: &str, input: Value) -> &mut Self {
        self.push(EventContent::ToolCall {
            call_id: call_id.into(),
            tool_name: tool_name.into(),
            input,
        });
        self
    }

    /// Appends a tool result.
    pub fn tool_result(&mut self, call_id: &str, tool_name: &str, output: Value) -> &mut Self {
        self.push(EventContent::ToolResult {
            call_id: call_id.into(),
            tool_name: tool_name.into(),
            output,
            is_error: false,
            attachments: Vec::new(),
        });
        self
    }

    /// The events so far.
    pub fn events(&self) -> &[RuntimeEvent] {
        &self.events
    }

    /// Finishes the log.
    pub fn build(self) -> Vec<RuntimeEvent> {
        self.events
    }
}
