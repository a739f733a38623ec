//! Materialization: `checkpoint + uncovered raw tail + current turn` as provider-neutral
//! [`Message`]s.
//!
//! The checkpoint comes first: a V2 checkpoint as one system-authored text block (see
//! [`render_checkpoint_text`]), a V3 checkpoint as one assistant message holding a single
//! [`Part::ProviderState`]. It is never turned into a [`RuntimeEvent`]. The raw events follow in
//! log order, grouped into messages:
//!
//! - `user_text` → one [`Role::User`] message per event;
//! - `system_note` → one [`Role::System`] text message; `runtime_note` → one [`Role::System`]
//!   message `[runtime:<code>] <text>`;
//! - assistant-side events (`assistant_text`, `reasoning`, `tool_call`, `hosted_tool_call`,
//!   `hosted_tool_result`) of one step → one [`Role::Assistant`] message whose parts keep event
//!   order. A step is the events of one turn sharing a `responseId` (tool results may sit between
//!   them), or, when `responseId` is absent, strictly consecutive events of one turn. Steps never
//!   span turns, so a completed turn projects the same however the log grows after it;
//! - `tool_result` → a part of the one [`Role::Tool`] message placed right after the assistant
//!   message that holds its call, in the order the results were recorded.
//!
//! Pairing is then guaranteed (a provider answers a broken pairing with a permanent 400): every
//! ordinary call is followed, before the next user or assistant message, by exactly one result
//! with its id, and every hosted call has exactly one hosted result in its own message. The
//! projection is repaired, never the log, and each repair is reported as a [`Repair`]:
//!
//! - a call with no result anywhere in tail + current gets an error result
//!   ([`interrupted_output`], `isError: true`), placed like a recorded one;
//! - a second result for a call id is dropped (the first is kept);
//! - a result with no earlier call of the same kind (ordinary/hosted) in the projection is
//!   dropped, and so is a second call reusing the id of a call still unanswered;
//! - a call reusing the id of an earlier, answered call (some providers number calls per
//!   turn) is kept under a unique projected id `<id>_r<n>`, and the results that follow it
//!   carry that id too, so every exchange survives and ids stay unique in one request;
//! - a result recorded after a later message opened is moved up to follow its call (a hosted one
//!   right after its call part).
//!
//! Dropped events are transparent: grouping proceeds as if they were absent. `partial` events
//! are projected like any other. The output depends only on the inputs (no hash-map order), so
//! the same inputs give identical bytes.

mod checkpoint_text;
mod estimate;
mod repair;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};

use crate::checkpoint::HistoryCompactCheckpoint;
use crate::event::{EventContent, RuntimeEvent};
use crate::projection::message::{Message, Part, Role};

pub(crate) use checkpoint_text::{REPLAY_LIMITATION, checkpoint_message};
pub use estimate::{estimate_message, estimate_messages};
pub use repair::Repair;

/// The error text of a result synthesized for an interrupted call.
pub(crate) const INTERRUPTED_ERROR: &str = "tool call interrupted: no result was recorded";

/// The output of a result synthesized for an interrupted call:
/// `{"error":"tool call interrupted: no result was recorded"}`.
pub fn interrupted_output() -> Value {
    json!({ "error": INTERRUPTED_ERROR })
}

/// The projected messages and the pairing repairs applied to them.
#[derive(Debug, Clone, PartialEq)]
pub struct Materialized {
    /// Checkpoint message (if any), then the raw tail and the current turn.
    pub messages: Vec<Message>,
    /// Every pairing repair, in the order it was decided.
    pub repairs: Vec<Repair>,
}

/// Projects `checkpoint + tail + current` into provider-neutral messages (see the module docs
/// for the grouping and pairing rules).
///
/// ```
/// use contextfold_core::LogBuilder;
/// use contextfold_core::projection::materialize;
/// use contextfold_core::projection::Role;
/// let mut log = LogBuilder::new("s");
/// log.user("list files").tool_call("c1", "ls", serde_json::json!({}));
/// let out = materialize(None, log.events(), &[]);
/// let roles: Vec<Role> = out.messages.iter().map(|m| m.role).collect();
/// assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool]);
/// assert_eq!(out.repairs[0].code(), "tool_call_interrupted");
/// ```
pub fn materialize(
    checkpoint: Option<&HistoryCompactCheckpoint>,
    tail: &[RuntimeEvent],
    current: &[RuntimeEvent],
) -> Materialized {
    materialize_events(checkpoint, tail.iter(), current)
}

/// [`materialize`] over a tail given as event references (a pruned tail borrows most of its
/// events from the log).
pub(crate) fn materialize_events<'e>(
    checkpoint: Option<&HistoryCompactCheckpoint>,
    tail: impl Iterator<Item = &'e RuntimeEvent>,
    current: &'e [RuntimeEvent],
) -> Materialized {
    let mut projector = Projector::default();
    for event in tail.chain(current) {
        projector.push(event);
    }
    let (mut messages, repairs) = projector.finish();
    if let Some(checkpoint) = checkpoint {
        messages.insert(0, checkpoint_message(checkpoint));
    }
    Materialized { messages, repairs }
}

/// One message under construction.
#[derive(Debug)]
struct Slot {
    role: Role,
    parts: Vec<Part>,
    /// Hosted results moved (or synthesized) to follow the call part at this index.
    after_call: BTreeMap<usize, Vec<Part>>,
    /// Whether this (assistant) message holds an ordinary call (a tool message follows it).
    has_calls: bool,
    /// Recorded results for those calls, in the order they were recorded.
    results: Vec<Part>,
}

impl Slot {
    fn new(role: Role, first: Part) -> Self {
        Self {
            role,
            parts: vec![first],
            after_call: BTreeMap::new(),
            has_calls: false,
            results: Vec::new(),
        }
    }
}

/// Where a call lives and whether it has been answered (its strings borrowed from its event).
#[derive(Debug)]
struct CallSite<'e> {
    slot: usize,
    part_index: usize,
    hosted: bool,
    tool_name: &'e str,
    runtime_event_id: &'e str,
    answered: bool,
}

/// The assistant step currently accepting parts.
#[derive(Debug)]
struct OpenStep<'e> {
    slot: usize,
    turn_id: &'e str,
    response_id: Option<&'e str>,
}

/// The messages under construction. Its bookkeeping borrows the events' strings: only the
/// messages own copies.
#[derive(Debug, Default)]
struct Projector<'e> {
    slots: Vec<Slot>,
    open: Option<OpenStep<'e>>,
    /// Projected call id → its call (a renamed id is owned, any other borrowed).
    calls: HashMap<Cow<'e, str>, CallSite<'e>>,
    /// Recorded call id → the projected id its latest call was given (only for reused ids).
    renamed: HashMap<&'e str, String>,
    repairs: Vec<Repair>,
}

impl<'e> Projector<'e> {
    fn push(&mut self, event: &'e RuntimeEvent) {
        match &event.content {
            EventContent::UserText { text, attachments } => {
                self.open = None;
                let mut parts = Vec::with_capacity(1 + attachments.len());
                if !text.is_empty() || attachments.is_empty() {
                    parts.push(Part::Text { text: text.clone() });
                }
                parts
                    .extend(attachments.iter().map(|a| Part::Attachment { attachment: a.clone() }));
                let mut slot = Slot::new(Role::User, parts.remove(0));
                slot.parts.extend(parts);
                self.slots.push(slot);
            }
            EventContent::SystemNote { text } => self.push_plain(Role::System, text.clone()),
            EventContent::RuntimeNote { code, text } => {
                self.push_plain(Role::System, format!("[runtime:{code}] {text}"))
            }
            EventContent::AssistantText { text } => {
                self.push_step_part(event, Part::Text { text: text.clone() });
            }
            EventContent::Reasoning { text, provider_data } => {
                let part =
                    Part::Reasoning { text: text.clone(), provider_data: provider_data.clone() };
                self.push_step_part(event, part);
            }
            EventContent::ToolCall { call_id, tool_name, input } => {
                self.push_call(event, call_id, tool_name, input, false);
            }
            EventContent::HostedToolCall { call_id, tool_name, input } => {
                self.push_call(event, call_id, tool_name, input, true);
            }
            EventContent::ToolResult { call_id, output, is_error, .. } => {
                self.push_result(event, call_id, output, *is_error, false);
            }
            EventContent::HostedToolResult { call_id, output, is_error, .. } => {
                self.push_result(event, call_id, output, *is_error, true);
            }
        }
    }

    /// A user, system or runtime message: closes any open step.
    fn push_plain(&mut self, role: Role, text: String) {
        self.open = None;
        self.slots.push(Slot::new(role, Part::Text { text }));
    }

    /// Whether `event` continues the open step.
    fn joins_open_step(&self, event: &RuntimeEvent) -> bool {
        self.open.as_ref().is_some_and(|open| {
            open.turn_id == event.turn_id && open.response_id == event.response_id.as_deref()
        })
    }

    /// Appends an assistant-side part to the open step or opens a new one; returns the slot
    /// index and the part index.
    fn push_step_part(&mut self, event: &'e RuntimeEvent, part: Part) -> (usize, usize) {
        if let Some(open) = self.open.as_ref().filter(|_| self.joins_open_step(event)) {
            let slot = &mut self.slots[open.slot];
            slot.parts.push(part);
            return (open.slot, slot.parts.len() - 1);
        }
        self.slots.push(Slot::new(Role::Assistant, part));
        let slot = self.slots.len() - 1;
        self.open = Some(OpenStep {
            slot,
            turn_id: &event.turn_id,
            response_id: event.response_id.as_deref(),
        });
        (slot, 0)
    }

    fn push_call(
        &mut self,
        event: &'e RuntimeEvent,
        call_id: &'e str,
        tool_name: &'e str,
        input: &Value,
        hosted: bool,
    ) {
        let projected: Cow<'e, str> = match self.calls.get(self.projected_id(call_id).as_ref()) {
            None => Cow::Borrowed(call_id),
            Some(site) if !site.answered => {
                self.repairs.push(Repair::DuplicateToolCallDropped {
                    call_id: call_id.to_owned(),
                    runtime_event_id: event.runtime_event_id.clone(),
                    hosted,
                });
                return;
            }
            Some(_) => {
                let projected = self.fresh_id(call_id);
                self.renamed.insert(call_id, projected.clone());
                self.repairs.push(Repair::ToolCallIdRenamed {
                    call_id: call_id.to_owned(),
                    projected_call_id: projected.clone(),
                    runtime_event_id: event.runtime_event_id.clone(),
                    hosted,
                });
                Cow::Owned(projected)
            }
        };
        let part = Part::ToolCall {
            call_id: projected.to_string(),
            tool_name: tool_name.to_owned(),
            input: input.clone(),
            hosted,
        };
        let (slot, part_index) = self.push_step_part(event, part);
        if !hosted {
            self.slots[slot].has_calls = true;
        }
        let runtime_event_id = &event.runtime_event_id;
        let site =
            CallSite { slot, part_index, hosted, tool_name, runtime_event_id, answered: false };
        self.calls.insert(projected, site);
    }

    fn push_result(
        &mut self,
        event: &'e RuntimeEvent,
        call_id: &'e str,
        output: &Value,
        is_error: bool,
        hosted: bool,
    ) {
        let call_id = self.projected_id(call_id);
        let event_id = || event.runtime_event_id.clone();
        let Some(site) = self.calls.get(call_id.as_ref()).filter(|site| site.hosted == hosted)
        else {
            let call_id = call_id.into_owned();
            let repair =
                Repair::OrphanToolResultDropped { call_id, runtime_event_id: event_id(), hosted };
            self.repairs.push(repair);
            return;
        };
        if site.answered {
            let call_id = call_id.into_owned();
            let repair = Repair::DuplicateToolResultDropped {
                call_id,
                runtime_event_id: event_id(),
                hosted,
            };
            self.repairs.push(repair);
            return;
        }
        let (slot, part_index) = (site.slot, site.part_index);
        let part = Part::ToolResult {
            call_id: call_id.to_string(),
            tool_name: site.tool_name.to_owned(),
            output: output.clone(),
            is_error,
            hosted,
            attachments: event.attachments().to_vec(),
        };
        let in_place = if hosted {
            let in_place =
                self.joins_open_step(event) && self.open.as_ref().is_some_and(|o| o.slot == slot);
            if in_place {
                self.slots[slot].parts.push(part);
            } else {
                self.slots[slot].after_call.entry(part_index).or_default().push(part);
            }
            in_place
        } else {
            self.slots[slot].results.push(part);
            if self.open.as_ref().is_some_and(|o| o.response_id.is_none()) {
                self.open = None;
            }
            slot + 1 == self.slots.len()
        };
        if !in_place {
            let moved = call_id.to_string();
            let repair =
                Repair::ToolResultMoved { call_id: moved, runtime_event_id: event_id(), hosted };
            self.repairs.push(repair);
        }
        if let Some(site) = self.calls.get_mut(call_id.as_ref()) {
            site.answered = true;
        }
    }

    /// The id under which the latest call with the recorded `call_id` is projected (owned only
    /// for a renamed call).
    fn projected_id(&self, call_id: &'e str) -> Cow<'e, str> {
        self.renamed.get(call_id).map_or(Cow::Borrowed(call_id), |id| Cow::Owned(id.clone()))
    }

    /// A projected id `<call_id>_r<n>` used by no call so far.
    fn fresh_id(&self, call_id: &str) -> String {
        (2..)
            .map(|n| format!("{call_id}_r{n}"))
            .find(|candidate| !self.calls.contains_key(candidate.as_str()))
            .unwrap_or_else(|| call_id.to_owned())
    }

    /// Synthesizes results for unanswered calls and lays the slots out as messages.
    fn finish(mut self) -> (Vec<Message>, Vec<Repair>) {
        let mut unanswered: Vec<(&Cow<'e, str>, &CallSite<'e>)> =
            self.calls.iter().filter(|(_, site)| !site.answered).collect();
        crate::sort::sort_by_key(&mut unanswered, |(_, site)| (site.slot, site.part_index));
        for (call_id, site) in unanswered {
            let part = Part::ToolResult {
                call_id: call_id.to_string(),
                tool_name: site.tool_name.to_owned(),
                output: interrupted_output(),
                is_error: true,
                hosted: site.hosted,
                attachments: Vec::new(),
            };
            let slot = &mut self.slots[site.slot];
            if site.hosted {
                slot.after_call.entry(site.part_index).or_default().push(part);
            } else {
                slot.results.push(part);
            }
            self.repairs.push(Repair::ToolCallInterrupted {
                call_id: call_id.to_string(),
                runtime_event_id: site.runtime_event_id.to_owned(),
                hosted: site.hosted,
            });
        }
        let mut messages = Vec::with_capacity(self.slots.len() * 2);
        for slot in self.slots {
            let Slot { role, parts, mut after_call, has_calls, results } = slot;
            let mut laid_out = Vec::with_capacity(parts.len());
            for (index, part) in parts.into_iter().enumerate() {
                laid_out.push(part);
                laid_out.extend(after_call.remove(&index).unwrap_or_default());
            }
            messages.push(Message { role, parts: laid_out });
            if has_calls {
                messages.push(Message { role: Role::Tool, parts: results });
            }
        }
        (messages, self.repairs)
    }
}
