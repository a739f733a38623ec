//! The paths users run, as whole processes (issue 20): `contextfold project` and
//! `contextfold verify` on a cold SQLite ledger, each paired in one run against
//! `openssl dgst -sha256` of the same session's export (the cost of reading and hashing its
//! bytes once), median of 5, with each process's peak RSS.
//!
//! The fixture (`cli_paths/fixture.rs`): the real trajectories of `tests/trajectories/` copied
//! into one session of about 90,000 events with 88 checkpoints (`CONTEXTFOLD_CLI_EVENTS`
//! changes the size). Every process is started through this binary in `--measure` mode, which
//! runs it, waits, and reports its wall time and `ru_maxrss` (`getrusage(RUSAGE_CHILDREN)`:
//! the one child's peak), so the figures are the commands' own.
//!
//! Run: `cargo bench -p contextfold-host --bench cli_paths`. `CONTEXTFOLD_CLI_FIXTURE=<dir>` only
//! writes the fixture into `<dir>` (`ledger.sqlite`, `export.jsonl`), to run the commands by hand;
//! `CONTEXTFOLD_CLI_LARGE_MB` sets the size of the peak-RSS ledger (default 1024, 0 skips it).

mod support;

#[path = "cli_paths/fixture.rs"]
mod fixture;
#[path = "cli_paths/mid_turn.rs"]
mod mid_turn;

use std::time::Instant;

use support::{SESSION, result};

const RUNS: usize = 5;
const CHECKPOINTS: u64 = 88;
/// Goals (issue 20): times against `openssl dgst -sha256` of the export, and peak RSS.
const PROJECT_GOAL: f64 = 1.5;
const VERIFY_GOAL: f64 = 2.0;
const RSS_GOAL_MIB: f64 = 48.0;
/// Goal 3: a mid-turn evaluation on the long session at most this many times the short one's.
const MID_TURN_GOAL: f64 = 2.0;
/// The sessions of goal 3, in events.
const MID_TURN_SESSIONS: (u64, u64) = (1_000, 100_000);
/// Agent steps timed per session.
const MID_TURN_STEPS: usize = 40;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(index) = args.iter().position(|arg| arg == "--measure") {
        support::child::measure_child(&args[index + 1..]);
        return;
    }
    let events: u64 =
        std::env::var("CONTEXTFOLD_CLI_EVENTS").ok().and_then(|v| v.parse().ok()).unwrap_or(90_000);
    let dir = tempfile::tempdir().expect("a temporary directory");
    // `CONTEXTFOLD_CLI_FIXTURE=<dir>`: only write the fixture there (to profile by hand).
    let keep = std::env::var_os("CONTEXTFOLD_CLI_FIXTURE").map(std::path::PathBuf::from);
    let root = keep.clone().unwrap_or_else(|| dir.path().to_owned());
    let db = root.join("ledger.sqlite");
    let export = root.join("export.jsonl");
    let started = Instant::now();
    let fixture = fixture::write(&db, &export, events, CHECKPOINTS);
    if keep.is_some() {
        println!("fixture written to {}", root.display());
        return;
    }
    let db_bytes = std::fs::metadata(&db).map(|m| m.len()).unwrap_or(0);
    println!(
        "fixture: {} events, {} turns, {} checkpoints, export {:.1} MB, SQLite file {:.1} MB (written in {:.1?})",
        fixture.events,
        fixture.turns,
        fixture.checkpoints,
        fixture.export_bytes as f64 / 1e6,
        db_bytes as f64 / 1e6,
        started.elapsed()
    );
    let bin = env!("CARGO_BIN_EXE_contextfold");
    let db = db.to_str().expect("utf-8 path");
    let export = export.to_str().expect("utf-8 path");
    let commands: [(&str, Vec<&str>); 3] = [
        ("openssl dgst -sha256 (export)", vec!["openssl", "dgst", "-sha256", export]),
        (
            "contextfold project --context-window 128000 --json",
            vec![
                bin,
                "project",
                "--db",
                db,
                "--session",
                SESSION,
                "--context-window",
                "128000",
                "--json",
            ],
        ),
        ("contextfold verify", vec![bin, "verify", "--db", db, "--session", SESSION]),
    ];
    // Paired: each round runs the three commands one after the other.
    let mut samples: Vec<Vec<(f64, u64)>> = vec![Vec::new(); commands.len()];
    for _ in 0..RUNS {
        for (index, (_, command)) in commands.iter().enumerate() {
            samples[index].push(measure(command));
        }
    }
    let medians: Vec<(f64, f64)> = samples
        .iter_mut()
        .map(|runs| {
            let mut times: Vec<f64> = runs.iter().map(|r| r.0).collect();
            times.sort_by(f64::total_cmp);
            let peak = runs.iter().map(|r| r.1).max().unwrap_or(0);
            (times[times.len() / 2], peak as f64 / 1024.0)
        })
        .collect();
    let baseline = medians[0].0;
    println!("| command | median of {RUNS} | against openssl | peak RSS |");
    println!("| --- | ---: | ---: | ---: |");
    for ((name, _), (time, rss)) in commands.iter().zip(&medians) {
        println!("| `{name}` | {time:.3} s | {:.2}x | {rss:.1} MiB |", time / baseline);
    }
    mid_turn_rows(dir.path());
    let large_mb: u64 =
        std::env::var("CONTEXTFOLD_CLI_LARGE_MB").ok().and_then(|v| v.parse().ok()).unwrap_or(1024);
    if large_mb > 0 {
        large_rows(dir.path(), large_mb, bin);
    }
    let size = format!("{}k_events", fixture.events / 1000);
    for (key, index, goal) in [("project", 1, PROJECT_GOAL), ("verify", 2, VERIFY_GOAL)] {
        let (time, rss) = medians[index];
        let ratio = time / baseline;
        result(
            &format!("cli_{key}_{size}_vs_openssl"),
            &format!("{ratio:.2}x"),
            &format!("<= {goal}x"),
            ratio <= goal,
        );
        result(
            &format!("cli_{key}_{size}_peak_rss_mib"),
            &format!("{rss:.1}"),
            &format!("<= {RSS_GOAL_MIB}"),
            rss <= RSS_GOAL_MIB,
        );
    }
}

/// Peak RSS of `project` and `verify` on a ledger of about `megabytes` MB (the same fixture,
/// larger; one run each, its time against one `openssl` pass reported).
fn large_rows(dir: &std::path::Path, megabytes: u64, bin: &str) {
    let db = dir.join("large.sqlite");
    let export = dir.join("large.jsonl");
    // The trajectories average about 1 KB of JSON per event.
    let started = Instant::now();
    let fixture = fixture::write(&db, &export, megabytes * 1_000, CHECKPOINTS);
    println!(
        "large fixture: {} events, {} checkpoints, export {:.0} MB, SQLite file {:.0} MB (written in {:.1?})",
        fixture.events,
        fixture.checkpoints,
        fixture.export_bytes as f64 / 1e6,
        std::fs::metadata(&db).map_or(0, |m| m.len()) as f64 / 1e6,
        started.elapsed()
    );
    let (db, export) = (db.to_str().expect("utf-8"), export.to_str().expect("utf-8"));
    let (baseline, _) = measure(&["openssl", "dgst", "-sha256", export]);
    let label = format!("{}mb", fixture.export_bytes / 1_000_000);
    let project =
        [bin, "project", "--db", db, "--session", SESSION, "--context-window", "128000", "--json"];
    let verify = [bin, "verify", "--db", db, "--session", SESSION];
    for (key, command) in [("project", &project[..]), ("verify", &verify[..])] {
        let (time, rss) = measure(command);
        let mib = rss as f64 / 1024.0;
        println!(
            "| `contextfold {key}` on {label} | {time:.2} s | {:.2}x | {mib:.1} MiB |",
            time / baseline
        );
        result(
            &format!("cli_{key}_{label}_peak_rss_mib"),
            &format!("{mib:.1}"),
            &format!("<= {RSS_GOAL_MIB}"),
            mib <= RSS_GOAL_MIB,
        );
        println!("RESULT|cli_{key}_{label}_vs_openssl|{:.2}x|report|-", time / baseline);
    }
}

/// Goal 3: mid-turn evaluations through `SessionRuntime` on a short and a long session.
fn mid_turn_rows(dir: &std::path::Path) {
    let mut rows = Vec::new();
    for events in [MID_TURN_SESSIONS.0, MID_TURN_SESSIONS.1] {
        let db = dir.join(format!("mid-turn-{events}.sqlite"));
        let export = dir.join(format!("mid-turn-{events}.jsonl"));
        let fixture = fixture::write(&db, &export, events, (events / 1_000).max(1));
        rows.push((fixture.events, mid_turn::evaluate(&db, MID_TURN_STEPS)));
    }
    println!(
        "| session | mid-turn evaluation: median of {MID_TURN_STEPS} steps | after a calibration change |"
    );
    println!("| --- | ---: | ---: |");
    for (events, e) in &rows {
        println!(
            "| {events} events | {:.2} ms | {:.2} ms |",
            e.median * 1e3,
            e.after_ratio_change * 1e3
        );
    }
    let ratio = rows[1].1.median / rows[0].1.median;
    result(
        "mid_turn_evaluation_100k_vs_1k_events",
        &format!("{ratio:.2}x"),
        &format!("<= {MID_TURN_GOAL}x"),
        ratio <= MID_TURN_GOAL,
    );
    let changed = rows[1].1.after_ratio_change / rows[0].1.after_ratio_change;
    println!(
        "RESULT|mid_turn_evaluation_after_ratio_change_100k_vs_1k_events|{changed:.2}x|report|-"
    );
}

/// Runs `command` through this binary's `--measure` mode: (seconds, peak RSS in KiB).
fn measure(command: &[&str]) -> (f64, u64) {
    let measured = support::child::measure(command);
    (measured.seconds, measured.rss_kib)
}
