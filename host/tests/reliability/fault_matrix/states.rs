//! Failure-table rows that need durable state or an automatic trigger, driven through
//! `SessionRuntime`, SQLite and the real Chat Completions client over loopback HTTP:
//!
//! - `previous_checkpoint_reused`: a store that already has a checkpoint, then a failing new
//!   compaction (manual, and mid-turn): the old checkpoint stays the tip, never widened.
//! - `malformed_summary_circuit_open`: two malformed summaries of one input arm the circuit;
//!   it is persisted in SQLite, so a new `Store::open` and a new runtime dispatch 0 requests
//!   for the unchanged input; a changed input is dispatched again.
//! - `replacement_not_smaller`: a valid summary larger than the events it would replace.
//! - `minimum_context_exceeds_budget`: a pre-turn compaction whose current turn alone exceeds
//!   the budget: 0 requests, exhausted.
//! - pre-turn compaction recorded and failing (exhausted, no visible note).

use std::path::Path;
use std::sync::Arc;

use contextfold_core::LogBuilder;
use contextfold_core::compaction::OutcomeKind;
use contextfold_host::runtime::StopSignal;
use contextfold_host::storage::Store;
use serde_json::json;

use super::providers::fixtures::valid_summary;
use super::providers::server::Reply;
use super::reliability_support::verify::{assert_intact, canonical_rows, recorded_checkpoints};
use super::reliability_support::{SESSION, extend, runtime, seeded_store};
use super::rows::{chat_ok, malformed_summary, padded_summary, server_error};
use super::{Servers, assert_expected, check, failed, failed_open, recorded};

const WINDOW: u64 = 16_000;

/// Appends completed turns `from..from + count`.
fn append_turns(store: &Store, from: usize, count: usize) {
    let mut builder = LogBuilder::extend(store.load_events(SESSION).expect("load"));
    let before = builder.events().len();
    for turn in from..from + count {
        extend(&mut builder, turn);
    }
    store.append_events(SESSION, &builder.events()[before..]).expect("append turns");
}

/// Appends the user message of the active turn `turn_id` (and, if `step`, one settled tool
/// step with a large result).
fn append_current_turn(store: &Store, turn_id: &str, user: &str, step: bool) {
    let mut builder = LogBuilder::extend(store.load_events(SESSION).expect("load"));
    let before = builder.events().len();
    builder.turn(turn_id).user(user);
    if step {
        builder.response(Some("r-live")).tool_call("c-live", "shell", json!({"cmd": "ls"}));
        builder.response(None);
        builder.tool_result("c-live", "shell", json!("src/lib.rs\n".repeat(400)));
    }
    store.append_events(SESSION, &builder.events()[before..]).expect("append current turn");
}

/// A store of 6 turns with one recorded text checkpoint over them; returns its id.
async fn store_with_checkpoint(path: &Path) -> (Arc<Store>, String) {
    let store = seeded_store(path, 6);
    let servers = Servers::start(vec![chat_ok(&valid_summary(), "stop")], vec![]).await;
    let (chat, codex) = servers.clients(None);
    let rt = runtime(&store, WINDOW, false, chat, codex);
    let report = rt.compact_manually(&StopSignal::new()).await.expect("first compaction");
    assert_expected(
        "setup_first_checkpoint",
        &report.outcome,
        &recorded(2, &["checkpoint_recorded"], 1, 0),
        &servers,
    );
    let id = report.outcome.checkpoint.expect("recorded").checkpoint_id;
    (store, id)
}

fn tip(store: &Store) -> Option<String> {
    store.current_checkpoint(SESSION).expect("lookup").checkpoint.map(|c| c.checkpoint_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn previous_checkpoint_reused_when_a_manual_compaction_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("reuse.sqlite");
    let (store, first) = store_with_checkpoint(&path).await;
    append_turns(&store, 6, 2);
    let before = canonical_rows(&path, SESSION);
    // A 500, then a good summary that only an (absent) retry would fetch.
    let servers =
        Servers::start(vec![server_error(), chat_ok(&valid_summary(), "stop")], vec![]).await;
    let (chat, codex) = servers.clients(None);
    let rt = runtime(&store, WINDOW, false, chat, codex);
    let report = rt.compact_manually(&StopSignal::new()).await.expect("outcome");
    let expect = failed_open(
        "provider_unavailable",
        &["provider_unavailable", "previous_checkpoint_reused"],
        1,
    );
    check("previous_checkpoint_reused", &report.outcome, &expect, &servers);
    let found = assert_intact(&path, SESSION, &before);
    assert_eq!(found.checkpoints, 1, "the failed compaction recorded nothing");
    assert_eq!(tip(&store).as_deref(), Some(first.as_str()), "the old checkpoint stays the tip");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn previous_checkpoint_reused_when_a_mid_turn_compaction_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("reuse-mid.sqlite");
    let (store, first) = store_with_checkpoint(&path).await;
    append_turns(&store, 6, 8);
    let servers =
        Servers::start(vec![server_error(), chat_ok(&valid_summary(), "stop")], vec![]).await;
    let (chat, codex) = servers.clients(None);
    let rt = runtime(&store, WINDOW, false, chat, codex);
    rt.begin_turn("t-live").expect("begin");
    append_current_turn(&store, "t-live", "now fix the docs", true);
    let before = canonical_rows(&path, SESSION);
    let report = rt.evaluate_mid_turn().await.expect("evaluate").expect("over capacity");
    let expect = failed(
        OutcomeKind::FailedOpen,
        "provider_unavailable",
        // The old checkpoint plus the raw turns since no longer fit (hence the compaction),
        // the rolling request omitted older tool results, the provider failed, the old
        // checkpoint is the fail-open projection's base.
        &[
            "checkpoint_over_budget",
            "tool_results_omitted",
            "provider_unavailable",
            "previous_checkpoint_reused",
        ],
        1,
        0,
    );
    check("previous_checkpoint_reused_mid_turn", &report.outcome, &expect, &servers);
    let found = assert_intact(&path, SESSION, &before);
    assert_eq!(found.checkpoints, 1);
    assert_eq!(canonical_rows(&path, SESSION), before, "an automatic failure writes no note");
    assert_eq!(tip(&store).as_deref(), Some(first.as_str()));
    rt.end_turn().expect("end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_summaries_open_a_circuit_that_survives_a_new_store_and_runtime() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("circuit.sqlite");
    let store = seeded_store(&path, 6);
    let before = canonical_rows(&path, SESSION);
    let malformed = malformed_summary();
    let servers =
        Servers::start(vec![chat_ok(&malformed, "stop"), chat_ok(&malformed, "stop")], vec![])
            .await;
    let (chat, codex) = servers.clients(None);
    let rt = runtime(&store, WINDOW, false, chat, codex);
    let report = rt.compact_manually(&StopSignal::new()).await.expect("outcome");
    let expect = failed_open(
        "malformed_summary_missing_section",
        &["malformed_summary_missing_section"; 2],
        2,
    );
    check("circuit_armed", &report.outcome, &expect, &servers);
    drop(rt);
    drop(store);

    // A new process's view: a new Store::open and a new runtime. A good summary is scripted,
    // so a dispatch would record a checkpoint; the open circuit must dispatch nothing.
    let store = Arc::new(Store::open(&path).expect("reopen"));
    let remembered = store.latest_circuit(SESSION).expect("circuit").expect("persisted");
    assert_eq!(remembered.len(), 1, "one fingerprint armed");
    let servers = Servers::start(vec![chat_ok(&padded_summary(20), "stop")], vec![]).await;
    let (chat, codex) = servers.clients(None);
    let rt = runtime(&store, WINDOW, false, chat, codex);
    let report = rt.compact_manually(&StopSignal::new()).await.expect("outcome");
    let expect =
        failed_open("malformed_summary_circuit_open", &["malformed_summary_circuit_open"], 0);
    check("malformed_summary_circuit_open", &report.outcome, &expect, &servers);
    let found = assert_intact(&path, SESSION, &before);
    assert_eq!(found.checkpoints, 0);

    // A changed source has another fingerprint: dispatched again, and recorded.
    append_turns(&store, 6, 1);
    let report = rt.compact_manually(&StopSignal::new()).await.expect("outcome");
    check(
        "circuit_changed_input",
        &report.outcome,
        &recorded(2, &["checkpoint_recorded"], 1, 0),
        &servers,
    );
    assert_eq!(assert_intact(&path, SESSION, &before).checkpoints, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_not_smaller_than_its_source_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bigger.sqlite");
    let store = seeded_store(&path, 2);
    let before = canonical_rows(&path, SESSION);
    // Valid sections, but far larger than the two turns it would replace.
    let summary = padded_summary(600);
    let servers =
        Servers::start(vec![chat_ok(&summary, "stop"), chat_ok(&valid_summary(), "stop")], vec![])
            .await;
    let (chat, codex) = servers.clients(None);
    let rt = runtime(&store, WINDOW, false, chat, codex);
    let report = rt.compact_manually(&StopSignal::new()).await.expect("outcome");
    // The two turns fit the window: a manual compaction that cannot make them smaller is a
    // typed no-op (`skipped`), with no failure note, so the log does not grow (issue 41). Over
    // the budget the same answer fails open with its note (core/tests/transaction/rows.rs).
    let expect =
        failed(OutcomeKind::Skipped, "replacement_not_smaller", &["replacement_not_smaller"], 1, 0);
    check("replacement_not_smaller", &report.outcome, &expect, &servers);
    assert!(report.outcome.failure_note.is_none());
    assert_eq!(canonical_rows(&path, SESSION), before, "no note was appended");
    assert_eq!(assert_intact(&path, SESSION, &before).checkpoints, 0);
    assert_eq!(recorded_checkpoints(&path, SESSION).len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_current_turn_larger_than_the_budget_exceeds_the_minimum_context() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("minimum.sqlite");
    let store = seeded_store(&path, 6);
    let servers = Servers::start(vec![chat_ok(&valid_summary(), "stop")], vec![]).await;
    let (chat, codex) = servers.clients(None);
    let rt = runtime(&store, WINDOW, false, chat, codex);
    rt.begin_turn("t-huge").expect("begin");
    // About 15,000 tokens of user text: more than the 12,000-token history budget alone.
    append_current_turn(
        &store,
        "t-huge",
        &"please read this log line carefully\n".repeat(1_700),
        false,
    );
    let before = canonical_rows(&path, SESSION);
    let report = rt.evaluate_pre_turn().await.expect("evaluate").expect("over capacity");
    let expect = failed(
        OutcomeKind::Exhausted,
        "context_budget_exhausted",
        &["minimum_context_exceeds_budget", "context_budget_exhausted"],
        0,
        0,
    );
    check("minimum_context_exceeds_budget", &report.outcome, &expect, &servers);
    assert_eq!(assert_intact(&path, SESSION, &before).checkpoints, 0);
    assert_eq!(canonical_rows(&path, SESSION), before);
    rt.end_turn().expect("end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_turn_compaction_records_or_exhausts() {
    for (name, replies, expect) in [
        (
            "pre_turn_recorded",
            vec![chat_ok(&padded_summary(20), "stop")],
            // The pre-turn request omits older tool results, like every summary request
            // over a fold this large.
            recorded(2, &["tool_results_omitted", "checkpoint_recorded"], 1, 0),
        ),
        (
            "pre_turn_http_500",
            vec![server_error(), chat_ok(&padded_summary(20), "stop")],
            failed(
                OutcomeKind::Exhausted,
                "context_budget_exhausted",
                &["tool_results_omitted", "provider_unavailable", "context_budget_exhausted"],
                1,
                0,
            ),
        ),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pre.sqlite");
        let store = seeded_store(&path, 10);
        let servers = Servers::start(replies, Vec::<Reply>::new()).await;
        let (chat, codex) = servers.clients(None);
        let rt = runtime(&store, WINDOW, false, chat, codex);
        rt.begin_turn("t-live").expect("begin");
        append_current_turn(&store, "t-live", "next: the docs", false);
        let before = canonical_rows(&path, SESSION);
        let report = rt.evaluate_pre_turn().await.expect("evaluate").expect("over capacity");
        check(name, &report.outcome, &expect, &servers);
        let found = assert_intact(&path, SESSION, &before);
        assert_eq!(found.checkpoints, usize::from(expect.schema.is_some()), "{name}");
        assert_eq!(canonical_rows(&path, SESSION), before, "{name}: no note from a turn trigger");
        rt.end_turn().expect("end");
    }
}
