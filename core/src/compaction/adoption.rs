//! Adopting a prepared checkpoint: the second, checked step of background preparation.
//!
//! A runtime prepares the next checkpoint off the agent's critical path ([`Trigger::Prepare`]):
//! the transaction runs against the log as it stood and hands the checkpoint back unrecorded
//! ([`OutcomeKind::Prepared`]). Nothing is written, so a preparation killed in flight leaves
//! nothing behind. When an automatic trigger later needs a compaction, the runtime passes the
//! prepared checkpoint in [`CompactInput::prepared`]; the transaction adopts it, instead of
//! calling the summarizer, only when it still
//!
//! 1. succeeds the latest durable checkpoint (no other compaction recorded one since: the same
//!    rule as the store's compare-and-swap),
//! 2. matches the log's source (counts, through-boundary, digest: the log only grew since), and
//! 3. passes the replay gate for the request being built: the current model, provider and
//!    budget, with everything appended since it was prepared raw after it.
//!
//! Otherwise it says why (`prepared_checkpoint_rejected`) and compacts in the foreground as
//! if nothing had been prepared. An adopted checkpoint goes through the same durable append as
//! any other; the transaction then goes on as after any recorded step.
//!
//! [`Trigger::Prepare`]: super::Trigger::Prepare
//! [`OutcomeKind::Prepared`]: super::OutcomeKind::Prepared
//! [`CompactInput::prepared`]: super::CompactInput::prepared

use crate::budget::{ContextBudget, TokenEstimator};
use crate::checkpoint::HistoryCompactCheckpoint;
use crate::compaction::native::ProviderIdentity;
use crate::diagnostics::{Diagnostic, ReasonCode};
use crate::event::RuntimeEvent;
use crate::recovery::is_valid_successor;
use crate::replay::evaluate_replay;

/// Whether a runtime should start preparing the next checkpoint: the next request's history,
/// `history_tokens` (as the projection measured it), has reached the model's soft threshold
/// ([`crate::ModelFacts::prepare_at_share`] of its history budget).
pub fn prepare_due(history_tokens: u64, model: &crate::ModelFacts) -> bool {
    let budget = ContextBudget::from_model(model).history_budget;
    history_tokens * 100 >= budget * model.prepare_at_share()
}

/// A prepared checkpoint that passed every check.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Adoptable {
    /// Events it covers.
    pub(crate) covered: usize,
    /// Its own tokens, as replayed.
    pub(crate) tokens: u64,
}

/// What the log looks like now, for judging a prepared checkpoint.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Now<'a> {
    pub(crate) events: &'a [RuntimeEvent],
    pub(crate) prior_end: usize,
    /// The latest durable checkpoint (the compare-and-swap's tip).
    pub(crate) tip: Option<&'a HistoryCompactCheckpoint>,
    pub(crate) budget: &'a ContextBudget,
    pub(crate) provider: &'a ProviderIdentity,
}

/// Checks `prepared` against the log as it is now; the error is the diagnostic saying why it
/// cannot serve.
pub(crate) fn check_prepared(
    prepared: &HistoryCompactCheckpoint,
    now: Now<'_>,
    estimator: &dyn TokenEstimator,
) -> Result<Adoptable, Diagnostic> {
    let rejected = |why: String| {
        Diagnostic::new(
            ReasonCode::PreparedCheckpointRejected,
            format!("prepared checkpoint {} not used: {why}", prepared.checkpoint_id),
        )
    };
    if now.tip.is_none() && prepared.previous_checkpoint_id.is_some() {
        return Err(rejected("the checkpoint it succeeds is not the latest".into()));
    }
    is_valid_successor(now.tip, prepared).map_err(|conflict| rejected(conflict.to_string()))?;
    let plan = evaluate_replay(
        prepared,
        now.events,
        now.prior_end,
        now.budget,
        Some(now.provider),
        estimator,
    )
    .map_err(|rejection| {
        let diagnostic = rejection.diagnostic;
        rejected(format!("{} ({})", diagnostic.detail, diagnostic.code.as_str()))
    })?;
    Ok(Adoptable { covered: plan.covered, tokens: plan.checkpoint_tokens })
}
