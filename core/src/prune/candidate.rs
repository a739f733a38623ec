//! A pruning candidate: what both policies ([`super::stale`], [`super::attachments`]) hand to
//! the request's one epoch rule ([`super::request`]). A leaf, so the policies and the request
//! do not import each other.

use crate::event::RuntimeEvent;

/// What a candidate would replace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum CandidateKind {
    /// A stale oversized or masked old result's output.
    Output,
    /// The attachments of an event.
    Attachments,
}

/// One pruning candidate of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Candidate {
    /// Position of the event whose arrival made it a candidate.
    pub(super) key: usize,
    /// Position of its event in the request.
    pub(super) index: usize,
    /// What it replaces.
    pub(super) kind: CandidateKind,
    /// Estimated tokens its placeholder frees.
    pub(super) freed: u64,
}

/// The position of the first event after `index` whose turn is not `request[index]`'s.
pub(super) fn next_other_turn(request: &[&RuntimeEvent], index: usize) -> Option<usize> {
    let turn = request.get(index).map(|event| event.turn_id.as_str())?;
    request.iter().skip(index + 1).position(|event| event.turn_id != turn).map(|at| index + 1 + at)
}
