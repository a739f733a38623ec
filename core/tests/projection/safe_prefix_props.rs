//! Property tests for safe-prefix selection against a brute-force oracle.
//!
//! Random sessions mix user text, assistant text, reasoning, parallel tool-call batches sharing a
//! response id, hosted calls, results delayed into later turns or into the current turn,
//! interrupted calls, duplicate results, a response continued across a turn, reopened turn ids
//! and occasional pinned or partial events, in prior turns and in the current (active) turn. The
//! oracle below restates the rules directly, one cut at a time, without any of the
//! precomputation the implementation uses.
#![cfg(not(target_arch = "wasm32"))]

use contextfold_core::budget::{TokenEstimator, estimate_event};
use contextfold_core::checkpoint::{
    PrefixOptions, safe_boundaries, select_fitting_tail, select_safe_prefix, split_current_turn,
    turn_count,
};
use contextfold_core::event::{EventContent, LogError, RuntimeEvent};
use contextfold_core::{CharEstimator, LogBuilder};
use proptest::prelude::*;
use serde_json::json;
use std::collections::BTreeSet;

/// One step of a generated session.
#[derive(Debug, Clone)]
enum Op {
    NewTurn,
    ReopenTurn(usize),
    User(usize),
    Assistant(usize),
    Reasoning(usize),
    Batch {
        calls: usize,
        reasoning: bool,
    },
    Resolve(usize),
    Duplicate(usize),
    Hosted {
        resolve_now: bool,
    },
    ContinueResponse(usize),
    Pinned(usize),
    PinnedStep(usize),
    Partial(usize),
    /// A call reusing the id of an answered call (providers that number calls per turn).
    Reuse(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        60 => Just(Op::NewTurn),
        6 => any::<usize>().prop_map(Op::ReopenTurn),
        50 => (0usize..60).prop_map(Op::User),
        50 => (0usize..80).prop_map(Op::Assistant),
        20 => (0usize..40).prop_map(Op::Reasoning),
        40 => (1usize..4, any::<bool>()).prop_map(|(calls, reasoning)| Op::Batch { calls, reasoning }),
        90 => any::<usize>().prop_map(Op::Resolve),
        8 => any::<usize>().prop_map(Op::Duplicate),
        20 => any::<bool>().prop_map(|resolve_now| Op::Hosted { resolve_now }),
        8 => (0usize..20).prop_map(Op::ContinueResponse),
        3 => (0usize..20).prop_map(Op::Pinned),
        3 => (0usize..20).prop_map(Op::Partial),
        2 => (0usize..20).prop_map(Op::PinnedStep),
        10 => any::<usize>().prop_map(Op::Reuse),
    ]
}

/// Interprets ops into a log, tracking pending and answered calls across turns.
#[derive(Default)]
struct Session {
    turns: usize,
    responses: usize,
    calls: usize,
    pending: Vec<(String, bool)>,
    answered: Vec<(String, bool)>,
    last_response: Option<String>,
}

impl Session {
    fn result(log: &mut LogBuilder, call_id: &str, hosted: bool) {
        let (call_id, tool_name, output) = (call_id.to_owned(), "tool".to_owned(), json!("out"));
        log.push(match hosted {
            true => EventContent::HostedToolResult { call_id, tool_name, output, is_error: false },
            false => EventContent::ToolResult {
                call_id,
                tool_name,
                output,
                is_error: false,
                attachments: Vec::new(),
            },
        });
    }

    fn apply(&mut self, log: &mut LogBuilder, op: &Op, in_current_turn: bool) {
        match *op {
            Op::NewTurn | Op::ReopenTurn(_) if in_current_turn => {}
            Op::NewTurn => {
                self.turns += 1;
                log.turn(&format!("t{}", self.turns));
            }
            Op::ReopenTurn(pick) => {
                log.turn(&format!("t{}", pick % (self.turns + 1)));
            }
            Op::User(len) => {
                log.user(&"u".repeat(len));
            }
            Op::Assistant(len) => {
                log.assistant(&"a".repeat(len));
            }
            Op::Reasoning(len) => {
                log.reasoning(&"r".repeat(len));
            }
            Op::Batch { calls, reasoning } => {
                self.responses += 1;
                let response = format!("resp{}", self.responses);
                log.response(Some(&response));
                if reasoning {
                    log.reasoning("plan");
                }
                for _ in 0..calls {
                    self.calls += 1;
                    let call_id = format!("call{}", self.calls);
                    log.tool_call(&call_id, "tool", json!({"n": self.calls}));
                    self.pending.push((call_id, false));
                }
                log.response(None);
                self.last_response = Some(response);
            }
            Op::Resolve(pick) if !self.pending.is_empty() => {
                let (call_id, hosted) = self.pending.remove(pick % self.pending.len());
                Self::result(log, &call_id, hosted);
                self.answered.push((call_id, hosted));
            }
            Op::Duplicate(pick) if !self.answered.is_empty() => {
                let (call_id, hosted) = self.answered[pick % self.answered.len()].clone();
                Self::result(log, &call_id, hosted);
            }
            Op::Reuse(pick) if !self.answered.is_empty() => {
                let (call_id, hosted) = self.answered[pick % self.answered.len()].clone();
                let (tool_name, input) = ("tool".to_owned(), json!({"again": true}));
                log.push(match hosted {
                    true => {
                        EventContent::HostedToolCall { call_id: call_id.clone(), tool_name, input }
                    }
                    false => EventContent::ToolCall { call_id: call_id.clone(), tool_name, input },
                });
                self.pending.push((call_id, hosted));
            }
            Op::Resolve(_) | Op::Duplicate(_) | Op::Reuse(_) => {}
            Op::Hosted { resolve_now } => {
                self.calls += 1;
                let call_id = format!("hosted{}", self.calls);
                log.push(EventContent::HostedToolCall {
                    call_id: call_id.clone(),
                    tool_name: "web_search".into(),
                    input: json!({"q": "x"}),
                });
                match resolve_now {
                    true => Self::result(log, &call_id, true),
                    false => self.pending.push((call_id, true)),
                }
            }
            Op::ContinueResponse(len) => {
                log.push(EventContent::AssistantText { text: "c".repeat(len) }).response_id =
                    self.last_response.clone();
            }
            Op::Pinned(len) => {
                log.push(EventContent::SystemNote { text: "p".repeat(len) }).pinned = true
            }
            Op::PinnedStep(len) => {
                log.push(EventContent::AssistantText { text: "k".repeat(len) }).pinned = true
            }
            Op::Partial(len) => {
                log.push(EventContent::AssistantText { text: "s".repeat(len) }).partial = true;
            }
        }
    }
}

/// A generated session: its events and the current turn id to pass (maybe naming no event).
fn session() -> impl Strategy<Value = (Vec<RuntimeEvent>, Option<String>)> {
    let prior = prop::collection::vec(op(), 0..50);
    let current = prop::option::of(prop::collection::vec(op(), 0..6));
    (prior, current, any::<bool>()).prop_map(|(prior, current, name_absent)| {
        let mut log = LogBuilder::new("s");
        let mut session = Session::default();
        for op in &prior {
            session.apply(&mut log, op, false);
        }
        let current_turn_id = match current {
            Some(ops) => {
                log.turn("current").user("now");
                for op in &ops {
                    session.apply(&mut log, op, true);
                }
                Some("current".to_owned())
            }
            None => name_absent.then(|| "absent".to_owned()),
        };
        (log.build(), current_turn_id)
    })
}

// ---- The oracle: the rules restated, one cut at a time. ----

fn oracle_prior_end(events: &[RuntimeEvent], current: Option<&str>) -> Result<usize, usize> {
    let Some(current) = current else { return Ok(events.len()) };
    let members: Vec<usize> = (0..events.len()).filter(|&i| events[i].turn_id == current).collect();
    let Some(&first) = members.first() else { return Ok(events.len()) };
    if members.len() == events.len() - first {
        Ok(first)
    } else {
        Err((first..events.len()).find(|&i| events[i].turn_id != current).expect("a gap"))
    }
}

/// The call id an event names, as a call or as a result.
fn call_key(event: &RuntimeEvent) -> Option<&str> {
    match &event.content {
        EventContent::ToolCall { call_id, .. }
        | EventContent::HostedToolCall { call_id, .. }
        | EventContent::ToolResult { call_id, .. }
        | EventContent::HostedToolResult { call_id, .. } => Some(call_id),
        _ => None,
    }
}

fn is_call(event: &RuntimeEvent) -> bool {
    matches!(event.content, EventContent::ToolCall { .. } | EventContent::HostedToolCall { .. })
}

fn is_result(event: &RuntimeEvent) -> bool {
    call_key(event).is_some() && !is_call(event)
}

/// User text and notes; everything else is produced by a model step.
fn is_message(event: &RuntimeEvent) -> bool {
    matches!(
        event.content,
        EventContent::UserText { .. }
            | EventContent::SystemNote { .. }
            | EventContent::RuntimeNote { .. }
    )
}

/// Events `a < b` naming one call id belong to one exchange unless a call in `(a, b]` opens a
/// new one: a call whose previous event naming that id is a result.
fn same_exchange(events: &[RuntimeEvent], a: usize, b: usize) -> bool {
    let key = call_key(&events[a]);
    if key.is_none() || call_key(&events[b]) != key {
        return false;
    }
    !((a + 1)..=b).any(|k| {
        is_call(&events[k])
            && call_key(&events[k]) == key
            && (0..k)
                .rev()
                .find(|&j| call_key(&events[j]) == key)
                .is_some_and(|j| is_result(&events[j]))
    })
}

/// `true` when some call exchange or response batch has members on both sides of `cut`.
fn oracle_splits(events: &[RuntimeEvent], cut: usize) -> bool {
    (0..cut).any(|a| {
        (cut..events.len()).any(|b| {
            let same_response =
                events[a].response_id.is_some() && events[a].response_id == events[b].response_id;
            same_response || same_exchange(events, a, b)
        })
    })
}

/// A complete event of a later step than `events[i]` follows it.
fn later_step_follows(events: &[RuntimeEvent], i: usize) -> bool {
    ((i + 1)..events.len()).any(|j| {
        let other = &events[j];
        let same_batch = other.response_id.is_some() && other.response_id == events[i].response_id;
        !other.partial && !is_result(other) && !same_batch
    })
}

/// Events no checkpoint may cover yet.
fn is_live(events: &[RuntimeEvent], prior_end: usize, i: usize) -> bool {
    let event = &events[i];
    let streaming = event.partial && !later_step_follows(events, i);
    let pinned_step = i >= prior_end && event.pinned && !is_message(event);
    let running = i >= prior_end
        && is_call(event)
        && !((i + 1)..events.len())
            .any(|j| is_result(&events[j]) && call_key(&events[j]) == call_key(event))
        && !later_step_follows(events, i);
    streaming || pinned_step || running
}

fn oracle_is_safe(events: &[RuntimeEvent], prior_end: usize, cut: usize) -> bool {
    if cut == 0 || cut > events.len() {
        return false;
    }
    let (before, in_current) = (&events[cut - 1], cut > prior_end);
    let position_ok = if cut == events.len() {
        !in_current || !is_message(before)
    } else {
        let after = &events[cut];
        let turn_end = after.turn_id != before.turn_id;
        let between_steps = !is_message(before)
            && (is_message(after)
                || is_result(after)
                || match (&before.response_id, &after.response_id) {
                    (Some(x), Some(y)) => x != y,
                    _ => is_result(before),
                });
        (turn_end && !in_current) || between_steps
    };
    position_ok && !(0..cut).any(|i| is_live(events, prior_end, i)) && !oracle_splits(events, cut)
}

/// Whole turns in `events[cut..prior_end]`: the turn starts in that range.
fn whole_turns(events: &[RuntimeEvent], cut: usize, prior_end: usize) -> usize {
    (cut..prior_end).filter(|&s| s == 0 || events[s].turn_id != events[s - 1].turn_id).count()
}

fn tokens(events: &[RuntimeEvent]) -> u64 {
    events.iter().map(|event| estimate_event(&CharEstimator, event)).sum()
}

fn oracle_fitting_tail(
    events: &[RuntimeEvent],
    from: usize,
    prior_end: usize,
    budget: u64,
) -> usize {
    (from..prior_end)
        .filter(|&s| {
            s == from || (events[s].turn_id != events[s - 1].turn_id && !oracle_splits(events, s))
        })
        .find(|&s| tokens(&events[s..prior_end]) <= budget)
        .unwrap_or(prior_end)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn selected_prefix_is_safe_and_maximal(
        (events, current) in session(),
        reserve_tail_turns in prop_oneof![3 => Just(0usize), 1 => 1usize..4],
        reserve_tail_tokens in prop_oneof![3 => Just(0u64), 1 => 1u64..120],
    ) {
        let prior_end = oracle_prior_end(&events, current.as_deref()).expect("generated as a suffix");
        prop_assert_eq!(split_current_turn(&events, current.as_deref()), Ok(prior_end));

        let safe: Vec<usize> =
            (1..=events.len()).filter(|&cut| oracle_is_safe(&events, prior_end, cut)).collect();
        prop_assert_eq!(safe_boundaries(&events, current.as_deref()).expect("suffix"), safe.clone());

        let options = PrefixOptions { current_turn_id: current.clone(), reserve_tail_tokens, reserve_tail_turns };
        let reserve_ok = |cut: usize| {
            tokens(&events[cut..]) >= reserve_tail_tokens
                && whole_turns(&events, cut, prior_end) >= reserve_tail_turns
        };
        let expected = safe.iter().copied().filter(|&cut| reserve_ok(cut)).max();
        let selected = select_safe_prefix(&events, &options, &CharEstimator).expect("suffix");
        prop_assert_eq!(selected.map(|prefix| prefix.end), expected);

        if let Some(prefix) = selected {
            let covered = &events[..prefix.end];
            prop_assert!((0..prefix.end).all(|i| !is_live(&events, prior_end, i)));
            // Inside the current turn coverage ends after a model step, never on its message.
            prop_assert!(prefix.end <= prior_end || !is_message(&events[prefix.end - 1]));
            prop_assert!(!oracle_splits(&events, prefix.end));
            prop_assert!(reserve_ok(prefix.end));
            prop_assert!(((prefix.end + 1)..=events.len()).all(|cut| !oracle_is_safe(&events, prior_end, cut) || !reserve_ok(cut)));
            let distinct: BTreeSet<&str> = covered.iter().map(|e| e.turn_id.as_str()).collect();
            prop_assert_eq!(prefix.turn_count, distinct.len() as u64);
            prop_assert_eq!(turn_count(covered), distinct.len() as u64);
        }
    }

    #[test]
    fn fitting_tail_is_the_earliest_valid_start_that_fits(
        (events, current) in session(),
        from_pick in any::<prop::sample::Index>(),
        budget_share in 0u64..=110,
    ) {
        let prior_end = oracle_prior_end(&events, current.as_deref()).expect("generated as a suffix");
        let from = from_pick.index(prior_end + 1);
        let budget = tokens(&events[from..prior_end]) * budget_share / 100;
        let start = select_fitting_tail(&events, from, prior_end, budget, &CharEstimator);
        prop_assert_eq!(start, oracle_fitting_tail(&events, from, prior_end, budget));
        prop_assert!((from..=prior_end).contains(&start));
        if start < prior_end {
            prop_assert!(tokens(&events[start..prior_end]) <= budget);
            prop_assert!(start == from || !oracle_splits(&events, start));
        }
    }

    #[test]
    fn a_current_turn_that_is_not_a_suffix_is_rejected(
        (events, _) in session(),
        pick in any::<prop::sample::Index>(),
    ) {
        prop_assume!(!events.is_empty());
        let current = events[pick.index(events.len())].turn_id.clone();
        let expected = oracle_prior_end(&events, Some(&current))
            .map_err(|index| LogError::CurrentTurnNotSuffix { index });
        prop_assert_eq!(split_current_turn(&events, Some(&current)), expected.clone());
        let options = PrefixOptions { current_turn_id: Some(current.clone()), ..PrefixOptions::default() };
        let selected = select_safe_prefix(&events, &options, &CharEstimator);
        prop_assert_eq!(selected.is_err(), expected.is_err());
    }
}

/// An 80,000-event session with an injected estimator: selection is one linear pass (a quadratic
/// scan would take minutes in a debug build).
#[test]
fn large_session_is_linear() {
    struct Unit;
    impl TokenEstimator for Unit {
        fn estimate_text(&self, _text: &str) -> u64 {
            1
        }
    }
    let mut log = LogBuilder::new("s");
    for turn in 0..20_000 {
        log.turn(&format!("t{turn}")).user("q");
        let call_id = format!("c{turn}");
        log.response(Some(&format!("r{turn}"))).tool_call(&call_id, "tool", json!({}));
        log.response(None).tool_result(&call_id, "tool", json!("ok")).assistant("a");
    }
    log.turn("current").user("now");
    let events = log.build();
    let options = PrefixOptions {
        current_turn_id: Some("current".into()),
        reserve_tail_turns: 2,
        ..PrefixOptions::default()
    };
    let prefix = select_safe_prefix(&events, &options, &Unit).expect("suffix").expect("a prefix");
    assert_eq!((prefix.end, prefix.turn_count), (80_000 - 8, 19_998));
    // Every turn start, and the step boundary after each result.
    assert_eq!(safe_boundaries(&events, Some("current")).expect("suffix").len(), 40_000);
    // Each turn estimates to 21 tokens (four events of 1 token plus 4 overhead, the call 2 + 4).
    assert_eq!(select_fitting_tail(&events, 0, 80_000, 21 * 3, &Unit), 80_000 - 12);
    assert_eq!(select_fitting_tail(&events, 0, 80_000, 21 * 3 - 1, &Unit), 80_000 - 8);
}
