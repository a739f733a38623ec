//! Stale oversized tool-result pruning of the uncovered remainder.
//!
//! Runs after checkpoint matching, on the events the checkpoint does not cover
//! (`events[coverage.eventCount..]`), and returns a pruned copy for one request. The canonical
//! events are never changed, so the bytes a checkpoint digest covers cannot move, and a moving
//! recent-turn window can never invalidate an otherwise matching checkpoint.
//!
//! Fixed policy (no knobs): a tool result (ordinary or hosted) is stale when its turn is neither
//! the current turn nor one of the newest [`PROTECTED_COMPLETED_TURNS`] completed turns of the
//! remainder, and it is oversized when its output is estimated above [`STALE_RESULT_MIN_TOKENS`]
//! tokens. Pinned and partial events are never pruned. A pruned result keeps its call id, tool
//! name and error flag (so every call/result pair stays intact); only its output becomes
//! [`stale_result_placeholder`]. Every other event is borrowed unchanged (nothing is copied).
//! Attachments follow their own policy ([`super::attachments`]).

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use crate::budget::{TokenEstimator, estimate_value};
use crate::diagnostics::{Diagnostic, ReasonCode};
use crate::event::{EventContent, RuntimeEvent};

/// Number of newest completed turns whose tool results are never pruned as stale.
pub const PROTECTED_COMPLETED_TURNS: usize = 2;
/// A result is oversized when its output is estimated at strictly more tokens than this.
pub const STALE_RESULT_MIN_TOKENS: u64 = 4_096;

/// One tool result replaced by the stale-result placeholder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PrunedResult {
    /// The event whose output was replaced (it is unchanged in the log).
    pub runtime_event_id: String,
    /// Call id of the result (kept in the placeholder event).
    pub call_id: String,
    /// Tool name of the result (kept in the placeholder event).
    pub tool_name: String,
    /// Estimated tokens of the original output.
    pub original_tokens: u64,
}

/// The uncovered remainder as one request sees it: the events it borrows, except the pruned
/// ones, which it owns.
#[derive(Debug, Clone, PartialEq)]
pub struct StalePrune<'a> {
    /// The remainder, with stale oversized outputs replaced; same length and order as the input.
    /// Unpruned events are borrowed from it.
    pub events: Vec<Cow<'a, RuntimeEvent>>,
    /// What was replaced, in event order.
    pub pruned: Vec<PrunedResult>,
}

impl StalePrune<'_> {
    /// A `stale_tool_results_pruned` diagnostic, or `None` when nothing was pruned.
    pub fn diagnostic(&self) -> Option<Diagnostic> {
        if self.pruned.is_empty() {
            return None;
        }
        let tokens: u64 = self.pruned.iter().map(|p| p.original_tokens).sum();
        let ids: Vec<&str> = self.pruned.iter().map(|p| p.runtime_event_id.as_str()).collect();
        Some(Diagnostic::new(
            ReasonCode::StaleToolResultsPruned,
            format!(
                "{} stale tool result(s) of about {tokens} estimated tokens replaced for this \
                 request: {}",
                ids.len(),
                ids.join(", ")
            ),
        ))
    }
}

/// The text that replaces a stale result's output in the current request.
pub fn stale_result_placeholder(
    tool_name: &str,
    call_id: &str,
    runtime_event_id: &str,
    original_tokens: u64,
) -> String {
    format!(
        "[stale tool result omitted from this request: tool {} call {}, about {original_tokens} \
         estimated tokens. The full result remains in the event log as runtime event {}.]",
        quote(tool_name),
        quote(call_id),
        quote(runtime_event_id)
    )
}

/// JSON-quotes a model- or tool-supplied name so it cannot break the placeholder's text.
pub(super) fn quote(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

/// Prunes stale oversized tool results from the uncovered remainder `tail` (see the module
/// docs). `current_turn_id` names the turn being produced now, if any.
pub fn prune_stale_tool_results<'a>(
    tail: &'a [RuntimeEvent],
    current_turn_id: Option<&str>,
    estimator: &dyn TokenEstimator,
) -> StalePrune<'a> {
    let protected = protected_turns(tail, current_turn_id);
    let mut pruned = Vec::new();
    let events = tail
        .iter()
        .map(|event| {
            if event.pinned || event.partial || protected.contains(&event.turn_id.as_str()) {
                return Cow::Borrowed(event);
            }
            match prune_result(event, estimator) {
                Some((content, record)) => {
                    pruned.push(record);
                    Cow::Owned(event.with_content(content))
                }
                None => Cow::Borrowed(event),
            }
        })
        .collect();
    StalePrune { events, pruned }
}

/// `event` with the output of a stale oversized result replaced by the placeholder, and the
/// record of it; `None` when it is not a result or not oversized.
fn prune_result(
    event: &RuntimeEvent,
    estimator: &dyn TokenEstimator,
) -> Option<(EventContent, PrunedResult)> {
    let (EventContent::ToolResult { call_id, tool_name, output, .. }
    | EventContent::HostedToolResult { call_id, tool_name, output, .. }) = &event.content
    else {
        return None;
    };
    let original_tokens = estimate_value(estimator, output);
    if original_tokens <= STALE_RESULT_MIN_TOKENS {
        return None;
    }
    let placeholder = Value::String(stale_result_placeholder(
        tool_name,
        call_id,
        &event.runtime_event_id,
        original_tokens,
    ));
    let record = PrunedResult {
        runtime_event_id: event.runtime_event_id.clone(),
        call_id: call_id.clone(),
        tool_name: tool_name.clone(),
        original_tokens,
    };
    let content = event.content.with_output(placeholder)?;
    Some((content, record))
}

/// The current turn plus the newest [`PROTECTED_COMPLETED_TURNS`] other turns of `tail`.
fn protected_turns<'a>(tail: &'a [RuntimeEvent], current_turn_id: Option<&'a str>) -> Vec<&'a str> {
    let mut protected: Vec<&str> = current_turn_id.into_iter().collect();
    let mut completed = 0;
    for event in tail.iter().rev() {
        if completed == PROTECTED_COMPLETED_TURNS {
            break;
        }
        if !protected.contains(&event.turn_id.as_str()) {
            protected.push(&event.turn_id);
            completed += 1;
        }
    }
    protected
}
