//! Append throughput of a fleet (issue 40): 16 concurrent writers appending agent steps to 64
//! sessions through the `Ledger` trait, on one SQLite file (the single-machine baseline) and on
//! one local PostgreSQL server; appends/s, events/s and p50/p99 append latency.
//!
//! **The writers** are 16 tokio tasks of one process sharing one `SharedLedger`, as a server
//! host runs them: on PostgreSQL a pool of 16 connections (16 server backends, so the server
//! sees 16 concurrent transactions); on SQLite the one store of the process (WAL,
//! `synchronous=FULL`, as `Store::open` sets it), whose writes are serialized by the file's
//! write lock whatever the number of processes (several processes would add only the busy
//! handler's sleeps). Writer `w` owns sessions `w, w+16, w+32, w+48` and appends to them in
//! turn, so each session has one writer at a time, as a lease gives it, and `seq` is known.
//!
//! **An append** is one agent step: a `tool_call` (~120 B) and its `tool_result` (~4 KB of mixed
//! ASCII, accents, CJK and newlines) in one `append_events` transaction; the latency is that
//! call's wall time, as the caller sees it. Each session gets one untimed append first (its
//! first rows; PostgreSQL's pool warms up).
//!
//! Run under a server: `bash scripts/with-postgres.sh cargo bench -p contextfold-host --bench
//! ledger_fleet` (or `bash bench/ledger.sh`, which starts a cluster with fsync on). Settings:
//! `CONTEXTFOLD_PG_URL` (without it only SQLite runs), `CONTEXTFOLD_FLEET_SECS` (timed seconds
//! per backend, default 10), `CONTEXTFOLD_FLEET_BACKENDS` (`sqlite,postgres`),
//! `CONTEXTFOLD_FLEET_TAG` (a suffix of the metric names, e.g. `fsync_off`). The PostgreSQL run
//! creates a fresh database and drops it afterwards; the rows name the server's `fsync` and
//! `synchronous_commit`.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use contextfold_core::{EventContent, RuntimeEvent};
use contextfold_host::ledger::postgres::{PgLedger, PgLedgerConfig};
use contextfold_host::ledger::{IntoLedger, SharedLedger, SqliteLedger};
use serde_json::json;

const WRITERS: usize = 16;
const SESSIONS: usize = 64;
const OUTPUT_BYTES: usize = 4_000;

/// What one backend measured.
struct Run {
    appends: usize,
    seconds: f64,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
}

fn main() {
    let seconds: u64 =
        std::env::var("CONTEXTFOLD_FLEET_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(10);
    let backends =
        std::env::var("CONTEXTFOLD_FLEET_BACKENDS").unwrap_or_else(|_| "sqlite,postgres".into());
    let tag = std::env::var("CONTEXTFOLD_FLEET_TAG").map(|t| format!("_{t}")).unwrap_or_default();
    let duration = Duration::from_secs(seconds);
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    println!(
        "fleet: {WRITERS} writers, {SESSIONS} sessions, one append = tool call + ~{} KB tool result, {seconds} s per backend, {} cores",
        OUTPUT_BYTES / 1000,
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    println!("| backend | appends | appends/s | events/s | p50 | p99 | max |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut rows: Vec<(String, Run)> = Vec::new();
    if backends.contains("sqlite") {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("fleet.sqlite");
        let run = runtime.block_on(async {
            let ledger = SqliteLedger::open(&path).await.expect("a new SQLite ledger");
            fleet(ledger.into_ledger(), duration).await
        });
        rows.push(("sqlite".into(), run));
    }
    if backends.contains("postgres") {
        match std::env::var("CONTEXTFOLD_PG_URL") {
            Ok(url) => {
                let (run, settings) = runtime.block_on(postgres(&url, duration));
                rows.push((format!("postgres_{settings}"), run));
            }
            Err(_) => println!("RESULT|fleet_postgres|not run (no CONTEXTFOLD_PG_URL)|-|-"),
        }
    }
    for (name, run) in &rows {
        let rate = run.appends as f64 / run.seconds;
        println!(
            "| {name} | {} | {rate:.0} | {:.0} | {:.2} ms | {:.2} ms | {:.2} ms |",
            run.appends,
            rate * 2.0,
            run.p50_ms,
            run.p99_ms,
            run.max_ms
        );
    }
    for (name, run) in &rows {
        let metric = format!("fleet_16w_64s_{name}{tag}");
        let rate = run.appends as f64 / run.seconds;
        println!("RESULT|{metric}_appends_per_s|{rate:.0}|report|-");
        println!("RESULT|{metric}_events_per_s|{:.0}|report|-", rate * 2.0);
        println!("RESULT|{metric}_p50_append_ms|{:.2}|report|-", run.p50_ms);
        println!("RESULT|{metric}_p99_append_ms|{:.2}|report|-", run.p99_ms);
    }
    if let [(sqlite, s), (pg, p), ..] = &rows[..] {
        let ratio = (p.appends as f64 / p.seconds) / (s.appends as f64 / s.seconds);
        println!("RESULT|fleet_16w_64s_{pg}_vs_{sqlite}{tag}_throughput|{ratio:.2}x|report|-");
    }
}

/// A fresh database on the server of `url`, the fleet run on it, the database dropped; the
/// server's `fsync`/`synchronous_commit` as `fsync_on_sync_on`.
async fn postgres(url: &str, duration: Duration) -> (Run, String) {
    let (admin, connection) =
        tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("an admin connection");
    tokio::spawn(connection);
    let show = |name: &'static str| {
        let admin = &admin;
        async move {
            let row = admin.query_one(&format!("SHOW {name}"), &[]).await.expect("SHOW");
            row.get::<_, String>(0)
        }
    };
    let settings = format!("fsync_{}_sync_commit_{}", show("fsync").await, show("synchronous_commit").await);
    let dbname = format!("fleet_{}", std::process::id());
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {dbname}")).await.expect("drop");
    admin.batch_execute(&format!("CREATE DATABASE {dbname}")).await.expect("create");
    let config = PgLedgerConfig::from_url(url)
        .expect("the URL")
        .with_dbname(&dbname)
        .with_pool_size(WRITERS);
    let ledger = PgLedger::connect(&config).await.expect("the PostgreSQL ledger");
    let run = fleet(ledger.clone().into_ledger(), duration).await;
    drop(ledger);
    // The pool's connections close when their last handle drops; WITH (FORCE) ends stragglers.
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {dbname} WITH (FORCE)"))
        .await
        .expect("drop");
    (run, settings)
}

/// One agent step of `session` at `seq`, `seq + 1`: a tool call and its result.
fn step(session: &str, step: u64, seq: u64, output: &str) -> Vec<RuntimeEvent> {
    let call_id = format!("call-{step}");
    let turn = format!("t{}", step / 8);
    let contents = [
        EventContent::ToolCall {
            call_id: call_id.clone(),
            tool_name: "shell".into(),
            input: json!({"cmd": "cargo test -p contextfold-host --lib ledger::", "step": step}),
        },
        EventContent::ToolResult {
            call_id,
            tool_name: "shell".into(),
            output: json!(format!("{output}{step}")),
            is_error: false,
            attachments: Vec::new(),
        },
    ];
    contents
        .into_iter()
        .enumerate()
        .map(|(index, content)| {
            let seq = seq + index as u64;
            RuntimeEvent {
                created_at_ms: Some(1_700_000_000_000 + seq),
                ..RuntimeEvent::new(
                    session.into(),
                    format!("r{turn}"),
                    turn.clone(),
                    format!("{session}-e{seq}"),
                    seq,
                    content,
                )
            }
        })
        .collect()
}

/// The fleet on `ledger`: every session's first step untimed, then `duration` of timed steps.
async fn fleet(ledger: SharedLedger, duration: Duration) -> Run {
    const LINE: &str = "test ledger::tests::append_héllo_世界 ... ok \"quoted\"\n";
    let output: Arc<str> = LINE.repeat(OUTPUT_BYTES / LINE.len()).into();
    let mut writers = Vec::new();
    // Every writer's untimed first appends end before the clock starts.
    let ready = Arc::new(tokio::sync::Barrier::new(WRITERS + 1));
    for writer in 0..WRITERS {
        let ledger = Arc::clone(&ledger);
        let output = Arc::clone(&output);
        let ready = Arc::clone(&ready);
        writers.push(tokio::spawn(async move {
            let sessions: Vec<String> =
                (0..SESSIONS / WRITERS).map(|k| format!("fleet-{}", writer + k * WRITERS)).collect();
            let mut steps = vec![0u64; sessions.len()];
            for (index, session) in sessions.iter().enumerate() {
                ledger.append_events(session, step(session, 0, 1, &output)).await.expect("append");
                steps[index] = 1;
            }
            ready.wait().await;
            let deadline = Instant::now() + duration;
            let mut latencies = Vec::new();
            let mut index = 0;
            while Instant::now() < deadline {
                let session = &sessions[index];
                let n = steps[index];
                let events = step(session, n, 2 * n + 1, &output);
                let began = Instant::now();
                ledger.append_events(session, events).await.expect("append");
                latencies.push(began.elapsed());
                steps[index] += 1;
                index = (index + 1) % sessions.len();
            }
            latencies
        }));
    }
    ready.wait().await;
    let started = Instant::now();
    let mut latencies = Vec::new();
    for writer in writers {
        latencies.extend(writer.await.expect("a writer"));
    }
    let seconds = started.elapsed().as_secs_f64();
    // Every session's rows are contiguous: the appends acknowledged are the rows stored.
    let mut stored = 0;
    for s in 0..SESSIONS {
        let session = format!("fleet-{s}");
        let last = ledger.last_seq(&session).await.expect("last seq").unwrap_or(0);
        stored += last / 2 - 1;
    }
    assert_eq!(stored as usize, latencies.len(), "appends acknowledged and stored");
    latencies.sort();
    let at = |q: f64| {
        let index = ((latencies.len() as f64 * q).ceil() as usize).clamp(1, latencies.len()) - 1;
        latencies[index].as_secs_f64() * 1e3
    };
    Run {
        appends: latencies.len(),
        seconds,
        p50_ms: at(0.50),
        p99_ms: at(0.99),
        max_ms: latencies.last().map_or(0.0, |d| d.as_secs_f64() * 1e3),
    }
}
