//! Pruning in epochs: what is protected, and that the pruned set only grows as the log grows,
//! each change freeing at least `PRUNE_EPOCH_MIN_FREED_TOKENS`, including for task attachments
//! whose turn ends, results recorded late in another turn's place, pinned and partial events.

use contextfold_core::budget::{CharEstimator, estimate_event};
use contextfold_core::event::{Attachment, EventContent, RuntimeEvent};
use contextfold_core::projection::{PRUNE_EPOCH_MIN_FREED_TOKENS, RequestPrune, prune_request};
use contextfold_core::{LogBuilder, TokenEstimator};
use serde_json::json;

/// An archived 1280x800 screenshot: about 1,365 estimated tokens.
fn screenshot(n: u64) -> Attachment {
    serde_json::from_value(json!({
        "mediaType": "image/png", "byteLength": 40_000 + n,
        "sha256": format!("{:064x}", n + 1), "width": 1280, "height": 800,
    }))
    .expect("a valid archived attachment")
}

/// Prunes `log` as one request; with `named`, its current turn is its last event's turn (a
/// contiguous suffix, as `project` requires), otherwise no turn is current.
fn prune_as(log: &[RuntimeEvent], named: bool) -> RequestPrune<'_> {
    let request: Vec<&RuntimeEvent> = log.iter().collect();
    let current = log.last().map(|e| e.turn_id.as_str()).filter(|_| named);
    let prior_end =
        log.iter().position(|e| Some(e.turn_id.as_str()) == current).unwrap_or(log.len());
    prune_request(&request, 0..prior_end, &CharEstimator)
}

fn prune(log: &[RuntimeEvent]) -> RequestPrune<'_> {
    prune_as(log, true)
}

/// The pruned (event id, kind) pairs of a request.
fn pruned_set(result: &RequestPrune<'_>) -> Vec<String> {
    let mut set: Vec<String> =
        result.results.iter().map(|p| format!("{}:out", p.runtime_event_id)).collect();
    set.extend(result.attachments.iter().map(|p| format!("{}:att", p.runtime_event_id)));
    set.sort();
    set.dedup();
    set
}

/// Grows `events` one event at a time and checks the epoch invariants at every step; returns
/// the number of epochs seen.
fn grow_and_check(events: &[RuntimeEvent], named: bool) -> usize {
    let mut previous: Vec<String> = Vec::new();
    let mut sizes: Vec<u64> = Vec::new();
    let mut changes = 0;
    for len in 1..=events.len() {
        let log = &events[..len];
        let result = prune_as(log, named);
        let now = pruned_set(&result);
        for id in &previous {
            assert!(now.contains(id), "at {len}: {id} was pruned and came back");
        }
        let now_sizes: Vec<u64> =
            result.events.iter().map(|e| estimate_event(&CharEstimator, e)).collect();
        if now != previous {
            changes += 1;
            let freed: u64 =
                sizes.iter().zip(&now_sizes).map(|(old, new)| old.saturating_sub(*new)).sum();
            assert!(freed >= PRUNE_EPOCH_MIN_FREED_TOKENS, "at {len}: an epoch of {freed} tokens");
        } else {
            assert_eq!(sizes[..], now_sizes[..len - 1], "at {len}: an earlier event changed");
        }
        previous = now;
        sizes = now_sizes;
    }
    changes
}

/// A log of `turns` turns: a task with a screenshot, then steps whose results carry a
/// screenshot and, every third one, a large output.
fn screen_session(turns: usize, steps: usize) -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new("s");
    let mut n = 0;
    for turn in 0..turns {
        log.turn(&format!("t{turn}"));
        n += 1;
        log.push(EventContent::UserText { text: "look".into(), attachments: vec![screenshot(n)] });
        for step in 0..steps {
            let call = format!("c{turn}-{step}");
            log.response(Some(&call)).tool_call(&call, "screen", json!({})).response(None);
            n += 1;
            let output = if step % 3 == 0 { "x".repeat(24_000) } else { "ok".into() };
            log.push(EventContent::ToolResult {
                call_id: call.clone(),
                tool_name: "screen".into(),
                output: json!(output),
                is_error: false,
                attachments: vec![screenshot(n)],
            });
        }
    }
    log.build()
}

#[test]
fn pinned_partial_and_current_task_attachments_are_never_pruned() {
    let mut events = screen_session(3, 30);
    let task = events.iter().rposition(|e| matches!(e.content, EventContent::UserText { .. }));
    let task = task.expect("a task");
    events[2].pinned = true;
    events[4].partial = true;
    let result = prune(&events);
    assert!(result.cut.epochs > 2, "epochs closed: {:?}", result.cut);
    let pruned = pruned_set(&result);
    for index in [2, 4, task] {
        let id = &events[index].runtime_event_id;
        assert!(!pruned.iter().any(|p| p.starts_with(&format!("{id}:"))), "{id} was pruned");
        assert_eq!(*result.events[index], events[index]);
    }
    // The task of an ended turn is an ordinary candidate.
    assert!(pruned.contains(&format!("{}:att", events[0].runtime_event_id)));
    // The three newest attachments keep their bytes; older ones of the current turn may not.
    let newest: Vec<usize> =
        (0..events.len()).filter(|&i| !events[i].attachments().is_empty()).rev().take(3).collect();
    for index in newest {
        assert_eq!(*result.events[index], events[index], "event {index} changed");
    }
}

#[test]
fn the_pruned_set_grows_only_by_epochs_as_a_screen_session_grows() {
    for named in [true, false] {
        let epochs = grow_and_check(&screen_session(4, 24), named);
        assert!(epochs >= 5, "{epochs} epochs");
    }
}

#[test]
fn a_result_recorded_late_in_another_turn_joins_the_candidates_at_the_end() {
    let mut log = LogBuilder::new("s");
    let big = |n: usize| json!("y".repeat(n * 4));
    for turn in 0..8 {
        log.turn(&format!("t{turn}")).user("go");
        let call = format!("c{turn}");
        log.tool_call(&call, "shell", json!({})).tool_result(&call, "shell", big(6_000));
        if turn >= 2 {
            // A late result of an older turn, recorded in this one's place.
            let late = format!("late{turn}");
            log.turn(&format!("t{}", turn - 2)).tool_call(&late, "shell", json!({}));
            log.tool_result(&late, "shell", big(5_000)).turn(&format!("t{turn}"));
            log.assistant("continuing");
        }
    }
    let events = log.build();
    // Late results break the current-turn suffix `project` requires: no turn is named current.
    let epochs = grow_and_check(&events, false);
    assert!(epochs >= 3, "{epochs} epochs");
}

#[test]
fn one_result_under_the_minimum_waits_for_the_next() {
    let mut log = LogBuilder::new("s");
    for turn in 0..4 {
        let call = format!("c{turn}");
        log.turn(&format!("t{turn}")).user("go").tool_call(&call, "shell", json!({}));
        log.tool_result(&call, "shell", json!("z".repeat(20_000)));
    }
    let events = log.build();
    assert!(CharEstimator.estimate_text(&"z".repeat(20_000)) < PRUNE_EPOCH_MIN_FREED_TOKENS);
    let result = prune(&events);
    assert_eq!(result.cut.epochs, 0, "t0's result is stale but frees too little alone");
    assert!(result.results.is_empty() && result.diagnostics().is_empty());
    let mut log = LogBuilder::extend(events);
    log.turn("t4").user("go");
    let events = log.build();
    let result = prune(&events);
    assert_eq!(result.results.len(), 2, "t0 and t1 together close the epoch");
}
