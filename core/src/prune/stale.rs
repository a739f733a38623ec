//! Old tool results of a request: which are pruning candidates, and their placeholder.
//!
//! Runs after checkpoint matching, on the events the checkpoint does not cover, and only ever
//! changes a pruned copy for one request. The canonical events are never changed, so the bytes
//! a checkpoint digest covers cannot move, and a moving recent-turn window can never invalidate
//! an otherwise matching checkpoint.
//!
//! Fixed policy (no knobs), two ways for a tool result (ordinary or hosted) to become a
//! candidate, whichever comes first:
//!
//! - **stale**: a result of the uncovered prior tail is stale when at least
//!   [`PROTECTED_COMPLETED_TURNS`] other turns follow it in that tail (so the current turn and
//!   the newest two completed turns are protected; with no current turn, the newest two turns),
//!   and oversized when its output is estimated above [`STALE_RESULT_MIN_TOKENS`] tokens;
//! - **masked** (observation masking, inside the current turn as well as in the tail): a result
//!   anywhere after the live head is old once at least [`KEPT_RECENT_RESULTS`] newer tool results
//!   follow it in the request and their outputs together exceed
//!   [`KEPT_RECENT_RESULTS_SHARE_PERCENT`] of the history budget (so a large window keeps its
//!   observations until they weigh on the budget), and worth masking when its output is
//!   estimated above [`MASKED_RESULT_MIN_TOKENS`] tokens (small outputs stay). One long agent turn thus keeps its
//!   newest results whole and its older observations as placeholders, instead of carrying all of
//!   them until the whole turn is folded into a summary; the calls (command, path, arguments)
//!   are never touched.
//!
//! Pinned and partial events are never candidates. A candidate is only a candidate: it is pruned
//! when its epoch closes ([`super::epochs`]). A pruned result keeps its call id, tool name and
//! error flag (so every call/result pair stays intact); only its output becomes
//! [`stale_result_placeholder`], whose bytes depend on the event alone: it names the event id
//! and the content address of the output (`contextfold://archive/<session>/<sha256>/<bytes>`).
//! Request pruning writes nothing: a host answers `archive_read` for such an address from its
//! log (the native store looks the body up among the session's results).

use crate::json_text::json_text;
use std::ops::Range;

use serde::Serialize;
use serde_json::Value;

use super::active::result_body;
use super::address::ArchiveAddress;
use super::candidate::{Candidate, CandidateKind, next_other_turn};
use crate::budget::{TokenEstimator, estimate_value};
use crate::diagnostics::{Diagnostic, ReasonCode};
use crate::event::{EventContent, RuntimeEvent};

#[allow(dead_code)] // named by the module docs; public before the API was narrowed
/// Number of newest completed turns whose tool results are never pruned as stale.
pub(crate) const PROTECTED_COMPLETED_TURNS: usize = 2;
/// A result is oversized when its output is estimated at strictly more tokens than this.
pub const STALE_RESULT_MIN_TOKENS: u64 = 4_096;
/// Number of newest tool results of a request that are never masked, in whichever turn they
/// are: the model's working set of observations. The reference is the observation-masking
/// baseline of "The Complexity Trap" (arXiv 2508.21433) and of `bench/quality.sh`, which keeps the
/// newest 10 tool outputs. Measured with `bench/quality.sh` (issue 37, point 3): keeping 3 (and
/// 10% of the budget) cut compactions per 100 agent steps at 8k/16k/32k from 22.6/6.7/1.8 to
/// 19.6/4.5/1.0 but lowered retention (35.9% against 36.6% at 8k), made 11 transaction tests'
/// over-budget logs fit without compacting, and masked what a large window had room for; 10
/// keeps retention (36.6% / 61.3% / 92.7%) at 22.6/6.4/1.6 compactions.
pub const KEPT_RECENT_RESULTS: usize = 10;
/// An old result is masked only when its output is estimated at strictly more tokens than this:
/// a short output (an exit status, a one-line listing, an edit's confirmation) costs about what
/// its placeholder costs (about 45 tokens) and says more, so it stays.
pub const MASKED_RESULT_MIN_TOKENS: u64 = 256;
/// Share of the history budget, in percent, that the outputs of the newer results must exceed
/// before an older result is masked: masking answers budget pressure, so a large window keeps
/// its newest observations whole until they fill a quarter of its budget (at 128k, about 28,000
/// tokens of outputs), while a small one (an 8k window's quarter is 1,500 tokens) masks as soon
/// as [`KEPT_RECENT_RESULTS`] newer results follow. A quarter matches the raw-tail share a
/// compaction keeps (`RAW_TAIL_SHARE_PERCENT`).
pub const KEPT_RECENT_RESULTS_SHARE_PERCENT: u64 = 25;

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

/// A `stale_tool_results_pruned` diagnostic, or `None` when nothing was pruned.
pub(crate) fn stale_diagnostic(pruned: &[PrunedResult]) -> Option<Diagnostic> {
    if pruned.is_empty() {
        return None;
    }
    let tokens: u64 = pruned.iter().map(|p| p.original_tokens).sum();
    let ids: Vec<&str> = pruned.iter().map(|p| p.runtime_event_id.as_str()).collect();
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

/// The text that replaces a stale or masked result's output: tool name, call id and event id,
/// all read from the event's envelope, and the archive address of the output's bytes (see
/// [`super::active::result_body`]; `None` when the session id cannot be an address), so the
/// same event always gets the same bytes (whatever estimator or string representation a runtime
/// measures the output with), and a host can serve the body back from its log.
pub fn stale_result_placeholder(
    tool_name: &str,
    call_id: &str,
    runtime_event_id: &str,
    address: Option<&ArchiveAddress>,
) -> String {
    let archived = address.map_or_else(String::new, |a| format!(", archived at {}", a.to_uri()));
    format!(
        "[stale tool result omitted from this request: tool {} call {}. The full result remains \
         in the event log as runtime event {}{archived}.]",
        quote(tool_name),
        quote(call_id),
        quote(runtime_event_id)
    )
}

/// JSON-quotes a model- or tool-supplied name so it cannot break the placeholder's text.
pub(super) fn quote(text: &str) -> String {
    json_text(&Value::String(text.to_owned()))
}

/// The stale oversized results of `request[tail]` as candidates. A candidate's key is the
/// position whose arrival made it stale: with a current turn after the tail, the first event
/// of the turn after the second newer turn (it entered the tail then); without one, that second
/// newer turn's first event.
pub(super) fn stale_candidates(
    request: &[&RuntimeEvent],
    tail: Range<usize>,
    estimates: &mut OutputTokens<'_>,
) -> Vec<Candidate> {
    let has_current = tail.end < request.len();
    // The first positions after `index` of up to three distinct turns, nearest first.
    let mut firsts: Vec<(&str, usize)> = Vec::with_capacity(4);
    let mut candidates = Vec::new();
    for index in tail.clone().rev() {
        let event = request[index];
        let turn = event.turn_id.as_str();
        let trigger = firsts.iter().filter(|(other, _)| *other != turn).nth(1).map(|f| f.1);
        if let Some(trigger) = trigger
            && !event.pinned
            && !event.partial
            && let Some(original) = estimates.of(index, event)
            && let Some((_, _, freed)) = prune_output(
                event,
                STALE_RESULT_MIN_TOKENS,
                original,
                estimates.estimator,
                Address::StandIn,
            )
        {
            let key = if has_current {
                next_other_turn(request, trigger).unwrap_or(tail.end)
            } else {
                trigger
            };
            candidates.push(Candidate { key, index, kind: CandidateKind::Output, freed });
        }
        firsts.retain(|(other, _)| *other != turn);
        firsts.insert(0, (turn, index));
        firsts.truncate(3);
    }
    candidates
}

/// The old results of `request[start..]` worth masking, as candidates: a result is old once
/// [`KEPT_RECENT_RESULTS`] newer (complete) results follow it and their outputs are estimated
/// above [`KEPT_RECENT_RESULTS_SHARE_PERCENT`] of `history_budget`. Its key is the position of
/// the newer result whose arrival made it old (the later of the two conditions), which depends
/// on the events up to that position alone.
pub(super) fn masked_candidates(
    request: &[&RuntimeEvent],
    start: usize,
    history_budget: u64,
    estimates: &mut OutputTokens<'_>,
) -> Vec<Candidate> {
    let kept_tokens = history_budget.saturating_mul(KEPT_RECENT_RESULTS_SHARE_PERCENT) / 100;
    // The complete results after the live head: (position, estimated output tokens).
    let results: Vec<(usize, u64)> = (start.min(request.len())..request.len())
        .filter(|&index| !request[index].partial)
        .filter_map(|index| Some((index, estimates.of(index, request[index])?)))
        .collect();
    let mut candidates = Vec::new();
    // `newer` is the sum of the outputs of results[at + 1..end].
    let (mut end, mut newer) = (0usize, 0u64);
    for (at, &(index, tokens)) in results.iter().enumerate() {
        if end <= at {
            (end, newer) = (at + 1, 0);
        }
        while newer <= kept_tokens && end < results.len() {
            newer = newer.saturating_add(results[end].1);
            end += 1;
        }
        let by_count = results.get(at + KEPT_RECENT_RESULTS).map(|r| r.0);
        let by_share = (newer > kept_tokens).then(|| results[end - 1].0);
        if let (Some(by_count), Some(by_share)) = (by_count, by_share)
            && tokens > MASKED_RESULT_MIN_TOKENS
            && !request[index].pinned
            && let Some((_, _, freed)) = prune_output(
                request[index],
                MASKED_RESULT_MIN_TOKENS,
                tokens,
                estimates.estimator,
                Address::StandIn,
            )
        {
            let key = by_count.max(by_share);
            candidates.push(Candidate { key, index, kind: CandidateKind::Output, freed });
        }
        if end > at + 1 {
            newer -= results[at + 1].1;
        }
    }
    candidates
}

/// The hash of a stand-in address: as long as a real one.
const STAND_IN_SHA256: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// How a placeholder's archive address is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Address {
    /// Hashed from the output: the placeholder that is sent.
    Exact,
    /// A stand-in of the same length (a zero hash): the placeholder a candidate's freed tokens
    /// are estimated with, so only results that are pruned are hashed.
    StandIn,
}

/// The estimated tokens of the result outputs of one request, each output estimated once
/// however often the pruning policies ask about it (an output is the longest text to estimate).
pub(super) struct OutputTokens<'e> {
    /// The request's estimator.
    pub(super) estimator: &'e dyn TokenEstimator,
    known: Vec<Option<u64>>,
}

impl<'e> OutputTokens<'e> {
    /// No output of a request of `events` events estimated yet.
    pub(super) fn new(estimator: &'e dyn TokenEstimator, events: usize) -> Self {
        OutputTokens { estimator, known: vec![None; events] }
    }

    /// The tokens of the output of `event`, the request's event at `index`; `None` when it is
    /// not a result.
    pub(super) fn of(&mut self, index: usize, event: &RuntimeEvent) -> Option<u64> {
        let (EventContent::ToolResult { output, .. }
        | EventContent::HostedToolResult { output, .. }) = &event.content
        else {
            return None;
        };
        let estimator = self.estimator;
        Some(*self.known.get_mut(index)?.get_or_insert_with(|| estimate_value(estimator, output)))
    }
}

/// `event`'s content with the output of a result larger than `min_tokens` (its output estimated
/// at `original_tokens`) replaced by the placeholder, the record of it and the tokens that
/// frees; `None` when it is not a result or not larger.
pub(super) fn prune_output(
    event: &RuntimeEvent,
    min_tokens: u64,
    original_tokens: u64,
    estimator: &dyn TokenEstimator,
    address: Address,
) -> Option<(EventContent, PrunedResult, u64)> {
    let (EventContent::ToolResult { call_id, tool_name, output, .. }
    | EventContent::HostedToolResult { call_id, tool_name, output, .. }) = &event.content
    else {
        return None;
    };
    if original_tokens <= min_tokens {
        return None;
    }
    let address = match address {
        Address::Exact => ArchiveAddress::for_content(&event.session_id, &result_body(output)),
        Address::StandIn => {
            // The body's length without copying it (a string's UTF-8 bytes, else its JSON).
            let bytes = match output {
                Value::String(text) => text.len(),
                other => json_text(other).len(),
            };
            ArchiveAddress::new(&event.session_id, STAND_IN_SHA256, bytes as u64)
        }
    };
    let placeholder = Value::String(stale_result_placeholder(
        tool_name,
        call_id,
        &event.runtime_event_id,
        address.ok().as_ref(),
    ));
    let freed = original_tokens.saturating_sub(estimate_value(estimator, &placeholder));
    let record = PrunedResult {
        runtime_event_id: event.runtime_event_id.clone(),
        call_id: call_id.clone(),
        tool_name: tool_name.clone(),
        original_tokens,
    };
    let content = event.content.with_output(placeholder)?;
    Some((content, record, freed))
}
