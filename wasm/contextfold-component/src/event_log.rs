//! The `projection.event-log` resource: a session's log held in the guest, for hosts that
//! append as they go. Each event crosses into the guest once; the core's [`LogValidator`]
//! checks only the new events of an append, its [`PrefixHasher`] keeps the digest, and its
//! [`VerifiedPrefix`] makes a projection verify only what it has not verified before.

use std::cell::RefCell;

use contextfold_core::RuntimeEvent;
use contextfold_core::checkpoint::VerifiedPrefix;
use contextfold_core::digest::PrefixHasher;
use contextfold_core::event::LogValidator;

use crate::contextfold::compaction::types::CompactionError;
use crate::convert;
use crate::exports::contextfold::compaction::projection::{GuestEventLog, ProjectRequest};

/// The guest side of one `event-log` resource (methods take `&self`: the state is in a
/// `RefCell`).
#[derive(Debug, Default)]
pub struct GuestLog {
    state: RefCell<LogState>,
}

#[derive(Debug, Default)]
struct LogState {
    events: Vec<RuntimeEvent>,
    validator: LogValidator,
    hasher: PrefixHasher,
    verified: VerifiedPrefix,
}

impl GuestEventLog for GuestLog {
    fn new() -> Self {
        Self::default()
    }

    fn append(&self, events: String) -> Result<u64, CompactionError> {
        let events = convert::parse_events(&events)?;
        let mut state = self.state.borrow_mut();
        state.validator.append(&events).map_err(|e| convert::log_error(&e))?;
        for event in &events {
            state.hasher.push(event);
        }
        state.events.extend(events);
        Ok(state.events.len() as u64)
    }

    fn length(&self) -> u64 {
        self.state.borrow().events.len() as u64
    }

    fn digest(&self) -> String {
        self.state.borrow().hasher.digest()
    }

    fn project(&self, request: ProjectRequest) -> Result<String, CompactionError> {
        let trimmed = request.events.trim();
        if !(trimmed.is_empty() || trimmed == "[]") {
            return Err(convert::invalid_input(
                "events_given",
                "an event-log projects its own events; pass `[]` as `events`",
            ));
        }
        let state = &mut *self.state.borrow_mut();
        crate::projection_export::project_events(&state.events, &request, &mut state.verified)
    }
}
