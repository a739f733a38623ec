//! [`Compaction`]: the compaction transaction as a sans-IO state machine.
//!
//! One planner and one checkpoint transaction serve every trigger (manual, pre-turn, mid-turn,
//! provider overflow). The machine never performs I/O: it hands out one [`Effect`] at a time
//! and takes each result back, so the same logic runs under a blocking host (wasmtime), an
//! async host (tokio) and a JavaScript host that awaits between steps.
//!
//! # Driving it
//!
//! ```text
//! let mut tx = Compaction::start(input)?;
//! loop {
//!     match tx.poll() {
//!         Step::Effect(Effect::Summarize(req))       => tx.handle_summary(host.summarize(req))?,
//!         Step::Effect(Effect::CompactNatively(req)) => tx.handle_native(host.compact(req))?,
//!         Step::Effect(Effect::AppendCheckpoint(cp)) => tx.handle_append(host.append(&cp))?,
//!         Step::Done(outcome) => break outcome,
//!     }
//! }
//! ```
//!
//! Rules of the call order: after [`Compaction::poll`] returns an effect, the host performs it
//! and reports exactly one result with the matching `handle_*` method before polling again.
//! [`Compaction::cancel`] may be called at any time before the append effect is handed out; it
//! persists nothing and arms nothing, and any late result is discarded. Once the append effect
//! is out, the durable write is the commit point and cancellation is refused.

use crate::budget::{ContextBudget, ModelFacts, TokenEstimator};
use crate::checkpoint::HistoryCompactCheckpoint;
use crate::compaction::circuit::MalformedInputCircuit;
use crate::compaction::effects::{
    AppendFailure, CompactionOutcome, Effect, OutcomeKind, ProviderFailure, SummaryResponse,
    Trigger,
};
use crate::compaction::native::ProviderIdentity;
use crate::compaction::plan::{self, PlanDecision};
use crate::compaction::run::{Run, Waiting};
use crate::diagnostics::Diagnostic;
use crate::event::{LogError, RuntimeEvent, validate_log};
use crate::safe_prefix::split_current_turn;

/// Which compactor the host selected for this session's provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Compactor {
    /// A text summary from the session's own model (schema V2).
    TextSummary,
    /// OpenAI Codex remote compaction v2 (schema V3), with one text-summary fallback.
    OpenaiCodexNative,
}

/// Everything one compaction needs. Times and ids are inputs; the core generates neither.
#[derive(Debug, Clone)]
pub struct CompactInput {
    /// Who emitted the Compact command.
    pub trigger: Trigger,
    /// The canonical log of the session, in order (including the current turn, if any).
    pub events: Vec<RuntimeEvent>,
    /// The turn being produced now: its settled steps may be covered, its user and system
    /// messages are replayed as the live head.
    pub current_turn_id: Option<String>,
    /// The latest compatible checkpoint, if any.
    pub checkpoint: Option<HistoryCompactCheckpoint>,
    /// Facts about the selected model.
    pub model: ModelFacts,
    /// The provider, connection and model in use.
    pub provider: ProviderIdentity,
    /// The compactor selected for the provider.
    pub compactor: Compactor,
    /// Id for the checkpoint this compaction may record.
    pub new_checkpoint_id: String,
    /// Current time in milliseconds since the Unix epoch.
    pub now_ms: u64,
    /// The session's provider options, handed to the summarizer unchanged.
    pub provider_options: Option<serde_json::Value>,
    /// Label recorded as `produced_by` on text checkpoints (e.g.
    /// [`crate::compaction::extractive::EXTRACTIVE_PRODUCER`]); defaults to `text-summary:<model>`.
    pub summarizer_label: Option<String>,
    /// The session backend's malformed-input circuit; returned updated by
    /// [`Compaction::into_circuit`].
    pub circuit: MalformedInputCircuit,
}

/// What [`Compaction::poll`] returns.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Perform this effect and report its result.
    Effect(Effect),
    /// The transaction is over.
    Done(Box<CompactionOutcome>),
}

/// A driver called the machine out of order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DriverError {
    /// A result was reported for an effect that was not handed out.
    #[error("unexpected {got} result: the transaction is waiting for {expected}")]
    UnexpectedResult {
        /// The result kind reported.
        got: &'static str,
        /// What the machine waits for.
        expected: &'static str,
    },
    /// `poll` was called while an effect is still outstanding.
    #[error("poll called while the {0} effect is still outstanding")]
    EffectOutstanding(&'static str),
}

impl DriverError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            DriverError::UnexpectedResult { .. } => "driver_unexpected_result",
            DriverError::EffectOutstanding(_) => "driver_effect_outstanding",
        }
    }
}

/// Invalid input to [`Compaction::start`]; nothing was planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The log breaks a structural rule.
    #[error(transparent)]
    Log(#[from] LogError),
}

/// The compaction transaction. See the module docs for the call order.
#[derive(Debug)]
pub struct Compaction<E: TokenEstimator = crate::budget::CharEstimator> {
    run: Run<E>,
}

impl Compaction<crate::budget::CharEstimator> {
    /// Plans a compaction with the default token estimator.
    pub fn start(input: CompactInput) -> Result<Self, StartError> {
        Self::start_with_estimator(input, crate::budget::CharEstimator)
    }
}

impl<E: TokenEstimator> Compaction<E> {
    /// Plans a compaction with an injected token estimator.
    pub fn start_with_estimator(input: CompactInput, estimator: E) -> Result<Self, StartError> {
        validate_log(&input.events)?;
        let prior_end = split_current_turn(&input.events, input.current_turn_id.as_deref())?;
        let budget = ContextBudget::from_model(&input.model);
        let mut diagnostics: Vec<Diagnostic> = Vec::new();
        let usable = plan::usable_checkpoint(
            input.checkpoint.as_ref(),
            &input.events,
            prior_end,
            &budget,
            &input.provider,
            &estimator,
            &mut diagnostics,
        );
        let cuts = plan::all_cuts(&input.events, input.current_turn_id.as_deref());
        let mut sizes =
            plan::measure(&input.events, prior_end, &cuts, usable.as_ref(), budget, &estimator);
        sizes.raw_tail_share = input.model.raw_tail_share();
        let decision = plan::decide(
            input.trigger,
            &input.events,
            cuts,
            usable.as_ref(),
            &sizes,
            &estimator,
            &mut diagnostics,
        );
        let mut run = Run::new(input, estimator, usable, sizes, diagnostics);
        match decision {
            PlanDecision::Finish { reason, over_budget } => {
                run.finish_without_work(reason, over_budget)
            }
            PlanDecision::Compact { target, cuts } => run.begin(target, cuts),
        }
        Ok(Self { run })
    }

    /// The next effect to perform, or the outcome once the transaction is over.
    pub fn poll(&mut self) -> Result<Step, DriverError> {
        self.run.poll()
    }

    /// Reports the result of an [`Effect::Summarize`].
    pub fn handle_summary(
        &mut self,
        result: Result<SummaryResponse, ProviderFailure>,
    ) -> Result<(), DriverError> {
        if self.run.expect(Waiting::Summary, "summary")? {
            self.run.on_summary(result);
        }
        Ok(())
    }

    /// Reports the result of an [`Effect::CompactNatively`]: the provider's output items.
    pub fn handle_native(
        &mut self,
        result: Result<Vec<serde_json::Value>, ProviderFailure>,
    ) -> Result<(), DriverError> {
        if self.run.expect(Waiting::Native, "native")? {
            self.run.on_native(result);
        }
        Ok(())
    }

    /// Reports the result of an [`Effect::AppendCheckpoint`].
    pub fn handle_append(&mut self, result: Result<(), AppendFailure>) -> Result<(), DriverError> {
        if self.run.expect(Waiting::Append, "append")? {
            self.run.on_append(result);
        }
        Ok(())
    }

    /// Cancels the transaction. Returns `false` (and changes nothing) once the append effect
    /// has been handed out or the transaction is over.
    pub fn cancel(&mut self) -> bool {
        self.run.cancel()
    }

    /// Whether the transaction has produced its outcome.
    pub fn is_done(&self) -> bool {
        self.run.is_done()
    }

    /// The outcome kind so far (for hosts that log progress); `None` while running.
    pub fn outcome_kind(&self) -> Option<OutcomeKind> {
        self.run.outcome_kind()
    }

    /// Gives back the malformed-input circuit, updated by this transaction.
    pub fn into_circuit(self) -> MalformedInputCircuit {
        self.run.into_circuit()
    }
}
