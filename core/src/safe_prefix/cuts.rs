//! Linear-time precomputation behind safe-cut checks.
//!
//! A *group* is a set of events that must stay on one side of any cut: one call exchange (a
//! call and the results that answer it, ordinary or hosted), or all events sharing one response
//! id. A group with first member `a` and last member `b` is split by exactly the cuts
//! `a < p <= b`. [`GroupSplits`] records, for every position, how many groups such a cut would
//! split, using a difference array so that building it is one pass over the log plus one over
//! the groups.
//!
//! Call exchanges follow the materializer's pairing: a call reusing the id of an earlier call
//! that already has a result opens a new exchange (providers that number calls per turn reuse
//! ids), so a reused id never ties two far-apart steps together. A second call with the id of a
//! still unanswered call joins its exchange.

use std::collections::HashMap;

use super::split_current_turn;
use crate::event::{EventContent, LogError, RuntimeEvent};

/// `true` when `events[index]` starts a turn: it is the first event, or its predecessor belongs
/// to another turn. Positions past the end are not turn starts.
pub(super) fn is_turn_start(events: &[RuntimeEvent], index: usize) -> bool {
    match index {
        0 => !events.is_empty(),
        _ => index < events.len() && events[index - 1].turn_id != events[index].turn_id,
    }
}

/// `true` for the events a model step produces: assistant-side parts and tool results.
pub(super) fn is_step_event(content: &EventContent) -> bool {
    !matches!(
        content,
        EventContent::UserText { .. }
            | EventContent::SystemNote { .. }
            | EventContent::RuntimeNote { .. }
    )
}

fn is_result(content: &EventContent) -> bool {
    content.result_call_id().is_some()
}

/// `true` when a cut at `p` (`0 < p < len`, inside one turn) falls between two model steps:
/// `events[p - 1]` ends a step and `events[p]` is not a later part of that same step. Parts of
/// one step are events sharing a response id, or, without ids, consecutive assistant-side events
/// (tool results may follow their calls); a user or system message always starts anew.
pub(super) fn is_step_boundary(events: &[RuntimeEvent], p: usize) -> bool {
    let (before, after) = (&events[p - 1], &events[p]);
    if !is_step_event(&before.content) {
        return false;
    }
    if !is_step_event(&after.content) {
        return true;
    }
    if is_result(&after.content) {
        // A result belongs to the step that made its call; the exchange check decides.
        return true;
    }
    match (before.response_id.as_deref(), after.response_id.as_deref()) {
        (Some(a), Some(b)) => a != b,
        _ => is_result(&before.content),
    }
}

/// For every position `p` in `0..=len`, the number of groups split by a cut at `p`, and the
/// calls that have no result anywhere in the log.
#[derive(Debug, Clone)]
pub(super) struct GroupSplits {
    open_groups: Vec<u32>,
    /// Indices of calls no result answers, ascending.
    unanswered_calls: Vec<usize>,
}

impl GroupSplits {
    /// `true` when a cut at `position` separates members of some call exchange or response
    /// batch.
    pub(super) fn splits_at(&self, position: usize) -> bool {
        self.open_groups.get(position).is_some_and(|&open| open > 0)
    }
}

/// One call exchange under construction.
#[derive(Debug, Clone)]
struct Exchange {
    first: usize,
    last: usize,
    /// Calls in the exchange (one, or several reusing a still unanswered id).
    calls: Vec<usize>,
    answered: bool,
}

/// Computes [`GroupSplits`] for the whole log in `O(n)` expected time.
pub(super) fn group_splits(events: &[RuntimeEvent]) -> GroupSplits {
    let mut open: HashMap<&str, Exchange> = HashMap::new();
    let mut exchanges: Vec<(usize, usize)> = Vec::new();
    let mut unanswered_calls = Vec::new();
    let mut responses: HashMap<&str, (usize, usize)> = HashMap::new();
    let mut close = |exchange: Exchange, unanswered: &mut Vec<usize>| {
        exchanges.push((exchange.first, exchange.last));
        if !exchange.answered {
            unanswered.extend(exchange.calls);
        }
    };
    for (index, event) in events.iter().enumerate() {
        if let Some(call_id) = event.content.call_id() {
            match open.get_mut(call_id) {
                Some(exchange) if !exchange.answered => {
                    exchange.last = index;
                    exchange.calls.push(index);
                }
                _ => {
                    let fresh =
                        Exchange { first: index, last: index, calls: vec![index], answered: false };
                    if let Some(done) = open.insert(call_id, fresh) {
                        close(done, &mut unanswered_calls);
                    }
                }
            }
        } else if let Some(call_id) = event.content.result_call_id() {
            let exchange = open.entry(call_id).or_insert_with(|| Exchange {
                first: index,
                last: index,
                calls: Vec::new(),
                answered: false,
            });
            exchange.last = index;
            exchange.answered = true;
        }
        if let Some(response_id) = event.response_id.as_deref() {
            responses
                .entry(response_id)
                .and_modify(|extent| extent.1 = index)
                .or_insert((index, index));
        }
    }
    for exchange in open.into_values() {
        close(exchange, &mut unanswered_calls);
    }
    crate::sort::sort(&mut unanswered_calls);
    // delta[p] changes the open-group count from position p on; a group (a, b) opens at a + 1
    // and closes at b + 1.
    let mut delta = vec![0i64; events.len() + 2];
    for &(first, last) in exchanges.iter().chain(responses.values()) {
        if first < last {
            delta[first + 1] += 1;
            delta[last + 1] -= 1;
        }
    }
    let mut count = 0i64;
    let open_groups = delta[..=events.len()]
        .iter()
        .map(|change| {
            count += change;
            u32::try_from(count).unwrap_or(u32::MAX)
        })
        .collect();
    GroupSplits { open_groups, unanswered_calls }
}

/// For every index, whether a complete event of a later step follows it: a later event that is
/// not a tool result and not in the same response batch. An event with no such successor is
/// still in the newest step of the log.
fn later_step_follows(events: &[RuntimeEvent]) -> Vec<bool> {
    let mut follows = vec![false; events.len()];
    // Batch key of the newest complete non-result event seen so far (scanning backwards), and
    // whether a complete non-result event with another key was seen too.
    let mut newest: Option<Option<&str>> = None;
    let mut another = false;
    for (index, event) in events.iter().enumerate().rev() {
        let key = event.response_id.as_deref();
        follows[index] = match newest {
            None => false,
            Some(_) if another => true,
            Some(newest_key) => key.is_none() || newest_key.is_none() || newest_key != key,
        };
        if event.partial || is_result(&event.content) {
            continue;
        }
        match newest {
            None => newest = Some(key),
            Some(newest_key) if key.is_none() || newest_key.is_none() || newest_key != key => {
                another = true
            }
            Some(_) => {}
        }
    }
    follows
}

/// Everything needed to decide whether a cut is safe, computed once per log.
#[derive(Debug, Clone)]
pub(super) struct CutAnalysis {
    /// Start of the current turn (or the log length).
    prior_end: usize,
    /// No cut may exceed this: the index of the first live event (see [`CutAnalysis::new`]), or
    /// the log length.
    barrier: usize,
    splits: GroupSplits,
}

impl CutAnalysis {
    /// Analyses `events` with `current_turn_id` as the turn being produced.
    ///
    /// The barrier is the first of: a `partial` event still streaming (no complete event of a
    /// later step follows it), a `pinned` event of the current turn that is not a user or
    /// system message (those are replayed as the live head instead), and a call of the current
    /// turn that has no result while no later step has started (its tool is still running).
    pub(super) fn new(
        events: &[RuntimeEvent],
        current_turn_id: Option<&str>,
    ) -> Result<Self, LogError> {
        let prior_end = split_current_turn(events, current_turn_id)?;
        let splits = group_splits(events);
        let follows = later_step_follows(events);
        let live_partial = (0..events.len()).find(|&i| events[i].partial && !follows[i]);
        let live_pinned = (prior_end..events.len())
            .find(|&i| events[i].pinned && is_step_event(&events[i].content));
        let running_call =
            splits.unanswered_calls.iter().copied().find(|&i| i >= prior_end && !follows[i]);
        let barrier = [live_partial, live_pinned, running_call]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(events.len());
        Ok(Self { prior_end, barrier, splits })
    }

    /// Where the current turn starts (or the log length).
    pub(super) fn prior_end(&self) -> usize {
        self.prior_end
    }

    /// `true` when `events[..cut]` may be covered by a checkpoint. `events` must be the log
    /// this analysis was built from.
    ///
    /// A cut falls at the end of a turn, or between two model steps of one turn (see
    /// [`is_step_boundary`]); inside the current turn only the latter, so the turn's own user
    /// message is never the last covered event.
    pub(super) fn is_safe_cut(&self, events: &[RuntimeEvent], cut: usize) -> bool {
        if cut == 0 || cut > self.barrier || self.splits.splits_at(cut) {
            return false;
        }
        let in_current = cut > self.prior_end;
        if cut == events.len() {
            return !in_current || is_step_event(&events[cut - 1].content);
        }
        if !in_current && is_turn_start(events, cut) {
            return true;
        }
        is_step_boundary(events, cut)
    }
}
