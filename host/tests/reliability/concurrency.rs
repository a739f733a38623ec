//! Concurrency: two processes compacting the same session at the same moment (both load the
//! same tip, then race to append): exactly one checkpoint per high water wins, the other gets
//! the typed `successor_conflict` and fails open; the durable state stays consistent. And
//! manual compaction during an active turn is refused with a typed error. And N >= 3 processes
//! appending to one session and compacting it at once for a bounded time: `seq` stays
//! contiguous from 1, event ids stay unique, every append and checkpoint a child reports is in
//! the file (and nothing else), every checkpoint verifies against the log, the recovered tip
//! agrees with the ledger, and every lost race was typed.

use crate::reliability_support;

use std::collections::HashSet;
use std::process::Stdio;

use contextfold_core::HistoryCompactCheckpoint;
use contextfold_host::runtime::{
    ExtractiveSummarizer, NoNativeCompactor, RuntimeError, StopSignal,
};
use contextfold_host::storage::{LookupSource, Store};
use reliability_support::verify::{canonical_rows, consistency, recorded_checkpoints};
use reliability_support::worker::spawn_role;
use reliability_support::{SESSION, extend, report_fault, runtime, seeded_store};
use serde_json::Value;

const ROUNDS: usize = 4;

#[test]
fn two_processes_compacting_one_session_get_one_winner_per_high_water() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("race.sqlite");
    drop(seeded_store(&db, 6));
    let mut conflicts = 0;
    for round in 0..ROUNDS {
        if round > 0 {
            // A new turn, so there is something new to compact.
            let store = Store::open(&db).expect("open");
            let mut builder =
                contextfold_core::LogBuilder::extend(store.load_events(SESSION).expect("load"));
            let before = builder.events().len();
            extend(&mut builder, 100 + round);
            store.append_events(SESSION, &builder.events()[before..]).expect("append");
        }
        let before = canonical_rows(&db, SESSION);
        let recorded_before = recorded_checkpoints(&db, SESSION).len();
        let start = dir.path().join(format!("start-{round}"));
        let children = start_together("compete", 2, &db, &start);
        let lines: Vec<Value> =
            children.into_iter().map(|child| child_report(child, "COMPETE ")).collect();
        let winners = lines.iter().filter(|l| l["outcome"] == "recorded").count();
        let losers: Vec<&Value> = lines.iter().filter(|l| l["outcome"] != "recorded").collect();
        assert_eq!(winners, 1, "round {round}: {lines:?}");
        assert_eq!(losers.len(), 1);
        let loser = losers[0];
        let conflict = loser["reason"] == "successor_conflict"
            || loser["diagnostics"]
                .as_array()
                .is_some_and(|d| d.contains(&Value::from("successor_conflict")));
        assert!(conflict || loser["reason"] == "already_covered", "round {round}: {loser}");
        if conflict {
            assert_eq!(loser["outcome"], "failed_open", "{loser}");
            conflicts += 1;
            report_fault("concurrent_compaction", "failed_open", "successor_conflict");
        }
        let recorded = recorded_checkpoints(&db, SESSION);
        assert_eq!(
            recorded.len(),
            recorded_before + 1,
            "round {round}: exactly one checkpoint per high water"
        );
        let mut counts: Vec<u64> = recorded
            .iter()
            .map(|(_, p)| {
                HistoryCompactCheckpoint::from_json(p).expect("valid").coverage.event_count
            })
            .collect();
        let total = counts.len();
        counts.dedup();
        assert_eq!(counts.len(), total, "two checkpoints share a high water");
        let after = canonical_rows(&db, SESSION);
        assert_eq!(&after[..before.len()], &before[..], "a canonical event changed");
        let found = consistency(&db, SESSION);
        assert!(found.problems.is_empty(), "{:?}", found.problems);
    }
    assert!(conflicts > 0, "the processes never raced");
    eprintln!("CONCURRENCY rounds={ROUNDS} conflicts={conflicts}");
}

/// Child processes of the multi-process test (`CONTEXTFOLD_CONCURRENCY_PROCESSES`, at least 3).
fn processes() -> usize {
    std::env::var("CONTEXTFOLD_CONCURRENCY_PROCESSES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3usize)
        .max(3)
}

#[test]
fn several_processes_appending_and_compacting_one_session_keep_it_consistent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("multi.sqlite");
    drop(seeded_store(&db, 2));
    let seeded = canonical_rows(&db, SESSION).len();
    let per_turn = {
        let mut builder = contextfold_core::LogBuilder::new(SESSION);
        extend(&mut builder, 0);
        builder.events().len()
    };
    let start = dir.path().join("start");
    let count = processes();
    let children = start_together("churn", count, &db, &start);
    let reports: Vec<Value> =
        children.into_iter().map(|child| child_report(child, "CHURN ")).collect();
    let sum = |key: &str| reports.iter().map(|r| r[key].as_u64().expect("count")).sum::<u64>();
    let (appends, compactions, conflicts) = (sum("appends"), sum("compactions"), sum("conflicts"));

    let rows = canonical_rows(&db, SESSION);
    let seqs: Vec<i64> = rows.iter().map(|r| r.0).collect();
    let expected: Vec<i64> = (1..=rows.len() as i64).collect();
    assert_eq!(seqs, expected, "seq is not contiguous from 1");
    let ids: HashSet<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(ids.len(), rows.len(), "duplicate event ids");
    for report in &reports {
        let prefix = format!("p{}-", report["pid"]);
        let mine = rows.iter().filter(|r| r.1.starts_with(&prefix)).count() as u64;
        assert_eq!(
            mine,
            report["appends"].as_u64().expect("appends") * per_turn as u64,
            "{report}"
        );
    }
    assert_eq!(
        rows.len() as u64,
        seeded as u64 + appends * per_turn as u64 + sum("notes"),
        "events other than the reported appends and failure notes"
    );
    let recorded = recorded_checkpoints(&db, SESSION);
    assert_eq!(recorded.len() as u64, sum("recorded"), "checkpoints the children did not report");
    let found = consistency(&db, SESSION);
    let inconsistent = found.problems.len();
    // The tip the store finds (projection row) and the one it recovers from the ledger alone
    // are both the ledger's last checkpoint.
    let last = recorded
        .last()
        .map(|(_, p)| HistoryCompactCheckpoint::from_json(p).expect("valid").checkpoint_id);
    let tip = |store: &Store| {
        store.current_checkpoint(SESSION).expect("lookup").checkpoint.map(|c| c.checkpoint_id)
    };
    assert_eq!(tip(&Store::open(&db).expect("open")), last, "projection tip");
    rusqlite::Connection::open(&db)
        .expect("open")
        .execute("DELETE FROM checkpoint_projection WHERE session_id = ?1", [SESSION])
        .expect("drop the projection row");
    let store = Store::open(&db).expect("reopen");
    let lookup = store.current_checkpoint(SESSION).expect("recovery");
    assert_eq!(lookup.source, LookupSource::Recovered, "{:?}", lookup.notes);
    assert_eq!(lookup.checkpoint.map(|c| c.checkpoint_id), last, "recovered tip");
    eprintln!(
        "CONCURRENCY-MULTI processes={count} appends={appends} compactions={compactions} \
         conflicts={conflicts} events={} checkpoints={} inconsistent={inconsistent}",
        rows.len(),
        recorded.len()
    );
    for report in &reports {
        eprintln!("  child {report}");
    }
    assert_eq!(inconsistent, 0, "{:?}", found.problems);
    assert!(appends > 0 && sum("recorded") > 0, "the children did no work: {reports:?}");
    if conflicts > 0 {
        report_fault("concurrent_append_compact", "typed_conflict", &format!("{conflicts}"));
    }
}

/// Spawns `count` children of `role` on `db`, then releases them at once through the `start`
/// file (each waits for it), so their work overlaps.
fn start_together(
    role: &str,
    count: usize,
    db: &std::path::Path,
    start: &std::path::Path,
) -> Vec<std::process::Child> {
    let children = (0..count)
        .map(|_| {
            spawn_role(role, &[("CONTEXTFOLD_DB", db), ("CONTEXTFOLD_START", start)])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(300));
    std::fs::write(start, b"go").expect("start");
    children
}

/// Waits for `child`, asserts it succeeded and parses its `<tag>{json}` line.
fn child_report(child: std::process::Child, tag: &str) -> Value {
    let output = child.wait_with_output().expect("wait");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let line =
        stdout.lines().find_map(|l| l.split_once(tag).map(|(_, r)| r.to_owned())).expect("report");
    serde_json::from_str(&line).expect("json")
}

#[tokio::test]
async fn manual_compaction_during_an_active_turn_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("turn.sqlite");
    let store = seeded_store(&db, 6);
    let before = canonical_rows(&db, SESSION);
    let ledger_before = store.agent_run_events(SESSION).expect("ledger").len();
    let rt = runtime(&store, 16_000, false, ExtractiveSummarizer, NoNativeCompactor);
    rt.begin_turn("t-active").expect("begin");
    let error = rt.compact_manually(&StopSignal::new()).await.expect_err("refused");
    assert!(matches!(error, RuntimeError::TurnActive { .. }), "{error:?}");
    assert_eq!(error.code(), "turn_active");
    assert_eq!(canonical_rows(&db, SESSION), before);
    assert_eq!(
        store.agent_run_events(SESSION).expect("ledger").len(),
        ledger_before,
        "a refused Run wrote"
    );
    rt.end_turn().expect("end");
    let report = rt.compact_manually(&StopSignal::new()).await.expect("allowed between turns");
    assert!(report.outcome.checkpoint.is_some());
    report_fault("manual_compaction_during_turn", "refused", error.code());
}
