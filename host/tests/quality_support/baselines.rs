//! The two baselines contextfold is compared with, built from the same events at a given budget
//! and measured with the same estimator, as provider-neutral messages materialized by the core:
//!
//! - **truncation**: system notes + the task + the newest whole steps that fit (a step keeps its
//!   calls with their results, so no call loses its result);
//! - **observation masking**: every tool result but the newest [`KEEP_RESULTS`] replaced by
//!   [`MASK`], then truncated as above if still over the budget.

use std::collections::HashMap;
use std::ops::Range;

use contextfold_core::budget::TokenEstimator;
use contextfold_core::projection::{Message, estimate_messages, materialize};
use contextfold_core::{EventContent, RuntimeEvent};
use serde_json::Value;

use super::step_ranges;

/// Tool results masking keeps whole (the newest ones).
pub const KEEP_RESULTS: usize = 10;

/// What a masked tool result says instead of its output.
pub const MASK: &str = "[old tool output omitted]";

/// A baseline request: its messages and their estimated tokens.
#[derive(Debug, Clone)]
pub struct BaselineRequest {
    /// Provider-neutral messages.
    pub messages: Vec<Message>,
    /// Estimated tokens of `messages`.
    pub tokens: u64,
}

/// The two baseline kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Baseline {
    /// Newest whole steps that fit.
    Truncation,
    /// Old tool results masked, then truncation.
    Masking,
}

/// Builds baseline requests over a growing log, caching each step's estimate.
#[derive(Debug, Default)]
pub struct Baselines {
    /// `(step range, masked)` → estimated tokens of that step alone.
    costs: HashMap<(usize, usize, bool), u64>,
}

impl Baselines {
    /// The `kind` request for `events` (the task at `task`) within `budget` tokens.
    pub fn request(
        &mut self,
        kind: Baseline,
        events: &[RuntimeEvent],
        task: usize,
        budget: u64,
        estimator: &dyn TokenEstimator,
    ) -> BaselineRequest {
        let masked = mask_set(events, kind);
        let steps = step_ranges(events);
        let (fixed, rest): (Vec<_>, Vec<_>) =
            steps.into_iter().partition(|range| is_fixed(events, range, task));
        let mut cost = |range: &Range<usize>| -> u64 {
            let masks = range.clone().any(|i| masked[i]);
            let partly = masks && range.clone().any(|i| is_result(&events[i]) && !masked[i]);
            if partly {
                // A step straddling the newest results: measured as sent, not cached.
                return estimate(&materialize_masked(events, range, &masked), estimator);
            }
            *self
                .costs
                .entry((range.start, range.end, masks))
                .or_insert_with(|| estimate(&materialize_masked(events, range, &masked), estimator))
        };
        let fixed_tokens: u64 = fixed.iter().map(&mut cost).sum();
        let mut used = fixed_tokens;
        let mut first_kept = rest.len();
        for (at, range) in rest.iter().enumerate().rev() {
            let tokens = cost(range);
            if used + tokens > budget {
                break;
            }
            used += tokens;
            first_kept = at;
        }
        // Step estimates add up only approximately (message grouping): check the whole request
        // and drop the oldest kept step until it fits.
        loop {
            let mut indices: Vec<usize> = fixed.iter().flat_map(|r| r.clone()).collect();
            indices.extend(rest[first_kept..].iter().flat_map(|r| r.clone()));
            indices.sort_unstable();
            let selected = select(events, &indices, &masked);
            let messages = materialize(None, &selected, &[]).messages;
            let tokens = estimate_messages(estimator, &messages);
            if tokens <= budget || first_kept == rest.len() {
                return BaselineRequest { messages, tokens };
            }
            first_kept += 1;
        }
    }
}

/// Whether a step is always sent: a system note or the task.
fn is_fixed(events: &[RuntimeEvent], range: &Range<usize>, task: usize) -> bool {
    range.contains(&task)
        || range.clone().all(|i| matches!(events[i].content, EventContent::SystemNote { .. }))
}

fn is_result(event: &RuntimeEvent) -> bool {
    event.content.result_call_id().is_some()
}

/// Per event: whether it is a tool result `kind` replaces with [`MASK`].
fn mask_set(events: &[RuntimeEvent], kind: Baseline) -> Vec<bool> {
    let mut masked = vec![false; events.len()];
    if kind == Baseline::Masking {
        let results: Vec<usize> = (0..events.len()).filter(|&i| is_result(&events[i])).collect();
        let old = results.len().saturating_sub(KEEP_RESULTS);
        for &index in &results[..old] {
            masked[index] = true;
        }
    }
    masked
}

/// The events at `indices`, masked results replaced.
fn select(events: &[RuntimeEvent], indices: &[usize], masked: &[bool]) -> Vec<RuntimeEvent> {
    indices.iter().map(|&i| masked_event(&events[i], masked[i])).collect()
}

fn materialize_masked(
    events: &[RuntimeEvent],
    range: &Range<usize>,
    masked: &[bool],
) -> Vec<Message> {
    let indices: Vec<usize> = range.clone().collect();
    materialize(None, &select(events, &indices, masked), &[]).messages
}

fn estimate(messages: &[Message], estimator: &dyn TokenEstimator) -> u64 {
    estimate_messages(estimator, messages)
}

/// `event`, its output replaced by [`MASK`] when `masked`.
fn masked_event(event: &RuntimeEvent, masked: bool) -> RuntimeEvent {
    if !masked {
        return event.clone();
    }
    let content = match &event.content {
        EventContent::ToolResult { call_id, tool_name, is_error, .. } => EventContent::ToolResult {
            call_id: call_id.clone(),
            tool_name: tool_name.clone(),
            output: Value::String(MASK.to_owned()),
            is_error: *is_error,
            attachments: Vec::new(),
        },
        EventContent::HostedToolResult { call_id, tool_name, is_error, .. } => {
            EventContent::HostedToolResult {
                call_id: call_id.clone(),
                tool_name: tool_name.clone(),
                output: Value::String(MASK.to_owned()),
                is_error: *is_error,
            }
        }
        _ => return event.clone(),
    };
    event.with_content(content)
}
