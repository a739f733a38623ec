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
//! **Rounds.** Each variant (SQLite; PostgreSQL, optionally once per server `fsync` setting)
//! runs `CONTEXTFOLD_FLEET_SECS` (default 5) per round on a fresh file or database, for
//! `CONTEXTFOLD_FLEET_ROUNDS` rounds (default 3), the order rotating by round: the rates and
//! latencies pool every round, and each ratio to SQLite is the median of the per-round ratios
//! (this machine's neighbours change a disk-bound rate several-fold between minutes).
//!
//! Run under a server: `bash scripts/with-postgres.sh cargo bench -p contextfold-host --bench
//! ledger_fleet`, or `bash bench/ledger.sh` (a cluster with fsync on, and
//! `CONTEXTFOLD_FLEET_PG_FSYNC=on,off`). Settings: `CONTEXTFOLD_PG_URL` (without it only SQLite
//! runs); `CONTEXTFOLD_FLEET_BACKENDS` (`sqlite,postgres`); `CONTEXTFOLD_FLEET_PG_FSYNC`, a list
//! of `fsync` values the server is switched to in turn (`ALTER SYSTEM` and a reload, as a
//! superuser; reset at the end; unset: the server as it is). The rows name the server's `fsync`
//! and `synchronous_commit`.

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

/// What one variant measured over every round.
#[derive(Default)]
struct Samples {
    latencies: Vec<Duration>,
    seconds: f64,
    /// Appends per second of each round.
    rates: Vec<f64>,
}

/// A backend as run in a round: SQLite, or PostgreSQL with the server's `fsync` set so.
#[derive(Clone)]
enum Variant {
    Sqlite,
    Postgres { fsync: Option<String> },
}

fn main() {
    let seconds: u64 =
        std::env::var("CONTEXTFOLD_FLEET_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let rounds: usize =
        std::env::var("CONTEXTFOLD_FLEET_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let backends =
        std::env::var("CONTEXTFOLD_FLEET_BACKENDS").unwrap_or_else(|_| "sqlite,postgres".into());
    let url = std::env::var("CONTEXTFOLD_PG_URL").ok();
    let duration = Duration::from_secs(seconds);
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let mut variants: Vec<(String, Variant)> = Vec::new();
    if backends.contains("sqlite") {
        variants.push(("sqlite_synchronous_full".into(), Variant::Sqlite));
    }
    if backends.contains("postgres") {
        match (&url, std::env::var("CONTEXTFOLD_FLEET_PG_FSYNC")) {
            (None, _) => println!("RESULT|fleet_postgres|not run (no CONTEXTFOLD_PG_URL)|-|-"),
            (Some(url), Ok(list)) => {
                let commit = runtime.block_on(show(url, "synchronous_commit"));
                for fsync in list.split(',').map(str::trim).filter(|f| !f.is_empty()) {
                    variants.push((
                        format!("postgres_fsync_{fsync}_sync_commit_{commit}"),
                        Variant::Postgres { fsync: Some(fsync.to_owned()) },
                    ));
                }
            }
            (Some(url), Err(_)) => {
                let name = format!(
                    "postgres_fsync_{}_sync_commit_{}",
                    runtime.block_on(show(url, "fsync")),
                    runtime.block_on(show(url, "synchronous_commit"))
                );
                variants.push((name, Variant::Postgres { fsync: None }));
            }
        }
    }
    println!(
        "fleet: {WRITERS} writers, {SESSIONS} sessions, one append = tool call + ~{} KB tool result; {rounds} rounds of {seconds} s per variant, the order rotating by round; {} cores",
        OUTPUT_BYTES / 1000,
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    let mut samples: Vec<Samples> = variants.iter().map(|_| Samples::default()).collect();
    for round in 0..rounds {
        for k in 0..variants.len() {
            let index = (k + round) % variants.len();
            let (latencies, seconds) = runtime.block_on(async {
                match &variants[index].1 {
                    Variant::Sqlite => {
                        let dir = tempfile::tempdir().expect("a temporary directory");
                        let path = dir.path().join("fleet.sqlite");
                        let ledger = SqliteLedger::open(&path).await.expect("a new SQLite ledger");
                        fleet(ledger.into_ledger(), duration).await
                    }
                    Variant::Postgres { fsync } => {
                        let url = url.as_deref().expect("a server");
                        postgres(url, fsync.as_deref(), duration).await
                    }
                }
            });
            let sample = &mut samples[index];
            sample.rates.push(latencies.len() as f64 / seconds);
            sample.seconds += seconds;
            sample.latencies.extend(latencies);
        }
    }
    if let Some(url) = &url
        && variants.iter().any(|v| matches!(&v.1, Variant::Postgres { fsync: Some(_) }))
    {
        runtime.block_on(set_fsync(url, None));
    }
    println!(
        "| variant | appends | appends/s (all rounds) | events/s | p50 | p99 | max | appends/s by round |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
    for ((name, _), sample) in variants.iter().zip(&mut samples) {
        sample.latencies.sort();
        let rate = sample.latencies.len() as f64 / sample.seconds;
        let rounds: Vec<String> = sample.rates.iter().map(|r| format!("{r:.0}")).collect();
        println!(
            "| {name} | {} | {rate:.0} | {:.0} | {:.2} ms | {:.2} ms | {:.2} ms | {} |",
            sample.latencies.len(),
            rate * 2.0,
            quantile(&sample.latencies, 0.50),
            quantile(&sample.latencies, 0.99),
            quantile(&sample.latencies, 1.0),
            rounds.join(", ")
        );
    }
    for ((name, _), sample) in variants.iter().zip(&samples) {
        let metric = format!("fleet_16w_64s_{name}");
        let rate = sample.latencies.len() as f64 / sample.seconds;
        println!("RESULT|{metric}_appends_per_s|{rate:.0}|report|-");
        println!("RESULT|{metric}_events_per_s|{:.0}|report|-", rate * 2.0);
        println!("RESULT|{metric}_p50_append_ms|{:.2}|report|-", quantile(&sample.latencies, 0.5));
        println!("RESULT|{metric}_p99_append_ms|{:.2}|report|-", quantile(&sample.latencies, 0.99));
    }
    // Throughput against SQLite's, the median of the per-round ratios.
    if let Some(sqlite) = variants.iter().position(|v| matches!(v.1, Variant::Sqlite)) {
        for (index, (name, _)) in variants.iter().enumerate().filter(|&(i, _)| i != sqlite) {
            let mut ratios: Vec<f64> = samples[index]
                .rates
                .iter()
                .zip(&samples[sqlite].rates)
                .map(|(p, s)| p / s)
                .collect();
            ratios.sort_by(f64::total_cmp);
            let ratio = ratios[ratios.len() / 2];
            println!("RESULT|fleet_16w_64s_{name}_vs_sqlite_throughput|{ratio:.2}x|report|-");
        }
    }
}

/// The `q` quantile of sorted `latencies`, in milliseconds.
fn quantile(latencies: &[Duration], q: f64) -> f64 {
    if latencies.is_empty() {
        return 0.0;
    }
    let index = ((latencies.len() as f64 * q).ceil() as usize).clamp(1, latencies.len()) - 1;
    latencies[index].as_secs_f64() * 1e3
}

/// An admin connection to the server of `url`.
async fn admin(url: &str) -> tokio_postgres::Client {
    let (client, connection) =
        tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("an admin connection");
    tokio::spawn(connection);
    client
}

/// The server's setting `name`, as a new session sees it.
async fn show(url: &str, name: &str) -> String {
    let admin = admin(url).await;
    admin.query_one(&format!("SHOW {name}"), &[]).await.expect("SHOW").get::<_, String>(0)
}

/// Sets the server's `fsync` (`ALTER SYSTEM`, reloaded; `None`: back to its configuration) and
/// waits until a new session sees it.
async fn set_fsync(url: &str, fsync: Option<&str>) {
    let admin = admin(url).await;
    let statement = match fsync {
        Some(value) => format!("ALTER SYSTEM SET fsync = {value}"),
        None => "ALTER SYSTEM RESET fsync".to_owned(),
    };
    admin.batch_execute(&statement).await.expect("ALTER SYSTEM");
    admin.batch_execute("SELECT pg_reload_conf()").await.expect("reload");
    let Some(value) = fsync else { return };
    for _ in 0..100 {
        if show(url, "fsync").await == value {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server's fsync is not {value} (set on its command line?)");
}

/// A fresh database on the server of `url` (its `fsync` set first when given), the fleet run on
/// it, the database dropped.
async fn postgres(url: &str, fsync: Option<&str>, duration: Duration) -> (Vec<Duration>, f64) {
    if let Some(fsync) = fsync {
        set_fsync(url, Some(fsync)).await;
    }
    let admin = admin(url).await;
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
    run
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
async fn fleet(ledger: SharedLedger, duration: Duration) -> (Vec<Duration>, f64) {
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
            let sessions: Vec<String> = (0..SESSIONS / WRITERS)
                .map(|k| format!("fleet-{}", writer + k * WRITERS))
                .collect();
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
    (latencies, seconds)
}
