//! [`Compaction`]: the compaction transaction; its call order is on the type.

use crate::budget::{ContextBudget, TokenEstimator};
use crate::compaction::adoption;
use crate::compaction::circuit::MalformedInputCircuit;
use crate::compaction::effects::{
    AppendFailure, DriverError, OutcomeKind, ProviderFailure, Step, SummaryResponse, Trigger,
};
use crate::compaction::input::{CompactInput, StartError};
use crate::compaction::plan::{self, PlanDecision};
use crate::compaction::run::{Run, Waiting};
use crate::diagnostics::Diagnostic;
use crate::event::validate_log;
use crate::safe_prefix::split_current_turn;

/// The compaction transaction: a sans-IO state machine.
///
/// One planner and one checkpoint transaction serve every trigger (manual, pre-turn, mid-turn,
/// provider overflow). The machine never performs I/O: it hands out one [`Effect`](super::Effect) at a time
/// and takes each result back, so the same logic runs under a blocking host (wasmtime), an
/// async host (tokio) and a JavaScript host that awaits between steps.
///
/// # Driving it
///
/// ```text
/// let mut tx = Compaction::start(input)?;
/// loop {
///     match tx.poll() {
///         Step::Effect(Effect::Summarize(req))       => tx.handle_summary(host.summarize(req))?,
///         Step::Effect(Effect::CompactNatively(req)) => tx.handle_native(host.compact(req))?,
///         Step::Effect(Effect::AppendCheckpoint(cp)) => tx.handle_append(host.append(&cp))?,
///         Step::Done(outcome) => break outcome,
///     }
/// }
/// ```
///
/// Rules of the call order: after [`Compaction::poll`] returns an effect, the host performs it
/// and reports exactly one result with the matching `handle_*` method before polling again.
/// [`Compaction::cancel`] may be called at any time before the append effect is handed out; it
/// persists nothing and arms nothing, and any late result is discarded. Once the append effect
/// is out, the durable write is the commit point and cancellation is refused.
#[derive(Debug)]
pub struct Compaction<'a, E: TokenEstimator = crate::budget::CharEstimator> {
    run: Run<'a, E>,
}

impl<'a> Compaction<'a, crate::budget::CharEstimator> {
    /// Plans a compaction with the default token estimator.
    pub fn start(input: CompactInput<'a>) -> Result<Self, StartError> {
        Self::start_with_estimator(input, crate::budget::CharEstimator)
    }
}

impl<'a, E: TokenEstimator> Compaction<'a, E> {
    /// Plans a compaction with an injected token estimator.
    pub fn start_with_estimator(input: CompactInput<'a>, estimator: E) -> Result<Self, StartError> {
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
        sizes.prepare_at = input.model.prepare_at_share();
        let decision = plan::decide(
            input.trigger,
            &input.events,
            cuts,
            usable.as_ref(),
            &sizes,
            &estimator,
            &mut diagnostics,
        );
        let adoption = match (&decision, &input.prepared) {
            // Only the capacity evaluators adopt: a provider overflow proved the estimate wrong,
            // and a manual compaction folds everything.
            (PlanDecision::Compact { .. }, Some(prepared))
                if matches!(input.trigger, Trigger::PreTurn | Trigger::MidTurn) =>
            {
                let now = adoption::Now {
                    events: &input.events,
                    prior_end,
                    tip: input.checkpoint.as_ref(),
                    budget: &budget,
                    provider: &input.provider,
                };
                match adoption::check_prepared(prepared, now, &estimator) {
                    Ok(adoptable) => Some((prepared.clone(), adoptable)),
                    Err(why) => {
                        diagnostics.push(why);
                        None
                    }
                }
            }
            _ => None,
        };
        let mut run = Run::new(input, estimator, usable, sizes, diagnostics);
        match (decision, adoption) {
            (PlanDecision::Finish { reason, over_budget }, _) => {
                run.finish_without_work(reason, over_budget)
            }
            (PlanDecision::Compact { target, cuts }, None) => run.begin(target, cuts),
            (PlanDecision::Compact { target, cuts }, Some((prepared, adoptable))) => {
                run.begin_adopted(target, cuts, prepared, adoptable)
            }
        }
        Ok(Self { run })
    }

    /// The log the transaction runs over: what the indexes of its effects point into.
    pub fn events(&self) -> &[crate::event::RuntimeEvent] {
        self.run.events()
    }

    /// The next effect to perform, or the outcome once the transaction is over.
    pub fn poll(&mut self) -> Result<Step, DriverError> {
        self.run.poll()
    }

    /// Reports the result of an [`Effect::Summarize`](super::Effect::Summarize).
    pub fn handle_summary(
        &mut self,
        result: Result<SummaryResponse, ProviderFailure>,
    ) -> Result<(), DriverError> {
        if self.run.expect(Waiting::Summary, "summary")? {
            self.run.on_summary(result);
        }
        Ok(())
    }

    /// Reports the result of an [`Effect::CompactNatively`](super::Effect::CompactNatively): the provider's output items.
    pub fn handle_native(
        &mut self,
        result: Result<Vec<serde_json::Value>, ProviderFailure>,
    ) -> Result<(), DriverError> {
        if self.run.expect(Waiting::Native, "native")? {
            self.run.on_native(result);
        }
        Ok(())
    }

    /// Reports the result of an [`Effect::AppendCheckpoint`](super::Effect::AppendCheckpoint).
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
