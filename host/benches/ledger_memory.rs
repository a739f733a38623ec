//! Peak memory of a streamed projection over a ~1 GB ledger (goal: under 128 MB peak RSS).
//!
//! The parent process writes a generated session (200,000 events with ~20 KB tool outputs,
//! about 1 GB of event JSON) into a temporary SQLite file with a checkpoint over all but the
//! last 40 events, then runs itself as a child that only opens the file and projects with
//! `Store::project_streaming`, so the child's `VmHWM` is the projection's peak alone.
//!
//! Run: `cargo bench -p contextfold-host --bench ledger_memory`. Set `CONTEXTFOLD_LEDGER_MB`
//! for another size (the default is 1024).

mod support;

use std::process::Command;
use std::time::Instant;

use contextfold_core::{CharEstimator, ModelFacts};
use contextfold_host::storage::{Store, StreamRequest};
use support::{CoverageBuilder, SESSION, peak_rss_kib, result, turn_events};

/// Tool output bytes per turn.
const OUTPUT_BYTES: usize = 20_000;
/// Turns written per `append_events` transaction.
const TURNS_PER_BATCH: u64 = 250;
/// Events left uncovered by the checkpoint.
const TAIL_EVENTS: u64 = 40;
/// The goal, in MiB.
const GOAL_MIB: f64 = 128.0;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(index) = args.iter().position(|arg| arg == "--project-only") {
        project_only(&args[index + 1]);
        return;
    }
    let megabytes: u64 =
        std::env::var("CONTEXTFOLD_LEDGER_MB").ok().and_then(|v| v.parse().ok()).unwrap_or(1024);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("ledger.sqlite");
    let (events, bytes) = write_ledger(&path, megabytes);

    let child = Command::new(std::env::current_exe().expect("own path"))
        .arg("--project-only")
        .arg(&path)
        .output()
        .expect("runs the projection child");
    print!("{}", String::from_utf8_lossy(&child.stdout));
    eprint!("{}", String::from_utf8_lossy(&child.stderr));
    assert!(child.status.success(), "the projection child failed");
    let stdout = String::from_utf8_lossy(&child.stdout);
    let peak_kib: u64 = stdout
        .lines()
        .find_map(|line| line.strip_prefix("peak_rss_kib="))
        .and_then(|v| v.parse().ok())
        .expect("the child reports its peak RSS");
    let peak_mib = peak_kib as f64 / 1024.0;
    println!(
        "ledger: {events} events, {:.0} MB of event JSON, file {:.0} MB",
        bytes as f64 / 1e6,
        std::fs::metadata(&path).map_or(0, |m| m.len()) as f64 / 1e6
    );
    result(
        &format!("project_{}mb_ledger_peak_rss_mib", bytes / 1_000_000),
        &format!("{peak_mib:.1}"),
        "< 128",
        peak_mib < GOAL_MIB,
    );
}

/// Writes about `megabytes` MB of events and a checkpoint over all but the last
/// [`TAIL_EVENTS`]; returns the event count and the bytes of event JSON.
fn write_ledger(path: &std::path::Path, megabytes: u64) -> (u64, u64) {
    let store = Store::open(path).expect("opens the ledger");
    let turn_bytes = serde_json::to_string(&turn_events(0, OUTPUT_BYTES)).map_or(1, |s| s.len());
    let turns = (megabytes * 1_000_000).div_ceil(turn_bytes as u64).max(TAIL_EVENTS);
    let total_events = 4 * turns;
    let mut coverage = CoverageBuilder::default();
    let mut bytes = 0u64;
    let started = Instant::now();
    for first in (0..turns).step_by(TURNS_PER_BATCH as usize) {
        let batch: Vec<_> = (first..(first + TURNS_PER_BATCH).min(turns))
            .flat_map(|turn| turn_events(turn, OUTPUT_BYTES))
            .collect();
        for event in &batch {
            if event.seq <= total_events - TAIL_EVENTS {
                coverage.push(event);
            }
            bytes += serde_json::to_string(event).map_or(0, |s| s.len()) as u64;
        }
        store.append_events(SESSION, &batch).expect("writes a batch");
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "wrote {total_events} events in {elapsed:.1} s ({:.0} events/s, {:.0} MB/s)",
        total_events as f64 / elapsed,
        bytes as f64 / 1e6 / elapsed
    );
    store
        .append_checkpoint("ar-1", "bench-run", 1, &coverage.checkpoint("cp-1", None))
        .expect("records the checkpoint");
    (total_events, bytes)
}

/// The child: open the ledger, read the current checkpoint, project by streaming.
fn project_only(path: &str) {
    let started = Instant::now();
    let store = Store::open_existing(path).expect("opens the ledger");
    let lookup = store.current_checkpoint(SESSION).expect("reads the checkpoint");
    let model = ModelFacts { context_window: Some(1_000_000), ..Default::default() };
    let request = StreamRequest {
        current_turn_id: None,
        checkpoint: lookup.checkpoint.as_ref(),
        model: &model,
        provider: None,
        fail_open: false,
    };
    let streamed =
        store.project_streaming(SESSION, &request, &CharEstimator).expect("projects the ledger");
    let elapsed = started.elapsed();
    assert!(streamed.projection.checkpoint.is_some(), "the checkpoint was replayed");
    println!(
        "streamed projection: {} events verified by streaming, {} loaded, {} messages, {:.2} s",
        streamed.streamed_events,
        streamed.loaded_events,
        streamed.projection.messages.len(),
        elapsed.as_secs_f64()
    );
    println!("peak_rss_kib={}", peak_rss_kib().expect("VmHWM in /proc/self/status"));
}
