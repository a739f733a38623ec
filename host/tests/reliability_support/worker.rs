//! Child-process roles of the reliability tests. A test binary re-executes itself with
//! `CONTEXTFOLD_RELIABILITY_ROLE` set; its `child_process_entry` test then runs one role:
//!
//! - `work`: appends turns and runs manual compactions forever against `CONTEXTFOLD_DB`,
//!   logging `events <last seq>` and `appended <checkpoint id> <event count>` to
//!   `CONTEXTFOLD_SIDE_LOG` (fsynced) only after the store's append returned, and
//!   `phase <open|load_events|append_events <n>|compact>` before entering each store
//!   operation. The parent kills it with SIGKILL at random moments.
//! - `compete`: waits for `CONTEXTFOLD_START` to exist, then runs one manual compaction
//!   whose summary takes a while (so two competitors load the same tip), and prints the
//!   outcome as one JSON line.
//! - `churn`: waits for `CONTEXTFOLD_START`, then for `CONTEXTFOLD_CONCURRENCY_SECONDS`
//!   (default 5) or `CONTEXTFOLD_CONCURRENCY_ROUNDS` rounds (default 40), whichever ends
//!   first, appends one turn (event ids `p<pid>-<round>-<i>`) and runs one manual compaction
//!   per round, while other churners do the same. A lost race must be a typed error or outcome
//!   (`event_seq_not_increasing`, `successor_conflict`); anything else panics. Prints one JSON
//!   line `CHURN {...}` with its counts.
//! - `prepare`: over the session the parent seeded in `CONTEXTFOLD_DB`, a runtime with
//!   background preparation whose summarizer never answers steps through one turn until a
//!   preparation is in flight, writes `PREPARING <events in the log>` to
//!   `CONTEXTFOLD_SIDE_LOG` and waits to be killed.
//! - `disk-full`: on a small filesystem (`CONTEXTFOLD_DIR`), seeds a session, fills the
//!   disk while the summary is generated, and reports what the compaction did and what the
//!   reopened file holds, as one JSON line.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use contextfold_core::compaction::{
    OutcomeKind, ProviderFailure, SummarizeEffect, SummaryRequest, SummaryResponse,
};
use contextfold_core::{LogBuilder, RuntimeEvent};
use contextfold_host::runtime::{ExtractiveSummarizer, NoNativeCompactor, StopSignal, Summarizer};
use contextfold_host::storage::Store;
use serde_json::json;

use super::{SESSION, extend, runtime, seeded_store};

/// The environment variable naming the role of a child process.
pub const ROLE: &str = "CONTEXTFOLD_RELIABILITY_ROLE";

/// Runs the role named by [`ROLE`], if any. Returns `false` in an ordinary test run.
pub fn run_role() -> bool {
    let Ok(role) = std::env::var(ROLE) else { return false };
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is required"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    match role.as_str() {
        "work" => rt.block_on(work(
            PathBuf::from(var("CONTEXTFOLD_DB")),
            PathBuf::from(var("CONTEXTFOLD_SIDE_LOG")),
        )),
        "compete" => rt.block_on(compete(
            PathBuf::from(var("CONTEXTFOLD_DB")),
            PathBuf::from(var("CONTEXTFOLD_START")),
        )),
        "churn" => rt.block_on(churn(
            PathBuf::from(var("CONTEXTFOLD_DB")),
            PathBuf::from(var("CONTEXTFOLD_START")),
        )),
        "disk-full" => rt.block_on(disk_full(PathBuf::from(var("CONTEXTFOLD_DIR")))),
        "prepare" => rt.block_on(prepare(
            PathBuf::from(var("CONTEXTFOLD_DB")),
            PathBuf::from(var("CONTEXTFOLD_SIDE_LOG")),
        )),
        other => panic!("unknown role {other}"),
    }
    true
}

/// Spawns this test binary in `role`, running only `child_process_entry`.
pub fn spawn_role(role: &str, env: &[(&str, &Path)]) -> std::process::Command {
    let exe = std::env::current_exe().expect("test binary");
    let mut command = std::process::Command::new(exe);
    command
        .args(["child_process_entry", "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role);
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

/// One `write` call per line (an `O_APPEND` write of a few bytes is not split by a kill), so a
/// SIGKILL never leaves half a line for the next worker to continue.
fn side_line(side: &mut std::fs::File, line: &str) {
    side.write_all(format!("{line}\n").as_bytes()).expect("side log");
    side.sync_data().expect("fsync side log");
}

async fn work(db: PathBuf, side: PathBuf) {
    let mut side =
        std::fs::OpenOptions::new().create(true).append(true).open(side).expect("side log");
    side_line(&mut side, "phase open");
    let store = Arc::new(Store::open(db).expect("open"));
    let rt = runtime(&store, 16_000, false, ExtractiveSummarizer, NoNativeCompactor);
    let pid = std::process::id();
    for round in 0.. {
        side_line(&mut side, "phase load_events");
        let events = store.load_events(SESSION).expect("load");
        let mut builder =
            if events.is_empty() { LogBuilder::new(SESSION) } else { LogBuilder::extend(events) };
        let before = builder.events().len();
        extend(&mut builder, round);
        // Turn ids unique across restarts.
        let mut new: Vec<RuntimeEvent> = builder.events()[before..].to_vec();
        for event in &mut new {
            event.turn_id = format!("t{pid}-{round}");
            event.run_id = format!("run-t{pid}-{round}");
        }
        side_line(&mut side, &format!("phase append_events {}", new.len()));
        store.append_events(SESSION, &new).expect("append events");
        side_line(&mut side, &format!("events {}", new.last().expect("events").seq));
        side_line(&mut side, "phase compact");
        let report = rt.compact_manually(&StopSignal::new()).await.expect("compaction");
        if let Some(cp) = &report.outcome.checkpoint {
            side_line(
                &mut side,
                &format!("appended {} {}", cp.checkpoint_id, cp.coverage.event_count),
            );
        }
    }
}

/// The extractive summarizer, slowed down so two processes overlap.
struct SlowSummarizer;

impl Summarizer for SlowSummarizer {
    async fn summarize(
        &self,
        request: &SummaryRequest,
        effect: &SummarizeEffect,
        events: &[RuntimeEvent],
    ) -> Result<SummaryResponse, ProviderFailure> {
        tokio::time::sleep(Duration::from_millis(400)).await;
        ExtractiveSummarizer.summarize(request, effect, events).await
    }
}

/// A summarizer that never answers: a preparation stays in flight until the process dies.
struct NeverAnswers;

impl Summarizer for NeverAnswers {
    async fn summarize(
        &self,
        _request: &SummaryRequest,
        _effect: &SummarizeEffect,
        _events: &[RuntimeEvent],
    ) -> Result<SummaryResponse, ProviderFailure> {
        std::future::pending().await
    }
}

async fn prepare(db: PathBuf, side: PathBuf) {
    let store = Arc::new(Store::open(db).expect("open"));
    let rt = runtime(&store, 16_000, false, NeverAnswers, NoNativeCompactor)
        .with_background_preparation();
    rt.begin_turn("t-prepare").expect("begin");
    for step in 0..40 {
        let events = store.load_events(SESSION).expect("load");
        let mut builder = LogBuilder::extend(events.clone());
        builder.turn("t-prepare");
        if step == 0 {
            builder.user("keep going with the failing tests");
        }
        let call = format!("c-prepare-{step}");
        builder.response(Some(&format!("r-prepare-{step}"))).tool_call(
            &call,
            "shell",
            json!({"cmd": "cargo test"}),
        );
        builder.response(None).tool_result(
            &call,
            "shell",
            json!("test lib::case ... FAILED\n".repeat(40)),
        );
        rt.append(builder.events()[events.len()..].to_vec()).await.expect("append step");
        let report = rt.evaluate_mid_turn().await.expect("evaluate");
        assert!(report.is_none(), "the soft threshold comes before the budget");
        if rt.preparations().started == 1 {
            let count = store.load_events(SESSION).expect("load").len();
            let mut side = std::fs::File::create(&side).expect("side log");
            side_line(&mut side, &format!("PREPARING {count}"));
            std::future::pending::<()>().await;
        }
    }
    panic!("no preparation started");
}

async fn compete(db: PathBuf, start: PathBuf) {
    let store = Arc::new(Store::open(db).expect("open"));
    for _ in 0..1_000 {
        if start.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let rt = runtime(&store, 16_000, false, SlowSummarizer, NoNativeCompactor);
    let line = match rt.compact_manually(&StopSignal::new()).await {
        Ok(report) => json!({
            "outcome": report.outcome.outcome,
            "reason": report.outcome.reason.as_str(),
            "checkpoint": report.outcome.checkpoint.as_ref().map(|c| c.checkpoint_id.clone()),
            "diagnostics": report.outcome.diagnostics.iter().map(|d| d.code.as_str()).collect::<Vec<_>>(),
        }),
        Err(error) => json!({"error": error.code(), "message": error.to_string()}),
    };
    println!("COMPETE {line}");
}

/// Fills the filesystem holding `dir` when the summary is ready, just before the append.
struct FillDiskBeforeAppend {
    filler: PathBuf,
}

impl Summarizer for FillDiskBeforeAppend {
    async fn summarize(
        &self,
        request: &SummaryRequest,
        effect: &SummarizeEffect,
        events: &[RuntimeEvent],
    ) -> Result<SummaryResponse, ProviderFailure> {
        let mut file = std::fs::File::create(&self.filler).expect("filler");
        let block = vec![0u8; 4096];
        while file.write_all(&block).is_ok() {}
        let _ = file.sync_all();
        ExtractiveSummarizer.summarize(request, effect, events).await
    }
}

async fn disk_full(dir: PathBuf) {
    let db = dir.join("full.sqlite");
    let filler = dir.join("filler");
    let store = seeded_store(&db, 6);
    let before = store.load_events(SESSION).expect("load").len();
    let rt = runtime(
        &store,
        16_000,
        false,
        FillDiskBeforeAppend { filler: filler.clone() },
        NoNativeCompactor,
    );
    let result = rt.compact_manually(&StopSignal::new()).await;
    let (outcome, detail) = match &result {
        Ok(report) => {
            (format!("{:?}", report.outcome.outcome), report.outcome.reason.as_str().to_owned())
        }
        Err(error) => (format!("error:{}", error.code()), error.to_string()),
    };
    let checkpoint_returned = result.as_ref().is_ok_and(|r| r.outcome.checkpoint.is_some());
    drop(rt);
    drop(store);
    std::fs::remove_file(&filler).expect("free the disk");
    let reopened = Store::open(&db).expect("reopen");
    let events = reopened.load_events(SESSION).expect("load").len();
    let recorded = reopened.recorded_checkpoints(SESSION).expect("ledger").len();
    let lookup = reopened.current_checkpoint(SESSION).expect("lookup");
    let problems = super::verify::consistency(&db, SESSION).problems;
    let line = json!({
        "outcome": outcome, "detail": detail, "checkpointReturned": checkpoint_returned,
        "eventsBefore": before, "eventsAfter": events, "recorded": recorded,
        "current": lookup.checkpoint.map(|c| c.checkpoint_id), "problems": problems,
    });
    println!("DISKFULL {line}");
}

// ----- churn: one of several appending and compacting processes ---------------------------

/// Typed codes of a lost race.
pub const CONFLICT_CODES: &[&str] = &["event_seq_not_increasing", "successor_conflict"];

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn conflict(conflicts: &mut BTreeMap<String, u64>, code: &str, what: &str) {
    assert!(CONFLICT_CODES.contains(&code), "{what}: untyped or unexpected failure {code}");
    *conflicts.entry(code.to_owned()).or_default() += 1;
}

async fn churn(db: PathBuf, start: PathBuf) {
    let seconds: f64 = env_or("CONTEXTFOLD_CONCURRENCY_SECONDS", 5.0);
    let rounds: usize = env_or("CONTEXTFOLD_CONCURRENCY_ROUNDS", 40);
    let store = Arc::new(Store::open(db).expect("open"));
    for _ in 0..2_000 {
        if start.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let rt = runtime(&store, 16_000, false, ExtractiveSummarizer, NoNativeCompactor);
    let pid = std::process::id();
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let (mut appends, mut compactions, mut recorded, mut notes, mut skipped) = (0, 0, 0, 0, 0);
    let mut conflicts = BTreeMap::new();
    let mut round = 0;
    while round < rounds && Instant::now() < deadline {
        let mut builder = LogBuilder::extend(store.load_events(SESSION).expect("load"));
        let before = builder.events().len();
        // Turn and call ids unique across processes; event ids not derived from `seq`.
        extend(&mut builder, pid as usize * 1_000 + round);
        let mut new = builder.events()[before..].to_vec();
        for (i, event) in new.iter_mut().enumerate() {
            event.runtime_event_id = format!("p{pid}-{round}-{i}");
        }
        match store.append_events(SESSION, &new) {
            Ok(()) => appends += 1,
            Err(error) => conflict(&mut conflicts, error.code(), "append"),
        }
        match rt.compact_manually(&StopSignal::new()).await {
            Ok(report) => {
                compactions += 1;
                let outcome = &report.outcome;
                match (outcome.outcome, outcome.reason.as_str()) {
                    (OutcomeKind::Recorded, _) => recorded += 1,
                    (OutcomeKind::Skipped, "already_covered") => skipped += 1,
                    (OutcomeKind::FailedOpen, code) => {
                        // The Run appended its visible failure note.
                        notes += 1;
                        conflict(&mut conflicts, code, "compaction outcome");
                    }
                    (kind, code) => panic!("unexpected compaction outcome {kind:?}/{code}"),
                }
            }
            Err(error) => conflict(&mut conflicts, error.code(), "compaction"),
        }
        round += 1;
    }
    let total: u64 = conflicts.values().sum();
    let line = json!({
        "pid": pid, "rounds": round, "appends": appends, "compactions": compactions,
        "recorded": recorded, "skipped": skipped, "notes": notes,
        "conflicts": total, "codes": conflicts,
    });
    println!("CHURN {line}");
}
