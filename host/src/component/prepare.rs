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
//! Below the soft threshold (the WIT `model-facts.prepare-at-percent`, the core's
//! `ModelFacts::prepare_at_percent`; default 80) a preparation is `skipped`
//! (`below_soft_threshold`).
//!
//! The held checkpoint is dropped once a compaction of its session used or refused it, or
//! recorded another checkpoint (the held one can no longer succeed the tip); a compaction that
//! did not need to fold keeps it for the next one.
//!
//! Every preparation that was not skipped is counted per session in [`PreparationStats`], the
//! native runtime's type, with its summarizer tokens (each request's estimated input and its
//! answer, metered in the provider import): `prepared` and `held` when it built a checkpoint,
//! `failed` when it did not; a held checkpoint then ends `used` or `wasted` as the compaction
//! it went into judged it (the native runtime's rule, `Fate::of_adoption`), or `superseded`
//! when a newer preparation replaced it or a checkpoint was recorded without it
//! ([`Plugin::preparations`]). The native runtime also records each end as an AgentRun
//! `preparation_settled` event; the component host has no AgentRun ledger (its
//! [`crate::component::Ledger`] is the WIT `ledger` import: events and checkpoints only), so
//! the counts are its record. To keep the summarizer call off the agent's
//! path entirely, run `prepare` on a second plugin of the same runner and ledger (a plugin is
//! `Send`) and pass the checkpoint of its outcome as `prepared` yourself: the adoption is the
//! same.

use contextfold_core::budget::Calibration;
use contextfold_core::{CharEstimator, HistoryCompactCheckpoint};
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
use crate::component::host_state::{APPEND_REFUSED_WHILE_PREPARING, SummarizerMeter, ledger_error};
use crate::component::plugin::{Plugin, StepSession};
use crate::preparation::{Fate, Held, PreparationStats};

/// The background preparation of one session in a [`Plugin`]: the checkpoint held for its next
/// compaction, and the counts.
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionPreparations {
    held: Option<Held>,
    stats: PreparationStats,
}

impl Plugin {
    /// Runs `request` as a `prepare` transaction (its `trigger` and `prepared` are ignored)
    /// through the step API: the log and the latest checkpoint come from this plugin's ledger,
    /// each summarize or native effect is answered by its provider, and nothing is appended.
    /// A `prepared` outcome's checkpoint is held for `request.session_id` and passed into its
    /// next [`Plugin::compact`] (see the module docs). Returns the transaction's result; pass
    /// its `circuit_json` on as after any compaction.
    ///
    /// Counted in [`Plugin::preparations`] unless skipped (an error counts as `failed`).
    pub fn prepare(&mut self, request: &CompactRequest) -> Result<CompactResult, ComponentError> {
        let request =
            CompactRequest { trigger: Trigger::Prepare, prepared: None, ..request.clone() };
        self.reset_meter(&request)?;
        let driven = self.preparation_input(&request).and_then(|input| {
            self.state_mut()?.preparing = true;
            self.start_session(&input).and_then(|session| {
                let driven = self.drive_preparation(&session);
                let dropped = self.drop_session(session);
                driven.and_then(|result| dropped.map(|()| result))
            })
        });
        if let Ok(state) = self.state_mut() {
            state.preparing = false;
        }
        self.settle(&request, false, driven.as_ref())?;
        driven
    }

    /// The checkpoint held for `session_id` by an earlier [`Plugin::prepare`], if any.
    pub fn prepared_checkpoint(&self, session_id: &str) -> Option<&HistoryCompactCheckpoint> {
        self.preparations.get(session_id)?.held.as_ref().map(|held| &held.checkpoint)
    }

    /// The background preparations of `session_id` so far (all zero when it never prepared).
    pub fn preparations(&self, session_id: &str) -> PreparationStats {
        self.preparations.get(session_id).map(|p| p.stats).unwrap_or_default()
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
        let held = self.preparations.get(&request.session_id)?.held.as_ref();
        let held = held.filter(|_| request.prepared.is_none())?;
        Some(CompactRequest { prepared: Some(held.checkpoint.to_json()), ..request.clone() })
    }

    /// Resets the summarizer meter before a transaction of `request`, measuring answers with
    /// its calibration for its provider (as the guest measures).
    pub(super) fn reset_meter(&mut self, request: &CompactRequest) -> Result<(), ComponentError> {
        let calibration: Calibration = request
            .calibration_json
            .as_deref()
            .and_then(|json| serde_json::from_str(json).ok())
            .unwrap_or_default();
        let (provider, model) = (&request.provider.provider, &request.provider.model_id);
        let estimator = calibration.estimator(CharEstimator, provider, model);
        self.state_mut()?.meter = SummarizerMeter { estimator, spent: 0 };
        Ok(())
    }

    /// After a transaction of `request` (`handed`: the held checkpoint went in as `prepared`):
    /// a `prepare` transaction's checkpoint is held, or its failure counted; a held checkpoint
    /// is settled once a compaction used or refused it or recorded another. A skipped
    /// preparation, or a compaction that neither judged nor recorded, changes nothing.
    pub(super) fn settle(
        &mut self,
        request: &CompactRequest,
        handed: bool,
        result: Result<&CompactResult, &ComponentError>,
    ) -> Result<(), ComponentError> {
        let tokens = self.state_mut()?.meter.spent;
        let entry = self.preparations.entry(request.session_id.clone()).or_default();
        let result = match result {
            Ok(result) => result,
            Err(_) if request.trigger == Trigger::Prepare => {
                entry.failed(tokens);
                return Ok(());
            }
            Err(_) => return Ok(()),
        };
        let outcome: Value = serde_json::from_str(&result.outcome_json).unwrap_or(Value::Null);
        let checkpoint = HistoryCompactCheckpoint::from_value(outcome["checkpoint"].clone()).ok();
        if request.trigger == Trigger::Prepare {
            match (result.outcome, checkpoint) {
                (OutcomeKind::Skipped, _) => {}
                (OutcomeKind::Prepared, Some(checkpoint)) => entry.hold(checkpoint, tokens),
                _ => entry.failed(tokens),
            }
            return Ok(());
        }
        let codes = outcome["diagnostics"].as_array().into_iter().flatten();
        let judged = Fate::of_adoption(codes.filter_map(|d| d["code"].as_str()));
        let fate = match judged {
            Some(fate) if handed => fate,
            Some(_) => Fate::Superseded,
            None if checkpoint.is_some() => Fate::Superseded,
            None => return Ok(()),
        };
        entry.settle(fate);
        Ok(())
    }
}

impl SessionPreparations {
    /// A preparation built `checkpoint` for `tokens`: held, replacing (superseding) an older one.
    fn hold(&mut self, checkpoint: HistoryCompactCheckpoint, tokens: u64) {
        self.settle(Fate::Superseded);
        self.stats.started += 1;
        self.stats.hold(tokens);
        self.held = Some(Held { checkpoint, tokens });
    }

    /// A preparation that spent `tokens` ended without a checkpoint; a held one stays.
    fn failed(&mut self, tokens: u64) {
        self.stats.started += 1;
        self.stats.tokens += tokens;
        self.stats.settle(Fate::Failed, tokens, false);
    }

    /// The held checkpoint, if any, ends as `fate`.
    fn settle(&mut self, fate: Fate) {
        if let Some(held) = self.held.take() {
            self.stats.release(held.tokens);
            self.stats.settle(fate, held.tokens, true);
        }
    }
}
