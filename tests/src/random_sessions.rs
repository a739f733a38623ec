//! Seeded random sessions: turns of user text, reasoning, parallel tool calls sharing one
//! response id, results (some errors), hosted tools, notes, metadata, pinned and partial heads.

use contextfold_core::{EventContent, RuntimeEvent};
use serde_json::Value;

use crate::prng::SplitMix64;
use crate::random_json::{random_object, random_text, random_value};

/// Tool names random calls use.
const TOOLS: &[&str] = &["shell", "read_file", "write_file", "grep", "apply_patch", "fetch"];

/// Appends events with consecutive `seq` and increasing times to one session.
struct SessionWriter<'a> {
    prng: &'a mut SplitMix64,
    session_id: String,
    turn_id: String,
    response_id: Option<String>,
    seq: u64,
    now_ms: u64,
    events: Vec<RuntimeEvent>,
}

impl SessionWriter<'_> {
    fn push(&mut self, content: EventContent) -> &mut RuntimeEvent {
        self.seq += 1 + self.prng.below(3);
        self.now_ms += self.prng.below(90_000);
        let metadata = self.prng.chance(1, 6).then(|| random_object(self.prng, 2));
        let created_at_ms = (!self.prng.chance(1, 10)).then_some(self.now_ms);
        self.events.push(RuntimeEvent {
            created_at_ms,
            response_id: self.response_id.clone(),
            metadata,
            ..RuntimeEvent::new(
                self.session_id.clone(),
                format!("run-{}", self.turn_id),
                self.turn_id.clone(),
                format!("evt-{}", self.seq),
                self.seq,
                content,
            )
        });
        let last = self.events.len() - 1;
        &mut self.events[last]
    }

    fn text(&mut self, max_fragments: u64) -> String {
        random_text(self.prng, max_fragments)
    }

    /// One model step: optional reasoning, then either text or parallel tool calls with their
    /// results (ordinary or hosted).
    fn step(&mut self, turn: u64, step: u64) {
        self.response_id = Some(format!("resp-{turn}-{step}"));
        if self.prng.chance(1, 3) {
            let text = self.text(8);
            let provider_data =
                self.prng.chance(1, 2).then(|| Value::Object(random_object(self.prng, 1)));
            self.push(EventContent::Reasoning { text, provider_data });
        }
        if self.prng.chance(1, 3) {
            let text = self.text(15);
            self.push(EventContent::AssistantText { text });
            return;
        }
        let hosted = self.prng.chance(1, 5);
        let calls: Vec<(String, String)> = (0..1 + self.prng.below(3))
            .map(|index| {
                let tool = (*self.prng.pick(TOOLS)).to_owned();
                (format!("call-{turn}-{step}-{index}"), tool)
            })
            .collect();
        for (call_id, tool_name) in &calls {
            let input = Value::Object(random_object(self.prng, 2));
            let (call_id, tool_name) = (call_id.clone(), tool_name.clone());
            self.push(if hosted {
                EventContent::HostedToolCall { call_id, tool_name, input }
            } else {
                EventContent::ToolCall { call_id, tool_name, input }
            });
        }
        if !hosted {
            self.response_id = None;
        }
        for (call_id, tool_name) in calls {
            let output = random_value(self.prng, 2);
            let is_error = self.prng.chance(1, 6);
            self.push(if hosted {
                EventContent::HostedToolResult { call_id, tool_name, output, is_error }
            } else {
                EventContent::ToolResult {
                    call_id,
                    tool_name,
                    output,
                    is_error,
                    attachments: Vec::new(),
                }
            });
        }
    }
}

/// A random session of one to four turns (`index` names it).
pub fn random_session(prng: &mut SplitMix64, index: u64) -> Vec<RuntimeEvent> {
    let start_seq = prng.below(1_000);
    let start_ms = 1_600_000_000_000 + prng.below(200_000_000_000);
    let mut writer = SessionWriter {
        prng,
        session_id: format!("random-{index:02}"),
        turn_id: String::new(),
        response_id: None,
        seq: start_seq,
        now_ms: start_ms,
        events: Vec::new(),
    };
    let turns = 1 + writer.prng.below(4);
    for turn in 1..=turns {
        writer.turn_id = format!("t{turn}");
        writer.response_id = None;
        let text = writer.text(10);
        writer.push(EventContent::user_text(text));
        if writer.prng.chance(1, 5) {
            let text = writer.text(6);
            writer.push(EventContent::SystemNote { text });
        }
        for step in 1..=1 + writer.prng.below(3) {
            writer.step(turn, step);
        }
        if writer.prng.chance(1, 8) {
            writer.response_id = None;
            let text = writer.text(5);
            writer.push(EventContent::RuntimeNote {
                code: "context_compaction_skipped".into(),
                text,
            });
        }
    }
    let mut events = writer.events;
    if let Some(last) = events.last_mut() {
        last.pinned = prng.chance(1, 3);
        last.partial = prng.chance(1, 4);
    }
    events
}
