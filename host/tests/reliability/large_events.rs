//! Single events of several megabytes on a real SQLite file through the session runtime: a
//! tool result of 6 MiB of text (ASCII and multi-byte UTF-8 lines) is appended, read back
//! byte-identical (through the store and through an independent connection), projected with
//! the stale result pruned for the request (`stale_tool_results_pruned`, within the budget),
//! compacted with the offline extractive summarizer, and projected again within the budget: no message sent holds more
//! than the budget allows, and the durable state passes the independent verifier. The injected
//! fault prints a `FAULT-INJECTED` line.

use crate::reliability_support;

use std::time::Instant;

use contextfold_core::compaction::OutcomeKind;
use contextfold_core::projection::{Message, Part, Projection};
use contextfold_core::{CharEstimator, TokenEstimator};
use contextfold_host::runtime::{ExtractiveSummarizer, NoNativeCompactor, StopSignal};
use contextfold_host::storage::Store;
use reliability_support::verify::{assert_intact, canonical_rows};
use reliability_support::*;
use serde_json::{Value, json};

/// Size of the large tool result, in bytes.
const LARGE_BYTES: usize = 6 * 1024 * 1024;
/// The model window of the session, in tokens.
const WINDOW: u64 = 32_000;

/// `LARGE_BYTES` of build-log-like text: numbered lines, some with multi-byte characters.
fn large_output() -> String {
    let mut text = String::with_capacity(LARGE_BYTES + 128);
    let mut line = 0u64;
    while text.len() < LARGE_BYTES {
        let marker = if line.is_multiple_of(7) { "é漢🦀" } else { "ok" };
        text.push_str(&format!("line {line:08} test module::case_{line} ... {marker}\n"));
        line += 1;
    }
    text
}

/// The text of every part a message sends, for size checks.
fn message_texts(message: &Message) -> Vec<String> {
    message
        .parts
        .iter()
        .map(|part| match part {
            Part::Text { text } | Part::Reasoning { text, .. } => text.clone(),
            other => serde_json::to_string(other).expect("serializes"),
        })
        .collect()
}

#[tokio::test]
async fn a_multi_megabyte_tool_result_round_trips_projects_within_budget_and_compacts() {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("large.sqlite");
    let large = large_output();
    let mut builder = history(3);
    builder.turn("t3").user("run the whole test suite and show me the log");
    builder.response(Some("r3")).tool_call("c-large", "shell", json!({"cmd": "cargo test"}));
    builder.response(None);
    builder.tool_result("c-large", "shell", json!(large));
    builder.assistant("the suite passes; the log is long");
    for turn in 4..6 {
        extend(&mut builder, turn);
    }
    let events = builder.build();
    let store = std::sync::Arc::new(Store::open(&path).expect("open store"));
    store.append_events(SESSION, &events).expect("append the large event");

    // Byte-identical through the store and through an independent connection.
    let loaded = store.load_events(SESSION).expect("load");
    assert_eq!(loaded, events, "the log round-trips");
    let rows = canonical_rows(&path, SESSION);
    let stored_texts: Vec<String> = rows
        .iter()
        .filter_map(|(_, _, json)| {
            let value: Value = serde_json::from_str(json).expect("a stored row is JSON");
            find_string(&value, LARGE_BYTES).map(str::to_owned)
        })
        .collect();
    assert_eq!(stored_texts.len(), 1, "exactly one stored row holds the large text");
    assert!(stored_texts[0].as_bytes() == large.as_bytes(), "the stored text is byte-identical");

    // Before compaction: it cannot fit, and the projection never claims it does.
    let rt = runtime(&store, WINDOW, false, ExtractiveSummarizer, NoNativeCompactor);
    let before = rt.project(false).await.expect("project").projection;
    // Before compaction: the stale result is pruned for the request (the design's stale tool
    // result pruning), so the projection fits and no message carries the large text.
    let codes: Vec<&str> = before.diagnostics.iter().map(|d| d.code.as_str()).collect();
    assert!(codes.contains(&"stale_tool_results_pruned"), "{codes:?}");
    assert_within_budget("before compaction", &before);

    // Compaction with the offline summarizer, then a projection within the budget.
    let before_rows = canonical_rows(&path, SESSION);
    let report = rt.compact_manually(&StopSignal::new()).await.expect("compaction");
    assert_eq!(report.outcome.outcome, OutcomeKind::Recorded, "{:?}", report.outcome);
    let after = rt.project_for_request().await.expect("project").projection;
    assert!(after.fits, "after compaction the projection fits: {:?}", after.diagnostics);
    assert!(after.estimated_tokens <= after.history_budget);
    let sent: u64 = after
        .messages
        .iter()
        .flat_map(message_texts)
        .map(|text| CharEstimator.estimate_text(&text))
        .sum();
    assert!(
        sent <= after.history_budget,
        "{sent} tokens sent over a {} budget",
        after.history_budget
    );
    let largest = after.messages.iter().flat_map(message_texts).map(|t| t.len()).max();
    assert!(largest.unwrap_or(0) < LARGE_BYTES / 16, "a message carries the large text whole");

    // The canonical log is unchanged and the durable state verifies.
    let found = assert_intact(&path, SESSION, &before_rows);
    assert!(found.checkpoints >= 1, "the checkpoint is recorded");
    assert_eq!(store.load_events(SESSION).expect("load"), events, "no canonical event changed");
    report_fault(
        "large_tool_result_6mib",
        "compacted_within_budget",
        &format!(
            "bytes={} tokens_before={} tokens_after={} budget={} elapsed_ms={}",
            large.len(),
            before.estimated_tokens,
            after.estimated_tokens,
            after.history_budget,
            started.elapsed().as_millis()
        ),
    );
}

/// The projection fits, its estimate is within the budget, the text it sends is within the
/// budget by an independent count, and no message carries the large text.
fn assert_within_budget(when: &str, projection: &Projection) {
    assert!(projection.fits, "{when}: {:?}", projection.diagnostics);
    assert!(projection.estimated_tokens <= projection.history_budget, "{when}");
    let texts: Vec<String> = projection.messages.iter().flat_map(message_texts).collect();
    let sent: u64 = texts.iter().map(|text| CharEstimator.estimate_text(text)).sum();
    assert!(sent <= projection.history_budget, "{when}: {sent} tokens over the budget");
    let largest = texts.iter().map(String::len).max().unwrap_or(0);
    assert!(largest < LARGE_BYTES / 64, "{when}: a part of {largest} bytes is sent");
}

/// The first string of at least `min_len` bytes anywhere in `value`.
fn find_string(value: &Value, min_len: usize) -> Option<&str> {
    match value {
        Value::String(text) if text.len() >= min_len => Some(text),
        Value::Array(items) => items.iter().find_map(|item| find_string(item, min_len)),
        Value::Object(map) => map.values().find_map(|item| find_string(item, min_len)),
        _ => None,
    }
}

/// In the active turn the large result is not stale, so it is not pruned: the projection says
/// it does not fit (never a false `fits`), the mid-turn evaluation compacts it with the
/// extractive summarizer, and the next request fits its budget; the durable state verifies.
#[tokio::test]
async fn a_multi_megabyte_result_in_the_active_turn_is_compacted_mid_turn() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("active.sqlite");
    let store = seeded_store(&path, 3);
    let mut builder = history(3);
    let known = builder.events().len();
    builder.turn("t3").user("run the whole test suite and show me the log");
    builder.response(Some("r3")).tool_call("c-large", "shell", json!({"cmd": "cargo test"}));
    builder.response(None);
    builder.tool_result("c-large", "shell", json!(large_output()));
    store.append_events(SESSION, &builder.events()[known..]).expect("append the active turn");
    let rt = runtime(&store, WINDOW, false, ExtractiveSummarizer, NoNativeCompactor);
    rt.begin_turn("t3").expect("begin");
    let projection = rt.project(false).await.expect("project").projection;
    assert!(!projection.fits, "the active turn's 6 MiB cannot fit");
    assert!(projection.estimated_tokens > projection.history_budget);
    let before_rows = canonical_rows(&path, SESSION);
    let report = rt.evaluate_mid_turn().await.expect("evaluate").expect("it compacts");
    assert_eq!(report.outcome.outcome, OutcomeKind::Recorded, "{:?}", report.outcome);
    let after = rt.project_for_request().await.expect("project").projection;
    assert_within_budget("after mid-turn compaction", &after);
    assert_intact(&path, SESSION, &before_rows);
    let detail = format!(
        "tokens_before={} tokens_after={} budget={}",
        projection.estimated_tokens, after.estimated_tokens, after.history_budget
    );
    report_fault("large_tool_result_active_turn", "compacted_within_budget", &detail);
}
