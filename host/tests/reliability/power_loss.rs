//! Power loss: a SIGKILL keeps the OS page cache, so the crash loop would pass even with
//! `synchronous=OFF`. This test models the page cache being lost. A worker process appends
//! turns and compacts through the real `Store` / `SessionRuntime` with an `LD_PRELOAD` shim
//! (`power_loss/trace_writes.c`, compiled here with `cc`) recording every write, truncate,
//! sync, create and unlink under its directory, and a marker line after each append returned.
//! For each of >= 100 crash points spread over the trace (many right after a marker) the
//! state a power loss would leave is rebuilt (`power_loss/replay.rs`: unsynced writes dropped,
//! or a random half of them kept; `-shm` lost), reopened and verified: it opens, it is
//! consistent, the canonical log is `1..=n` with unique ids, the recovered tip agrees with the
//! ledger, and every event and checkpoint accepted before the crash point is present.
//! Fails with `synchronous=OFF` or `NORMAL`; `CONTEXTFOLD_POWER_LOSS_POINTS` sets the number
//! of crash points (default 120).

use crate::reliability_support;

#[path = "power_loss/replay.rs"]
mod replay;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use contextfold_core::checkpoint::select_recovered_checkpoint;
use contextfold_core::{LogBuilder, RuntimeEvent};
use contextfold_host::runtime::{ExtractiveSummarizer, NoNativeCompactor, StopSignal};
use contextfold_host::storage::Store;
use reliability_support::verify::consistency;
use reliability_support::worker::{ROLE, spawn_role};
use reliability_support::{SESSION, extend, runtime};
use replay::{Disk, Op, Trace, Variant};

const WORKER: &str = "power-loss";
const DB: &str = "power.sqlite";
const MARKERS: &str = "markers.log";

/// Runs the power-loss worker when this process is one (`child_process_entry` in `main.rs`
/// calls it first); `false` otherwise.
pub(crate) fn run_worker() -> bool {
    if std::env::var(ROLE).as_deref() == Ok(WORKER) {
        let dir = PathBuf::from(std::env::var("CONTEXTFOLD_TRACE_DIR").expect("trace dir"));
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio")
            .block_on(work(&dir, 36));
        return true;
    }
    false
}

/// Appends `rounds` turns, compacting every third round and closing and reopening the store
/// every twelfth (so WAL checkpoints into the main file and WAL deletions are in the trace).
/// After each append returned: `events <last seq>` / `appended <checkpoint id>` in one write.
async fn work(dir: &Path, rounds: usize) {
    let mut markers = std::fs::File::create(dir.join(MARKERS)).expect("marker file");
    let mut mark = |line: String| markers.write_all(line.as_bytes()).expect("marker");
    let mut store = Arc::new(Store::open(dir.join(DB)).expect("open"));
    for round in 0..rounds {
        if round > 0 && round % 12 == 0 {
            drop(store);
            store = Arc::new(Store::open(dir.join(DB)).expect("reopen"));
        }
        let events = store.load_events(SESSION).expect("load");
        let mut builder =
            if events.is_empty() { LogBuilder::new(SESSION) } else { LogBuilder::extend(events) };
        let before = builder.events().len();
        extend(&mut builder, round);
        let new: Vec<RuntimeEvent> = builder.events()[before..].to_vec();
        store.append_events(SESSION, &new).expect("append events");
        mark(format!("events {}\n", new.last().expect("events").seq));
        if round % 3 == 2 {
            let rt = runtime(&store, 16_000, false, ExtractiveSummarizer, NoNativeCompactor);
            let report = rt.compact_manually(&StopSignal::new()).await.expect("compaction");
            if let Some(cp) = &report.outcome.checkpoint {
                mark(format!("appended {}\n", cp.checkpoint_id));
            }
        }
    }
}

/// Compiles the shim into `dir`; a missing compiler fails the test (it never skips).
fn compile_shim(dir: &Path) -> PathBuf {
    let source =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reliability/power_loss/trace_writes.c");
    let out = dir.join("trace_writes.so");
    let status = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&out)
        .arg(&source)
        .arg("-ldl")
        .status()
        .unwrap_or_else(|e| panic!("the power-loss test needs a C compiler `cc` on PATH: {e}"));
    assert!(status.success(), "cc failed to compile {}", source.display());
    out
}

/// A marker of the worker: `(index in the trace, line)`.
fn markers(trace: &Trace) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (index, (name, op)) in trace.ops.iter().enumerate() {
        if let (true, Op::Write { data, .. }) = (name == MARKERS, op) {
            let line = String::from_utf8_lossy(&trace.bytes[data.clone()]).trim().to_owned();
            out.push((index, line));
        }
    }
    out
}

/// `FULL` when every commit between two markers synced the WAL, `OFF` when the WAL was never
/// synced, `NORMAL` otherwise: what the trace shows, not what the source says.
fn inferred_sync(trace: &Trace, markers: &[(usize, String)]) -> &'static str {
    let wal_sync = |i: usize| matches!(&trace.ops[i], (n, Op::Sync) if n.ends_with("-wal"));
    if !(0..trace.ops.len()).any(wal_sync) {
        return "OFF";
    }
    let mut from = 0;
    for (at, _) in markers {
        if !(from..*at).any(wal_sync) {
            return "NORMAL";
        }
        from = *at;
    }
    "FULL"
}

/// `count` crash points in increasing order: right after markers, then evenly spread.
fn crash_points(total: usize, markers: &[(usize, String)], count: usize) -> Vec<usize> {
    let mut points: BTreeSet<usize> = BTreeSet::new();
    let after: Vec<usize> = markers.iter().map(|(at, _)| at + 1).collect();
    let share = count / 2;
    for i in 0..after.len().min(share) {
        points.insert(after[i * after.len() / after.len().min(share)]);
    }
    let mut step = 0;
    while points.len() < count.min(total + 1) {
        let spread = count - points.len();
        for i in 0..spread {
            points.insert((i * total / spread + step) % (total + 1));
        }
        step += 1;
    }
    points.into_iter().collect()
}

/// Everything wrong with the state at one crash point, given the markers before it.
fn check_state(db: &Path, accepted: &[(usize, String)]) -> Result<Vec<String>, String> {
    let store = Store::open(db).map_err(|e| format!("open: {} ({e})", e.code()))?;
    let mut wrong = Vec::new();
    let lookup = store.current_checkpoint(SESSION).map_err(|e| format!("recovery: {e}"))?;
    let recorded = store.recorded_checkpoints(SESSION).map_err(|e| format!("ledger: {e}"))?;
    let events = store.load_events(SESSION).map_err(|e| format!("load_events: {e}"))?;
    drop(store);
    wrong.extend(consistency(db, SESSION).problems);
    if lookup.checkpoint != select_recovered_checkpoint(SESSION, &recorded).selected {
        wrong.push("the recovered tip disagrees with the ledger".into());
    }
    let ids: BTreeSet<&str> = events.iter().map(|e| e.runtime_event_id.as_str()).collect();
    if ids.len() != events.len() {
        wrong.push("repeated runtimeEventId".into());
    }
    if events.iter().enumerate().any(|(i, e)| e.seq != i as u64 + 1) {
        wrong.push("the canonical seqs are not 1..=n".into());
    }
    let cps: BTreeSet<&str> =
        recorded.iter().filter_map(|r| r.payload["checkpointId"].as_str()).collect();
    let mut lost = Vec::new();
    for (_, line) in accepted {
        match line.split_once(' ') {
            Some(("events", seq)) if seq.parse::<usize>().map_or(true, |s| s > events.len()) => {
                lost.push(format!("event {seq}"))
            }
            Some(("appended", id)) if !cps.contains(id) => lost.push(format!("checkpoint {id}")),
            _ => {}
        }
    }
    if !lost.is_empty() {
        return Err(format!("LOST {lost:?}"));
    }
    Ok(wrong)
}

#[test]
fn power_loss_at_any_point_keeps_every_accepted_event_and_checkpoint() {
    let started = Instant::now();
    let count = std::env::var("CONTEXTFOLD_POWER_LOSS_POINTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120usize);
    let work = tempfile::tempdir().expect("tempdir");
    let shim = compile_shim(work.path());
    let traced = work.path().join("traced");
    std::fs::create_dir(&traced).expect("traced dir");
    let trace_file = work.path().join("trace.bin");
    let traced_dir = traced.canonicalize().expect("canonical traced dir");
    let output = spawn_role(WORKER, &[("CONTEXTFOLD_TRACE_DIR", &traced_dir)])
        .env("CONTEXTFOLD_TRACE_FILE", &trace_file)
        .env("LD_PRELOAD", &shim)
        .output()
        .expect("run the worker");
    assert!(output.status.success(), "worker: {}", String::from_utf8_lossy(&output.stderr));
    let trace = Trace::read(&trace_file);
    let markers = markers(&trace);
    let sync = inferred_sync(&trace, &markers);
    assert!(markers.len() >= 40, "the shim saw too few markers: {}", markers.len());
    let points = crash_points(trace.ops.len(), &markers, count);
    let mut disk = Disk::new(&trace);
    let (mut opened, mut inconsistent, mut lost) = (0, Vec::new(), Vec::new());
    for (n, &point) in points.iter().enumerate() {
        disk.advance_to(point);
        let accepted: Vec<(usize, String)> =
            markers.iter().filter(|(at, _)| *at < point).cloned().collect();
        let mut all_opened = true;
        for variant in [Variant::DropUnsynced, Variant::RandomUnsynced(n as u64 + 1)] {
            let state = tempfile::tempdir_in(work.path()).expect("state dir");
            disk.materialize(state.path(), variant, &[MARKERS]);
            match check_state(&state.path().join(DB), &accepted) {
                Ok(wrong) if wrong.is_empty() => {}
                Ok(wrong) => inconsistent.push(format!("point {point} {variant:?}: {wrong:?}")),
                Err(e) if e.starts_with("LOST") => {
                    lost.push(format!("point {point} {variant:?}: {e}"))
                }
                Err(e) => {
                    all_opened &= !e.starts_with("open");
                    inconsistent.push(format!("point {point} {variant:?}: {e}"))
                }
            }
        }
        opened += usize::from(all_opened);
    }
    let syncs = trace.ops.iter().filter(|(_, op)| matches!(op, Op::Sync)).count();
    eprintln!(
        "POWER-LOSS crash_points={} markers={} opened={opened} inconsistent={} lost={} sync={sync} ops={} syncs={syncs} variants=drop_unsynced,random_unsynced seconds={}",
        points.len(),
        markers.len(),
        inconsistent.len(),
        lost.len(),
        trace.ops.len(),
        started.elapsed().as_secs()
    );
    assert!(points.len() >= count.min(100), "too few crash points: {}", points.len());
    assert!(inconsistent.is_empty(), "inconsistent after a power loss: {inconsistent:#?}");
    assert!(lost.is_empty(), "accepted, then lost by a power loss: {lost:#?}");
    assert_eq!(sync, "FULL", "the trace shows commits that did not sync the WAL");
}
