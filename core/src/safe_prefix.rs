//! Safe-prefix selection: which ordered prefix of the log a checkpoint may cover, which events a
//! rolling update folds, and which newest raw turns fit beside a reused checkpoint.
//!
//! # Rules
//!
//! The events of the turn being produced (`current_turn_id`) must form a contiguous suffix of the
//! log (see [`split_current_turn`]); everything before them is *prior* history,
//! `events[..prior_end]`, and every prior turn counts as completed.
//!
//! A *cut* `p` (a checkpoint covering `events[..p]`, `1 <= p <= len`) falls at the end of a
//! turn, or after a complete model step inside a turn: `events[p - 1]` is an assistant-side event
//! or tool result and `events[p]` is not a later part of the same step (same `response_id`, or
//! without ids an assistant-side event right after another). One completed turn is therefore
//! compactable however many agent-loop steps it contains, and so are the settled steps of the
//! current turn (*active-turn folding*); inside the current turn a cut always follows a model
//! step, never the turn's own user message. A cut is *safe* when:
//!
//! - it splits no *call exchange*: a call and the results answering it (ordinary or hosted) lie
//!   entirely before `p` or entirely at or after `p`. A call reusing the id of an earlier,
//!   answered call opens a new exchange (as the projection pairs them). A call with no result
//!   anywhere is interrupted and blocks nothing, unless it is in the current turn and no later
//!   step has started: then its tool is still running and no cut may pass it;
//! - it splits no *response batch*: events sharing one `response_id`;
//! - it passes no *live* event: a `partial` event whose step is still streaming (no complete
//!   event of a later step follows it), or a `pinned` assistant-side or tool event of the current
//!   turn. Older partial and pinned events are covered like any other. The current turn's user
//!   and system messages (its *live head*: the task and any text added during the turn) may be
//!   covered; the projection replays them verbatim after the checkpoint while the turn is active
//!   (see [`crate::projection::live_head`]).
//!
//! Exchanges and batches are measured over the whole log: a prior call whose result arrived in
//! the current turn cannot be covered apart from it.
//!
//! # Cost
//!
//! Every function here is `O(n)` expected time in the number of events: group extents are found
//! with one hash-map pass and turned into a per-position "open groups" count with a difference
//! array, so no cut is ever checked by rescanning the log.

mod cuts;
#[cfg(test)]
mod tests;

use std::collections::HashSet;

use crate::budget::{TokenEstimator, estimate_event};
use crate::event::{LogError, RuntimeEvent};

use cuts::{CutAnalysis, group_splits, is_turn_start};

/// Caller constraints on prefix selection. JSON: `{ currentTurnId?, reserveTailTokens?,
/// reserveTailTurns? }` (nothing else; a key left out is its default).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PrefixOptions {
    /// The turn being produced now: only its settled steps may be covered.
    pub current_turn_id: Option<String>,
    /// Keep at least this many estimated tokens raw: the events after the cut must estimate to
    /// at least this much.
    pub reserve_tail_tokens: u64,
    /// Keep at least this many of the newest completed turns raw: the events between the cut
    /// and the current turn must hold at least this many whole turns.
    pub reserve_tail_turns: usize,
}

/// A selected prefix: `events[..end]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SafePrefix {
    /// Number of covered events.
    pub end: usize,
    /// Number of distinct turns in `events[..end]`.
    pub turn_count: u64,
}

/// Newly covered events of a rolling update: `events[start..end]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fold {
    /// First newly covered event (the previous checkpoint's event count).
    pub start: usize,
    /// One past the last newly covered event.
    pub end: usize,
}

/// Where the current turn starts: `prior_end`, so that `events[..prior_end]` is the prior
/// history and `events[prior_end..]` the current turn.
///
/// Returns `events.len()` when `current_turn_id` is `None` or names no event, and
/// [`LogError::CurrentTurnNotSuffix`] (with the index of the first prior event found after a
/// current-turn event) when the current turn's events are not a contiguous suffix.
pub fn split_current_turn(
    events: &[RuntimeEvent],
    current_turn_id: Option<&str>,
) -> Result<usize, LogError> {
    let Some(current) = current_turn_id else {
        return Ok(events.len());
    };
    let Some(start) = events.iter().position(|event| event.turn_id == current) else {
        return Ok(events.len());
    };
    match events[start..].iter().position(|event| event.turn_id != current) {
        Some(offset) => Err(LogError::CurrentTurnNotSuffix { index: start + offset }),
        None => Ok(start),
    }
}

/// Every position `p` such that `events[..p]` is a safe cut, ascending (never includes 0).
///
/// This ignores any reserved tail; [`select_safe_prefix`] applies one.
pub fn safe_boundaries(
    events: &[RuntimeEvent],
    current_turn_id: Option<&str>,
) -> Result<Vec<usize>, LogError> {
    let analysis = CutAnalysis::new(events, current_turn_id)?;
    Ok((1..=events.len()).filter(|&cut| analysis.is_safe_cut(events, cut)).collect())
}

/// The largest safe cut that leaves the reserved verbatim tail raw; `Ok(None)` when no
/// non-empty safe prefix exists under those constraints.
///
/// The tail is `events[end..]`: it must estimate to at least
/// [`PrefixOptions::reserve_tail_tokens`] tokens (per [`estimate_event`]), and
/// `events[end..prior_end]` must hold at least [`PrefixOptions::reserve_tail_turns`] whole
/// turns. The only error is a
/// current turn that is not a suffix of the log.
///
/// ```
/// use contextfold_core::{CharEstimator, LogBuilder};
/// use contextfold_core::checkpoint::{PrefixOptions, select_safe_prefix};
/// use serde_json::json;
///
/// let mut log = LogBuilder::new("s");
/// log.turn("t1").user("run the tests").tool_call("c1", "shell", json!({"cmd": "cargo test"}));
/// log.turn("t2").tool_result("c1", "shell", json!("ok")).assistant("green");
/// log.turn("t3").user("next failure");
/// let events = log.build();
/// let options = PrefixOptions { current_turn_id: Some("t3".into()), ..Default::default() };
/// let prefix = select_safe_prefix(&events, &options, &CharEstimator).unwrap().unwrap();
/// // The cut between t1 and t2 would split c1 from its result: t1 and t2 fold together.
/// assert_eq!((prefix.end, prefix.turn_count), (4, 2));
/// ```
pub fn select_safe_prefix(
    events: &[RuntimeEvent],
    options: &PrefixOptions,
    estimator: &dyn TokenEstimator,
) -> Result<Option<SafePrefix>, LogError> {
    let analysis = CutAnalysis::new(events, options.current_turn_id.as_deref())?;
    let prior_end = analysis.prior_end();
    let mut cut = events.len();
    let mut tail_tokens = 0u64;
    let mut tail_turns = 0usize;
    while cut > 0 {
        if tail_tokens >= options.reserve_tail_tokens
            && tail_turns >= options.reserve_tail_turns
            && analysis.is_safe_cut(events, cut)
        {
            return Ok(Some(SafePrefix { end: cut, turn_count: turn_count(&events[..cut]) }));
        }
        cut -= 1;
        tail_tokens = tail_tokens.saturating_add(estimate_event(estimator, &events[cut]));
        if cut < prior_end && is_turn_start(events, cut) {
            tail_turns += 1;
        }
    }
    Ok(None)
}

#[cfg(test)]
/// The fold of a rolling update from a previous coverage of `previous_end` events.
pub(crate) fn select_fold(previous_end: usize, prefix: &SafePrefix) -> Option<Fold> {
    (prefix.end > previous_end).then_some(Fold { start: previous_end, end: prefix.end })
}

/// The newest complete raw turns that fit `budget_tokens`, as the start of the raw tail
/// `events[start..prior_end]`.
///
/// Candidates are `from` itself and every turn start `s` with `from < s < prior_end` that splits
/// no call group or response batch (measured over the whole log). The result is the smallest
/// candidate whose tail estimates to at most `budget_tokens`, or `prior_end` (an empty tail) when
/// even the newest turn does not fit. Used when an old checkpoint covering `events[..from]` is
/// reused after a rolling failure, and for diagnostics. Out-of-range arguments are clamped:
/// `prior_end` to `events.len()`, `from` to `prior_end`.
///
/// Pinned events are not treated specially: a caller that must keep them checks that the
/// returned tail still contains them (the minimum context).
pub fn select_fitting_tail(
    events: &[RuntimeEvent],
    from: usize,
    prior_end: usize,
    budget_tokens: u64,
    estimator: &dyn TokenEstimator,
) -> usize {
    let prior_end = prior_end.min(events.len());
    let from = from.min(prior_end);
    let splits = group_splits(events);
    let mut best = prior_end;
    let mut tail_tokens = 0u64;
    for start in (from..prior_end).rev() {
        tail_tokens = tail_tokens.saturating_add(estimate_event(estimator, &events[start]));
        if tail_tokens > budget_tokens {
            break;
        }
        if start == from || (is_turn_start(events, start) && !splits.splits_at(start)) {
            best = start;
        }
    }
    best
}

/// Number of distinct turn ids in `events` (turns are contiguous runs, but a repeated id is
/// counted once).
pub fn turn_count(events: &[RuntimeEvent]) -> u64 {
    // Only the first event of each run of equal ids is looked up: the others repeat the id
    // just inserted, so the set (and its count) is the same with a quarter of the hashing.
    let mut distinct: HashSet<&str> = HashSet::new();
    let mut previous: Option<&str> = None;
    for event in events {
        let turn = event.turn_id.as_str();
        if previous != Some(turn) {
            distinct.insert(turn);
            previous = Some(turn);
        }
    }
    distinct.len() as u64
}
