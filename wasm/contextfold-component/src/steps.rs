//! The `compaction-steps` export: the transaction as a resource that hands out one effect at a
//! time. It never calls an import, so a JavaScript host can drive it between awaits.

use std::cell::RefCell;

use contextfold_core::RuntimeEvent;
use contextfold_core::compaction::{Effect as CoreEffect, Step as CoreStep};

use crate::contextfold::compaction::types::{
    AppendError, CompactResult, CompactionError, ProviderFailure, SummaryResponse,
};
use crate::driver::{self, Transaction, TransactionParams};
use crate::exports::contextfold::compaction::compaction_steps::{
    CompactionSession, Effect, Guest, GuestCompactionSession, SessionInput, Step,
};
use crate::{Component, convert};

impl Guest for Component {
    type CompactionSession = SessionState;
}

/// Where one session stands.
#[derive(Debug)]
enum Progress {
    /// The transaction is running.
    Running(Box<Transaction>),
    /// It is over; `poll` keeps returning this result.
    Done(CompactResult),
}

/// The guest side of one `compaction-session` resource. Methods take `&self` (the component
/// model hands out shared references), so the state lives in a `RefCell`.
#[derive(Debug)]
pub struct SessionState {
    /// The log the transaction was started on (summarize effects carry slices of it).
    events: Vec<RuntimeEvent>,
    progress: RefCell<Progress>,
}

impl SessionState {
    fn with_running<T>(
        &self,
        act: impl FnOnce(&mut Transaction) -> Result<T, contextfold_core::compaction::DriverError>,
    ) -> Result<T, CompactionError> {
        match &mut *self.progress.borrow_mut() {
            Progress::Running(tx) => act(tx).map_err(|e| convert::driver_error(&e)),
            Progress::Done(_) => Err(convert::finished_error()),
        }
    }
}

impl GuestCompactionSession for SessionState {
    fn start(input: SessionInput) -> Result<CompactionSession, CompactionError> {
        let events = convert::parse_events(&input.events)?;
        let checkpoint = convert::parse_optional_checkpoint(input.checkpoint.as_deref())?;
        let params = TransactionParams {
            trigger: input.trigger,
            current_turn: input.current_turn,
            model: &input.model,
            provider: &input.provider,
            compactor: input.compactor,
            checkpoint_id: input.checkpoint_id,
            now_ms: input.now_ms,
            summarizer_label: input.summarizer_label,
            circuit_json: input.circuit_json,
            calibration_json: input.calibration_json,
            prepared: input.prepared,
        };
        let tx = driver::start(params, events.clone(), checkpoint)?;
        Ok(CompactionSession::new(SessionState {
            events,
            progress: RefCell::new(Progress::Running(Box::new(tx))),
        }))
    }

    fn poll(&self) -> Result<Step, CompactionError> {
        let mut progress = self.progress.borrow_mut();
        let step = match &mut *progress {
            Progress::Done(result) => return Ok(Step::Done(result.clone())),
            Progress::Running(tx) => tx.poll().map_err(|e| convert::driver_error(&e))?,
        };
        match step {
            CoreStep::Effect(CoreEffect::Summarize(effect)) => Ok(Step::Effect(Effect::Summarize(
                driver::summarize_request(&effect, &self.events),
            ))),
            CoreStep::Effect(CoreEffect::CompactNatively(native)) => Ok(Step::Effect(
                Effect::CompactNatively(serde_json::to_string(&native).unwrap_or_default()),
            )),
            CoreStep::Effect(CoreEffect::AppendCheckpoint(checkpoint)) => {
                Ok(Step::Effect(Effect::AppendCheckpoint(checkpoint.to_json())))
            }
            CoreStep::Done(outcome) => {
                let finished = std::mem::replace(
                    &mut *progress,
                    Progress::Done(CompactResult {
                        outcome: crate::contextfold::compaction::types::OutcomeKind::Skipped,
                        reason: String::new(),
                        outcome_json: String::new(),
                        circuit_json: String::new(),
                    }),
                );
                let circuit = match finished {
                    Progress::Running(tx) => tx.into_circuit(),
                    Progress::Done(_) => return Err(convert::finished_error()),
                };
                let result = driver::compact_result(&outcome, &circuit);
                *progress = Progress::Done(result.clone());
                Ok(Step::Done(result))
            }
        }
    }

    fn resume_summary(
        &self,
        result: Result<SummaryResponse, ProviderFailure>,
    ) -> Result<(), CompactionError> {
        let answer = driver::summary_result(result);
        self.with_running(|tx| tx.handle_summary(answer))
    }

    fn resume_native(
        &self,
        result: Result<Vec<String>, ProviderFailure>,
    ) -> Result<(), CompactionError> {
        let answer = result.map_err(convert::provider_failure).and_then(convert::native_items);
        self.with_running(|tx| tx.handle_native(answer))
    }

    fn resume_append(&self, result: Result<(), AppendError>) -> Result<(), CompactionError> {
        let answer = driver::append_result(result);
        self.with_running(|tx| tx.handle_append(answer))
    }

    fn cancel(&self) -> bool {
        match &mut *self.progress.borrow_mut() {
            Progress::Running(tx) => tx.cancel(),
            Progress::Done(_) => false,
        }
    }
}
