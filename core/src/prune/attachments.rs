//! Old attachments of a request: replaced by a placeholder naming their archive address.
//!
//! An agent that looks at its screen sends a screenshot on every step, and one user turn can run
//! for hundreds of steps; the older screenshots describe a screen that no longer exists. So
//! attachments become stale by age, not by turn: every attachment is a pruning candidate once
//! [`KEPT_RECENT_ATTACHMENTS`] newer attachments follow it in the request, except those on a
//! user message of the current turn (its task; the request's last turn when no turn is current)
//! and those of pinned and partial events. A candidate is pruned when its epoch closes
//! ([`super::epochs`]): its event's attachments are replaced by [`stale_attachment_placeholder`]
//! text (which depends on the attachment and the event alone), appended to the user text or
//! result output that carried them. The log is never changed, so no digest moves; the replay
//! gate, the planner and the projection all measure the pruned request.
//! (Anthropic's computer-use reference loop keeps only the few most recent screenshots for the
//! same reason.)

use crate::json_text::json_text;
use serde::Serialize;
use serde_json::Value;

use crate::attachment::Attachment;
use crate::budget::TokenEstimator;
use crate::diagnostics::{Diagnostic, ReasonCode};
use crate::event::{EventContent, RuntimeEvent};

use super::candidate::{Candidate, CandidateKind, next_other_turn};
use super::stale::quote;

/// Number of newest attachments of a request that are never pruning candidates.
pub(crate) const KEPT_RECENT_ATTACHMENTS: usize = 3;

/// One attachment replaced by its placeholder (`stale_attachment_placeholder`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PrunedAttachment {
    /// The event that holds it (unchanged in the log).
    pub runtime_event_id: String,
    /// Its media type.
    pub media_type: String,
    /// Its estimated tokens.
    pub original_tokens: u64,
}

/// The text that replaces an old attachment in a request: its stand-in (media type, name, size,
/// archive address) and where the bytes remain.
pub(crate) fn stale_attachment_placeholder(
    attachment: &Attachment,
    session_id: &str,
    runtime_event_id: &str,
) -> String {
    format!(
        "[stale attachment omitted from this request: {}. The bytes remain in the event log as \
         runtime event {}.]",
        attachment.stand_in(session_id),
        quote(runtime_event_id)
    )
}

/// The old attachments of `request` (a request's events, in order) as candidates, per the
/// module's policy. A candidate's key is the position whose arrival made it old: the event
/// holding the third newer attachment or, for a user message, the first event of a later turn
/// (until then it is its turn's task), whichever comes later.
pub(super) fn attachment_candidates(
    request: &[&RuntimeEvent],
    estimator: &dyn TokenEstimator,
) -> Vec<Candidate> {
    // The nearest later events holding attachments: (position, count), nearest first.
    let mut newer: Vec<(usize, usize)> = Vec::with_capacity(KEPT_RECENT_ATTACHMENTS + 1);
    let mut candidates = Vec::new();
    for (index, event) in request.iter().enumerate().rev() {
        let count = event.attachments().len();
        if count == 0 {
            continue;
        }
        let mut later = 0usize;
        let aged = newer.iter().find_map(|&(position, held)| {
            later += held;
            (later >= KEPT_RECENT_ATTACHMENTS).then_some(position)
        });
        let task_end = match event.content {
            EventContent::UserText { .. } => next_other_turn(request, index),
            _ => Some(index),
        };
        if let (Some(aged), Some(task_end)) = (aged, task_end)
            && !event.pinned
            && !event.partial
        {
            let (_, records, notes) = strip(event, estimator);
            let original: u64 = records.iter().map(|r| r.original_tokens).sum();
            let freed = original.saturating_sub(estimator.estimate_text(&notes));
            let key = aged.max(task_end);
            candidates.push(Candidate { key, index, kind: CandidateKind::Attachments, freed });
        }
        newer.insert(0, (index, count));
        newer.truncate(KEPT_RECENT_ATTACHMENTS);
    }
    candidates
}

/// A `stale_attachments_pruned` diagnostic, or `None` when nothing was pruned.
pub(crate) fn attachment_diagnostic(pruned: &[PrunedAttachment]) -> Option<Diagnostic> {
    if pruned.is_empty() {
        return None;
    }
    let tokens: u64 = pruned.iter().map(|p| p.original_tokens).sum();
    Some(Diagnostic::new(
        ReasonCode::StaleAttachmentsPruned,
        format!(
            "{} older attachment(s) of about {tokens} estimated tokens replaced by their archive \
             address for this request",
            pruned.len()
        ),
    ))
}

/// `event` with each attachment's placeholder appended to its text or output, the records of
/// what was replaced and the appended text.
pub(super) fn strip(
    event: &RuntimeEvent,
    estimator: &dyn TokenEstimator,
) -> (RuntimeEvent, Vec<PrunedAttachment>, String) {
    let mut notes = String::new();
    let mut pruned = Vec::with_capacity(event.attachments().len());
    for attachment in event.attachments() {
        if !notes.is_empty() {
            notes.push('\n');
        }
        notes.push_str(&stale_attachment_placeholder(
            attachment,
            &event.session_id,
            &event.runtime_event_id,
        ));
        pruned.push(PrunedAttachment {
            runtime_event_id: event.runtime_event_id.clone(),
            media_type: attachment.media_type.clone(),
            original_tokens: estimator.estimate_attachment(attachment),
        });
    }
    let joined =
        |text: &str| if text.is_empty() { notes.clone() } else { format!("{text}\n{notes}") };
    let content = match &event.content {
        EventContent::UserText { text, .. } => {
            EventContent::UserText { text: joined(text), attachments: Vec::new() }
        }
        EventContent::ToolResult { output, .. } => {
            let text = match output {
                Value::String(text) => joined(text),
                other => joined(&json_text(other)),
            };
            let stripped = event.content.with_attachments(Vec::new());
            stripped.with_output(Value::String(text)).unwrap_or(stripped)
        }
        other => other.clone(),
    };
    (event.with_content(content), pruned, notes)
}
