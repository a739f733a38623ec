//! Safe-prefix selection: which ordered prefix of the log a checkpoint may cover.
//!
//! PLACEHOLDER: the API is stable, the rules are being implemented.

use crate::budget::TokenEstimator;
use crate::event::RuntimeEvent;

/// Caller constraints on prefix selection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrefixOptions {
    /// The turn being produced now; none of its events is ever covered.
    pub current_turn_id: Option<String>,
    /// Keep at least this many estimated tokens of the newest completed history raw.
    pub reserve_tail_tokens: u64,
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

/// Every position `p` such that `events[..p]` is a safe cut, ascending (never includes 0).
pub fn safe_boundaries(_events: &[RuntimeEvent], _current_turn_id: Option<&str>) -> Vec<usize> {
    Vec::new()
}

/// The largest safe completed prefix, honouring the reserved tail; `None` if it is empty.
pub fn select_safe_prefix(
    _events: &[RuntimeEvent],
    _options: &PrefixOptions,
    _estimator: &dyn TokenEstimator,
) -> Option<SafePrefix> {
    None
}

/// The fold of a rolling update from a previous coverage of `previous_end` events.
pub fn select_fold(previous_end: usize, prefix: &SafePrefix) -> Option<Fold> {
    (prefix.end > previous_end).then_some(Fold { start: previous_end, end: prefix.end })
}
