//! The component's `projection.event-log` resource from the host: a session's log held in the
//! plugin, so an agent step sends only its new events and a projection verifies only what the
//! guest has not verified before (O(new events) per step, however long the session).
//!
//! A log lives in one plugin instance: after a trap replaces the instance, its calls fail with
//! [`ComponentError::SessionLost`] and the host appends the session's events to a new log.

use wasmtime::component::ResourceAny;

use crate::component::bindings::exports::contextfold::compaction::projection::ProjectRequest;
use crate::component::{ComponentError, Plugin};

/// A session's log inside one plugin instance (the WIT `event-log`). Drop it with
/// [`Plugin::drop_event_log`].
#[derive(Debug)]
pub struct GuestEventLog {
    resource: ResourceAny,
    generation: u64,
}

impl Plugin {
    fn event_log(&self, log: &GuestEventLog) -> Result<ResourceAny, ComponentError> {
        if self.alive(log.generation) { Ok(log.resource) } else { Err(ComponentError::SessionLost) }
    }

    /// `event-log` constructor: an empty log.
    pub fn new_event_log(&mut self) -> Result<GuestEventLog, ComponentError> {
        let resource = self
            .call(|b, s| b.contextfold_compaction_projection().event_log().call_constructor(s))?;
        Ok(GuestEventLog { resource, generation: self.generation() })
    }

    /// `event-log.append`: appends `events_json` (a JSON array); returns the new length.
    pub fn append_to_log(
        &mut self,
        log: &GuestEventLog,
        events_json: &str,
    ) -> Result<u64, ComponentError> {
        let resource = self.event_log(log)?;
        let events = events_json.to_owned();
        let r = self.call(|b, s| {
            b.contextfold_compaction_projection().event_log().call_append(s, resource, &events)
        })?;
        Self::guest(r)
    }

    /// `event-log.length`.
    pub fn log_length(&mut self, log: &GuestEventLog) -> Result<u64, ComponentError> {
        let resource = self.event_log(log)?;
        self.call(|b, s| b.contextfold_compaction_projection().event_log().call_length(s, resource))
    }

    /// `event-log.digest`: the source digest of the whole log.
    pub fn log_digest(&mut self, log: &GuestEventLog) -> Result<String, ComponentError> {
        let resource = self.event_log(log)?;
        self.call(|b, s| b.contextfold_compaction_projection().event_log().call_digest(s, resource))
    }

    /// `event-log.project`: [`Plugin::project`] over the log (`request.events` must be `[]`).
    pub fn project_log(
        &mut self,
        log: &GuestEventLog,
        request: &ProjectRequest,
    ) -> Result<String, ComponentError> {
        let resource = self.event_log(log)?;
        let r = self.call(|b, s| {
            b.contextfold_compaction_projection().event_log().call_project(s, resource, request)
        })?;
        Self::guest(r)
    }

    /// Drops a log's guest resource (a lost log needs no drop).
    pub fn drop_event_log(&mut self, log: GuestEventLog) -> Result<(), ComponentError> {
        if !self.alive(log.generation) {
            return Ok(());
        }
        self.call(|_, s| log.resource.resource_drop(s))
    }
}
