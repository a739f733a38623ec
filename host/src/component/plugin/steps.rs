//! The step-driven compaction of a [`Plugin`] (the WIT `compaction-steps` resource): a
//! [`StepSession`] lives in one instance and is lost with it.

use crate::component::bindings::contextfold::compaction::types::{
    AppendError, ProviderFailure, SummaryResponse,
};
use crate::component::bindings::exports::contextfold::compaction::compaction_steps::{
    SessionInput, Step,
};
use crate::component::error::ComponentError;

use super::{Plugin, StepSession};
use wasmtime::component::ResourceAny;

impl Plugin {
    /// Whether a resource made in instance `generation` is still alive.
    pub(in crate::component) fn alive(&self, generation: u64) -> bool {
        generation == self.generation && self.bindings.is_some()
    }

    /// The current instance's generation (a trap starts a new one).
    pub(in crate::component) fn generation(&self) -> u64 {
        self.generation
    }

    fn session<'a>(&self, session: &'a StepSession) -> Result<&'a ResourceAny, ComponentError> {
        if session.generation == self.generation && self.bindings.is_some() {
            Ok(&session.resource)
        } else {
            Err(ComponentError::SessionLost)
        }
    }

    /// `compaction-session.start`.
    pub fn start_session(&mut self, input: &SessionInput) -> Result<StepSession, ComponentError> {
        let r = self.call(|b, s| {
            b.contextfold_compaction_compaction_steps().compaction_session().call_start(s, input)
        })?;
        let resource = Self::guest(r)?;
        Ok(StepSession { resource, generation: self.generation })
    }

    /// `compaction-session.poll`.
    pub fn poll(&mut self, session: &StepSession) -> Result<Step, ComponentError> {
        let resource = *self.session(session)?;
        let r = self.call(|b, s| {
            b.contextfold_compaction_compaction_steps().compaction_session().call_poll(s, resource)
        })?;
        Self::guest(r)
    }

    /// `compaction-session.resume-summary`.
    pub fn resume_summary(
        &mut self,
        session: &StepSession,
        result: &Result<SummaryResponse, ProviderFailure>,
    ) -> Result<(), ComponentError> {
        let resource = *self.session(session)?;
        let r =
            self.call(|b, s| {
                b.contextfold_compaction_compaction_steps()
                    .compaction_session()
                    .call_resume_summary(s, resource, result.as_ref())
            })?;
        Self::guest(r)
    }

    /// `compaction-session.resume-native`.
    pub fn resume_native(
        &mut self,
        session: &StepSession,
        result: &Result<Vec<String>, ProviderFailure>,
    ) -> Result<(), ComponentError> {
        let resource = *self.session(session)?;
        let r = self.call(|b, s| {
            b.contextfold_compaction_compaction_steps().compaction_session().call_resume_native(
                s,
                resource,
                result.as_ref().map(Vec::as_slice),
            )
        })?;
        Self::guest(r)
    }

    /// `compaction-session.resume-append`.
    pub fn resume_append(
        &mut self,
        session: &StepSession,
        result: &Result<(), AppendError>,
    ) -> Result<(), ComponentError> {
        let resource = *self.session(session)?;
        let r = self.call(|b, s| {
            b.contextfold_compaction_compaction_steps().compaction_session().call_resume_append(
                s,
                resource,
                result.as_ref().map(|_| ()),
            )
        })?;
        Self::guest(r)
    }

    /// `compaction-session.cancel`.
    pub fn cancel(&mut self, session: &StepSession) -> Result<bool, ComponentError> {
        let resource = *self.session(session)?;
        self.call(|b, s| {
            b.contextfold_compaction_compaction_steps()
                .compaction_session()
                .call_cancel(s, resource)
        })
    }

    /// Drops a session's guest resource (a lost session needs no drop).
    pub fn drop_session(&mut self, session: StepSession) -> Result<(), ComponentError> {
        if self.session(&session).is_err() {
            return Ok(());
        }
        self.call(|_, s| session.resource.resource_drop(s))
    }
}
