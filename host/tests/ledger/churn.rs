//! Many writers, many machines: worker processes (`churn_worker.rs`) serve a handful of
//! sessions of one ledger at once for a bounded time, handing sessions to each other mid-turn
//! and racing manual compactions against the holder; afterwards every acknowledged append is
//! present exactly once at its `seq`, each session's `seq`s are contiguous and its log valid,
//! every recorded checkpoint verifies against the log, and each session's tip (its projection
//! row) equals what recovery selects from the AgentRun ledger. On SQLite (one file, processes
//! of one machine) and on PostgreSQL.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::process::Command;

use contextfold_core::HistoryCompactCheckpoint;
use contextfold_core::checkpoint::{match_checkpoint_prefix, select_recovered_checkpoint};
use contextfold_core::event::{EventContent, validate_log};
use contextfold_host::ledger::SharedLedger;

use super::churn_worker::{Plan, ack_file, open, run_from_env, session_name};
use super::support::backends;

const WORKERS: usize = 4;
const SESSIONS: usize = 6;
const MILLIS: u64 = 3_000;

/// The errors a worker may meet when a manual compaction by another worker races its turn:
/// its append lost the `seq` race (nothing written), or the compaction's failure note landed
/// inside the turn it is serving, so that turn is no longer the log's suffix (docs/storage.md,
/// "A manual compaction racing a live turn").
const RACE_ERRORS: &[&str] = &["event_seq_not_increasing", "log_current_turn_not_suffix"];

/// Not a test of its own: the body of a churn worker process, which the churn test starts by
/// running this test binary again with `--exact` on this name and `CONTEXTFOLD_CHURN_WORKER`
/// set. Without the variable it returns at once.
#[test]
fn churn_worker_process() {
    run_from_env();
}

/// The shape of one churn: how many workers serve how many sessions for how long.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fleet {
    pub(crate) workers: usize,
    pub(crate) sessions: usize,
    pub(crate) millis: u64,
}

/// The churn CI runs on each backend.
const FLEET: Fleet = Fleet { workers: WORKERS, sessions: SESSIONS, millis: MILLIS };

/// Starts `fleet.workers` worker processes on `db` and waits for them.
pub(crate) fn churn(fleet: Fleet, db: &str, dir: &Path, seed: u64) {
    let exe = std::env::current_exe().expect("the test binary");
    let children: Vec<_> = (0..fleet.workers)
        .map(|worker| {
            let plan = Plan {
                worker,
                db: db.to_owned(),
                sessions: fleet.sessions,
                millis: fleet.millis,
                dir: dir.to_owned(),
                seed,
            };
            Command::new(&exe)
                .args([
                    "--exact",
                    "ledger::churn::churn_worker_process",
                    "--nocapture",
                    "--test-threads",
                    "1",
                ])
                .envs(plan.env())
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("start a worker")
        })
        .collect();
    for mut child in children {
        assert!(child.wait().expect("wait").success(), "a worker failed");
    }
}

/// Every acknowledged `(seq, id)` of every session, from the workers' ack files.
pub(crate) fn acknowledged(dir: &Path, workers: usize) -> HashMap<String, Vec<(u64, String)>> {
    let mut acked: HashMap<String, Vec<(u64, String)>> = HashMap::new();
    for worker in 0..workers {
        let text = std::fs::read_to_string(ack_file(dir, worker)).unwrap_or_default();
        for line in text.lines() {
            let mut fields = line.split('\t');
            let (Some(session), Some(seq), Some(id)) =
                (fields.next(), fields.next(), fields.next())
            else {
                panic!("a torn ack line: {line:?}");
            };
            acked
                .entry(session.to_owned())
                .or_default()
                .push((seq.parse().expect("seq"), id.to_owned()));
        }
    }
    acked
}

/// The checks of the module docs on one session; returns its events and checkpoints.
pub(crate) async fn check_session(
    ledger: &SharedLedger,
    session: &str,
    acked: &[(u64, String)],
    unacked_steps: bool,
) -> (usize, usize) {
    let events = ledger.load_events(session).await.expect("load");
    for (index, event) in events.iter().enumerate() {
        assert_eq!(event.seq, index as u64 + 1, "{session}: seq contiguous from 1");
    }
    validate_log(&events).unwrap_or_else(|e| panic!("{session}: the log is valid: {e}"));
    let mut by_id: HashMap<&str, Vec<u64>> = HashMap::new();
    for event in &events {
        by_id.entry(event.runtime_event_id.as_str()).or_default().push(event.seq);
    }
    // Every event nobody acknowledged is a manual compaction's failure note (its own Run's
    // `runtime_note`), unless an append's commit may have outlived its acknowledgement (a
    // connection lost during COMMIT, `unacked_steps`): such an event is committed, never lost.
    let acked_ids: HashSet<&str> = acked.iter().map(|(_, id)| id.as_str()).collect();
    for event in events.iter().filter(|e| !acked_ids.contains(e.runtime_event_id.as_str())) {
        let note = event.runtime_event_id.starts_with("run-compact-")
            && matches!(event.content, EventContent::RuntimeNote { .. });
        assert!(
            note || unacked_steps,
            "{session}: seq {} was written by nobody: {event:?}",
            event.seq
        );
    }
    for (seq, id) in acked {
        assert_eq!(
            by_id.get(id.as_str()),
            Some(&vec![*seq]),
            "{session}: ack {id} at {seq} exactly once"
        );
    }
    let recorded = ledger.recorded_checkpoints(session).await.expect("recorded checkpoints");
    for record in &recorded {
        let checkpoint =
            HistoryCompactCheckpoint::from_value(record.payload.clone()).expect("a checkpoint");
        match_checkpoint_prefix(&checkpoint, &events).unwrap_or_else(|e| {
            panic!("{session}: checkpoint {} verifies: {e:?}", checkpoint.checkpoint_id)
        });
    }
    let tip =
        ledger.current_checkpoint(session).await.expect("tip").checkpoint.map(|c| c.checkpoint_id);
    let recovered =
        select_recovered_checkpoint(session, &recorded).selected.map(|c| c.checkpoint_id);
    assert_eq!(tip, recovered, "{session}: the tip is recovery's");
    (events.len(), recorded.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_of_workers_loses_nothing_on_both_backends() {
    let seed: u64 =
        std::env::var("PROPTEST_RNG_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(7);
    // Manual compactions that lost the race to a holder's checkpoint, over both backends.
    let mut lost_races = 0;
    for backend in backends("churn").await {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = match (&backend.pg, &backend.sqlite) {
            (Some(pg), _) => pg.url(),
            (None, Some((_, path))) => path.display().to_string(),
            (None, None) => unreachable!("a backend is one or the other"),
        };
        let blocking_dir = dir.path().to_owned();
        let blocking_db = db.clone();
        tokio::task::spawn_blocking(move || churn(FLEET, &blocking_db, &blocking_dir, seed))
            .await
            .expect("churn");
        let acked = acknowledged(dir.path(), WORKERS);
        let ledger = open(&db).await;
        let (mut events, mut checkpoints) = (0, 0);
        for index in 0..SESSIONS {
            let session = session_name(index);
            let none = Vec::new();
            let (n, c) =
                check_session(&ledger, &session, acked.get(&session).unwrap_or(&none), false).await;
            events += n;
            checkpoints += c;
        }
        let mut totals: BTreeMap<String, serde_json::Value> = BTreeMap::new();
        for worker in 0..WORKERS {
            let text = std::fs::read_to_string(dir.path().join(format!("worker-{worker}.json")))
                .expect("summary");
            totals.insert(format!("worker {worker}"), serde_json::from_str(&text).expect("json"));
        }
        let acked_total: usize = acked.values().map(Vec::len).sum();
        eprintln!(
            "churn on {}: {events} events ({acked_total} acknowledged), {checkpoints} checkpoints; {totals:?}",
            backend.name()
        );
        assert!(acked_total > 100, "{}: the workers appended ({acked_total})", backend.name());
        assert!(checkpoints >= SESSIONS, "{}: sessions compacted ({checkpoints})", backend.name());
        // The typed failures a fleet's races may give; anything else is a defect.
        for (worker, summary) in &totals {
            for code in summary["errors"].as_object().into_iter().flat_map(|e| e.keys()) {
                assert!(
                    RACE_ERRORS.contains(&code.as_str()),
                    "{}: {worker} failed with {code}",
                    backend.name()
                );
            }
        }
        let manual: u64 = totals.values().filter_map(|t| t["manual_compactions"].as_u64()).sum();
        assert!(manual > 0, "{}: manual compactions ran beside the holders", backend.name());
        lost_races += totals
            .values()
            .filter_map(|t| t["manual_reasons"]["successor_conflict"].as_u64())
            .sum::<u64>();
        let handovers: u64 = totals.values().filter_map(|t| t["handovers"].as_u64()).sum();
        assert!(handovers > 0, "{}: sessions were handed over mid-turn", backend.name());
    }
    // Whether one timed churn meets a lost race is chance: a PostgreSQL run of 2026-12-06 (655
    // events, 42 manual compactions) met none and failed CI when this was asked per backend.
    // The compare-and-swap itself is checked on both backends without chance
    // (`checkpoint_cas.rs`); here the churn as a whole must have raced.
    assert!(lost_races > 0, "manual compactions raced the holders and lost");
}
