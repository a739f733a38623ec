//! Cold `contextfold project` from PostgreSQL against SQLite (issue 40), as whole processes:
//! the same fixture as `cli_paths` (the real trajectories of `tests/trajectories/` copied into
//! one session, 88 checkpoints; `cli_paths/fixture.rs`) written into a SQLite file and into a
//! PostgreSQL database through the `Ledger` trait, at two ledger sizes (about 9,000 and 90,000
//! events), then paired rounds of
//! `contextfold project --db <file|url> --session bench --context-window 128000 --json`: each
//! round runs the SQLite and the PostgreSQL process of each size back to back (which goes first
//! alternates by round), and the ratio is taken within the round. Each process's wall time and
//! peak RSS come from this binary's `--measure` mode (`getrusage(RUSAGE_CHILDREN)` of the one
//! child), as in `cli_paths`.
//!
//! Goals: PostgreSQL's median per-round ratio at 90k events at most 2x SQLite's; peak RSS at 90k
//! events at most 1.10x the 9k ledger's on each backend (independent of the ledger's size).
//! Before the rounds, one `project` of each backend is checked to print the same projection
//! (messages and checkpoint), so both read the same checkpoint and tail.
//!
//! Run under a server: `bash scripts/with-postgres.sh cargo bench -p contextfold-host --bench
//! ledger_cold` (or `bash bench/ledger.sh`). `CONTEXTFOLD_PG_COLD_EVENTS` (default
//! `9000,90000`) sets the sizes, the last being the goal's; `CONTEXTFOLD_PG_COLD_RUNS` the rounds
//! (default 7). The databases are created fresh (`cold_<events>`) and dropped afterwards.

mod support;

#[path = "cli_paths/fixture.rs"]
mod fixture;

use std::process::{Command, Stdio};
use std::time::Instant;

use contextfold_host::ledger::postgres::{PgLedger, PgLedgerConfig};
use contextfold_host::ledger::{IntoLedger, SharedLedger};
use support::{SESSION, result};

const CHECKPOINTS: u64 = 88;
const TIME_GOAL: f64 = 2.0;
const RSS_GOAL: f64 = 1.10;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(index) = args.iter().position(|arg| arg == "--measure") {
        measure_child(&args[index + 1..]);
        return;
    }
    let Ok(url) = std::env::var("CONTEXTFOLD_PG_URL") else {
        println!("RESULT|cold_project_postgres|not run (no CONTEXTFOLD_PG_URL)|-|-");
        return;
    };
    let sizes: Vec<u64> = std::env::var("CONTEXTFOLD_PG_COLD_EVENTS")
        .unwrap_or_else(|_| "9000,90000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let runs: usize =
        std::env::var("CONTEXTFOLD_PG_COLD_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(7);
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let (admin, connection) = runtime
        .block_on(tokio_postgres::connect(&url, tokio_postgres::NoTls))
        .expect("an admin connection");
    runtime.spawn(connection);
    let settings: Vec<String> = ["server_version", "fsync", "shared_buffers"]
        .iter()
        .map(|name| {
            let row = runtime
                .block_on(admin.query_one(&format!("SHOW {name}"), &[]))
                .expect("SHOW");
            format!("{name}={}", row.get::<_, String>(0))
        })
        .collect();
    println!("server: {}", settings.join(", "));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let bin = env!("CARGO_BIN_EXE_contextfold");

    // The ledgers: (label, events, SQLite path, PostgreSQL URL).
    let mut ledgers = Vec::new();
    for &target in &sizes {
        let db = dir.path().join(format!("cold-{target}.sqlite"));
        let export = dir.path().join(format!("cold-{target}.jsonl"));
        let started = Instant::now();
        let written = fixture::write(&db, &export, target, CHECKPOINTS);
        let sqlite_time = started.elapsed();
        let dbname = format!("cold_{target}");
        runtime.block_on(async {
            admin.batch_execute(&format!("DROP DATABASE IF EXISTS {dbname}")).await.expect("drop");
            admin.batch_execute(&format!("CREATE DATABASE {dbname}")).await.expect("create");
        });
        let started = Instant::now();
        let pg_written = write_postgres(&runtime, &url, &dbname, target);
        let pg_time = started.elapsed();
        assert_eq!(
            (written.events, written.checkpoints),
            (pg_written.events, pg_written.checkpoints)
        );
        let pg_bytes = runtime
            .block_on(admin.query_one(&format!("SELECT pg_database_size('{dbname}')"), &[]))
            .expect("database size")
            .get::<_, i64>(0);
        println!(
            "ledger: {} events, {} turns, {} checkpoints, export {:.1} MB; SQLite file {:.1} MB (written in {sqlite_time:.1?}), PostgreSQL database {:.1} MB (written in {pg_time:.1?})",
            written.events,
            written.turns,
            written.checkpoints,
            written.export_bytes as f64 / 1e6,
            std::fs::metadata(&db).map_or(0, |m| m.len()) as f64 / 1e6,
            pg_bytes as f64 / 1e6
        );
        let label = format!("{}k", (written.events + 500) / 1000);
        ledgers.push((label, dbname.clone(), db, db_url(&url, &dbname)));
    }
    // The server's statistics, as autovacuum would have them on a long-lived database.
    for (_, dbname, _, _) in &ledgers {
        runtime.block_on(async {
            let (client, connection) =
                tokio_postgres::connect(&db_url(&url, dbname), tokio_postgres::NoTls)
                    .await
                    .expect("a connection");
            tokio::spawn(connection);
            client.batch_execute("VACUUM ANALYZE").await.expect("vacuum");
        });
    }

    let project = |db: &str| -> Vec<String> {
        [bin, "project", "--db", db, "--session", SESSION, "--context-window", "128000", "--json"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    };
    // Both backends print the same projection.
    for (label, _, db, pg) in &ledgers {
        let (sqlite, postgres) = (output(&project(db_str(db))), output(&project(pg)));
        let same = ["messages", "checkpoint", "estimatedTokens", "omittedEvents"]
            .iter()
            .all(|key| sqlite[key] == postgres[key]);
        let checkpoint = &postgres["checkpoint"];
        println!(
            "{label}: PostgreSQL's projection {} SQLite's; checkpoint {}",
            if same { "equals" } else { "DIFFERS FROM" },
            checkpoint
        );
        result(&format!("cold_project_{label}_postgres_output_equals_sqlite"), &same.to_string(), "true", same);
    }

    // Paired rounds: per size, SQLite and PostgreSQL back to back, order alternating.
    let mut samples: Vec<[Vec<(f64, u64)>; 2]> = vec![[Vec::new(), Vec::new()]; ledgers.len()];
    for round in 0..runs {
        for (index, (_, _, db, pg)) in ledgers.iter().enumerate() {
            let commands = [project(db_str(db)), project(pg)];
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for backend in order {
                samples[index][backend].push(measure(&commands[backend]));
            }
        }
    }
    println!(
        "| ledger | SQLite: median of {runs} | PostgreSQL: median of {runs} | PostgreSQL / SQLite (median of per-round ratios) | peak RSS SQLite | peak RSS PostgreSQL |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    let mut summary = Vec::new();
    for ((label, _, _, _), [sqlite, postgres]) in ledgers.iter().zip(&samples) {
        let mut ratios: Vec<f64> = sqlite.iter().zip(postgres).map(|(s, p)| p.0 / s.0).collect();
        let ratio = median(&mut ratios);
        let time = |runs: &[(f64, u64)]| median(&mut runs.iter().map(|r| r.0).collect::<Vec<_>>());
        let rss = |runs: &[(f64, u64)]| runs.iter().map(|r| r.1).max().unwrap_or(0) as f64 / 1024.0;
        let row = (time(sqlite), time(postgres), ratio, rss(sqlite), rss(postgres));
        println!(
            "| {label} events | {:.3} s | {:.3} s | {:.2}x | {:.1} MiB | {:.1} MiB |",
            row.0, row.1, row.2, row.3, row.4
        );
        summary.push((label.clone(), row));
    }
    for (label, (sqlite, postgres, ratio, sqlite_rss, pg_rss)) in &summary {
        println!("RESULT|cold_project_{label}_sqlite_ms|{:.0}|report|-", sqlite * 1e3);
        println!("RESULT|cold_project_{label}_postgres_ms|{:.0}|report|-", postgres * 1e3);
        println!("RESULT|cold_project_{label}_sqlite_peak_rss_mib|{sqlite_rss:.1}|report|-");
        println!("RESULT|cold_project_{label}_postgres_peak_rss_mib|{pg_rss:.1}|report|-");
        if Some(label) == summary.last().map(|s| &s.0) {
            result(
                &format!("cold_project_{label}_postgres_vs_sqlite"),
                &format!("{ratio:.2}x"),
                &format!("<= {TIME_GOAL}x"),
                *ratio <= TIME_GOAL,
            );
        } else {
            println!("RESULT|cold_project_{label}_postgres_vs_sqlite|{ratio:.2}x|report|-");
        }
    }
    if let [(small, s), .., (large, l)] = &summary[..] {
        for (backend, small_rss, large_rss) in [("sqlite", s.3, l.3), ("postgres", s.4, l.4)] {
            let growth = large_rss / small_rss;
            result(
                &format!("cold_project_peak_rss_{large}_vs_{small}_{backend}"),
                &format!("{growth:.2}x"),
                &format!("<= {RSS_GOAL:.2}x"),
                growth <= RSS_GOAL,
            );
        }
    }
    runtime.block_on(async {
        for (_, dbname, _, _) in &ledgers {
            admin
                .batch_execute(&format!("DROP DATABASE IF EXISTS {dbname} WITH (FORCE)"))
                .await
                .expect("drop");
        }
    });
}

/// Writes the fixture of `target` events into the (empty) database `dbname` through the
/// `Ledger` trait: each turn's events in one append, each checkpoint by compare-and-swap.
fn write_postgres(
    runtime: &tokio::runtime::Runtime,
    url: &str,
    dbname: &str,
    target: u64,
) -> fixture::Fixture {
    let config = PgLedgerConfig::from_url(url).expect("the URL").with_dbname(dbname);
    let ledger: SharedLedger =
        runtime.block_on(PgLedger::connect(&config)).expect("the PostgreSQL ledger").into_ledger();
    fixture::build(target, CHECKPOINTS, |step| match step {
        fixture::Step::Events(events) => {
            runtime.block_on(ledger.append_events(SESSION, events)).expect("append");
        }
        fixture::Step::Checkpoint { event_id, recorded_at_ms, checkpoint } => runtime
            .block_on(ledger.append_checkpoint(&event_id, "run-bench", recorded_at_ms, checkpoint))
            .expect("a valid successor"),
    })
}

/// `url` with its database replaced by `dbname`.
fn db_url(url: &str, dbname: &str) -> String {
    let (base, query) = url.split_once('?').map_or((url, None), |(b, q)| (b, Some(q)));
    let authority = base.find("://").map_or(0, |i| i + 3);
    let base = match base[authority..].find('/') {
        Some(slash) => &base[..authority + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{base}/{dbname}?{query}"),
        None => format!("{base}/{dbname}"),
    }
}

fn db_str(path: &std::path::Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Runs `command` once and parses its JSON stdout.
fn output(command: &[String]) -> serde_json::Value {
    let output = Command::new(&command[0])
        .args(&command[1..])
        .stderr(Stdio::inherit())
        .output()
        .expect("the command");
    assert!(output.status.success(), "{command:?} failed: {}", output.status);
    serde_json::from_slice(&output.stdout).expect("JSON output")
}

/// Runs `command` through this binary's `--measure` mode: (seconds, peak RSS in KiB).
fn measure(command: &[String]) -> (f64, u64) {
    let output = Command::new(std::env::current_exe().expect("this bench binary"))
        .arg("--measure")
        .args(command)
        .stderr(Stdio::inherit())
        .output()
        .expect("the measuring child");
    let text = String::from_utf8_lossy(&output.stdout);
    let mut fields = text.split_whitespace();
    let seconds = fields.next().and_then(|s| s.parse().ok()).expect("seconds");
    let rss = fields.next().and_then(|s| s.parse().ok()).expect("rss");
    (seconds, rss)
}

/// `--measure`: runs `command` (output discarded), fails on a non-zero exit, prints
/// `<seconds> <peak RSS KiB>` of that one child (as `cli_paths`).
#[allow(unsafe_code)] // `getrusage` is the one way to read a finished child's peak RSS.
fn measure_child(command: &[String]) {
    let started = Instant::now();
    let status = Command::new(&command[0])
        .args(&command[1..])
        .stdout(Stdio::null())
        .status()
        .expect("the measured command");
    let seconds = started.elapsed().as_secs_f64();
    assert!(status.success(), "{command:?} failed: {status}");
    // SAFETY: `getrusage` writes into the zeroed struct it is given and has no other effect.
    let rss = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage.ru_maxrss
    };
    println!("{seconds} {rss}");
}
