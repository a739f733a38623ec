//! The design's failure table, storage and policy rows, on a real SQLite file through the
//! session runtime: append failures (read-only database, locked database), damaged projection
//! rows, tampered ledger rows (digest mismatch), schema-version skew, a smaller model window,
//! a model switch with a V3 checkpoint, and a full database (`SQLITE_FULL` through
//! `Store::set_max_pages`, no special filesystem needed) on the event append and on the
//! checkpoint append. Each row checks the outcome, its diagnostics, and
//! (through an independent connection) that no canonical event changed and no checkpoint
//! claims coverage it does not have. A full filesystem (a child process on a 512 KiB tmpfs)
//! is in `crash_loop.rs`. Every injected fault prints a
//! `FAULT-INJECTED` line.

use crate::providers;
use crate::reliability_support;

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use contextfold_core::compaction::{
    OutcomeKind, ProviderFailure, SummarizeEffect, SummaryRequest, SummaryResponse,
};
use contextfold_core::{ModelFacts, RuntimeEvent};
use contextfold_host::runtime::{ExtractiveSummarizer, NoNativeCompactor, StopSignal, Summarizer};
use contextfold_host::storage::{
    AgentRunRecord, LookupSource, SCHEMA_VERSION, Store, agent_run_kind,
};
use providers::fixtures::*;
use providers::server::{LoopbackServer, Reply, StreamEnd};
use reliability_support::verify::{assert_intact, canonical_rows, consistency};
use reliability_support::*;
use rusqlite::Connection;

fn codes_of(diagnostics: &[contextfold_core::Diagnostic]) -> Vec<&str> {
    diagnostics.iter().map(|d| d.code.as_str()).collect()
}

/// A store with `turns` turns and one recorded checkpoint (extractive summarizer).
async fn compacted(path: &std::path::Path, turns: usize) -> Arc<Store> {
    let store = seeded_store(path, turns);
    let rt = runtime(&store, 16_000, false, ExtractiveSummarizer, NoNativeCompactor);
    let report = rt.compact_manually(&StopSignal::new()).await.expect("compaction");
    assert_eq!(report.outcome.outcome, OutcomeKind::Recorded, "{:?}", report.outcome);
    store
}

/// Appends the user message of turn `turn` (the active turn of the next request).
fn open_turn(store: &Store, turns: usize) -> String {
    let mut builder = history(turns);
    let before = builder.events().len();
    let turn = format!("t{turns}");
    builder.turn(&turn).user("continue with the next failing test");
    store.append_events(SESSION, &builder.events()[before..]).expect("append turn");
    turn
}

#[tokio::test]
async fn read_only_database_refuses_the_append_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ro.sqlite");
    let store = seeded_store(&path, 6);
    let turn = open_turn(&store, 6);
    drop(store);
    let before = canonical_rows(&path, SESSION);
    let uri = format!("file:{}?mode=ro", path.display());
    let store = Arc::new(Store::open(uri).expect("a read-only open succeeds"));
    let rt = runtime(&store, 8_000, false, ExtractiveSummarizer, NoNativeCompactor);
    rt.begin_turn(&turn).expect("begin");
    let error = rt.evaluate_pre_turn().await.expect_err("nothing can be written");
    assert_eq!(error.code(), "storage_sqlite");
    assert!(error.to_string().contains("readonly"), "{error}");
    let found = assert_intact(&path, SESSION, &before);
    assert_eq!(found.checkpoints, 0);
    assert_eq!(canonical_rows(&path, SESSION).len(), before.len());
    report_fault(
        "append_read_only_database",
        "typed_error",
        &format!("code={} message={error}", error.code()),
    );
}

/// Takes an exclusive lock on the database when the summary is ready, so the durable append
/// that follows waits out the busy timeout and fails; the lock is released a second later.
struct LockBeforeAppend {
    path: std::path::PathBuf,
}

impl Summarizer for LockBeforeAppend {
    async fn summarize(
        &self,
        request: &SummaryRequest,
        effect: &SummarizeEffect,
        events: &[RuntimeEvent],
    ) -> Result<SummaryResponse, ProviderFailure> {
        let (locked, wait) = mpsc::channel();
        let path = self.path.clone();
        std::thread::spawn(move || {
            let conn = Connection::open(path).expect("open");
            conn.execute_batch("BEGIN EXCLUSIVE").expect("exclusive lock");
            locked.send(()).expect("signal");
            std::thread::sleep(contextfold_host::storage::BUSY_TIMEOUT + Duration::from_secs(1));
            conn.execute_batch("ROLLBACK").expect("release");
        });
        wait.recv().expect("lock taken");
        ExtractiveSummarizer.summarize(request, effect, events).await
    }
}

#[tokio::test]
async fn locked_database_fails_the_append_and_fails_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("locked.sqlite");
    let store = seeded_store(&path, 6);
    let before = canonical_rows(&path, SESSION);
    let rt =
        runtime(&store, 16_000, false, LockBeforeAppend { path: path.clone() }, NoNativeCompactor);
    let report = rt.compact_manually(&StopSignal::new()).await.expect("an outcome");
    let outcome = &report.outcome;
    assert_eq!(outcome.outcome, OutcomeKind::FailedOpen, "{outcome:?}");
    assert!(codes_of(&outcome.diagnostics).contains(&"append_failed"), "{:?}", outcome.diagnostics);
    assert!(
        outcome
            .diagnostics
            .iter()
            .any(|d| d.detail.contains("locked") || d.detail.contains("busy")),
        "{:?}",
        outcome.diagnostics
    );
    let found = assert_intact(&path, SESSION, &before);
    assert_eq!(found.checkpoints, 0);
    report_fault(
        "append_locked_database",
        "FailedOpen",
        &format!("diagnostics={:?}", codes_of(&outcome.diagnostics)),
    );
}

/// Appends one turn with a tool result of `bytes` bytes.
fn big_turn(turns: usize, bytes: usize) -> Vec<RuntimeEvent> {
    let mut builder = history(turns);
    let before = builder.events().len();
    builder.turn(&format!("t{turns}")).user("read the whole log");
    builder.tool_call("big", "shell", serde_json::json!({"cmd": "cat build.log"}));
    builder.tool_result("big", "shell", serde_json::json!("x".repeat(bytes)));
    builder.events()[before..].to_vec()
}

#[tokio::test]
async fn a_full_database_refuses_the_event_append_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("full-events.sqlite");
    let store = seeded_store(&path, 6);
    let before = canonical_rows(&path, SESSION);
    let pages = store.page_count().expect("page count");
    assert_eq!(store.set_max_pages(pages).expect("cap"), pages);
    let error = store.append_events(SESSION, &big_turn(6, 256 * 1024)).expect_err("full");
    assert_eq!(error.code(), "storage_sqlite");
    assert!(error.to_string().contains("full"), "{error}");
    let found = assert_intact(&path, SESSION, &before);
    assert_eq!(canonical_rows(&path, SESSION).len(), before.len());
    assert_eq!(found.checkpoints, 0);
    report_fault("append_events_full_database", "typed_error", &format!("{error}"));
}

/// Fills the database when the summary is ready (caps it at its current size, then fills the
/// free space left in it), so the durable checkpoint append that follows fails with
/// `SQLITE_FULL`.
struct FillBeforeAppend {
    store: Arc<Store>,
}

impl Summarizer for FillBeforeAppend {
    async fn summarize(
        &self,
        request: &SummaryRequest,
        effect: &SummarizeEffect,
        events: &[RuntimeEvent],
    ) -> Result<SummaryResponse, ProviderFailure> {
        let pages = self.store.page_count().expect("page count");
        self.store.set_max_pages(pages).expect("cap");
        // Use up the free space left inside the capped file, in the two tables a checkpoint
        // append writes (the AgentRun ledger) and the event log: filler rows of another
        // session, smaller and smaller, until even a small one no longer fits.
        let mut n = 0u64;
        for size in [65_536, 8_192, 1_024, 128, 16] {
            loop {
                n += 1;
                let mut filler = contextfold_core::LogBuilder::new("filler");
                filler.user(&"f".repeat(size));
                let mut event = filler.events()[0].clone();
                (event.seq, event.runtime_event_id) = (n, format!("filler-{n}"));
                let event_fits = self.store.append_events("filler", &[event]).is_ok();
                let record = AgentRunRecord {
                    event_id: format!("filler-{n}"),
                    session_id: "filler".into(),
                    run_id: "filler".into(),
                    kind: agent_run_kind::RUN_STARTED.into(),
                    recorded_at_ms: n,
                    payload: serde_json::json!({ "filler": "f".repeat(size) }),
                };
                let record_fits = self.store.append_agent_run_event(&record).is_ok();
                if !event_fits && !record_fits {
                    break;
                }
            }
        }
        ExtractiveSummarizer.summarize(request, effect, events).await
    }
}

#[tokio::test]
async fn a_full_database_fails_the_checkpoint_append_and_fails_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("full-checkpoint.sqlite");
    let store = seeded_store(&path, 12);
    let before = canonical_rows(&path, SESSION);
    let fill = FillBeforeAppend { store: Arc::clone(&store) };
    let rt = runtime(&store, 16_000, false, fill, NoNativeCompactor);
    let report = rt.compact_manually(&StopSignal::new()).await;
    let found = assert_intact(&path, SESSION, &before);
    assert_eq!(found.checkpoints, 0, "no checkpoint was recorded");
    assert!(store.current_checkpoint(SESSION).expect("lookup").checkpoint.is_none());
    // The checkpoint append fails and the compaction fails open; with the disk still full,
    // recording that outcome fails too, which the runtime reports as a typed storage error.
    let (label, detail) = match report {
        Ok(report) => {
            let outcome = report.outcome;
            assert_eq!(outcome.outcome, OutcomeKind::FailedOpen, "{outcome:?}");
            assert!(codes_of(&outcome.diagnostics).contains(&"append_failed"), "{outcome:?}");
            assert!(outcome.diagnostics.iter().any(|d| d.detail.contains("full")), "{outcome:?}");
            ("FailedOpen", format!("diagnostics={:?}", codes_of(&outcome.diagnostics)))
        }
        Err(error) => {
            assert_eq!(error.code(), "storage_sqlite");
            assert!(error.to_string().contains("full"), "{error}");
            ("typed_error", format!("code={} message={error}", error.code()))
        }
    };
    report_fault("append_checkpoint_full_database", label, &detail);
}

fn raw(path: &std::path::Path) -> Connection {
    let conn = Connection::open(path).expect("open");
    conn.busy_timeout(Duration::from_secs(5)).expect("busy");
    conn
}

#[tokio::test]
async fn damaged_projection_rows_are_rebuilt_from_the_ledger() {
    let damages = [
        (
            "projection_json_garbage",
            "UPDATE checkpoint_projection SET checkpoint_json = '{\"checkpointId\": tru'",
        ),
        (
            "projection_columns_disagree",
            "UPDATE checkpoint_projection SET event_count = event_count + 3",
        ),
        ("projection_row_deleted", "DELETE FROM checkpoint_projection"),
        (
            "projection_names_missing_event",
            "UPDATE checkpoint_projection SET agent_run_event_id = 'ar-missing'",
        ),
    ];
    for (row, sql) in damages {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("damaged.sqlite");
        let store = compacted(&path, 6).await;
        let expected =
            store.current_checkpoint(SESSION).expect("lookup").checkpoint.expect("checkpoint");
        let before = canonical_rows(&path, SESSION);
        raw(&path).execute_batch(sql).expect("damage");
        let rt = runtime(&store, 16_000, false, ExtractiveSummarizer, NoNativeCompactor);
        let report = rt.project(false).await.expect("projection");
        let notes: Vec<&str> = report.lookup_notes.iter().map(|n| n.code.as_str()).collect();
        let replayed = report.projection.checkpoint.as_ref().map(|c| c.checkpoint_id.clone());
        assert!(notes.contains(&"projection_repaired"), "{row}: {notes:?}");
        assert_eq!(replayed.as_deref(), Some(expected.checkpoint_id.as_str()), "{row}");
        let lookup = store.current_checkpoint(SESSION).expect("lookup after repair");
        assert_eq!(lookup.source, LookupSource::Projection, "{row}: not repaired");
        assert_eq!(lookup.checkpoint.as_ref(), Some(&expected));
        assert_intact(&path, SESSION, &before);
        report_fault(row, "recovered", &format!("lookup_notes={notes:?} replayed={replayed:?}"));
    }
}

#[tokio::test]
async fn tampered_ledger_rows_are_rejected_by_digest() {
    // A canonical event edited behind the store's back: the checkpoint's digest no longer
    // matches, so it is not replayed and raw history is used.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tampered.sqlite");
    let store = compacted(&path, 6).await;
    let conn = raw(&path);
    conn.execute_batch("DROP TRIGGER runtime_events_no_update").expect("drop trigger");
    let changed = conn
        .execute(
            "UPDATE runtime_events SET event_json = replace(event_json, 'number 0', 'number 7') \
             WHERE seq = (SELECT min(seq) FROM runtime_events)",
            [],
        )
        .expect("tamper");
    assert_eq!(changed, 1);
    drop(conn);
    let rt = runtime(&store, 16_000, false, ExtractiveSummarizer, NoNativeCompactor);
    let report = rt.project(false).await.expect("projection");
    let codes = codes_of(&report.projection.diagnostics);
    assert!(report.projection.checkpoint.is_none(), "a checkpoint over tampered source replayed");
    assert!(codes.contains(&"source_hash_mismatch"), "{codes:?}");
    let found = consistency(&path, SESSION);
    assert_eq!(
        found.problems.len(),
        1,
        "the verifier sees the false coverage: {:?}",
        found.problems
    );
    report_fault("tampered_canonical_event", "rejected", &format!("diagnostics={codes:?}"));

    // A checkpoint payload edited in the AgentRun ledger (digest changed), projection cleared:
    // recovery still selects it, but replay rejects it against the source.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tampered-ledger.sqlite");
    let store = compacted(&path, 6).await;
    let before = canonical_rows(&path, SESSION);
    raw(&path)
        .execute_batch(
            "DROP TRIGGER agent_run_events_no_update;
             UPDATE agent_run_events SET payload_json = json_set(payload_json, '$.coverage.sourceDigest', 'sha256:' || hex(zeroblob(32)))
               WHERE kind = 'history_compact_checkpoint_recorded';
             DELETE FROM checkpoint_projection;",
        )
        .expect("tamper");
    let rt = runtime(&store, 16_000, false, ExtractiveSummarizer, NoNativeCompactor);
    let report = rt.project(false).await.expect("projection");
    let codes = codes_of(&report.projection.diagnostics);
    assert!(report.projection.checkpoint.is_none(), "a tampered checkpoint replayed: {codes:?}");
    assert!(
        codes.iter().any(|c| *c == "source_hash_mismatch" || *c == "recovery_event_skipped"),
        "{codes:?}"
    );
    let after = canonical_rows(&path, SESSION);
    assert_eq!(after, before, "canonical events changed");
    report_fault("tampered_checkpoint_digest", "rejected", &format!("diagnostics={codes:?}"));
}

#[tokio::test]
async fn schema_version_skew_is_refused_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("skew.sqlite");
    drop(compacted(&path, 4).await);
    let before = canonical_rows(&path, SESSION);
    raw(&path).pragma_update(None, "user_version", SCHEMA_VERSION + 1).expect("skew");
    let error = Store::open(&path).expect_err("a newer schema is refused");
    assert_eq!(error.code(), "schema_too_new");
    let version: u32 =
        raw(&path).pragma_query_value(None, "user_version", |r| r.get(0)).expect("version");
    assert_eq!(version, SCHEMA_VERSION + 1, "the file was migrated anyway");
    assert_eq!(canonical_rows(&path, SESSION), before);
    report_fault(
        "database_schema_too_new",
        "typed_error",
        &format!("code={} message={error}", error.code()),
    );

    // A checkpoint of an unknown schema version (4) with larger coverage in the ledger: recovery
    // skips it with a diagnostic and keeps the valid V2 checkpoint.
    raw(&path).pragma_update(None, "user_version", SCHEMA_VERSION).expect("unskew");
    let store = Store::open(&path).expect("open");
    let valid = store.current_checkpoint(SESSION).expect("lookup").checkpoint.expect("checkpoint");
    let mut future = valid.to_value();
    future["schemaVersion"] = serde_json::json!(4);
    future["checkpointId"] = serde_json::json!("cp-from-the-future");
    future["coverage"]["eventCount"] = serde_json::json!(valid.coverage.event_count + 2);
    raw(&path)
        .execute(
            "INSERT INTO agent_run_events (event_id, session_id, run_id, kind, recorded_at_ms, payload_json) \
             VALUES ('ar-future', ?1, 'run-future', 'history_compact_checkpoint_recorded', 9999999999999, ?2); ",
            rusqlite::params![SESSION, future.to_string()],
        )
        .expect("insert");
    raw(&path).execute_batch("DELETE FROM checkpoint_projection").expect("clear");
    let lookup = store.current_checkpoint(SESSION).expect("lookup");
    let notes: Vec<&str> = lookup.notes.iter().map(|n| n.code.as_str()).collect();
    assert_eq!(lookup.checkpoint.as_ref(), Some(&valid), "{notes:?}");
    assert!(notes.contains(&"recovery_event_skipped"), "{notes:?}");
    report_fault("checkpoint_schema_too_new", "skipped", &format!("lookup_notes={notes:?}"));
}

#[tokio::test]
async fn a_smaller_model_window_does_not_replay_an_oversized_checkpoint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("window.sqlite");
    let store = compacted(&path, 8).await;
    let before = canonical_rows(&path, SESSION);
    let mut rt = runtime(&store, 16_000, false, ExtractiveSummarizer, NoNativeCompactor);
    assert!(rt.project(false).await.expect("projection").projection.checkpoint.is_some());
    let tokens =
        store.current_checkpoint(SESSION).expect("lookup").checkpoint.expect("cp").estimated_tokens;
    // A window whose history budget is below the checkpoint's own size.
    rt.set_model(ModelFacts { context_window: Some(tokens), ..Default::default() });
    let report = rt.project(false).await.expect("projection");
    let codes = codes_of(&report.projection.diagnostics);
    assert!(
        report.projection.checkpoint.is_none(),
        "replayed over the new budget ({tokens} tokens, budget {}): {codes:?}",
        report.projection.history_budget
    );
    assert!(codes.contains(&"checkpoint_over_budget"), "{codes:?}");
    assert_intact(&path, SESSION, &before);
    report_fault("smaller_model_window", "not_replayed", &format!("diagnostics={codes:?}"));
}

#[tokio::test]
async fn a_model_switch_does_not_replay_a_v3_checkpoint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("switch.sqlite");
    let store = seeded_store(&path, 6);
    let server = LoopbackServer::start().await;
    server.script(Reply::sse(
        &responses_stream(&[compaction_item("cmp_1", NEW_STATE)]),
        StreamEnd::Clean,
    ));
    let chat = ChatSummarizer(chat_client(&server));
    let rt = runtime(&store, 16_000, true, chat.clone(), CodexCompactor(codex_client(&server)));
    let report = rt.compact_manually(&StopSignal::new()).await.expect("compaction");
    assert_eq!(report.outcome.checkpoint.as_ref().map(|c| c.schema_version()), Some(3));
    assert!(rt.project(false).await.expect("projection").projection.checkpoint.is_some());
    let before = canonical_rows(&path, SESSION);
    let mut config = config(16_000, true);
    config.provider.model_id = "gpt-5-codex-mini".into();
    let switched = contextfold_host::runtime::SessionRuntime::new(
        Arc::clone(&store),
        config,
        chat,
        CodexCompactor(codex_client(&server)),
    );
    let report = switched.project(false).await.expect("projection");
    let codes = codes_of(&report.projection.diagnostics);
    assert!(report.projection.checkpoint.is_none());
    assert!(codes.contains(&"provider_mismatch"), "{codes:?}");
    let text = serde_json::to_string(&report.projection.messages).expect("json");
    assert!(!text.contains(NEW_STATE), "provider state reached another model");
    assert_intact(&path, SESSION, &before);
    report_fault(
        "model_switch_with_v3_checkpoint",
        "not_replayed",
        &format!("diagnostics={codes:?}"),
    );
}

/// Answers every summarize effect with an empty summary, so manual compaction fails open.
struct EmptySummary;

impl Summarizer for EmptySummary {
    async fn summarize(
        &self,
        _request: &SummaryRequest,
        _effect: &SummarizeEffect,
        _events: &[RuntimeEvent],
    ) -> Result<SummaryResponse, ProviderFailure> {
        Ok(SummaryResponse {
            text: String::new(),
            finish_reason: contextfold_core::compaction::FinishReason::Stop,
        })
    }
}

#[tokio::test]
async fn a_manual_run_whose_failure_note_cannot_be_written_still_ends_with_a_terminal_event() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("note.sqlite");
    let store = seeded_store(&path, 6);
    // The database refuses the note (and only the note) the failed compaction appends.
    raw(&path)
        .execute_batch(
            "CREATE TRIGGER refuse_note BEFORE INSERT ON runtime_events \
             WHEN NEW.runtime_event_id LIKE '%-note' BEGIN SELECT RAISE(ABORT, 'note refused'); END",
        )
        .expect("trigger");
    let rt = runtime(&store, 16_000, false, EmptySummary, NoNativeCompactor);
    let error = rt.compact_manually(&StopSignal::new()).await.expect_err("the note append fails");
    let kinds: Vec<String> =
        store.agent_run_events(SESSION).expect("ledger").into_iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds.last().map(String::as_str),
        Some(contextfold_host::storage::agent_run_kind::RUN_FAILED),
        "{kinds:?}"
    );
    report_fault("failure_note_refused", "RunFailed", &format!("error={}", error.code()));
}

/// A wall clock that goes backwards between two checkpoints (an NTP step, a restored VM): the
/// second compaction is recorded with an earlier `createdAtMs` than the first, and recovery,
/// the projection row and verification still follow the ledger's order, not the clock.
#[tokio::test]
async fn a_clock_going_backwards_between_checkpoints_changes_nothing_but_the_times() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("clock.sqlite");
    let store = seeded_store(&path, 8);
    let at = |ms: u64| -> contextfold_host::runtime::Clock { Arc::new(move || ms) };
    let rt = runtime(&store, 16_000, false, ExtractiveSummarizer, NoNativeCompactor)
        .with_clock(at(1_900_000_000_000));
    let first = rt.compact_manually(&StopSignal::new()).await.expect("first compaction");
    let first = first.outcome.checkpoint.expect("first checkpoint");
    let mut builder =
        contextfold_core::LogBuilder::extend(store.load_events(SESSION).expect("load"));
    let before = builder.events().len();
    for turn in 8..14 {
        extend(&mut builder, turn);
    }
    store.append_events(SESSION, &builder.events()[before..]).expect("append");
    let rt = runtime(&store, 16_000, false, ExtractiveSummarizer, NoNativeCompactor)
        .with_clock(at(1_800_000_000_000));
    let second = rt.compact_manually(&StopSignal::new()).await.expect("second compaction");
    let second = second.outcome.checkpoint.expect("second checkpoint");
    assert!(second.created_at_ms < first.created_at_ms, "the clock went backwards");
    let lookup = store.current_checkpoint(SESSION).expect("lookup");
    let current = lookup.checkpoint.expect("a current checkpoint");
    assert_eq!(current.checkpoint_id, second.checkpoint_id, "the ledger's newest wins");
    let found = consistency(&path, SESSION);
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    assert_eq!(found.checkpoints, 2);
    report_fault(
        "clock_backwards",
        "recorded",
        &format!("first={} second={}", first.created_at_ms, second.created_at_ms),
    );
}

/// A checkpoint of another session offered through the store (a host bug: session A's
/// checkpoint relabelled for session B). The store records what it is given, but the
/// checkpoint covers A's events: B's projection refuses to replay it (its boundary or digest
/// does not match B's log), projects B's raw history instead, and verification names the
/// false coverage.
#[tokio::test]
async fn a_checkpoint_of_another_session_is_never_replayed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("other-session.sqlite");
    let store = compacted(&path, 8).await;
    let mut other = contextfold_core::LogBuilder::new("other");
    for turn in 100..108 {
        extend(&mut other, turn);
    }
    let other_events = other.build();
    store.append_events("other", &other_events).expect("append the other session");
    let mut foreign = store.current_checkpoint(SESSION).expect("lookup").checkpoint.expect("cp");
    foreign.session_id = "other".into();
    foreign.checkpoint_id = "cp-foreign".into();
    store.append_checkpoint("evt-foreign", "run-foreign", 1, &foreign).expect("recorded as given");
    let offered = store.current_checkpoint("other").expect("lookup").checkpoint.expect("offered");
    assert_eq!(offered.checkpoint_id, "cp-foreign");
    let model = ModelFacts { context_window: Some(1_000_000), ..Default::default() };
    let projection = contextfold_core::projection::project(
        &contextfold_core::projection::ProjectInput {
            events: &other_events,
            current_turn_id: None,
            checkpoint: Some(&offered),
            model: &model,
            provider: None,
            fail_open: false,
        },
        &contextfold_core::CharEstimator,
    )
    .expect("projects");
    assert!(projection.checkpoint.is_none(), "never replayed");
    let codes = codes_of(&projection.diagnostics);
    assert!(
        codes.iter().any(|c| ["coverage_miss", "source_hash_mismatch"].contains(c)),
        "{codes:?}"
    );
    let raw_turns =
        projection.messages.iter().filter(|m| m.role == contextfold_core::projection::Role::User);
    assert_eq!(raw_turns.count(), 8, "the raw history instead");
    let found = consistency(&path, "other");
    assert!(found.problems.iter().any(|p| p.contains("false coverage")), "{:?}", found.problems);
    report_fault("checkpoint_of_another_session", "not_replayed", &format!("{codes:?}"));
}
