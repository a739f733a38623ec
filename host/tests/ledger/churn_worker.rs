//! One worker of the fleet churn (`churn.rs`): a separate process standing in for a machine.
//! It serves random sessions for a bounded time through the real [`SessionRuntime`] over its
//! own connection to the shared ledger: holding a session's lease (a file lock: the fleet's
//! router) for a few steps, it resumes the open turn where the previous worker left it, appends
//! one step (a user request, a tool call with its result, or the answer that closes the turn),
//! evaluates the budget (compacting mid-turn when it does not fit) and projects the next
//! request; now and then it runs a manual compaction of a session it does not hold, racing the
//! holder. Every append the ledger acknowledged is written to the worker's ack file
//! (`session seq id` lines) before the next one; failures are counted by reason code and the
//! worker goes on (a lost connection reconnects through the pool).

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use contextfold_core::checkpoint::turn_count;
use contextfold_core::compaction::{Compactor, ProviderIdentity};
use contextfold_core::compaction::{
    ProviderFailure, SummarizeEffect, SummaryRequest, SummaryResponse,
};
use contextfold_core::event::EventContent;
use contextfold_core::{LogBuilder, ModelFacts, RuntimeEvent};
use contextfold_host::ledger::postgres::{PgLedger, PgLedgerConfig};
use contextfold_host::ledger::{SharedLedger, SqliteLedger};
use contextfold_host::runtime::{
    ExtractiveSummarizer, NoNativeCompactor, SessionConfig, SessionRuntime, StopSignal, Summarizer,
};
use serde_json::json;

/// The variable that makes the `churn_worker_process` test a worker.
pub(crate) const WORKER_ENV: &str = "CONTEXTFOLD_CHURN_WORKER";

/// The window every worker budgets for: small, so sessions compact every few steps.
const WINDOW: u64 = 4_000;

/// What one worker is told (environment variables `CHURN_*`).
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) worker: usize,
    /// A SQLite path or a PostgreSQL URL.
    pub(crate) db: String,
    pub(crate) sessions: usize,
    pub(crate) millis: u64,
    /// Where the ack files, summaries and session leases live.
    pub(crate) dir: PathBuf,
    pub(crate) seed: u64,
}

impl Plan {
    /// The environment that makes a child process this worker.
    pub(crate) fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            (WORKER_ENV, self.worker.to_string()),
            ("CHURN_DB", self.db.clone()),
            ("CHURN_SESSIONS", self.sessions.to_string()),
            ("CHURN_MILLIS", self.millis.to_string()),
            ("CHURN_DIR", self.dir.display().to_string()),
            ("CHURN_SEED", self.seed.to_string()),
        ]
    }

    fn from_env() -> Option<Self> {
        let var = |name: &str| std::env::var(name).ok();
        Some(Self {
            worker: var(WORKER_ENV)?.parse().ok()?,
            db: var("CHURN_DB")?,
            sessions: var("CHURN_SESSIONS")?.parse().ok()?,
            millis: var("CHURN_MILLIS")?.parse().ok()?,
            dir: PathBuf::from(var("CHURN_DIR")?),
            seed: var("CHURN_SEED")?.parse().ok()?,
        })
    }
}

/// The file a worker acknowledges its appends in.
pub(crate) fn ack_file(dir: &Path, worker: usize) -> PathBuf {
    dir.join(format!("worker-{worker}.acks"))
}

/// The session names of a churn over `sessions` sessions.
pub(crate) fn session_name(index: usize) -> String {
    format!("churn-{index}")
}

/// Opens the ledger `db` names.
pub(crate) async fn open(db: &str) -> SharedLedger {
    if PgLedgerConfig::is_url(db) {
        let config = PgLedgerConfig::from_url(db).expect("the URL parses");
        Arc::new(PgLedger::connect(&config).await.expect("connect"))
    } else {
        Arc::new(SqliteLedger::open(db).await.expect("open"))
    }
}

/// A small deterministic generator (xorshift), seeded per worker.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// The extractive summarizer taking as long as a remote model's short answer, so a manual
/// compaction overlaps the holder's appends and compactions.
struct SlowSummarizer;

impl Summarizer for SlowSummarizer {
    fn label(&self) -> Option<String> {
        ExtractiveSummarizer.label()
    }

    async fn summarize(
        &self,
        request: &SummaryRequest,
        effect: &SummarizeEffect,
        events: &[RuntimeEvent],
    ) -> Result<SummaryResponse, ProviderFailure> {
        tokio::time::sleep(Duration::from_millis(30)).await;
        ExtractiveSummarizer.summarize(request, effect, events).await
    }
}

/// What a worker did, counted.
#[derive(Debug, Default, serde::Serialize)]
struct Counts {
    acked_events: u64,
    steps: u64,
    compactions: u64,
    manual_compactions: u64,
    /// The reasons manual compactions ended with (`successor_conflict`: the checkpoint lost
    /// the compare-and-swap to the holder's).
    manual_reasons: std::collections::BTreeMap<String, u64>,
    handovers: u64,
    errors: std::collections::BTreeMap<String, u64>,
}

impl Counts {
    fn error(&mut self, code: &str) {
        *self.errors.entry(code.to_owned()).or_default() += 1;
    }

    /// Counts `code`; a lost server is given a moment before the next try.
    async fn failed(&mut self, code: &str) {
        self.error(code);
        if code.starts_with("storage_") {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn config(session: &str) -> SessionConfig {
    SessionConfig {
        session_id: session.to_owned(),
        model: ModelFacts { context_window: Some(WINDOW), ..Default::default() },
        provider: ProviderIdentity {
            provider: "openai-chat".into(),
            connection_slug: "fleet".into(),
            model_id: "gpt-4.1-mini".into(),
        },
        compactor: Compactor::TextSummary,
    }
}

/// The next step of `session` after `events`: its turn, its events (ids unique to this
/// worker), and whether it closes the turn.
fn next_step(
    session: &str,
    events: &[RuntimeEvent],
    worker: usize,
    next_id: &mut u64,
    rng: &mut Rng,
) -> (String, Vec<RuntimeEvent>, bool) {
    let open =
        events.last().is_some_and(|e| !matches!(e.content, EventContent::AssistantText { .. }));
    let last_seq = events.last().map_or(0, |e| e.seq);
    let mut builder = if events.is_empty() {
        LogBuilder::new(session)
    } else {
        LogBuilder::extend(events.to_vec())
    };
    let k = rng.below(1_000);
    let (turn, closes) = if !open {
        let turn = format!("t{}", turn_count(events));
        builder.turn(&turn).user(&format!(
            "task {k}: the test `case_{k}` fails in src/module_{k}.rs; keep the public API unchanged"
        ));
        (turn, false)
    } else if rng.below(4) == 0 {
        builder.assistant(&format!("fixed case_{k}: the parser now accepts empty input"));
        (events.last().map(|e| e.turn_id.clone()).unwrap_or_default(), true)
    } else {
        let call = format!("c-w{worker}-{next_id}");
        let output: String = (0..12)
            .map(|line| {
                format!(
                    "test module_{k}::case_{line} ... {}\n",
                    if line == 7 { "FAILED" } else { "ok" }
                )
            })
            .collect();
        builder.tool_call(&call, "shell", json!({"cmd": format!("cargo test -p crate_{k}")}));
        builder.tool_result(&call, "shell", json!(output));
        (events.last().map(|e| e.turn_id.clone()).unwrap_or_default(), false)
    };
    let mut new: Vec<RuntimeEvent> =
        builder.build().into_iter().filter(|e| e.seq > last_seq).collect();
    for event in &mut new {
        event.runtime_event_id = format!("w{worker}-{next_id}");
        *next_id += 1;
    }
    (turn, new, closes)
}

/// Runs the worker the environment describes; `false` when this process is not a worker.
pub(crate) fn run_from_env() -> bool {
    let Some(plan) = Plan::from_env() else { return false };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let counts = runtime.block_on(work(&plan));
    let summary = serde_json::to_string(&counts).expect("summary");
    std::fs::write(plan.dir.join(format!("worker-{}.json", plan.worker)), summary).expect("write");
    true
}

async fn work(plan: &Plan) -> Counts {
    let ledger = open(&plan.db).await;
    let mut acks = File::options()
        .create(true)
        .append(true)
        .open(ack_file(&plan.dir, plan.worker))
        .expect("ack file");
    let mut rng = Rng(plan.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (plan.worker as u64 + 1));
    let mut counts = Counts::default();
    let mut next_id = 0;
    let deadline = Instant::now() + Duration::from_millis(plan.millis);
    // The deadline, or earlier a `stop` file in the dir (the failover script's end).
    while Instant::now() < deadline && !plan.dir.join("stop").exists() {
        let session = session_name(rng.below(plan.sessions as u64) as usize);
        if rng.below(8) == 0 {
            // A manual compaction of a session this worker does not hold: it races the holder.
            let runtime = SessionRuntime::new(
                Arc::clone(&ledger),
                config(&session),
                SlowSummarizer,
                NoNativeCompactor,
            );
            match runtime.compact_manually(&StopSignal::new()).await {
                Ok(report) => {
                    counts.manual_compactions += 1;
                    let reason = serde_json::to_value(report.outcome.reason).unwrap_or_default();
                    let reason = reason.as_str().unwrap_or("unknown").to_owned();
                    *counts.manual_reasons.entry(reason).or_default() += 1;
                }
                Err(error) => counts.failed(error.code()).await,
            }
            continue;
        }
        let lease_path = plan.dir.join(format!("{session}.lease"));
        let lease = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lease_path)
            .expect("lease");
        if lease.try_lock().is_err() {
            continue;
        }
        serve(&ledger, &session, plan.worker, &mut rng, &mut next_id, &mut acks, &mut counts).await;
        drop(lease);
    }
    counts
}

/// Serves `session` for a few steps while holding its lease.
async fn serve(
    ledger: &SharedLedger,
    session: &str,
    worker: usize,
    rng: &mut Rng,
    next_id: &mut u64,
    acks: &mut File,
    counts: &mut Counts,
) {
    let runtime = SessionRuntime::new(
        Arc::clone(ledger),
        config(session),
        ExtractiveSummarizer,
        NoNativeCompactor,
    );
    let mut active: Option<String> = None;
    for _ in 0..1 + rng.below(4) {
        let events = match runtime.load().await {
            Ok((events, _)) => events,
            Err(error) => {
                counts.failed(error.code()).await;
                return;
            }
        };
        let (turn, step, closes) = next_step(session, &events, worker, next_id, rng);
        if active.as_deref() != Some(turn.as_str()) {
            if active.is_some() {
                let _ = runtime.end_turn();
            }
            // A turn this worker did not start: handed over mid-turn by another worker.
            let resumed =
                !matches!(step.first().map(|e| &e.content), Some(EventContent::UserText { .. }));
            counts.handovers += u64::from(resumed);
            runtime.begin_turn(&turn).expect("no other turn is active");
            active = Some(turn.clone());
        }
        let starts_turn =
            matches!(step.first().map(|e| &e.content), Some(EventContent::UserText { .. }));
        let acked: Vec<String> = step
            .iter()
            .map(|e| format!("{session}\t{}\t{}\n", e.seq, e.runtime_event_id))
            .collect();
        if let Err(error) = runtime.append(step).await {
            counts.failed(error.code()).await;
            return;
        }
        for line in acked {
            acks.write_all(line.as_bytes()).expect("ack");
            counts.acked_events += 1;
        }
        counts.steps += 1;
        let evaluated = if starts_turn {
            runtime.evaluate_pre_turn().await
        } else {
            runtime.evaluate_mid_turn().await
        };
        match evaluated {
            Ok(Some(report)) if report.outcome.checkpoint.is_some() => counts.compactions += 1,
            Ok(_) => {}
            Err(error) => counts.failed(error.code()).await,
        }
        if let Err(error) = runtime.project_for_request().await {
            counts.failed(error.code()).await;
        }
        if closes {
            let _ = runtime.end_turn();
            active = None;
        }
    }
}
