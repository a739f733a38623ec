//! Old attachments of a request: replaced by a placeholder naming their archive address.
//!
//! An agent that looks at its screen sends a screenshot on every step, and one user turn can run
//! for hundreds of steps; the older screenshots describe a screen that no longer exists. So
//! attachments become stale by age, not by turn: a request keeps the bytes of the newest
//! [`KEPT_RECENT_ATTACHMENTS`] attachments (counted from the end of the request), of every
//! attachment on a user message of the current turn (its task; the request's last turn when no
//! turn is current), and of pinned and partial
//! events. Every other attachment is replaced by [`stale_attachment_placeholder`] text, appended
//! to the user text or result output that carried it. The log is never changed, so no digest
//! moves; the replay gate, the planner and the projection all measure the pruned request.
//! (Anthropic's computer-use reference loop keeps only the few most recent screenshots for the
//! same reason.)

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use crate::attachment::Attachment;
use crate::budget::TokenEstimator;
use crate::diagnostics::{Diagnostic, ReasonCode};
use crate::event::{EventContent, RuntimeEvent};

use super::stale::quote;

/// Number of newest attachments of a request that keep their bytes.
pub const KEPT_RECENT_ATTACHMENTS: usize = 3;

/// One attachment replaced by [`stale_attachment_placeholder`].
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
pub fn stale_attachment_placeholder(
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

/// Replaces the old attachments of `events` (a request's events, in order) by their
/// placeholders, per the module's policy; returns what was replaced, in event order.
pub fn prune_old_attachments(
    events: &mut [Cow<'_, RuntimeEvent>],
    current_turn_id: Option<&str>,
    estimator: &dyn TokenEstimator,
) -> Vec<PrunedAttachment> {
    let mut kept = 0usize;
    let mut pruned = Vec::new();
    let last_turn = events.last().map(|event| event.turn_id.clone());
    let task_turn = current_turn_id.map(str::to_owned).or(last_turn);
    for event in events.iter_mut().rev() {
        let count = event.attachments().len();
        if count == 0 {
            continue;
        }
        let task = task_turn.as_deref() == Some(event.turn_id.as_str())
            && matches!(event.content, EventContent::UserText { .. });
        if kept < KEPT_RECENT_ATTACHMENTS || task || event.pinned || event.partial {
            kept += count;
            continue;
        }
        let start = pruned.len();
        let replaced = strip(event, estimator, &mut pruned);
        pruned[start..].reverse();
        *event = Cow::Owned(replaced);
    }
    pruned.reverse();
    pruned
}

/// A `stale_attachments_pruned` diagnostic, or `None` when nothing was pruned.
pub fn attachment_diagnostic(pruned: &[PrunedAttachment]) -> Option<Diagnostic> {
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

/// `event` with each attachment's placeholder appended to its text or output.
fn strip(
    event: &RuntimeEvent,
    estimator: &dyn TokenEstimator,
    pruned: &mut Vec<PrunedAttachment>,
) -> RuntimeEvent {
    let mut notes = String::new();
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
                other => joined(&other.to_string()),
            };
            let stripped = event.content.with_attachments(Vec::new());
            stripped.with_output(Value::String(text)).unwrap_or(stripped)
        }
        other => other.clone(),
    };
    event.with_content(content)
}
