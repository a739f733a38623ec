//! Linear-time precomputation behind safe-cut checks.
//!
//! A *group* is a set of events that must stay on one side of any cut: all events naming one
//! call id (call and results, ordinary or hosted), or all events sharing one response id. A
//! group with first member `a` and last member `b` is split by exactly the cuts `a < p <= b`.
//! [`GroupSplits`] records, for every position, how many groups such a cut would split, using a
//! difference array so that building it is one pass over the log plus one over the groups.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use super::split_current_turn;
use crate::event::{LogError, RuntimeEvent};

/// `true` when `events[index]` starts a turn: it is the first event, or its predecessor belongs
/// to another turn. Positions past the end are not turn starts.
pub(super) fn is_turn_start(events: &[RuntimeEvent], index: usize) -> bool {
    match index {
        0 => !events.is_empty(),
        _ => index < events.len() && events[index - 1].turn_id != events[index].turn_id,
    }
}

/// For every position `p` in `0..=len`, the number of groups split by a cut at `p`.
#[derive(Debug, Clone)]
pub(super) struct GroupSplits {
    open_groups: Vec<u32>,
}

impl GroupSplits {
    /// `true` when a cut at `position` separates members of some call group or response batch.
    pub(super) fn splits_at(&self, position: usize) -> bool {
        self.open_groups.get(position).is_some_and(|&open| open > 0)
    }
}

/// Records the extent `(first, last)` of the group keyed by `key` at `index`.
fn extend_group<'a>(extents: &mut HashMap<&'a str, (usize, usize)>, key: &'a str, index: usize) {
    match extents.entry(key) {
        Entry::Occupied(mut entry) => entry.get_mut().1 = index,
        Entry::Vacant(entry) => {
            entry.insert((index, index));
        }
    }
}

/// Computes [`GroupSplits`] for the whole log in `O(n)` expected time.
pub(super) fn group_splits(events: &[RuntimeEvent]) -> GroupSplits {
    let mut calls: HashMap<&str, (usize, usize)> = HashMap::new();
    let mut responses: HashMap<&str, (usize, usize)> = HashMap::new();
    for (index, event) in events.iter().enumerate() {
        if let Some(call_id) = event.content.call_id().or_else(|| event.content.result_call_id()) {
            extend_group(&mut calls, call_id, index);
        }
        if let Some(response_id) = event.response_id.as_deref() {
            extend_group(&mut responses, response_id, index);
        }
    }
    // delta[p] changes the open-group count from position p on; a group (a, b) opens at a + 1
    // and closes at b + 1.
    let mut delta = vec![0i64; events.len() + 2];
    for &(first, last) in calls.values().chain(responses.values()) {
        if first < last {
            delta[first + 1] += 1;
            delta[last + 1] -= 1;
        }
    }
    let mut open = 0i64;
    let open_groups = delta[..=events.len()]
        .iter()
        .map(|change| {
            open += change;
            u32::try_from(open).unwrap_or(u32::MAX)
        })
        .collect();
    GroupSplits { open_groups }
}

/// Everything needed to decide whether a cut is safe, computed once per log.
#[derive(Debug, Clone)]
pub(super) struct CutAnalysis {
    /// Start of the current turn (or the log length).
    prior_end: usize,
    /// No cut may exceed this: the index of the first pinned or partial prior event, or
    /// `prior_end`.
    barrier: usize,
    splits: GroupSplits,
}

impl CutAnalysis {
    /// Analyses `events` with `current_turn_id` as the turn being produced.
    pub(super) fn new(
        events: &[RuntimeEvent],
        current_turn_id: Option<&str>,
    ) -> Result<Self, LogError> {
        let prior_end = split_current_turn(events, current_turn_id)?;
        let barrier = events[..prior_end]
            .iter()
            .position(|event| event.pinned || event.partial)
            .unwrap_or(prior_end);
        Ok(Self { prior_end, barrier, splits: group_splits(events) })
    }

    /// Where the current turn starts (or the log length).
    pub(super) fn prior_end(&self) -> usize {
        self.prior_end
    }

    /// `true` when `events[..cut]` may be covered by a checkpoint. `events` must be the log
    /// this analysis was built from.
    pub(super) fn is_safe_cut(&self, events: &[RuntimeEvent], cut: usize) -> bool {
        let at_turn_end = cut == self.prior_end || is_turn_start(events, cut);
        cut >= 1 && cut <= self.barrier && at_turn_end && !self.splits.splits_at(cut)
    }
}
