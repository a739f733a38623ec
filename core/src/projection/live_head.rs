//! The live head of a split turn, and what follows a checkpoint in a projection.
//!
//! Active-turn folding lets a checkpoint cover settled steps of the turn being produced. The
//! turn's user and system messages (its opening task, plus any user text or note added during
//! the turn) are its *live head*: they are replayed verbatim after the checkpoint, even though
//! its ordered prefix covers them, and they count against the budget like any other message.
//! Coverage stays an ordered prefix; only the replay changes.
//!
//! A request built from a checkpoint covering `events[..covered]` carries, in this order:
//!
//! 1. the checkpoint (a V2 text block or a V3 provider-state part);
//! 2. the live head: the covered user/system messages of the turn the coverage splits, in log
//!    order;
//! 3. the uncovered prior events, then the uncovered events of the current turn.
//!
//! The split turn is the current one while it runs, and stays the same turn after it ends: a
//! later turn's requests still replay its head, so every request under one checkpoint extends
//! the previous one byte for byte (a provider's prompt cache survives the turn change), and the
//! uncovered rest of that turn never appears without its task. When the coverage ends at a turn
//! boundary the live head is empty and this is the familiar `checkpoint + raw tail + current
//! turn`.

use crate::event::{EventContent, RuntimeEvent};

/// Where the turn the coverage splits begins: `prior_end` when the coverage reaches into the
/// current turn; the start of an earlier turn when the coverage ends inside it (its next event
/// belongs to the same turn); `covered` (no live head) when the coverage ends at a turn boundary.
fn split_turn_start(events: &[RuntimeEvent], prior_end: usize, covered: usize) -> usize {
    if covered > prior_end {
        return prior_end;
    }
    let (Some(last), Some(next)) = (covered.checked_sub(1), events.get(covered)) else {
        return covered;
    };
    if covered == prior_end || events[last].turn_id != next.turn_id {
        return covered;
    }
    let turn = &next.turn_id;
    events[..covered].iter().rposition(|event| &event.turn_id != turn).map_or(0, |i| i + 1)
}

/// Indexes of the events a checkpoint covering `events[..covered]` replays verbatim as its live
/// head (the same events as [`Remainder::split`]'s `head`), ascending.
pub(crate) fn live_head_indexes(
    events: &[RuntimeEvent],
    prior_end: usize,
    covered: usize,
) -> Vec<usize> {
    let covered = covered.min(events.len());
    let start = split_turn_start(events, prior_end.min(events.len()), covered);
    (start..covered).filter(|&i| is_live_head_kind(&events[i].content)).collect()
}

/// `true` for the kinds that form a turn's live head: user text, system notes, runtime notes.
pub fn is_live_head_kind(content: &EventContent) -> bool {
    matches!(
        content,
        EventContent::UserText { .. }
            | EventContent::SystemNote { .. }
            | EventContent::RuntimeNote { .. }
    )
}

/// What follows a checkpoint covering `events[..covered]`, given that the current turn starts at
/// `prior_end`.
#[derive(Debug, Clone, PartialEq)]
pub struct Remainder<'e> {
    /// Covered events of the current turn replayed verbatim (the live head).
    pub head: Vec<&'e RuntimeEvent>,
    /// Uncovered prior events: `events[covered..prior_end]` (empty when coverage reaches the
    /// current turn).
    pub tail: &'e [RuntimeEvent],
    /// Uncovered events of the current turn.
    pub current: &'e [RuntimeEvent],
}

impl<'e> Remainder<'e> {
    /// Splits `events` at a coverage of `covered` events and a current turn starting at
    /// `prior_end` (both clamped to the log).
    ///
    /// ```
    /// use contextfold_core::LogBuilder;
    /// use contextfold_core::projection::Remainder;
    /// let mut log = LogBuilder::new("s");
    /// log.turn("t1").user("fix the build").assistant("looking").user("also the docs");
    /// log.assistant("done");
    /// let events = log.clone().build();
    /// let rest = Remainder::split(&events, 0, 3);
    /// let head: Vec<u64> = rest.head.iter().map(|e| e.seq).collect();
    /// assert_eq!(head, [1, 3]);
    /// assert_eq!(rest.current.len(), 1);
    /// // After the turn ends, a later turn's requests still replay the head it split ...
    /// log.turn("t2").user("now the tests");
    /// let events = log.build();
    /// let rest = Remainder::split(&events, 4, 3);
    /// let head: Vec<u64> = rest.head.iter().map(|e| e.seq).collect();
    /// assert_eq!((head.as_slice(), rest.tail.len(), rest.current.len()), ([1, 3].as_slice(), 1, 1));
    /// // ... and a coverage ending at a turn boundary has none.
    /// assert!(Remainder::split(&events, 4, 4).head.is_empty());
    /// ```
    pub fn split(events: &'e [RuntimeEvent], prior_end: usize, covered: usize) -> Self {
        let prior_end = prior_end.min(events.len());
        let covered = covered.min(events.len());
        let head = events[split_turn_start(events, prior_end, covered)..covered]
            .iter()
            .filter(|event| is_live_head_kind(&event.content))
            .collect();
        Self {
            head,
            tail: &events[covered.min(prior_end)..prior_end],
            current: &events[covered.max(prior_end)..],
        }
    }

    /// Every replayed event, in request order (head, tail, current).
    pub fn events(&self) -> impl Iterator<Item = &'e RuntimeEvent> + '_ {
        self.head.iter().copied().chain(self.tail).chain(self.current)
    }
}

/// A request's history for a given coverage: the materialized messages, after pruning (stale
/// results of the uncovered prior tail, old attachments, in epochs), without partial events.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Replay {
    /// Checkpoint, live head, pruned tail, current turn.
    pub(crate) materialized: crate::projection::materialize::Materialized,
    /// What the request left out or shortened: the `stale_tool_results_pruned`,
    /// `stale_attachments_pruned` and `partial_events_left_out` diagnostics, when they apply.
    pub(crate) diagnostics: Vec<crate::diagnostics::Diagnostic>,
}

/// Builds the history a request carries when `checkpoint` (if any) covers `events[..covered]`
/// and the current turn starts at `prior_end`: the one measurement behind the replay gate, the
/// planner and [`crate::projection::project`], so each judges exactly what is sent. Pruning
/// closes its epochs at the minimum of `history_budget` ([`crate::prune::epoch_minimum`]). Partial
/// events are never replayed as if they were complete: they are left out (and reported).
pub(crate) fn replay(
    checkpoint: Option<&crate::checkpoint::HistoryCompactCheckpoint>,
    events: &[RuntimeEvent],
    prior_end: usize,
    covered: usize,
    history_budget: u64,
    estimator: &dyn crate::budget::TokenEstimator,
) -> Replay {
    use crate::diagnostics::{Diagnostic, ReasonCode};
    let rest = Remainder::split(events, prior_end, covered);
    let request: Vec<&RuntimeEvent> = rest.events().collect();
    let tail = rest.head.len()..rest.head.len() + rest.tail.len();
    let pruned = crate::prune::prune_request_within(&request, tail, history_budget, estimator);
    let mut diagnostics = pruned.diagnostics();
    let all = pruned.events.iter().map(|event| &**event);
    let mut partial = 0usize;
    let complete = all.filter(|event| {
        partial += usize::from(event.partial);
        !event.partial
    });
    let materialized =
        crate::projection::materialize::materialize_events(checkpoint, complete, &[]);
    if partial > 0 {
        diagnostics.push(Diagnostic::new(
            ReasonCode::PartialEventsLeftOut,
            format!("{partial} partial events left out of the request"),
        ));
    }
    Replay { materialized, diagnostics }
}
