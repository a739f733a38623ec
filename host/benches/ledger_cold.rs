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
        support::child::measure_child(&args[index + 1..]);
        return;
    }
    if let Some(index) = args.iter().position(|arg| arg == "--project-in") {
        project_in(&args[index + 1], &args[index + 2]);
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
            let row =
                runtime.block_on(admin.query_one(&format!("SHOW {name}"), &[])).expect("SHOW");
            format!("{name}={}", row.get::<_, String>(0))
        })
        .collect();
    println!("server: {}", settings.join(", "));
    let dir = tempfile::tempdir().expect("a temporary directory");
    // `CONTEXTFOLD_PG_COLD_FIXTURE=<dir>`: only write the ledgers (SQLite files in `<dir>`, the
    // databases kept), to run or profile the commands by hand.
    let keep = std::env::var_os("CONTEXTFOLD_PG_COLD_FIXTURE").map(std::path::PathBuf::from);
    let root = keep.clone().unwrap_or_else(|| dir.path().to_owned());
    let bin = env!("CARGO_BIN_EXE_contextfold");

    // The ledgers: (label, database, SQLite path, PostgreSQL URL). The smaller ones end on the
    // same trajectory as the largest, with the same density of checkpoints, so every ledger's
    // projection is one checkpoint plus the same raw tail (the final turn): only the covered
    // prefix grows.
    let largest = sizes.iter().copied().max().unwrap_or(90_000);
    let mut ledgers = Vec::new();
    for &size in &sizes {
        let target = aligned(size, largest);
        let checkpoints = (CHECKPOINTS * target).div_ceil(largest).clamp(2, CHECKPOINTS);
        let db = root.join(format!("cold-{size}.sqlite"));
        let export = root.join(format!("cold-{size}.jsonl"));
        let started = Instant::now();
        let written = fixture::write(&db, &export, target, checkpoints);
        let sqlite_time = started.elapsed();
        let dbname = format!("cold_{size}");
        runtime.block_on(async {
            admin.batch_execute(&format!("DROP DATABASE IF EXISTS {dbname}")).await.expect("drop");
            admin.batch_execute(&format!("CREATE DATABASE {dbname}")).await.expect("create");
        });
        let started = Instant::now();
        let pg_written = write_postgres(&runtime, &url, &dbname, target, checkpoints);
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

    if keep.is_some() {
        for (_, _, db, pg) in &ledgers {
            println!("kept: --db {} and --db {pg}", db.display());
        }
        return;
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
        result(
            &format!("cold_project_{label}_postgres_output_equals_sqlite"),
            &same.to_string(),
            "true",
            same,
        );
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
    let mut dropped: Vec<String> = ledgers.iter().map(|l| l.1.clone()).collect();
    if std::env::var("CONTEXTFOLD_PG_COLD_DIAGNOSE").map_or(true, |v| v != "0")
        && let Some((label, dbname, db, pg)) = ledgers.last()
    {
        let lz4 = format!("{dbname}_lz4");
        dropped.push(lz4.clone());
        let lz4 =
            runtime.block_on(lz4_copy(&admin, &url, dbname, &lz4)).then(|| db_url(&url, &lz4));
        diagnose(label, db_str(db), pg, lz4.as_deref(), runs, bin);
    }
    runtime.block_on(async {
        for dbname in &dropped {
            admin
                .batch_execute(&format!("DROP DATABASE IF EXISTS {dbname} WITH (FORCE)"))
                .await
                .expect("drop");
        }
    });
}

/// Where PostgreSQL's time goes (the goal row's ledger): paired rounds of the same projection
/// as `contextfold project` (open, `last_seq`, `SessionRuntime::project_for_request`) run by this
/// binary in-process (`--project-in`) on the CLI's multi-thread tokio runtime and on a
/// current-thread one, and on a copy of the database whose `event_json` is TOAST-compressed
/// with lz4 instead of the default pglz; each against the SQLite `contextfold project` of the
/// same round. Reported, not goals: they size the fixes proposed in docs/performance.md.
fn diagnose(label: &str, sqlite: &str, pg: &str, pg_lz4: Option<&str>, runs: usize, bin: &str) {
    let me = std::env::current_exe().expect("this bench binary");
    let me = me.to_str().expect("a UTF-8 path");
    let cli = |db: &str| -> Vec<String> {
        [bin, "project", "--db", db, "--session", SESSION, "--context-window", "128000", "--json"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    };
    let inproc = |db: &str, flavor: &str| -> Vec<String> {
        [me, "--project-in", db, flavor].iter().map(|s| (*s).to_owned()).collect()
    };
    let mut variants: Vec<(&str, Vec<String>)> = vec![
        ("sqlite_cli", cli(sqlite)),
        ("postgres_cli", cli(pg)),
        ("postgres_inprocess_multi_thread", inproc(pg, "multi")),
        ("postgres_inprocess_current_thread", inproc(pg, "current")),
        ("sqlite_inprocess_current_thread", inproc(sqlite, "current")),
    ];
    if let Some(pg_lz4) = pg_lz4 {
        variants.push(("postgres_lz4_inprocess_multi_thread", inproc(pg_lz4, "multi")));
        variants.push(("postgres_lz4_inprocess_current_thread", inproc(pg_lz4, "current")));
    }
    let mut samples = vec![Vec::new(); variants.len()];
    let mut cpu = vec![Vec::new(); variants.len()];
    for _ in 0..runs {
        for (index, (_, command)) in variants.iter().enumerate() {
            let support::child::Measured { seconds, cpu_seconds, .. } =
                support::child::measure(command);
            samples[index].push(seconds);
            cpu[index].push(cpu_seconds);
        }
    }
    println!(
        "diagnosis on the {label} ledger, {runs} paired rounds (median; ratio: median of per-round ratios to the SQLite CLI):"
    );
    println!("| variant | wall | client CPU (user+sys) | against the SQLite CLI |");
    println!("| --- | ---: | ---: | ---: |");
    for (index, (name, _)) in variants.iter().enumerate() {
        let mut ratios: Vec<f64> =
            samples[index].iter().zip(&samples[0]).map(|(v, s)| v / s).collect();
        let ratio = median(&mut ratios);
        let wall = median(&mut samples[index].clone());
        let cpu = median(&mut cpu[index].clone());
        println!("| {name} | {:.3} s | {:.3} s | {ratio:.2}x |", wall, cpu);
        if index > 0 {
            println!("RESULT|diagnose_{label}_{name}_vs_sqlite_cli|{ratio:.2}x|report|-");
        }
    }
}

/// A copy of `dbname` whose `event_json` is TOAST-compressed with lz4 (the rows rewritten:
/// `|| ''` makes each a new value, so it is compressed again); false when the server has no
/// lz4.
async fn lz4_copy(admin: &tokio_postgres::Client, url: &str, dbname: &str, copy: &str) -> bool {
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {copy}")).await.expect("drop");
    // The template must have no other session: the projections' backends may still be exiting.
    let create = format!("CREATE DATABASE {copy} TEMPLATE {dbname}");
    for attempt in 0.. {
        match admin.batch_execute(&create).await {
            Ok(()) => break,
            Err(error) if attempt < 20 => {
                let _ = error;
                tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            }
            Err(error) => panic!("a copy of the database: {error}"),
        }
    }
    let (client, connection) = tokio_postgres::connect(&db_url(url, copy), tokio_postgres::NoTls)
        .await
        .expect("a connection");
    tokio::spawn(connection);
    let rewrite = "ALTER TABLE runtime_events RENAME TO runtime_events_pglz; \
        CREATE TABLE runtime_events (LIKE runtime_events_pglz INCLUDING ALL); \
        ALTER TABLE runtime_events ALTER COLUMN event_json SET COMPRESSION lz4; \
        INSERT INTO runtime_events SELECT session_id, seq, runtime_event_id, event_json || '', \
            canonical, turn_id, run_id, live_head, tokens FROM runtime_events_pglz ORDER BY seq;";
    match client.batch_execute(rewrite).await {
        Ok(()) => {
            client.batch_execute("VACUUM ANALYZE runtime_events").await.expect("vacuum");
            true
        }
        Err(error) => {
            println!("no lz4 copy: {error:?}");
            false
        }
    }
}

/// `--project-in <db> <multi|current>`: the projection `contextfold project` computes, on a
/// tokio runtime of that flavor, in this process.
fn project_in(db: &str, flavor: &str) {
    let runtime = match flavor {
        "current" => tokio::runtime::Builder::new_current_thread().enable_all().build(),
        _ => tokio::runtime::Builder::new_multi_thread().enable_all().build(),
    }
    .expect("a tokio runtime");
    let messages = runtime.block_on(async {
        let ledger: SharedLedger = if PgLedgerConfig::is_url(db) {
            let config = PgLedgerConfig::from_url(db).expect("the URL");
            PgLedger::connect(&config).await.expect("the PostgreSQL ledger").into_ledger()
        } else {
            contextfold_host::ledger::SqliteLedger::open(db)
                .await
                .expect("the SQLite ledger")
                .into_ledger()
        };
        assert!(ledger.last_seq(SESSION).await.expect("last seq").is_some());
        let config = contextfold_host::runtime::SessionConfig {
            session_id: SESSION.into(),
            model: contextfold_core::ModelFacts {
                context_window: Some(128_000),
                ..Default::default()
            },
            provider: contextfold_core::compaction::ProviderIdentity {
                provider: "local".into(),
                connection_slug: "default".into(),
                model_id: "default".into(),
            },
            compactor: contextfold_core::compaction::Compactor::TextSummary,
        };
        let session = contextfold_host::runtime::SessionRuntime::new(
            ledger,
            config,
            contextfold_host::runtime::ExtractiveSummarizer,
            contextfold_host::runtime::NoNativeCompactor,
        );
        let report = session.project_for_request().await.expect("a projection");
        assert!(report.projection.checkpoint.is_some(), "projected from the checkpoint");
        report.projection.messages.len()
    });
    assert!(messages > 0);
}

/// Writes the fixture of `target` events into the (empty) database `dbname` through the
/// `Ledger` trait: each turn's events in one append, each checkpoint by compare-and-swap.
fn write_postgres(
    runtime: &tokio::runtime::Runtime,
    url: &str,
    dbname: &str,
    target: u64,
    checkpoints: u64,
) -> fixture::Fixture {
    let config = PgLedgerConfig::from_url(url).expect("the URL").with_dbname(dbname);
    let ledger: SharedLedger =
        runtime.block_on(PgLedger::connect(&config)).expect("the PostgreSQL ledger").into_ledger();
    fixture::build(target, checkpoints, |step| match step {
        fixture::Step::Events(events) => {
            runtime.block_on(ledger.append_events(SESSION, events)).expect("append");
        }
        fixture::Step::Checkpoint { event_id, recorded_at_ms, checkpoint } => runtime
            .block_on(ledger.append_checkpoint(&event_id, "run-bench", recorded_at_ms, *checkpoint))
            .expect("a valid successor"),
    })
}

/// The fixture target nearest `size` (at or above it) whose final turn is the same trajectory
/// as that of a `largest`-event fixture (the fixture copies the trajectories in order and stops
/// on the turn that reaches its target).
fn aligned(size: u64, largest: u64) -> u64 {
    let lengths: Vec<u64> = contextfold_conformance::trajectories::all()
        .iter()
        .map(|t| t.events.len() as u64)
        .collect();
    // The plan's turns as (file, events before it), until `largest` is reached.
    let mut turns = Vec::new();
    let mut total = 0;
    'copies: loop {
        for (file, len) in lengths.iter().enumerate() {
            if total >= largest {
                break 'copies;
            }
            turns.push((file, total));
            total += len;
        }
    }
    let last_file = turns.last().map_or(0, |t| t.0);
    turns
        .iter()
        .find(|&&(file, before)| file == last_file && before + lengths[file] >= size)
        .map_or(size, |&(_, before)| before + 1)
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
    let measured = support::child::measure(command);
    (measured.seconds, measured.rss_kib)
}
