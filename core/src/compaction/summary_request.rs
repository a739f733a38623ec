//! The summarizer request: instructions plus a sized, reasoning-free transcript of the fold.
//!
//! A request is one system message (the [`summary_template`] instructions) and one user
//! message: the previous summary inside `<previous_summary>` and the fold inside
//! `<new_events>` (rolling), or the fold inside `<events>` (initial). The transcript has one
//! entry per event, in log order, separated by a blank line; reasoning events are left out
//! entirely (neither text nor provider data):
//!
//! ```text
//! [user]\n<text>                [assistant]\n<text>
//! [tool call <callId>] <toolName> <compact JSON input>
//! [tool result <callId>] <toolName>:\n<output>     (`<toolName> (error):` when it failed)
//! [hosted tool call <callId>] …                  [hosted tool result <callId>] …
//! [system note]\n<text>         [runtime note <code>]\n<text>
//! ```
//!
//! A string output is written verbatim, any other output as compact JSON.
//!
//! Sizing: the request is estimated as the text of both messages plus two message overheads.
//! A request must fit `input_budget` together with its one possible repair (see
//! [`SummaryRequest::repair_reserve_tokens`]). When it does not, tool-result payloads (ordinary
//! and hosted) are replaced by [`TOOL_RESULT_OMISSION_MARKER`], oldest first, until it fits;
//! calls, call ids and the result lines themselves are always kept, so every pair survives.
//! Payloads already shorter than the marker are never replaced. When one event alone is larger
//! than the window (a pasted log, a huge call input), its payload is replaced too, largest
//! first, by a marker naming the payload's archive address
//! (`contextfold://archive/<session>/<sha256>/<bytes>`): never silently dropped. If everything
//! omittable is omitted and the request still does not fit (instructions and previous summary
//! alone exceed the window), [`SummaryInputError::CannotFit`] is returned and nothing may be
//! dispatched.
//!
//! [`summary_template`]: crate::compaction::summary_template

mod quality_repair;
mod transcript;

use transcript::PayloadKind;

pub(crate) use quality_repair::{build_retention_repair_request, request_shape_hash};
pub(crate) use transcript::is_compaction_failure_note;
pub use transcript::summary_payload;

use serde::{Deserialize, Serialize};

use crate::budget::TokenEstimator;
use crate::compaction::summary_template::{
    REPAIR_SEPARATOR, TOOL_RESULT_OMISSION_MARKER, initial_instructions, repair_instructions,
    rolling_instructions,
};
use crate::compaction::summary_validation::{SummaryDefect, repair_sizing_samples};
use crate::diagnostics::ReasonCode;
use crate::event::RuntimeEvent;
use crate::projection::{Message, Part, Role};

/// After a provider overflow, the retry budget is the failed request's checked size divided by
/// this factor (one halving).
pub const OVERFLOW_RETRY_DIVISOR: u64 = 2;

/// What a summarizer request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SummaryPurpose {
    /// A first summary (no previous checkpoint).
    Initial,
    /// An update of the previous summary with newly folded events.
    Rolling,
    /// The one stricter retry after a malformed completion.
    Repair,
    /// The one retry after a valid summary that left out exact artifacts of its input, naming
    /// them (the quality gate's repair request).
    RetentionRepair,
}

impl SummaryPurpose {
    /// Stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            SummaryPurpose::Initial => "initial",
            SummaryPurpose::Rolling => "rolling",
            SummaryPurpose::Repair => "repair",
            SummaryPurpose::RetentionRepair => "retention_repair",
        }
    }
}

/// A summarizer request ready to dispatch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryRequest {
    /// What the request asks for.
    pub purpose: SummaryPurpose,
    /// One system message (instructions) and one user message (previous summary + fold).
    pub messages: Vec<Message>,
    /// Estimated input tokens of `messages` (for a repair request, an upper bound).
    pub estimated_input_tokens: u64,
    /// How many tool-result payloads were replaced by the omission marker.
    pub omitted_tool_results: u64,
    /// Tokens set aside so that the one repair request built from this request still fits the
    /// same budget: the largest growth of the system message over every defect reason
    /// [`crate::compaction::summary_validation::validate_summary`] can produce.
    pub repair_reserve_tokens: u64,
    /// Payloads other than tool results replaced by a marker because one event alone was
    /// larger than the window (usually empty). A host with an archive stores each payload
    /// ([`summary_payload`] of the event) under its address before dispatching.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub omitted_payloads: Vec<OmittedPayload>,
}

/// One payload a summarizer request sent as a marker instead of its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OmittedPayload {
    /// The `runtimeEventId` of the event whose payload was omitted.
    pub runtime_event_id: String,
    /// The archive address of the payload's exact bytes, as the marker names it.
    pub address: String,
}

/// Why a summarizer request could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SummaryInputError {
    /// Even with every tool-result payload omitted, the request (plus its repair reserve)
    /// exceeds the budget. It must not be dispatched.
    #[error("summarizer request needs {needed} estimated tokens but the budget is {budget}")]
    CannotFit {
        /// Smallest reachable size: request plus repair reserve, after every omission.
        needed: u64,
        /// The input budget.
        budget: u64,
    },
}

impl SummaryInputError {
    /// Stable reason code.
    pub fn code(&self) -> ReasonCode {
        match self {
            SummaryInputError::CannotFit { .. } => ReasonCode::SummaryInputCannotFit,
        }
    }
}

fn message_text(message: &Message) -> String {
    let mut text = String::new();
    for part in &message.parts {
        if let Part::Text { text: part_text } = part {
            text.push_str(part_text);
        }
    }
    text
}

fn estimate_messages(messages: &[Message], estimator: &dyn TokenEstimator) -> u64 {
    messages
        .iter()
        .map(|message| {
            estimator.estimate_text(&message_text(message)) + estimator.message_overhead()
        })
        .sum()
}

fn user_text(previous_summary: Option<&str>, transcript: &str) -> String {
    match previous_summary {
        Some(summary) => format!(
            "<previous_summary>\n{summary}\n</previous_summary>\n\n<new_events>\n{transcript}\n</new_events>"
        ),
        None => format!("<events>\n{transcript}\n</events>"),
    }
}

/// The reserve for the one repair of a request whose system message is `base_system`.
fn repair_reserve(base_system: &str, estimator: &dyn TokenEstimator) -> u64 {
    let base = estimator.estimate_text(base_system);
    repair_sizing_samples()
        .iter()
        .map(|defect| {
            let text = repair_system_text(base_system, &defect.reason(), u64::MAX);
            estimator.estimate_text(&text).saturating_sub(base)
        })
        .max()
        .unwrap_or(0)
}

fn repair_system_text(base_system: &str, reason: &str, output_chars: u64) -> String {
    format!("{base_system}{REPAIR_SEPARATOR}{}", repair_instructions(reason, output_chars))
}

/// Builds the initial (no `previous_summary`) or rolling summarizer request for `fold`,
/// omitting older tool-result payloads until request plus repair reserve fits `input_budget`.
pub fn build_summary_request(
    previous_summary: Option<&str>,
    fold: &[RuntimeEvent],
    input_budget: u64,
    estimator: &dyn TokenEstimator,
) -> Result<SummaryRequest, SummaryInputError> {
    build(previous_summary, fold, input_budget, estimator, Omit::ToolResults)
}

/// The last resort for a fold that [`build_summary_request`] cannot fit because one event
/// alone is larger than the window: after every tool-result output, the largest other payloads
/// (user or assistant text, call inputs, notes) are replaced by a marker naming their archive
/// address, listed in [`SummaryRequest::omitted_payloads`].
pub fn build_oversized_summary_request(
    previous_summary: Option<&str>,
    fold: &[RuntimeEvent],
    input_budget: u64,
    estimator: &dyn TokenEstimator,
) -> Result<SummaryRequest, SummaryInputError> {
    build(previous_summary, fold, input_budget, estimator, Omit::AnyPayload)
}

/// Which payloads a build may replace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Omit {
    ToolResults,
    AnyPayload,
}

fn build(
    previous_summary: Option<&str>,
    fold: &[RuntimeEvent],
    input_budget: u64,
    estimator: &dyn TokenEstimator,
    scope: Omit,
) -> Result<SummaryRequest, SummaryInputError> {
    let (purpose, system) = match previous_summary {
        Some(_) => (SummaryPurpose::Rolling, rolling_instructions()),
        None => (SummaryPurpose::Initial, initial_instructions()),
    };
    let reserve = repair_reserve(&system, estimator);
    let mut entries = transcript::entries(fold);
    let assemble = |entries: &[transcript::Entry]| {
        let user = user_text(previous_summary, &transcript::render(entries));
        vec![Message::text(Role::System, system.clone()), Message::text(Role::User, user)]
    };

    // Fast pass on per-entry estimates, then exact passes on the assembled messages.
    let mut omittable = omission_order(&entries, estimator, scope);
    let mut estimated = estimate_messages(&assemble(&entries), estimator);
    let mut approximate = estimated;
    let mut omitted_payloads = Vec::new();
    let mut omitted = 0u64;
    while approximate + reserve > input_budget {
        let Some((position, saving)) = omittable.pop() else { break };
        if omit(&mut entries[position], fold, &mut omitted_payloads) {
            omitted += 1;
            approximate = approximate.saturating_sub(saving);
        }
    }
    let mut messages = assemble(&entries);
    if omitted > 0 {
        estimated = estimate_messages(&messages, estimator);
    }
    while estimated + reserve > input_budget {
        let Some((position, _)) = omittable.pop() else {
            return Err(SummaryInputError::CannotFit {
                needed: estimated + reserve,
                budget: input_budget,
            });
        };
        if omit(&mut entries[position], fold, &mut omitted_payloads) {
            messages = assemble(&entries);
            estimated = estimate_messages(&messages, estimator);
        }
    }
    let omitted_tool_results = entries
        .iter()
        .filter(|entry| entry.omitted.is_some() && entry.kind == PayloadKind::ToolResult)
        .count() as u64;
    Ok(SummaryRequest {
        purpose,
        messages,
        estimated_input_tokens: estimated,
        omitted_tool_results,
        repair_reserve_tokens: reserve,
        omitted_payloads,
    })
}

/// The entries that may lose their payload, with the estimated saving, in reverse omission
/// order (so `pop()` yields the next): tool-result outputs oldest first, then (for
/// [`Omit::AnyPayload`]) every other payload largest first. Payloads no longer than their marker are never omitted.
fn omission_order(
    entries: &[transcript::Entry],
    estimator: &dyn TokenEstimator,
    scope: Omit,
) -> Vec<(usize, u64)> {
    let saving = |entry: &transcript::Entry, marker: &str| {
        let full = estimator.estimate_text(&entry.render());
        full.saturating_sub(estimator.estimate_text(&entry.render_with(marker)))
    };
    let mut results = Vec::new();
    let mut others = Vec::new();
    for (position, entry) in entries.iter().enumerate() {
        match entry.kind {
            PayloadKind::ToolResult => {
                results.push((position, saving(entry, TOOL_RESULT_OMISSION_MARKER)));
            }
            PayloadKind::Other(_) if scope == Omit::AnyPayload => {
                others.push((position, saving(entry, PAYLOAD_MARKER_SIZING)));
            }
            PayloadKind::Other(_) => {}
        }
    }
    results.retain(|(_, saving)| *saving > 0);
    others.retain(|(_, saving)| *saving > 0);
    crate::sort::sort_by_key(&mut others, |(position, saving)| {
        (*saving, std::cmp::Reverse(*position))
    });
    results.reverse();
    others.extend(results);
    others
}

/// A stand-in as long as the longest payload marker, for sizing before any hash is computed.
const PAYLOAD_MARKER_SIZING: &str = "[hosted tool-call input omitted to fit the compaction \
    request: 18446744073709551615 bytes, archived at contextfold://archive/<session>/\
    0000000000000000000000000000000000000000000000000000000000000000/18446744073709551615; \
    the full text remains in the event log]";

/// Replaces the payload of `entry` by its marker; false when it cannot be omitted.
fn omit(
    entry: &mut transcript::Entry,
    fold: &[RuntimeEvent],
    omitted_payloads: &mut Vec<OmittedPayload>,
) -> bool {
    match entry.kind {
        PayloadKind::ToolResult => entry.omitted = Some(TOOL_RESULT_OMISSION_MARKER.to_owned()),
        PayloadKind::Other(what) => {
            let event = &fold[entry.index];
            let Some((marker, address)) =
                transcript::payload_marker(what, &event.session_id, &entry.payload)
            else {
                return false;
            };
            entry.omitted = Some(marker);
            omitted_payloads
                .push(OmittedPayload { runtime_event_id: event.runtime_event_id.clone(), address });
        }
    }
    true
}

/// Builds the one stricter repair request after `previous` produced `bad_output`, rejected for
/// `defect`.
///
/// The user message is unchanged (same input, same omissions); the system message becomes the
/// original instructions plus the repair block, which quotes `defect.reason()` and the length
/// of the rejected output (never its text). The original build set aside
/// [`SummaryRequest::repair_reserve_tokens`] for the largest repair block, so the repair
/// request fits the same budget: its estimate is `previous + reserve`. Repairing a repair
/// replaces the earlier repair block instead of stacking a second one. A caller-made defect
/// whose reason is longer than any validator reason is cut to that length.
pub fn build_repair_request(
    previous: &SummaryRequest,
    bad_output: &str,
    defect: &SummaryDefect,
) -> SummaryRequest {
    let previous_system = previous.messages.first().map(message_text).unwrap_or_default();
    let base_system = match previous_system.split_once(REPAIR_SEPARATOR) {
        Some((base, _)) => base.to_owned(),
        None => previous_system,
    };
    let longest = repair_sizing_samples()
        .iter()
        .map(|sample| sample.reason().chars().count())
        .max()
        .unwrap_or(0);
    let reason: String = defect.reason().chars().take(longest).collect();
    let output_chars = bad_output.chars().count() as u64;
    let mut messages =
        vec![Message::text(Role::System, repair_system_text(&base_system, &reason, output_chars))];
    messages.extend(previous.messages.iter().skip(1).cloned());
    let estimated_input_tokens = match previous.purpose {
        SummaryPurpose::Repair => previous.estimated_input_tokens,
        _ => previous.estimated_input_tokens + previous.repair_reserve_tokens,
    };
    SummaryRequest {
        purpose: SummaryPurpose::Repair,
        messages,
        estimated_input_tokens,
        omitted_tool_results: previous.omitted_tool_results,
        repair_reserve_tokens: previous.repair_reserve_tokens,
        omitted_payloads: previous.omitted_payloads.clone(),
    }
}

/// After the provider reported a context overflow for `previous`, builds the one smaller,
/// pair-safe retry from the same `previous_summary` and `fold`.
///
/// The retry budget is the size `previous` was checked at (its estimate, plus the repair
/// reserve unless it is itself a repair) divided by [`OVERFLOW_RETRY_DIVISOR`]. If even that
/// cannot fit, the retry omits every omittable payload instead. A repair request keeps its
/// repair system message. Returns `None` when no retry is smaller than `previous` (nothing
/// left to omit): the request must then not be dispatched again.
pub fn shrink_for_overflow_retry(
    previous: &SummaryRequest,
    previous_summary: Option<&str>,
    fold: &[RuntimeEvent],
    estimator: &dyn TokenEstimator,
) -> Option<SummaryRequest> {
    let is_repair = previous.purpose == SummaryPurpose::Repair;
    let (checked, base_estimate) = if is_repair {
        (
            previous.estimated_input_tokens,
            previous.estimated_input_tokens.saturating_sub(previous.repair_reserve_tokens),
        )
    } else {
        (
            previous.estimated_input_tokens + previous.repair_reserve_tokens,
            previous.estimated_input_tokens,
        )
    };
    let budget = checked / OVERFLOW_RETRY_DIVISOR;
    let rebuilt = match build_summary_request(previous_summary, fold, budget, estimator) {
        Ok(request) => request,
        Err(SummaryInputError::CannotFit { needed, .. }) => {
            build_summary_request(previous_summary, fold, needed, estimator).ok()?
        }
    };
    if rebuilt.estimated_input_tokens >= base_estimate {
        return None;
    }
    if !is_repair {
        return Some(rebuilt);
    }
    let mut messages = rebuilt.messages;
    if let (Some(system), Some(previous_system)) = (messages.first_mut(), previous.messages.first())
    {
        *system = previous_system.clone();
    }
    Some(SummaryRequest {
        purpose: SummaryPurpose::Repair,
        messages,
        estimated_input_tokens: rebuilt.estimated_input_tokens + rebuilt.repair_reserve_tokens,
        ..rebuilt
    })
}
