use serde_json::json;

use super::*;
use crate::budget::{CharEstimator, estimate_events};
use crate::event::EventContent;
use crate::log_builder::LogBuilder;

/// One token per byte, no per-message overhead: token figures in tests are exact.
struct ByteEstimator;

impl TokenEstimator for ByteEstimator {
    fn estimate_text(&self, text: &str) -> u64 {
        text.len() as u64
    }

    fn message_overhead(&self) -> u64 {
        0
    }
}

fn options(current: Option<&str>) -> PrefixOptions {
    PrefixOptions { current_turn_id: current.map(str::to_owned), ..Default::default() }
}

fn select(events: &[RuntimeEvent], options: &PrefixOptions) -> Option<SafePrefix> {
    select_safe_prefix(events, options, &ByteEstimator).expect("current turn is a suffix")
}

fn boundaries(events: &[RuntimeEvent], current: Option<&str>) -> Vec<usize> {
    safe_boundaries(events, current).expect("current turn is a suffix")
}

#[test]
fn tool_pair_across_turns_blocks_the_cut_between_them() {
    let mut log = LogBuilder::new("s");
    log.turn("a").user("list files").tool_call("c1", "ls", json!({})); // 0, 1
    log.turn("b").tool_result("c1", "ls", json!("x")).assistant("done"); // 2, 3
    log.turn("c").user("more"); // 4
    log.turn("now").user("go"); // 5
    let events = log.build();
    // 3 falls between two steps of turn b (after c1's result); 2 would split c1 from it.
    assert_eq!(boundaries(&events, Some("now")), vec![3, 4, 5]);
    let prefix = select(&events, &options(Some("now"))).expect("a safe prefix");
    assert_eq!(prefix, SafePrefix { end: 5, turn_count: 3 });
}

#[test]
fn prior_call_answered_in_the_current_turn_folds_only_with_its_result() {
    let mut log = LogBuilder::new("s");
    log.turn("a").user("hi").assistant("hello"); // 0, 1
    log.turn("b").user("run").tool_call("c1", "shell", json!({})); // 2, 3
    log.turn("now").tool_result("c1", "shell", json!("ok")); // 4
    let events = log.build();
    // No cut between the call (prior) and its result (current turn); the settled step as a
    // whole may be covered.
    assert_eq!(boundaries(&events, Some("now")), vec![2, 5]);
    assert_eq!(select(&events, &options(Some("now"))).map(|p| p.end), Some(5));
}

#[test]
fn parallel_batch_with_a_delayed_result_folds_with_the_later_turn() {
    let mut log = LogBuilder::new("s");
    log.turn("a").user("check both"); // 0
    log.response(Some("r1")).reasoning("two reads").tool_call("x", "read", json!(1)); // 1, 2
    log.tool_call("y", "read", json!(2)).response(None); // 3
    log.tool_result("x", "read", json!("1")); // 4
    log.turn("b").tool_result("y", "read", json!("2")).assistant("both read"); // 5, 6
    log.turn("now").user("next"); // 7
    let events = log.build();
    // 6 follows y's result; every cut before it splits the batch or one of its calls.
    assert_eq!(boundaries(&events, Some("now")), vec![6, 7]);
}

#[test]
fn one_response_spanning_turns_blocks_the_cut() {
    let mut log = LogBuilder::new("s");
    log.turn("a").user("q"); // 0
    log.response(Some("r1")).assistant("part one"); // 1
    log.turn("b");
    log.push(EventContent::AssistantText { text: "part two".into() }).response_id =
        Some("r1".into()); // 2
    log.user("thanks"); // 3
    let events = log.build();
    assert_eq!(boundaries(&events, None), vec![3, 4]);
}

#[test]
fn pinned_events_outside_the_current_turn_are_covered_like_any_other() {
    let mut log = LogBuilder::new("s");
    log.turn("a").push(EventContent::SystemNote { text: "rules".into() }).pinned = true; // 0
    log.user("hi").assistant("hello"); // 1, 2
    log.turn("b").user("two"); // 3
    log.push(EventContent::AssistantText { text: "keep".into() }).pinned = true; // 4
    log.turn("c").user("three").assistant("3"); // 5, 6
    let events = log.build();
    assert_eq!(boundaries(&events, None), vec![3, 5, 7]);
    assert_eq!(boundaries(&events, Some("c")), vec![3, 5, 7]);
}

#[test]
fn a_pinned_step_of_the_current_turn_bars_coverage_but_its_messages_do_not() {
    let mut log = LogBuilder::new("s");
    log.turn("a").user("one").assistant("1"); // 0, 1
    log.turn("now").user("task"); // 2
    log.push(EventContent::SystemNote { text: "house rules".into() }).pinned = true; // 3
    log.response(Some("r1")).tool_call("c1", "ls", json!({})); // 4
    log.response(None).tool_result("c1", "ls", json!("a b")); // 5
    log.response(Some("r2")); // 6: pinned assistant text
    log.push(EventContent::AssistantText { text: "keep me".into() }).pinned = true;
    log.response(None).tool_call("c2", "cat", json!({})); // 7 (a step of its own)
    log.tool_result("c2", "cat", json!("x")); // 8
    let events = log.build();
    // The pinned note is part of the live head (replayed), the pinned step is live.
    assert_eq!(boundaries(&events, Some("now")), vec![2, 6]);
}

#[test]
fn settled_steps_of_the_current_turn_are_cuts_and_a_running_call_is_not() {
    let mut log = LogBuilder::new("s");
    log.turn("now").user("fix the build"); // 0
    for step in 0..3 {
        let (call, response) = (format!("c{step}"), format!("r{step}"));
        log.response(Some(&response)).reasoning("think").tool_call(&call, "shell", json!(step));
        log.response(None).tool_result(&call, "shell", json!("ok"));
    } // steps at 1..4, 4..7, 7..10
    let settled = log.events().to_vec();
    assert_eq!(boundaries(&settled, Some("now")), vec![4, 7, 10]);
    // The next step's call is still running: nothing after its step start can be covered.
    log.response(Some("r3")).assistant("running the tests").tool_call("c3", "shell", json!(3));
    let running = log.events().to_vec();
    assert_eq!(boundaries(&running, Some("now")), vec![4, 7, 10]);
    // Once a later step has started, the unanswered call is interrupted and blocks nothing.
    log.response(Some("r4")).assistant("the tool never answered; moving on");
    let moved_on = log.build();
    assert_eq!(boundaries(&moved_on, Some("now")), vec![4, 7, 10, 12, 13]);
}

#[test]
fn a_streaming_partial_event_bars_coverage_and_an_abandoned_one_does_not() {
    let mut log = LogBuilder::new("s");
    log.turn("a").user("one").assistant("1"); // 0, 1
    log.turn("b").user("two"); // 2
    log.push(EventContent::AssistantText { text: "stream".into() }).partial = true; // 3
    let streaming = log.events().to_vec();
    assert_eq!(boundaries(&streaming, None), vec![2]);
    log.assistant("the complete answer"); // 4: a later step, so 3 was abandoned
    let abandoned = log.build();
    assert_eq!(boundaries(&abandoned, None), vec![2, 5]);
}

#[test]
fn a_reused_call_id_opens_a_new_exchange() {
    let mut log = LogBuilder::new("s");
    log.turn("now").user("task"); // 0
    for step in 0..3 {
        let response = format!("r{step}");
        log.response(Some(&response)).tool_call("call_0", "shell", json!(step));
        log.response(None).tool_result("call_0", "shell", json!("ok"));
    } // 1..3, 3..5, 5..7
    let events = log.build();
    assert_eq!(boundaries(&events, Some("now")), vec![3, 5, 7]);
}

#[test]
fn interrupted_call_in_a_completed_turn_is_compactable() {
    let mut log = LogBuilder::new("s");
    log.turn("a").user("run").tool_call("c1", "shell", json!({})); // 0, 1: never answered
    log.turn("b").user("never mind").assistant("ok"); // 2, 3
    log.turn("now").user("next"); // 4
    let events = log.build();
    assert_eq!(boundaries(&events, Some("now")), vec![2, 4]);
    assert_eq!(select(&events, &options(Some("now"))), Some(SafePrefix { end: 4, turn_count: 2 }));
}

#[test]
fn duplicate_results_all_stay_with_their_call() {
    let mut log = LogBuilder::new("s");
    log.turn("a").tool_call("c1", "shell", json!({})).tool_result("c1", "shell", json!("1"));
    log.turn("b").tool_result("c1", "shell", json!("again")); // 2
    log.turn("c").user("next"); // 3
    let events = log.build();
    // The second result answers c1 again (the projection drops it); it stays with the pair.
    assert_eq!(boundaries(&events, None), vec![3, 4]);
}

#[test]
fn hosted_pairs_are_exchanges_and_a_result_before_its_call_is_not_paired() {
    let mut log = LogBuilder::new("s");
    log.turn("a").push(EventContent::HostedToolCall {
        call_id: "h1".into(),
        tool_name: "web_search".into(),
        input: json!({"q": "rust"}),
    }); // 0
    log.turn("b").push(EventContent::HostedToolResult {
        call_id: "h1".into(),
        tool_name: "web_search".into(),
        output: json!([]),
        is_error: false,
    }); // 1
    log.tool_result("z", "late", json!("out of order")); // 2
    log.turn("c").tool_call("z", "late", json!({})); // 3
    log.turn("d").user("end"); // 4
    let events = log.build();
    // h1's call and result stay together (no cut at 1). The result of z comes before any call
    // (the projection drops it as an orphan), so it pairs with nothing and the call at 3 opens
    // its own exchange.
    assert_eq!(boundaries(&events, None), vec![2, 3, 4, 5]);
}

#[test]
fn single_giant_turn_is_compactable_whole() {
    let mut log = LogBuilder::new("s");
    log.turn("giant").user("refactor everything");
    for step in 0..300 {
        let (call, response) = (format!("c{step}"), format!("r{step}"));
        log.response(Some(&response)).reasoning("think").tool_call(&call, "edit", json!(step));
        log.response(None).tool_result(&call, "edit", json!("ok"));
    }
    log.assistant("all done");
    let giant_len = log.events().len();
    log.turn("now").user("thanks");
    let events = log.build();
    let prefix = select(&events, &options(Some("now"))).expect("the giant turn");
    assert_eq!(prefix, SafePrefix { end: giant_len, turn_count: 1 });
    assert_eq!(select_fold(0, &prefix), Some(Fold { start: 0, end: giant_len }));
}

#[test]
fn current_turn_that_is_not_a_suffix_is_rejected() {
    let mut log = LogBuilder::new("s");
    log.turn("a").user("one"); // 0
    log.turn("now").user("two"); // 1
    log.turn("a").assistant("late"); // 2
    let events = log.build();
    let expected = LogError::CurrentTurnNotSuffix { index: 2 };
    assert_eq!(split_current_turn(&events, Some("now")), Err(expected.clone()));
    assert_eq!(safe_boundaries(&events, Some("now")), Err(expected.clone()));
    let error = select_safe_prefix(&events, &options(Some("now")), &CharEstimator)
        .expect_err("the current turn is not a suffix");
    assert_eq!(error.code(), "log_current_turn_not_suffix");
}

#[test]
fn split_current_turn_handles_absent_and_whole_current_turns() {
    let mut log = LogBuilder::new("s");
    log.turn("a").user("one").assistant("1");
    let events = log.build();
    assert_eq!(split_current_turn(&events, None), Ok(2));
    assert_eq!(split_current_turn(&events, Some("unknown")), Ok(2));
    assert_eq!(split_current_turn(&events, Some("a")), Ok(0));
    // The whole log is the current turn; its settled step may be covered.
    assert_eq!(select(&events, &options(Some("a"))), Some(SafePrefix { end: 2, turn_count: 1 }));
    assert_eq!(split_current_turn(&[], Some("a")), Ok(0));
}

/// Turns `t0..t4` of 10, 20, 30, 40 and 50 bytes, then current turn `now`.
fn five_turns() -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new("s");
    for (turn, width) in [10usize, 20, 30, 40, 50].iter().enumerate() {
        log.turn(&format!("t{turn}"))
            .user(&"u".repeat(width / 2))
            .assistant(&"a".repeat(width / 2));
    }
    log.turn("now").user("current");
    log.build()
}

#[test]
fn reserved_tail_turns_keep_the_newest_turns_raw() {
    let events = five_turns();
    let reserve = |turns| PrefixOptions { reserve_tail_turns: turns, ..options(Some("now")) };
    assert_eq!(select(&events, &reserve(0)).map(|p| p.end), Some(10));
    assert_eq!(select(&events, &reserve(2)), Some(SafePrefix { end: 6, turn_count: 3 }));
    assert_eq!(select(&events, &reserve(4)).map(|p| p.end), Some(2));
    assert_eq!(select(&events, &reserve(5)), None);
}

#[test]
fn reserved_tail_tokens_keep_enough_raw_history() {
    let events = five_turns();
    let reserve = |tokens| PrefixOptions { reserve_tail_tokens: tokens, ..options(Some("now")) };
    // The tail is everything after the cut: the current turn's 7 bytes count too.
    assert_eq!(select(&events, &reserve(57)).map(|p| p.end), Some(8));
    assert_eq!(select(&events, &reserve(58)).map(|p| p.end), Some(6));
    assert_eq!(select(&events, &reserve(147)).map(|p| p.end), Some(2));
    assert_eq!(select(&events, &reserve(148)), None);
    let both = PrefixOptions { reserve_tail_tokens: 10, reserve_tail_turns: 3, ..reserve(0) };
    assert_eq!(select(&events, &both).map(|p| p.end), Some(4));
}

#[test]
fn fitting_tail_takes_the_newest_turns_that_fit() {
    let events = five_turns();
    let prior_end = split_current_turn(&events, Some("now")).expect("suffix");
    let tail = |from, budget| select_fitting_tail(&events, from, prior_end, budget, &ByteEstimator);
    assert_eq!(tail(0, 150), 0);
    assert_eq!(tail(0, 149), 2);
    assert_eq!(tail(0, 90), 6);
    assert_eq!(tail(0, 89), 8);
    assert_eq!(tail(0, 49), prior_end);
    assert_eq!(tail(3, 130), 3, "from itself is a candidate even mid-turn");
    assert_eq!(tail(3, 129), 4);
    assert_eq!(tail(prior_end, 0), prior_end);
    assert_eq!(tail(99, 1_000), prior_end, "from is clamped");
}

#[test]
fn fitting_tail_never_starts_inside_a_pair_or_batch() {
    let mut log = LogBuilder::new("s");
    log.turn("a").user("aaaa").tool_call("c1", "t", json!("")); // 0, 1
    log.turn("b").tool_result("c1", "t", json!("bbbb")); // 2
    log.turn("c").user("cccc"); // 3
    let events = log.build();
    let tail = |budget| select_fitting_tail(&events, 0, 4, budget, &ByteEstimator);
    let from_b = estimate_events(&ByteEstimator, &events[2..]);
    assert_eq!(tail(from_b), 3, "a tail starting at b would orphan the result of c1");
    assert_eq!(tail(estimate_events(&ByteEstimator, &events)), 0);
}

#[test]
fn turn_count_counts_distinct_ids() {
    let mut log = LogBuilder::new("s");
    log.turn("a").user("1").turn("b").user("2").turn("a").user("3");
    let events = log.build();
    assert_eq!(turn_count(&events), 2);
    assert_eq!(turn_count(&events[..2]), 2);
    assert_eq!(turn_count(&[]), 0);
}

#[test]
fn fold_is_empty_when_nothing_new_is_covered() {
    let prefix = SafePrefix { end: 7, turn_count: 2 };
    assert_eq!(select_fold(3, &prefix), Some(Fold { start: 3, end: 7 }));
    assert_eq!(select_fold(7, &prefix), None);
    assert_eq!(select_fold(9, &prefix), None);
}

#[test]
fn options_accept_the_documented_shapes_only() {
    let read = |value| serde_json::from_value::<PrefixOptions>(value).ok();
    let options = read(json!({ "currentTurnId": "t", "reserveTailTurns": 2 }));
    let expected = PrefixOptions {
        current_turn_id: Some("t".into()),
        reserve_tail_tokens: 0,
        reserve_tail_turns: 2,
    };
    assert_eq!(options, Some(expected));
    assert_eq!(read(json!({})), Some(PrefixOptions::default()));
    assert!(read(json!({ "reserveTail": 2 })).is_none());
    assert!(read(json!({ "reserveTailTokens": -1 })).is_none());
}
