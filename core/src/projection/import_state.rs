//! The bookkeeping the three history importers share (AI SDK `ModelMessage[]`, Chat Completions
//! and Anthropic Messages): events numbered from the [`ImportContext`], turns opened by user
//! messages, and the pairing rules that keep every imported tool result answering exactly one
//! earlier call (a call id reused while its call is still open, or a result for an unknown or
//! already answered call, would be a permanent 400 from the provider once replayed).
//!
//! A call id reused *after* its earlier call was answered is accepted: real function-calling
//! logs (SWE-agent, for one) do this. The imported event keeps the original id; from then on a
//! result with that id answers the new call. The projection renames such reused ids when it
//! builds a request (`<id>_r2`, `<id>_r3`, …, diagnostic `tool_call_id_renamed`), so the provider still
//! sees unique pairs.

use std::collections::{HashMap, HashSet};

use crate::event::{EventContent, RuntimeEvent};
use crate::projection::openai_chat::ImportContext;

/// How a call or a result breaks the pairing rules; each importer names it in its own error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PairingError {
    /// A call reuses the id of an earlier call that is still open (not answered yet).
    DuplicateCall,
    /// A result names no earlier call (or none it may answer).
    UnknownCall,
    /// A second result for one call.
    DuplicateResult,
}

/// The events imported so far, the current turn, and what an importer keeps of each call
/// (`C`: its tool name, say), by call id.
#[derive(Debug)]
pub(crate) struct ImportState<'a, C> {
    ids: &'a ImportContext,
    events: Vec<RuntimeEvent>,
    turn: u64,
    turn_has_user: bool,
    calls: HashMap<String, C>,
    answered: HashSet<String>,
}

impl<'a, C> ImportState<'a, C> {
    /// Nothing imported yet; the first turn is `ids.first_turn`.
    pub(crate) fn new(ids: &'a ImportContext) -> Self {
        Self {
            ids,
            events: Vec::new(),
            turn: ids.first_turn,
            turn_has_user: false,
            calls: HashMap::new(),
            answered: HashSet::new(),
        }
    }

    /// The sequence number of the next event.
    pub(crate) fn next_seq(&self) -> u64 {
        self.ids.first_seq + self.events.len() as u64
    }

    /// The response id of an assistant message whose first event is the next one.
    pub(crate) fn next_response_id(&self) -> String {
        format!("{}{}", self.ids.response_id_prefix, self.next_seq())
    }

    /// Appends an event holding `content` in the current turn; returns it (to add metadata).
    pub(crate) fn emit(
        &mut self,
        content: EventContent,
        response_id: Option<String>,
    ) -> &mut RuntimeEvent {
        let event = self.ids.event(self.next_seq(), self.turn, content, response_id);
        self.events.push(event);
        let last = self.events.len() - 1;
        &mut self.events[last]
    }

    /// A user message begins: it opens the next turn, unless no user message came yet (the
    /// events before the first one belong to the first turn).
    pub(crate) fn open_user_turn(&mut self) {
        if self.turn_has_user {
            self.turn += 1;
        }
        self.turn_has_user = true;
    }

    /// Records a call and what to keep of it. An id whose earlier call is still open is
    /// refused; an id whose earlier call was answered is reused: the new call replaces it, and
    /// the next result with that id answers the new call.
    pub(crate) fn call(&mut self, call_id: &str, kept: C) -> Result<(), PairingError> {
        if self.calls.contains_key(call_id) && !self.answered.remove(call_id) {
            return Err(PairingError::DuplicateCall);
        }
        self.calls.insert(call_id.to_owned(), kept);
        Ok(())
    }

    /// Records the result answering `call_id` and returns what was kept of its call. The call
    /// must have come earlier and pass `may_answer`; it must not be answered yet.
    pub(crate) fn answer(
        &mut self,
        call_id: &str,
        may_answer: impl FnOnce(&C) -> bool,
    ) -> Result<&C, PairingError> {
        let Some(kept) = self.calls.get(call_id).filter(|kept| may_answer(kept)) else {
            return Err(PairingError::UnknownCall);
        };
        if self.answered.contains(call_id) {
            return Err(PairingError::DuplicateResult);
        }
        self.answered.insert(call_id.to_owned());
        Ok(kept)
    }

    /// The events imported so far.
    pub(crate) fn events(&self) -> &[RuntimeEvent] {
        &self.events
    }

    /// The imported events.
    pub(crate) fn into_events(self) -> Vec<RuntimeEvent> {
        self.events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(text: &str) -> EventContent {
        EventContent::UserText { text: text.into(), attachments: Vec::new() }
    }

    #[test]
    fn events_are_numbered_and_user_messages_open_turns() {
        let ids = ImportContext::new("s");
        let mut state: ImportState<'_, ()> = ImportState::new(&ids);
        state.emit(EventContent::SystemNote { text: "sys".into() }, None);
        state.open_user_turn();
        state.emit(text("a"), None);
        assert_eq!(state.next_response_id(), format!("{}{}", ids.response_id_prefix, 3));
        state.open_user_turn();
        state.emit(text("b"), None).pinned = true;
        let events = state.into_events();
        let turns: Vec<&str> = events.iter().map(|e| e.turn_id.as_str()).collect();
        assert_eq!(turns, ["turn-0", "turn-0", "turn-1"]);
        assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(events[2].pinned, "emit hands back the event it appended");
    }

    #[test]
    fn every_result_answers_exactly_one_earlier_call() {
        let ids = ImportContext::new("s");
        let mut state = ImportState::new(&ids);
        assert_eq!(state.answer("c1", |_| true), Err(PairingError::UnknownCall));
        assert_eq!(state.call("c1", "shell"), Ok(()));
        assert_eq!(state.call("c1", "other"), Err(PairingError::DuplicateCall));
        assert_eq!(state.answer("c1", |_| false), Err(PairingError::UnknownCall));
        assert_eq!(state.answer("c1", |name| *name == "shell"), Ok(&"shell"));
        assert_eq!(state.answer("c1", |_| true), Err(PairingError::DuplicateResult));
    }

    #[test]
    fn an_answered_call_id_may_be_reused_and_the_next_result_answers_the_new_call() {
        let ids = ImportContext::new("s");
        let mut state = ImportState::new(&ids);
        assert_eq!(state.call("c1", "shell"), Ok(()));
        assert_eq!(state.answer("c1", |_| true), Ok(&"shell"));
        assert_eq!(state.call("c1", "edit"), Ok(()), "reuse after the answer");
        assert_eq!(state.call("c1", "other"), Err(PairingError::DuplicateCall), "still open");
        assert_eq!(state.answer("c1", |_| true), Ok(&"edit"), "pairs with the new call");
        assert_eq!(state.answer("c1", |_| true), Err(PairingError::DuplicateResult));
    }
}
