//! One request's pruning: the candidates of both policies in one list, one epoch rule over it.
//!
//! Stale oversized results and masked old results ([`super::stale`]) and old attachments
//! ([`super::attachments`]) are all pruning candidates. Each candidate carries a key: the position in the request of the
//! event whose arrival made it a candidate. Sorted by key (then position, then kind), the list
//! only grows at its end as the log grows under one checkpoint:
//!
//! - every eligibility condition is monotone: once stale or old, a candidate stays one (more
//!   newer turns, newer results and newer attachments only ever arrive, and a turn, once
//!   followed by another, is never current again: the current turn is a contiguous suffix of the
//!   log); a result that is both stale and masked is one candidate, keyed at the earlier of its
//!   two keys (when it first became prunable);
//! - a newly eligible candidate's key is a newly appended position, past every earlier key. A
//!   result that was recorded late, out of turn order, or a task attachment whose turn just
//!   ended, is sorted by when it became eligible, not where it sits, so it too joins at the end;
//! - pinned and partial events are never candidates, whatever their age.
//!
//! [`super::close_epochs`] then decides how much of the list is pruned, so the pruned set changes
//! only when an epoch closes. This holds while every request of a session names its current
//! turn the same way (always, or never): without a current turn the newest turn counts as one
//! of the protected ones, and a stale result's key is the arrival of that turn, not of the next.

use std::borrow::Cow;
use std::ops::Range;

use super::attachments::{PrunedAttachment, attachment_candidates, attachment_diagnostic, strip};
use super::candidate::CandidateKind;
use super::epochs::{EpochCut, close_epochs_at, epoch_minimum};
use super::stale::{
    Address, MASKED_RESULT_MIN_TOKENS, OutputTokens, PrunedResult, masked_candidates, prune_output,
    stale_candidates, stale_diagnostic,
};
use crate::budget::TokenEstimator;
use crate::diagnostics::Diagnostic;
use crate::event::RuntimeEvent;

/// A request's events after pruning: the events it borrows, except the pruned ones, which it
/// owns.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestPrune<'a> {
    /// The request's events, pruned ones replaced; same length and order as the input.
    pub events: Vec<Cow<'a, RuntimeEvent>>,
    /// Results whose output became the stale-result placeholder, in event order.
    pub results: Vec<PrunedResult>,
    /// Attachments replaced by their placeholder, in event order.
    pub attachments: Vec<PrunedAttachment>,
    /// The epochs closed over the candidates.
    pub cut: EpochCut,
}

impl RequestPrune<'_> {
    /// The `stale_tool_results_pruned` and `stale_attachments_pruned` diagnostics that apply.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        stale_diagnostic(&self.results)
            .into_iter()
            .chain(attachment_diagnostic(&self.attachments))
            .collect()
    }
}

/// Prunes one request: `request` is every event it replays, in order (live head, uncovered
/// prior tail, current turn), and `tail` the positions of the uncovered prior tail, the only
/// events whose results may go stale (results after the tail's start may be masked). Candidates
/// of every policy are pruned per the epoch rule (module `epochs`) at the unbudgeted minimum;
/// every other event is borrowed unchanged. Without a budget no result is masked (masking
/// answers budget pressure): [`prune_request_within`] masks and closes epochs for a history
/// budget.
///
/// ```
/// use contextfold_core::projection::prune_request;
/// use contextfold_core::{CharEstimator, LogBuilder};
/// let mut log = LogBuilder::new("s");
/// for turn in ["t1", "t2", "t3", "t4"] {
///     log.turn(turn).user("go").tool_call(turn, "cat", serde_json::json!({}));
///     log.tool_result(turn, "cat", serde_json::json!("x".repeat(40_000)));
/// }
/// let events = log.build();
/// let request: Vec<_> = events.iter().collect();
/// // t4 is current: t1 (10,000 tokens) is stale and closes an epoch on its own.
/// let pruned = prune_request(&request, 0..9, &CharEstimator);
/// assert_eq!(pruned.results.len(), 1);
/// assert_eq!(pruned.cut.epochs, 1);
/// ```
pub fn prune_request<'a>(
    request: &[&'a RuntimeEvent],
    tail: Range<usize>,
    estimator: &dyn TokenEstimator,
) -> RequestPrune<'a> {
    prune_request_within(request, tail, u64::MAX, estimator)
}

/// [`prune_request`] for a request whose history budget is `history_budget` tokens: old results
/// are masked per that budget (module `stale`), and an epoch closes at
/// [`super::epoch_minimum`] of it, so small windows prune too.
pub fn prune_request_within<'a>(
    request: &[&'a RuntimeEvent],
    tail: Range<usize>,
    history_budget: u64,
    estimator: &dyn TokenEstimator,
) -> RequestPrune<'a> {
    let tail = tail.start.min(request.len())..tail.end.min(request.len());
    let mut estimates = OutputTokens::new(estimator, request.len());
    let mut candidates = masked_candidates(request, tail.start, history_budget, &mut estimates);
    candidates.extend(stale_candidates(request, tail, &mut estimates));
    // One candidate per result: the earliest key of the policies that name it.
    crate::sort::sort_by_key(&mut candidates, |c| (c.index, c.kind, c.key));
    candidates.dedup_by(|later, first| (later.index, later.kind) == (first.index, first.kind));
    if request.iter().any(|event| !event.attachments().is_empty()) {
        candidates.extend(attachment_candidates(request, estimator));
    }
    crate::sort::sort_by_key(&mut candidates, |c| (c.key, c.index, c.kind));
    let cut = close_epochs_at(candidates.iter().map(|c| c.freed), epoch_minimum(history_budget));
    let mut chosen: Vec<(usize, CandidateKind)> =
        candidates[..cut.pruned].iter().map(|c| (c.index, c.kind)).collect();
    crate::sort::sort(&mut chosen);
    let mut events: Vec<Cow<'a, RuntimeEvent>> =
        request.iter().map(|event| Cow::Borrowed(*event)).collect();
    let (mut results, mut attachments) = (Vec::new(), Vec::new());
    for (index, kind) in chosen {
        let Some(slot) = events.get_mut(index) else { continue };
        match kind {
            CandidateKind::Output => {
                // A candidate is larger than the smaller of the two thresholds.
                if let Some(original) = estimates.of(index, slot)
                    && let Some((content, record, _)) = prune_output(
                        slot,
                        MASKED_RESULT_MIN_TOKENS,
                        original,
                        estimator,
                        Address::Exact,
                    )
                {
                    results.push(record);
                    *slot = Cow::Owned(slot.with_content(content));
                }
            }
            CandidateKind::Attachments => {
                let (stripped, records, _) = strip(slot, estimator);
                attachments.extend(records);
                *slot = Cow::Owned(stripped);
            }
        }
    }
    RequestPrune { events, results, attachments, cut }
}
