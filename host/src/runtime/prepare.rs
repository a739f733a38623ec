//! Background preparation (issue 39): the next checkpoint built off the agent's critical path.
//!
//! With [`SessionRuntime::with_background_preparation`], a capacity evaluation that finds the
//! history at the model's soft threshold (`compaction::prepare_due`) but still within the
//! budget starts a tokio task: the core transaction with trigger `prepare` over the log as it
//! stands, answered by the same summarizer. It records nothing: the core hands the checkpoint
//! back unrecorded, and the runtime holds it in memory. When an evaluation later finds the
//! history over the budget, the held checkpoint (or the one still in flight, awaited) goes into
//! the foreground compaction as `CompactInput::prepared`; the core appends it, through the
//! same compare-and-swap as any checkpoint, only if it still succeeds the tip, matches the log
//! and fits the request being built, and otherwise compacts as if nothing had been prepared.
//!
//! So a process killed during a preparation leaves nothing behind, and the next one carries on
//! from the ledger; a checkpoint recorded meanwhile (an overflow recovery, a manual compaction,
//! another process) makes the prepared one fail the successor check, and a model switch makes
//! the replay gate judge it against the new budget and provider. A failed or timed-out
//! preparation is never seen by the agent: its outcome is recorded (trigger `prepare`) and its
//! circuit merged into the session's, so a malformed input is still not sent again. At most one
//! preparation runs per runtime; starting another supersedes (aborts or drops) the older one.
//!
//! Every preparation ends one way, counted in [`PreparationStats`] with its summarizer tokens
//! and recorded as an AgentRun `preparation_settled` event: `used`, `superseded`, `wasted`
//! (built but rejected when needed) or `failed`.

use std::sync::Arc;

use contextfold_core::budget::CalibratedEstimator;
use contextfold_core::compaction::{
    CompactInput, Compaction, CompactionOutcome, OutcomeKind, Trigger, prepare_due,
};
use contextfold_core::{HistoryCompactCheckpoint, RuntimeEvent};
use serde_json::json;

use super::compactors::{NativeCompactor, Summarizer};
use super::error::RuntimeError;
use super::session::{BaseEstimator, SessionRuntime, unique_tag};
use super::transaction::{Answerers, Driven, PreparationState, drive};
use crate::ledger::SharedLedger;
use crate::preparation::{Fate, Held, PreparationStats};
use crate::storage::{AgentRunRecord, agent_run_kind};

/// The task of one preparation.
type Task = tokio::task::JoinHandle<Result<Driven, RuntimeError>>;

/// Starts a preparation's task (built where the summarizer's bounds are known).
pub(crate) type Spawner = Arc<dyn Fn(Job) -> Task + Send + Sync>;

/// What a preparation runs on: owned, as its task outlives the evaluation that started it.
pub(crate) struct Job {
    events: Vec<RuntimeEvent>,
    input: CompactInput<'static>,
    estimator: CalibratedEstimator<BaseEstimator>,
}

impl Job {
    /// Runs the `prepare` transaction to its end.
    pub(crate) async fn run<S: Summarizer, N: NativeCompactor>(
        self,
        summarizer: &S,
        native: &N,
        ledger: &SharedLedger,
    ) -> Result<Driven, RuntimeError> {
        let Job { events, input, estimator } = self;
        let input = CompactInput { events: events.as_slice().into(), ..input };
        let tx = Compaction::start_with_estimator(input, estimator.clone())?;
        let answerers = Answerers { summarizer, native, ledger, estimator: &estimator };
        drive(tx, &events, answerers, None, None).await
    }
}

/// The preparation state of one runtime.
#[derive(Default)]
pub(crate) struct Preparations {
    pub(crate) spawner: Option<Spawner>,
    in_flight: Option<Task>,
    held: Option<Held>,
    pub(crate) stats: PreparationStats,
}

impl std::fmt::Debug for Preparations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Preparations")
            .field("enabled", &self.spawner.is_some())
            .field("in_flight", &self.in_flight.is_some())
            .field("held", &self.held.as_ref().map(|h| &h.checkpoint.checkpoint_id))
            .field("stats", &self.stats)
            .finish()
    }
}

impl<S, N> SessionRuntime<S, N>
where
    S: Summarizer + Send + Sync + 'static,
    N: NativeCompactor + Send + Sync + 'static,
{
    /// Prepares the next checkpoint in the background: see the module docs. The soft
    /// threshold is the model's (`ModelFacts::prepare_at_percent`, default
    /// [`contextfold_core::compaction::PREPARE_AT_PERCENT`]). Needs a tokio runtime.
    pub fn with_background_preparation(self) -> Self {
        let (summarizer, native, ledger) =
            (Arc::clone(&self.summarizer), Arc::clone(&self.native), Arc::clone(&self.ledger));
        let spawner: Spawner = Arc::new(move |job: Job| {
            let (summarizer, native, ledger) =
                (Arc::clone(&summarizer), Arc::clone(&native), Arc::clone(&ledger));
            tokio::spawn(async move { job.run(&*summarizer, &*native, &ledger).await })
        });
        self.state().preparations.spawner = Some(spawner);
        self
    }
}

impl<S: Summarizer, N: NativeCompactor> SessionRuntime<S, N> {
    /// The background preparations of this runtime so far.
    pub fn preparations(&self) -> PreparationStats {
        self.state().preparations.stats
    }

    /// Waits for the preparation in flight, if any, and takes its result in (a host shutting
    /// down, or a test that needs it settled). Evaluations never wait for it unless the hard
    /// trigger needs it.
    pub async fn await_preparation(&self) {
        let task = self.state().preparations.in_flight.take();
        if let Some(task) = task {
            self.finished(joined(task.await)).await;
        }
    }

    /// After an evaluation found the history within the budget: collects a finished
    /// preparation and, when the history is at the soft threshold and nothing is in flight or
    /// held for the current tip, starts one.
    pub(crate) async fn prepare_if_due(&self, history_tokens: u64) -> Result<(), RuntimeError> {
        self.collect_finished().await;
        if !prepare_due(history_tokens, &self.config.model) {
            return Ok(());
        }
        let (spawner, busy) = {
            let state = self.state();
            let p = &state.preparations;
            (p.spawner.clone(), p.in_flight.is_some())
        };
        let Some(spawner) = spawner.filter(|_| !busy) else { return Ok(()) };
        if self.state().preparations.held.is_some() {
            let tip = self.ledger.current_checkpoint(&self.config.session_id).await?.checkpoint;
            let held_for_tip = self.state().preparations.held.as_ref().is_some_and(|held| {
                held.checkpoint.previous_checkpoint_id.as_deref()
                    == tip.as_ref().map(|c| c.checkpoint_id.as_str())
            });
            if held_for_tip {
                return Ok(());
            }
            // Held for an older tip, it can no longer succeed: a newer one replaces it.
            self.supersede().await;
        }
        let (events, lookup) = self.load().await?;
        let tip = lookup.checkpoint;
        let now_ms = self.now_ms();
        let input = CompactInput {
            trigger: Trigger::Prepare,
            events: Vec::new().into(),
            current_turn_id: self.active_turn(),
            checkpoint: tip,
            model: self.config.model.clone(),
            provider: self.config.provider.clone(),
            compactor: self.config.compactor,
            new_checkpoint_id: format!("cp-prepared-{now_ms}-{}", unique_tag()),
            now_ms,
            provider_options: None,
            summarizer_label: self.summarizer.label(),
            circuit: self.state().circuit.clone(),
            prepared: None,
        };
        let job = Job { events, input, estimator: self.estimator().await? };
        let mut state = self.state();
        state.preparations.in_flight = Some(spawner(job));
        state.preparations.stats.started += 1;
        Ok(())
    }

    /// The prepared checkpoint for a compaction the agent needs now: the held one, or the one
    /// in flight (awaited: what is left of it is never longer than the foreground call).
    pub(crate) async fn take_prepared(&self) -> (Option<Held>, PreparationState) {
        let before = {
            let state = self.state();
            match (&state.preparations.in_flight, &state.preparations.held) {
                (Some(_), _) => PreparationState::InFlight,
                (None, Some(_)) => PreparationState::Held,
                (None, None) => PreparationState::None,
            }
        };
        self.await_preparation().await;
        let mut state = self.state();
        let held = state.preparations.held.take();
        if let Some(held) = &held {
            state.preparations.stats.release(held.tokens);
        }
        (held, before)
    }

    /// Settles the checkpoint `take_prepared` gave, once its compaction is over.
    pub(crate) async fn settle(&self, held: Option<Held>, outcome: &CompactionOutcome) {
        let Some(held) = held else { return };
        let codes = outcome.diagnostics.iter().map(|d| d.code.as_str());
        let fate = Fate::of_adoption(codes).unwrap_or(Fate::Wasted);
        self.account(fate, held.tokens, Some(&held.checkpoint), None).await;
    }

    /// Aborts the preparation in flight and drops the held checkpoint: a checkpoint is being
    /// recorded in the foreground (overflow, manual), or a newer preparation starts.
    pub(crate) async fn supersede(&self) {
        let (task, held) = {
            let mut state = self.state();
            let p = &mut state.preparations;
            (p.in_flight.take(), p.held.take())
        };
        if let Some(task) = task {
            task.abort();
            self.account(Fate::Superseded, 0, None, None).await;
        }
        if let Some(held) = held {
            self.state().preparations.stats.release(held.tokens);
            self.account(Fate::Superseded, held.tokens, Some(&held.checkpoint), None).await;
        }
    }

    /// Collects the preparation in flight if it has finished (never waits).
    async fn collect_finished(&self) {
        let finished = {
            let mut state = self.state();
            let p = &mut state.preparations;
            match &p.in_flight {
                Some(task) if task.is_finished() => p.in_flight.take(),
                _ => None,
            }
        };
        if let Some(task) = finished {
            self.finished(joined(task.await)).await;
        }
    }

    /// Takes a finished preparation in: its checkpoint held, its circuit merged, a failure
    /// recorded (never returned: the agent does not see it).
    async fn finished(&self, result: Result<Driven, RuntimeError>) {
        let driven = match result {
            Ok(driven) => driven,
            Err(error) => {
                return self.account(Fate::Failed, 0, None, Some(error.to_string())).await;
            }
        };
        let circuit = {
            let mut state = self.state();
            state.circuit.merge(&driven.circuit);
            state.circuit.clone()
        };
        let outcome = driven.outcome;
        match (outcome.outcome, outcome.checkpoint) {
            (OutcomeKind::Prepared, Some(checkpoint)) => {
                let mut state = self.state();
                let p = &mut state.preparations;
                p.stats.hold(driven.summarizer_tokens);
                p.held = Some(Held { checkpoint, tokens: driven.summarizer_tokens });
            }
            (OutcomeKind::Skipped, _) => {}
            (_, checkpoint) => {
                self.state().preparations.stats.tokens += driven.summarizer_tokens;
                let ordinal = format!("prepare-{}", unique_tag());
                let recorded = CompactionOutcome { checkpoint, ..outcome };
                let run = "prepare";
                // Best effort, as the accounting: a failed preparation never fails the step.
                let _ =
                    self.record_outcome(Trigger::Prepare, run, &recorded, &circuit, &ordinal).await;
                let reason = Some(recorded.reason.as_str().to_owned());
                self.account(Fate::Failed, driven.summarizer_tokens, None, reason).await;
            }
        }
    }

    /// Counts one preparation's end and records it as a `preparation_settled` AgentRun event
    /// (best effort: the accounting never fails the agent's step).
    async fn account(
        &self,
        fate: Fate,
        tokens: u64,
        checkpoint: Option<&HistoryCompactCheckpoint>,
        detail: Option<String>,
    ) {
        self.state().preparations.stats.settle(fate, tokens, checkpoint.is_some());
        let now_ms = self.now_ms();
        let record = AgentRunRecord {
            event_id: format!("ar-prepare-{now_ms}-{}-{}", unique_tag(), fate.as_str()),
            session_id: self.config.session_id.clone(),
            run_id: self.active_run_id().unwrap_or_else(|| "prepare".to_owned()),
            kind: agent_run_kind::PREPARATION_SETTLED.to_owned(),
            recorded_at_ms: now_ms,
            payload: json!({
                "fate": fate.as_str(),
                "checkpointId": checkpoint.map(|c| c.checkpoint_id.clone()),
                "summarizerTokens": tokens,
                "detail": detail,
            }),
        };
        // Best effort: the counts above stand even when the ledger cannot take the event.
        let _ = self.ledger.append_agent_run_event(record).await;
    }
}

/// A joined task's result (a panicked or aborted task is a failed preparation).
fn joined(
    result: Result<Result<Driven, RuntimeError>, tokio::task::JoinError>,
) -> Result<Driven, RuntimeError> {
    result.unwrap_or_else(|error| Err(RuntimeError::TaskFailed(error.to_string())))
}
