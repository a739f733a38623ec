//! Background preparation in the native runtime (issue 39), on a real SQLite file: the hard
//! trigger served by a checkpoint prepared while the agent went on, and what must not happen
//! when the world changed meanwhile (a foreground compaction racing it, a model switch) or the
//! provider failed in the background.

use crate::runtime_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use contextfold_core::compaction::{
    OutcomeKind, ProviderFailure, SummarizeEffect, SummaryRequest, SummaryResponse,
};
use contextfold_core::{LogBuilder, ModelFacts, ReasonCode, RuntimeEvent};
use contextfold_host::runtime::{
    CompactionReport, ExtractiveSummarizer, NoNativeCompactor, SessionRuntime, StopSignal,
    Summarizer,
};
use contextfold_host::storage::{Store, agent_run_kind};
use runtime_support::{WINDOW, config, history, start_turn};
use serde_json::json;

/// The extractive summary, answered after `delay` like a remote model, counting its calls.
#[derive(Clone)]
struct Slow {
    delay: Duration,
    calls: Arc<AtomicUsize>,
    fail: bool,
    /// Answers an error message instead of a summary (a malformed summary).
    malformed: bool,
}

impl Slow {
    fn new(delay_ms: u64) -> Self {
        Self {
            delay: Duration::from_millis(delay_ms),
            calls: Arc::default(),
            fail: false,
            malformed: false,
        }
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Summarizer for Slow {
    fn label(&self) -> Option<String> {
        ExtractiveSummarizer.label()
    }

    async fn summarize(
        &self,
        request: &SummaryRequest,
        effect: &SummarizeEffect,
        events: &[RuntimeEvent],
    ) -> Result<SummaryResponse, ProviderFailure> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(self.delay).await;
        if self.fail {
            return Err(ProviderFailure {
                kind: contextfold_core::compaction::ProviderFailureKind::Unavailable,
                message: "503 from the summarizer".into(),
            });
        }
        if self.malformed {
            return Ok(SummaryResponse {
                text: "Error: the model is overloaded. Please try again later.".into(),
                finish_reason: contextfold_core::compaction::FinishReason::Stop,
            });
        }
        ExtractiveSummarizer.summarize(request, effect, events).await
    }
}

type Runtime = SessionRuntime<Slow, NoNativeCompactor>;

fn runtime_on(store: &Arc<Store>, summarizer: Slow) -> Runtime {
    SessionRuntime::new(Arc::clone(store), config(), summarizer, NoNativeCompactor)
        .with_background_preparation()
}

fn fresh(summarizer: Slow) -> (tempfile::TempDir, Arc<Store>, Runtime) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(Store::open(dir.path().join("rt.sqlite")).expect("open"));
    let runtime = runtime_on(&store, summarizer);
    (dir, store, runtime)
}

/// Appends one agent step (a call and its `chars`-byte result) to the active turn `turn`.
async fn step(runtime: &Runtime, store: &Store, turn: &str, n: usize, chars: usize) {
    let events = store.load_events("s").expect("load");
    let mut builder = LogBuilder::extend(events.clone());
    builder.turn(turn);
    let call = format!("{turn}-c{n}");
    builder.response(Some(&format!("{turn}-r{n}"))).tool_call(
        &call,
        "shell",
        json!({"cmd": format!("grep -n case{n} src/lib.rs")}),
    );
    builder.response(None).tool_result(
        &call,
        "shell",
        json!(format!("src/lib.rs:{n}: case{n}\n").repeat(chars / 20)),
    );
    runtime.append(builder.events()[events.len()..].to_vec()).await.expect("append step");
}

/// Lets the preparation in flight finish, as the agent's own work would (a model call takes
/// longer than these summaries).
async fn until_settled(runtime: &Runtime) {
    runtime.await_preparation().await;
    let stats = runtime.preparations();
    assert_eq!(stats.prepared + stats.failed, 1, "{stats:?}");
}

/// Two completed turns (about 3,100 tokens of a 6,000 budget), then an active turn whose steps
/// bring the history to the soft threshold: returns once a preparation has been started.
async fn at_soft_threshold(runtime: &Runtime, store: &Store) -> usize {
    let mut builder = history(2);
    runtime.append(builder.events().to_vec()).await.expect("append");
    start_turn(runtime, &mut builder, "t-now").await;
    for n in 0.. {
        step(runtime, store, "t-now", n, 1_200).await;
        assert!(runtime.evaluate_mid_turn().await.expect("evaluate").is_none(), "below the budget");
        if runtime.preparations().started > 0 {
            return n + 1;
        }
        assert!(n < 20, "the soft threshold was never reached");
    }
    unreachable!()
}

/// Steps until the hard trigger fires; returns its report.
async fn until_hard_trigger(runtime: &Runtime, store: &Store, from: usize) -> CompactionReport {
    for n in from..from + 40 {
        step(runtime, store, "t-now", n, 1_200).await;
        if let Some(report) = runtime.evaluate_mid_turn().await.expect("evaluate") {
            return report;
        }
    }
    panic!("the hard trigger never fired")
}

fn used(report: &CompactionReport) -> bool {
    report.outcome.diagnostics.iter().any(|d| d.code == ReasonCode::PreparedCheckpointUsed)
}

fn fates(store: &Store) -> Vec<String> {
    store
        .agent_run_events("s")
        .expect("ledger")
        .into_iter()
        .filter(|r| r.kind == agent_run_kind::PREPARATION_SETTLED)
        .map(|r| r.payload["fate"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn the_hard_trigger_is_served_by_the_checkpoint_prepared_meanwhile() {
    let summarizer = Slow::new(50);
    let (_dir, store, runtime) = fresh(summarizer.clone());
    let next = at_soft_threshold(&runtime, &store).await;
    // The agent goes on while the summarizer answers; no checkpoint is recorded meanwhile.
    until_settled(&runtime).await;
    assert!(store.recorded_checkpoints("s").expect("records").is_empty());
    assert_eq!(summarizer.calls(), 1);
    let report = until_hard_trigger(&runtime, &store, next).await;
    assert_eq!(report.outcome.outcome, OutcomeKind::Recorded, "{:?}", report.outcome);
    assert!(used(&report), "{:?}", report.outcome.diagnostics);
    // No second summarizer call: the step waited for nothing.
    assert_eq!(summarizer.calls(), 1);
    let stats = runtime.preparations();
    assert_eq!((stats.started, stats.prepared, stats.used, stats.wasted), (1, 1, 1, 0));
    assert!(stats.used_tokens > 0 && stats.used_tokens == stats.tokens);
    assert_eq!(fates(&store), ["used"]);
    let stored = store.current_checkpoint("s").expect("lookup").checkpoint.expect("recorded");
    assert_eq!(Some(&stored), report.outcome.checkpoint.as_ref());
    assert!(runtime.project_for_request().await.expect("project").projection.fits);
}

#[tokio::test]
async fn without_preparation_the_hard_trigger_calls_the_summarizer() {
    // The same session without background preparation: the step waits for the summarizer.
    let summarizer = Slow::new(1);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(Store::open(dir.path().join("rt.sqlite")).expect("open"));
    let runtime =
        SessionRuntime::new(Arc::clone(&store), config(), summarizer.clone(), NoNativeCompactor);
    let mut builder = history(2);
    runtime.append(builder.events().to_vec()).await.expect("append");
    start_turn(&runtime, &mut builder, "t-now").await;
    let mut report = None;
    for n in 0..40 {
        let events = store.load_events("s").expect("load");
        let mut step = LogBuilder::extend(events.clone());
        step.turn("t-now");
        let call = format!("c{n}");
        step.response(Some(&format!("r{n}"))).tool_call(&call, "shell", json!({"cmd": "ls"}));
        step.response(None).tool_result(
            &call,
            "shell",
            json!(format!("src/lib.rs:{n}: case{n}\n").repeat(60)),
        );
        runtime.append(step.events()[events.len()..].to_vec()).await.expect("append");
        if let Some(r) = runtime.evaluate_mid_turn().await.expect("evaluate") {
            report = Some(r);
            break;
        }
        assert_eq!(summarizer.calls(), 0, "nothing is prepared");
    }
    let report = report.expect("the hard trigger fired");
    assert!(!used(&report));
    assert_eq!(summarizer.calls(), 1);
    assert_eq!(runtime.preparations().started, 0);
}

#[tokio::test]
async fn a_checkpoint_another_process_recorded_meanwhile_wins_the_race() {
    let summarizer = Slow::new(20);
    let (_dir, store, runtime) = fresh(summarizer.clone());
    let next = at_soft_threshold(&runtime, &store).await;
    until_settled(&runtime).await;
    // Another process on the same file compacts in the foreground first.
    let other = SessionRuntime::new(Arc::clone(&store), config(), Slow::new(1), NoNativeCompactor);
    other.begin_turn("t-now").expect("the other process joins the turn");
    let overflow = other.recover_from_overflow().await.expect("overflow");
    let tip = overflow.outcome.checkpoint.expect("the other process recorded");
    // This process's next step is a large one: the hard trigger fires before any evaluation
    // could see the new tip.
    step(&runtime, &store, "t-now", next, 40_000).await;
    let report = runtime.evaluate_mid_turn().await.expect("evaluate").expect("over the budget");
    assert!(!used(&report), "{:?}", report.outcome.diagnostics);
    let rejected = report
        .outcome
        .diagnostics
        .iter()
        .find(|d| d.code == ReasonCode::PreparedCheckpointRejected)
        .expect("the prepared checkpoint was judged and refused");
    assert!(rejected.detail.contains(&tip.checkpoint_id), "{}", rejected.detail);
    let recorded = report.outcome.checkpoint.expect("the foreground compaction recorded");
    assert_eq!(recorded.previous_checkpoint_id.as_deref(), Some(tip.checkpoint_id.as_str()));
    let stats = runtime.preparations();
    assert_eq!((stats.prepared, stats.used, stats.wasted), (1, 0, 1));
    assert_eq!(stats.wasted_tokens, stats.tokens);
    assert_eq!(fates(&store), ["wasted"]);
    // Every checkpoint in the ledger still proves its prefix.
    let events = store.load_events("s").expect("load");
    for record in store.recorded_checkpoints("s").expect("records") {
        let checkpoint = contextfold_core::HistoryCompactCheckpoint::from_value(record.payload)
            .expect("checkpoint");
        contextfold_core::checkpoint::match_checkpoint_prefix(&checkpoint, &events)
            .expect("verifies");
    }
}

#[tokio::test]
async fn a_smaller_window_since_the_preparation_judges_it_against_the_new_budget() {
    let summarizer = Slow::new(10);
    let (_dir, store, mut runtime) = fresh(summarizer.clone());
    let next = at_soft_threshold(&runtime, &store).await;
    until_settled(&runtime).await;
    // The user switches to a model with an eighth of the window: the prepared checkpoint
    // alone is over its budget.
    runtime.set_model(ModelFacts { context_window: Some(WINDOW / 8), ..Default::default() });
    let report = until_hard_trigger(&runtime, &store, next).await;
    let rejected = report
        .outcome
        .diagnostics
        .iter()
        .find(|d| d.code == ReasonCode::PreparedCheckpointRejected)
        .expect("judged and refused");
    assert!(rejected.detail.contains("over the 750 budget"), "{}", rejected.detail);
    assert_eq!(runtime.preparations().wasted, 1);
    assert!(summarizer.calls() >= 2, "the foreground compaction called the summarizer");
}

#[tokio::test]
async fn a_preparation_that_fails_is_never_seen_by_the_agent() {
    let mut summarizer = Slow::new(10);
    summarizer.fail = true;
    let (_dir, store, runtime) = fresh(summarizer.clone());
    let next = at_soft_threshold(&runtime, &store).await;
    until_settled(&runtime).await;
    // The next steps go on as if nothing had been tried.
    step(&runtime, &store, "t-now", next, 100).await;
    assert!(runtime.evaluate_mid_turn().await.expect("the failure is not the agent's").is_none());
    let stats = runtime.preparations();
    assert_eq!((stats.failed, stats.prepared, stats.used), (1, 0, 0));
    assert_eq!(fates(&store), ["failed"]);
    // The failure is on record, with the trigger that had it.
    let outcomes: Vec<(String, String)> = store
        .agent_run_events("s")
        .expect("ledger")
        .into_iter()
        .filter(|r| r.kind == agent_run_kind::COMPACTION_OUTCOME)
        .map(|r| (r.payload["trigger"].to_string(), r.payload["reason"].to_string()))
        .collect();
    assert_eq!(outcomes, [("\"prepare\"".to_owned(), "\"provider_unavailable\"".to_owned())]);
    assert!(store.recorded_checkpoints("s").expect("records").is_empty());
}

#[tokio::test]
async fn a_malformed_summary_in_the_background_still_arms_the_circuit() {
    let mut summarizer = Slow::new(10);
    summarizer.malformed = true;
    let (_dir, store, runtime) = fresh(summarizer.clone());
    let next = at_soft_threshold(&runtime, &store).await;
    until_settled(&runtime).await;
    step(&runtime, &store, "t-now", next, 100).await;
    assert!(runtime.evaluate_mid_turn().await.expect("the failure is not the agent's").is_none());
    assert_eq!(runtime.preparations().failed, 1);
    // The malformed input is remembered where the next process reads it: a foreground
    // compaction of the same input will not send it again.
    let circuit = store.latest_circuit("s").expect("ledger").expect("a recorded circuit");
    assert_eq!(circuit.len(), 1, "the preparation's malformed input is in the circuit");
    assert!(store.recorded_checkpoints("s").expect("records").is_empty());
}

#[tokio::test]
async fn a_manual_compaction_supersedes_what_was_prepared() {
    let summarizer = Slow::new(10);
    let (_dir, store, runtime) = fresh(summarizer.clone());
    at_soft_threshold(&runtime, &store).await;
    until_settled(&runtime).await;
    runtime.end_turn().expect("end");
    let report = runtime.compact_manually(&StopSignal::new()).await.expect("manual");
    assert_eq!(report.outcome.outcome, OutcomeKind::Recorded);
    let stats = runtime.preparations();
    assert_eq!((stats.superseded, stats.wasted, stats.held), (1, 1, 0));
    assert_eq!(fates(&store), ["superseded"]);
}
