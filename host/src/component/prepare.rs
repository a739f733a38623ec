//! Background preparation through the component (issue 39): the host drives a `prepare`
//! transaction as separate steps, holds the checkpoint it builds, and passes it into the
//! session's next compaction, where the core adopts or refuses it.
//!
//! [`Plugin::prepare`] runs the transaction through the step API (`compaction-steps`), not the
//! blocking export: the host reads the log and the latest checkpoint from its ledger, answers
//! each summarize or native effect with its provider (the same conversions as the imports),
//! and refuses any append, the `append-checkpoint` effect and the `ledger.append-checkpoint`
//! import alike, so a preparation records nothing whatever the plugin does. Its
//! `prepared` checkpoint is held by the plugin, one per session (a newer one replaces it).
//!
//! [`Plugin::compact`] passes the held checkpoint as `compact-request.prepared` when the
//! request names none. The core decides everything else: only a `pre-turn` or `mid-turn`
//! compaction that must fold adopts it, and only when it still succeeds the ledger's latest
//! checkpoint, matches the log and fits the request being built (`prepared_checkpoint_used`:
//! appended through the ledger's compare-and-swap and the host's checkpoint guard, no provider
//! call); otherwise it says why (`prepared_checkpoint_rejected`) and compacts as without it.
//! Below the soft threshold (`ModelFacts::prepare_at_percent`, the core's default through the
//! WIT) a preparation is `skipped` (`below_soft_threshold`).
//!
//! The held checkpoint is dropped once a compaction of its session used or refused it, or
//! recorded another checkpoint (the held one can no longer succeed the tip); a compaction that
//! did not need to fold keeps it for the next one. To keep the summarizer call off the agent's
//! path entirely, run `prepare` on a second plugin of the same runner and ledger (a plugin is
//! `Send`) and pass the checkpoint of its outcome as `prepared` yourself: the adoption is the
//! same.

use contextfold_core::{HistoryCompactCheckpoint, ReasonCode};
use serde_json::Value;

use crate::component::bindings::contextfold::compaction::types::{
    AppendError, CompactResult, CompactionError, OutcomeKind, Trigger,
};
use crate::component::bindings::contextfold::compaction::{ledger, provider};
use crate::component::bindings::exports::contextfold::compaction::compaction::CompactRequest;
use crate::component::bindings::exports::contextfold::compaction::compaction_steps::{
    Effect, SessionInput, Step,
};
use crate::component::checkpoint_guard::latest_checkpoint;
use crate::component::error::{ComponentError, GuestError};
use crate::component::host_state::{APPEND_REFUSED_WHILE_PREPARING, ledger_error};
use crate::component::plugin::{Plugin, StepSession};

impl Plugin {
    /// Runs `request` as a `prepare` transaction (its `trigger` and `prepared` are ignored)
    /// through the step API: the log and the latest checkpoint come from this plugin's ledger,
    /// each summarize or native effect is answered by its provider, and nothing is appended.
    /// A `prepared` outcome's checkpoint is held for `request.session_id` and passed into its
    /// next [`Plugin::compact`] (see the module docs). Returns the transaction's result; pass
    /// its `circuit_json` on as after any compaction.
    pub fn prepare(&mut self, request: &CompactRequest) -> Result<CompactResult, ComponentError> {
        let input = self.preparation_input(request)?;
        self.state_mut()?.preparing = true;
        let driven = self.start_session(&input).and_then(|session| {
            let driven = self.drive_preparation(&session);
            let dropped = self.drop_session(session);
            driven.and_then(|result| dropped.map(|()| result))
        });
        if let Ok(state) = self.state_mut() {
            state.preparing = false;
        }
        let result = driven?;
        self.settle_prepared(&request.session_id, &result);
        Ok(result)
    }

    /// The checkpoint held for `session_id` by an earlier [`Plugin::prepare`], if any.
    pub fn prepared_checkpoint(&self, session_id: &str) -> Option<&HistoryCompactCheckpoint> {
        self.prepared.get(session_id)
    }

    /// The step input of a preparation: `request` with the ledger's log and latest checkpoint.
    fn preparation_input(
        &mut self,
        request: &CompactRequest,
    ) -> Result<SessionInput, ComponentError> {
        let state = self.state_mut()?;
        let session = &request.session_id;
        let ledger_failure =
            |error| ComponentError::Guest(GuestError::from(CompactionError::Ledger(error)));
        let events = ledger::Host::load_events(state, session.clone()).map_err(ledger_failure)?;
        let checkpoint = latest_checkpoint(state.ledger.as_mut(), session)
            .map_err(|error| ledger_failure(ledger_error(error)))?;
        Ok(SessionInput {
            trigger: Trigger::Prepare,
            events,
            current_turn: request.current_turn.clone(),
            checkpoint: checkpoint.map(|cp| cp.to_json()),
            model: request.model,
            provider: request.provider.clone(),
            compactor: request.compactor,
            checkpoint_id: request.checkpoint_id.clone(),
            now_ms: request.now_ms,
            summarizer_label: request.summarizer_label.clone(),
            circuit_json: request.circuit_json.clone(),
            calibration_json: request.calibration_json.clone(),
            prepared: None,
        })
    }

    /// Polls the session to its end, performing each effect with this plugin's provider.
    fn drive_preparation(
        &mut self,
        session: &StepSession,
    ) -> Result<CompactResult, ComponentError> {
        loop {
            match self.poll(session)? {
                Step::Done(result) => return Ok(result),
                Step::Effect(Effect::Summarize(request)) => {
                    let answer = provider::Host::summarize(self.state_mut()?, request);
                    self.resume_summary(session, &answer)?;
                }
                Step::Effect(Effect::CompactNatively(request)) => {
                    let answer = provider::Host::compact_natively(self.state_mut()?, request);
                    self.resume_native(session, &answer)?;
                }
                Step::Effect(Effect::AppendCheckpoint(_)) => {
                    let refused =
                        Err(AppendError::Failed(APPEND_REFUSED_WHILE_PREPARING.to_owned()));
                    self.resume_append(session, &refused)?;
                }
            }
        }
    }

    /// `request` with the checkpoint held for its session as `prepared`, when it names none.
    pub(super) fn with_held_prepared(&self, request: &CompactRequest) -> Option<CompactRequest> {
        let held = self.prepared.get(&request.session_id).filter(|_| request.prepared.is_none())?;
        Some(CompactRequest { prepared: Some(held.to_json()), ..request.clone() })
    }

    /// After a transaction of `session_id`: holds the checkpoint of a `prepared` outcome, and
    /// drops the held one once a compaction used or refused it or recorded another.
    pub(super) fn settle_prepared(&mut self, session_id: &str, result: &CompactResult) {
        let outcome: Value = serde_json::from_str(&result.outcome_json).unwrap_or(Value::Null);
        let checkpoint = HistoryCompactCheckpoint::from_value(outcome["checkpoint"].clone()).ok();
        if result.outcome == OutcomeKind::Prepared {
            if let Some(checkpoint) = checkpoint {
                self.prepared.insert(session_id.to_owned(), checkpoint);
            }
            return;
        }
        let judged = outcome["diagnostics"].as_array().into_iter().flatten().any(|d| {
            [ReasonCode::PreparedCheckpointUsed, ReasonCode::PreparedCheckpointRejected]
                .iter()
                .any(|code| d["code"] == code.as_str())
        });
        if judged || checkpoint.is_some() {
            self.prepared.remove(session_id);
        }
    }
}
