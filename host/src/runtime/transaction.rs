//! The driver of the core's compaction transaction: one loop for every trigger.

use std::sync::Arc;

use contextfold_core::budget::TokenEstimator;
use contextfold_core::compaction::{
    AppendFailure, CompactInput, Compaction, CompactionOutcome, Effect, MalformedInputCircuit,
    ProviderFailure, ProviderFailureKind, Step, SummarizeEffect, Trigger, redact_provider_state,
    summary_payload,
};
use contextfold_core::{HistoryCompactCheckpoint, RuntimeEvent};
use serde::Serialize;
use serde_json::Value;

use super::compactors::{NativeCompactor, Summarizer};
use super::error::RuntimeError;
use super::session::{Clock, SessionRuntime, unique_tag};
use super::stop::StopSignal;
use crate::ledger::SharedLedger;
use crate::storage::{AgentRunRecord, CIRCUIT_KEY, LookupNote, agent_run_kind};

/// One Compact command.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) trigger: Trigger,
    pub(crate) current_turn_id: Option<String>,
    pub(crate) run_id: String,
}

/// What one compaction did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionReport {
    /// The trigger that emitted the Compact command.
    pub trigger: Trigger,
    /// The Run it ran in (the turn's Run, or the manual compaction's own Run).
    pub run_id: String,
    /// The core's outcome.
    pub outcome: CompactionOutcome,
    /// Checkpoint lookup notes from before the compaction (projection damage, recovery).
    pub lookup_notes: Vec<LookupNote>,
    /// Summarizer tokens this compaction spent: each request's estimated input and its answer
    /// (0 when it adopted a prepared checkpoint; the preparation's own are in
    /// [`super::PreparationStats`]).
    pub summarizer_tokens: u64,
    /// What background preparation had ready when this compaction was needed.
    pub preparation: PreparationState,
}

/// What background preparation had ready when a compaction was needed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PreparationState {
    /// Nothing: preparation is off, or no preparation was started for this tip.
    #[default]
    None,
    /// A preparation was still running: the compaction waited for what was left of it.
    InFlight,
    /// A prepared checkpoint was held, finished (it may still have been refused).
    Held,
}

impl<S: Summarizer, N: NativeCompactor> SessionRuntime<S, N> {
    /// Runs one Compact command through the core transaction: loads the log and the current
    /// checkpoint, answers each effect (summary, native compaction, durable append under the
    /// store's compare-and-swap), and records the outcome and diagnostics as an AgentRun
    /// `compaction_outcome_recorded` event (unless cancelled: a cancelled compaction persists
    /// nothing). `prepared` is a checkpoint a background preparation built: the core adopts it
    /// when it still serves (see `compaction::adoption`).
    pub(crate) async fn compact(
        &self,
        request: Request,
        stop: Option<&StopSignal>,
        prepared: Option<HistoryCompactCheckpoint>,
    ) -> Result<CompactionReport, RuntimeError> {
        let (events, lookup) = self.load().await?;
        let session = &self.config.session_id;
        let ordinal = self.ledger.agent_run_events(session).await?.len() + 1;
        let remembered = self.ledger.latest_circuit(session).await?;
        // The circuit the ledger remembers (a failed input of an earlier process) wins over
        // this process's, which is only newer when its outcome could not be recorded.
        let circuit = remembered.unwrap_or_else(|| self.state().circuit.clone());
        let now_ms = self.now_ms();
        let tag = unique_tag();
        let new_checkpoint_id = format!("cp-{ordinal:05}-{now_ms}-{tag}");
        let input = CompactInput {
            trigger: request.trigger,
            events: events.as_slice().into(),
            current_turn_id: request.current_turn_id.clone(),
            checkpoint: lookup.checkpoint.clone(),
            model: self.config.model.clone(),
            provider: self.config.provider.clone(),
            compactor: self.config.compactor,
            new_checkpoint_id: new_checkpoint_id.clone(),
            now_ms,
            provider_options: None,
            summarizer_label: self.summarizer.label(),
            circuit,
            prepared,
        };
        let estimator = self.estimator().await?;
        let tx = Compaction::start_with_estimator(input, estimator.clone())?;
        let appender = Appender {
            run_id: request.run_id.clone(),
            event_id_prefix: format!("ar-{ordinal:05}-{now_ms}-{tag}-checkpoint"),
            new_checkpoint_id,
            clock: Arc::clone(&self.clock),
        };
        let answerers = Answerers {
            summarizer: &*self.summarizer,
            native: &*self.native,
            ledger: &self.ledger,
            estimator: &estimator,
        };
        let driven = drive(tx, &events, answerers, Some(&appender), stop).await?;
        let outcome = driven.outcome;
        let circuit = {
            let mut state = self.state();
            state.circuit.merge(&driven.circuit);
            state.circuit.clone()
        };
        if outcome.outcome != contextfold_core::compaction::OutcomeKind::Cancelled {
            let ordinal = format!("{ordinal:05}-{tag}");
            self.record_outcome(request.trigger, &request.run_id, &outcome, &circuit, &ordinal)
                .await?;
        }
        Ok(CompactionReport {
            trigger: request.trigger,
            run_id: request.run_id,
            outcome,
            lookup_notes: lookup.notes,
            summarizer_tokens: driven.summarizer_tokens,
            preparation: PreparationState::None,
        })
    }

    /// Records `outcome` and the circuit as one AgentRun `compaction_outcome_recorded` event.
    pub(crate) async fn record_outcome(
        &self,
        trigger: Trigger,
        run_id: &str,
        outcome: &CompactionOutcome,
        circuit: &MalformedInputCircuit,
        ordinal: &str,
    ) -> Result<(), RuntimeError> {
        let mut payload = outcome_payload(trigger, outcome);
        if let Value::Object(map) = &mut payload {
            // Durable with the outcome, in the same row: the next process starts from it.
            map.insert(CIRCUIT_KEY.into(), serde_json::to_value(circuit).unwrap_or(Value::Null));
        }
        let record = AgentRunRecord {
            event_id: format!("ar-{ordinal}-{}-outcome", self.now_ms()),
            session_id: self.config.session_id.clone(),
            run_id: run_id.to_owned(),
            kind: agent_run_kind::COMPACTION_OUTCOME.to_owned(),
            recorded_at_ms: self.now_ms(),
            payload,
        };
        Ok(self.ledger.append_agent_run_event(record).await?)
    }
}

/// Who answers a transaction's effects.
pub(crate) struct Answerers<'r, S, N> {
    pub(crate) summarizer: &'r S,
    pub(crate) native: &'r N,
    pub(crate) ledger: &'r SharedLedger,
    /// Measures the summarizer's answers for the preparation accounts.
    pub(crate) estimator: &'r (dyn TokenEstimator + Sync),
}

/// Where a transaction's checkpoints are appended.
pub(crate) struct Appender {
    pub(crate) run_id: String,
    /// Each step's AgentRun event id is this prefix, then the step's suffix of the checkpoint id.
    pub(crate) event_id_prefix: String,
    pub(crate) new_checkpoint_id: String,
    pub(crate) clock: Clock,
}

/// What one driven transaction gave.
#[derive(Debug)]
pub(crate) struct Driven {
    pub(crate) outcome: CompactionOutcome,
    pub(crate) circuit: MalformedInputCircuit,
    /// Summarizer tokens spent: each request's estimated input and its answer.
    pub(crate) summarizer_tokens: u64,
}

/// Drives `tx` to its end: summaries and native compactions from `answerers`, durable appends
/// through `appender` (`None`: a background preparation, which records nothing and is never
/// asked to), all dropped when `stop` is raised. `events` is the log `tx` was started with.
pub(crate) async fn drive<S: Summarizer, N: NativeCompactor, E: TokenEstimator>(
    mut tx: Compaction<'_, E>,
    events: &[RuntimeEvent],
    answerers: Answerers<'_, S, N>,
    appender: Option<&Appender>,
    stop: Option<&StopSignal>,
) -> Result<Driven, RuntimeError> {
    let mut summarizer_tokens = 0;
    let outcome = loop {
        if stop.is_some_and(StopSignal::is_stopped) {
            tx.cancel();
        }
        match tx.poll()? {
            Step::Effect(Effect::Summarize(effect)) => {
                if let Err(failure) = archive_omitted(answerers.ledger, &effect, events).await {
                    tx.handle_summary(Err(failure))?;
                    continue;
                }
                summarizer_tokens += effect.request.estimated_input_tokens;
                let call = answerers.summarizer.summarize(&effect.request, &effect, events);
                match until_stopped(call, stop).await {
                    Some(result) => {
                        if let Ok(answer) = &result {
                            summarizer_tokens += answerers.estimator.estimate_text(&answer.text);
                        }
                        tx.handle_summary(result)?;
                    }
                    None => {
                        tx.cancel();
                    }
                }
            }
            Step::Effect(Effect::CompactNatively(native)) => {
                summarizer_tokens += native.estimated_input_tokens;
                match until_stopped(answerers.native.compact(&native), stop).await {
                    Some(result) => tx.handle_native(result)?,
                    None => {
                        tx.cancel();
                    }
                }
            }
            Step::Effect(Effect::AppendCheckpoint(checkpoint)) => {
                let result = match appender {
                    Some(appender) => append(answerers.ledger, appender, *checkpoint).await,
                    None => Err(AppendFailure {
                        conflict: false,
                        message: "a background preparation records nothing".into(),
                    }),
                };
                tx.handle_append(result)?;
            }
            Step::Done(outcome) => break *outcome,
        }
    };
    Ok(Driven { outcome, circuit: tx.into_circuit(), summarizer_tokens })
}

/// Appends one step's checkpoint with its AgentRun event (one per rolling step: the core names
/// each step's checkpoint `<id>`, then `<id>.<n>`, and so does the event id).
async fn append(
    ledger: &SharedLedger,
    appender: &Appender,
    checkpoint: HistoryCompactCheckpoint,
) -> Result<(), AppendFailure> {
    let step = checkpoint.checkpoint_id.strip_prefix(&appender.new_checkpoint_id);
    let event_id = format!("{}{}", appender.event_id_prefix, step.unwrap_or_default());
    let recorded_at = (appender.clock)();
    let result = ledger.append_checkpoint(&event_id, &appender.run_id, recorded_at, checkpoint);
    result.await.map_err(|error| AppendFailure {
        conflict: error.is_conflict(),
        message: format!("{error} ({})", error.code()),
    })
}

/// Archives every payload the summarizer request sent as a marker (one event larger than
/// the window), so the address the marker names resolves through `archive_read`. A failed
/// archive write fails the summarize step (retryable class): no marker points nowhere.
async fn archive_omitted(
    ledger: &SharedLedger,
    effect: &SummarizeEffect,
    events: &[RuntimeEvent],
) -> Result<(), ProviderFailure> {
    if effect.request.omitted_payloads.is_empty() {
        return Ok(());
    }
    let fold = &events[effect.fold.start..effect.fold.end];
    let mut bodies = Vec::new();
    for omitted in &effect.request.omitted_payloads {
        let event = fold.iter().find(|e| e.runtime_event_id == omitted.runtime_event_id);
        if let Some(payload) = event.and_then(summary_payload) {
            bodies.push((event.map(|e| e.session_id.clone()).unwrap_or_default(), payload));
        }
    }
    for (session, body) in bodies {
        ledger.archive_put(&session, body.into_bytes()).await.map_err(|error| ProviderFailure {
            kind: ProviderFailureKind::Unavailable,
            message: format!("archiving an omitted payload failed: {error}"),
        })?;
    }
    Ok(())
}

/// The outcome as a runtime fact: the core's outcome JSON with the checkpoint body replaced by
/// its id (the checkpoint has its own event) and any provider state redacted.
pub(crate) fn outcome_payload(trigger: Trigger, outcome: &CompactionOutcome) -> Value {
    let mut value = serde_json::to_value(outcome).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        let checkpoint_id = outcome.checkpoint.as_ref().map(|c| c.checkpoint_id.clone());
        map.remove("checkpoint");
        map.insert("checkpointId".into(), checkpoint_id.map_or(Value::Null, Value::String));
        map.insert("trigger".into(), Value::String(trigger.as_str().to_owned()));
    }
    redact_provider_state(&mut value);
    value
}

/// Awaits `call` unless `stop` is raised first (then the call is dropped, which aborts it).
async fn until_stopped<T>(
    call: impl std::future::Future<Output = T>,
    stop: Option<&StopSignal>,
) -> Option<T> {
    match stop {
        None => Some(call.await),
        Some(stop) => tokio::select! {
            result = call => Some(result),
            () = stop.stopped() => None,
        },
    }
}
