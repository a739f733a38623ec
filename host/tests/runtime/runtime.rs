//! The session runtime on a real SQLite file with the extractive summarizer: every trigger,
//! manual compaction as its own Run, refusal during a turn, cancellation, failure notes.

use crate::runtime_support;

use std::sync::Arc;
use std::time::Duration;

use contextfold_core::compaction::{
    OutcomeKind, ProviderFailure, ProviderFailureKind, SummarizeEffect, SummaryRequest,
    SummaryResponse, Trigger,
};
use contextfold_core::{EventContent, RuntimeEvent};
use contextfold_host::runtime::{
    ExtractiveSummarizer, NoNativeCompactor, SessionRuntime, StopSignal, Summarizer,
};
use contextfold_host::storage::{Store, agent_run_kind};
use runtime_support::{
    RECORDED_RUN, append_step, config, history, run_kinds, runtime_with, start_turn,
};

fn runtime<S: Summarizer>(
    summarizer: S,
) -> (tempfile::TempDir, Arc<Store>, SessionRuntime<S, NoNativeCompactor>) {
    runtime_with(config(), summarizer, NoNativeCompactor)
}

#[tokio::test]
async fn pre_turn_trigger_records_a_checkpoint() {
    let (_dir, store, runtime) = runtime(ExtractiveSummarizer);
    let mut builder = history(8);
    runtime.append(builder.events().to_vec()).await.expect("append");
    start_turn(&runtime, &mut builder, "t-now").await;
    let report = runtime.evaluate_pre_turn().await.expect("evaluate").expect("over capacity");
    assert_eq!(
        (report.trigger, report.outcome.outcome),
        (Trigger::PreTurn, OutcomeKind::Recorded),
        "{:?}",
        report.outcome
    );
    let checkpoint = report.outcome.checkpoint.expect("checkpoint");
    assert_eq!(
        checkpoint.produced_by.as_deref(),
        Some(contextfold_core::compaction::EXTRACTIVE_PRODUCER)
    );
    let stored = store.current_checkpoint("s").expect("lookup").checkpoint.expect("stored");
    assert_eq!(stored.checkpoint_id, checkpoint.checkpoint_id);
    assert!(runtime.project(false).await.expect("project").projection.fits);
    assert!(runtime.evaluate_pre_turn().await.expect("evaluate").is_none(), "fits now");
    let kinds: Vec<String> =
        store.agent_run_events("s").expect("ledger").into_iter().map(|r| r.kind).collect();
    assert_eq!(kinds, [agent_run_kind::CHECKPOINT_RECORDED, agent_run_kind::COMPACTION_OUTCOME]);
}

#[tokio::test]
async fn mid_turn_and_overflow_triggers_enter_the_same_transaction() {
    let (_dir, store, runtime) = runtime(ExtractiveSummarizer);
    let mut builder = history(3);
    runtime.append(builder.events().to_vec()).await.expect("append");
    start_turn(&runtime, &mut builder, "t-now").await;
    assert!(runtime.evaluate_pre_turn().await.expect("evaluate").is_none(), "fits before the step");
    append_step(&runtime, &store, 12_000).await;
    let mid = runtime.evaluate_mid_turn().await.expect("evaluate");
    let mid = mid.expect("the step pushed the projection over capacity");
    assert_eq!(mid.trigger, Trigger::MidTurn);
    assert!(
        matches!(mid.outcome.outcome, OutcomeKind::Recorded | OutcomeKind::Exhausted),
        "{:?}",
        mid.outcome
    );
    let overflow = runtime.recover_from_overflow().await.expect("overflow");
    assert_eq!(overflow.trigger, Trigger::Overflow);
    assert!(!matches!(overflow.outcome.outcome, OutcomeKind::Cancelled));
    let outcomes = store.agent_run_events("s").expect("ledger");
    let triggers: Vec<&str> = outcomes
        .iter()
        .filter(|r| r.kind == agent_run_kind::COMPACTION_OUTCOME)
        .filter_map(|r| r.payload["trigger"].as_str())
        .collect();
    assert_eq!(triggers, ["mid_turn", "overflow"]);
}

#[tokio::test]
async fn manual_compaction_is_its_own_run_and_refused_during_a_turn() {
    let (_dir, store, runtime) = runtime(ExtractiveSummarizer);
    let mut builder = history(6);
    runtime.append(builder.events().to_vec()).await.expect("append");
    runtime.begin_turn("t-active").expect("begin");
    let error = runtime.compact_manually(&StopSignal::new()).await.expect_err("refused");
    assert_eq!(error.code(), "turn_active");
    runtime.end_turn().expect("end");
    let events_before = store.load_events("s").expect("load").len();
    let report = runtime.compact_manually(&StopSignal::new()).await.expect("manual");
    assert_eq!(report.outcome.outcome, OutcomeKind::Recorded, "{:?}", report.outcome);
    assert!(report.run_id.starts_with("run-compact-"));
    assert_eq!(store.load_events("s").expect("load").len(), events_before, "no fabricated message");
    assert_eq!(run_kinds(&store, &report.run_id), RECORDED_RUN);
    start_turn(&runtime, &mut builder, "t-next").await;
    runtime.end_turn().expect("end");
}

/// A summarizer that never answers (a provider that hangs).
struct Hanging;

impl Summarizer for Hanging {
    async fn summarize(
        &self,
        _request: &SummaryRequest,
        _effect: &SummarizeEffect,
        _events: &[RuntimeEvent],
    ) -> Result<SummaryResponse, ProviderFailure> {
        tokio::time::sleep(Duration::from_secs(3_600)).await;
        Err(ProviderFailure { kind: ProviderFailureKind::Unavailable, message: "timeout".into() })
    }
}

#[tokio::test]
async fn stopping_a_manual_compaction_persists_nothing() {
    let (_dir, store, runtime) = runtime(Hanging);
    let builder = history(6);
    runtime.append(builder.events().to_vec()).await.expect("append");
    let stop = StopSignal::new();
    let stopper = {
        let stop = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            stop.stop();
        })
    };
    let report = runtime.compact_manually(&stop).await.expect("manual");
    stopper.await.expect("stopper");
    assert_eq!(report.outcome.outcome, OutcomeKind::Cancelled);
    assert!(store.recorded_checkpoints("s").expect("records").is_empty());
    assert!(store.current_checkpoint("s").expect("lookup").checkpoint.is_none());
    assert_eq!(store.load_events("s").expect("load").len(), builder.events().len());
    let kinds: Vec<String> =
        store.agent_run_events("s").expect("ledger").into_iter().map(|r| r.kind).collect();
    assert_eq!(kinds, [agent_run_kind::RUN_STARTED, agent_run_kind::RUN_CANCELLED]);
    runtime.begin_turn("t-after").expect("the next turn is not poisoned");
}

/// A summarizer whose provider is down.
struct Down;

impl Summarizer for Down {
    async fn summarize(
        &self,
        _request: &SummaryRequest,
        _effect: &SummarizeEffect,
        _events: &[RuntimeEvent],
    ) -> Result<SummaryResponse, ProviderFailure> {
        Err(ProviderFailure { kind: ProviderFailureKind::Unavailable, message: "503".into() })
    }
}

#[tokio::test]
async fn failed_manual_compaction_appends_one_visible_note() {
    let (_dir, store, runtime) = runtime(Down);
    let builder = history(6);
    runtime.append(builder.events().to_vec()).await.expect("append");
    let report = runtime.compact_manually(&StopSignal::new()).await.expect("manual");
    assert_eq!(report.outcome.outcome, OutcomeKind::FailedOpen, "{:?}", report.outcome);
    let events = store.load_events("s").expect("load");
    assert_eq!(events.len(), builder.events().len() + 1);
    let note = events.last().expect("note");
    assert!(
        matches!(&note.content, EventContent::RuntimeNote { code, .. } if code == "context_compaction_failed_open"),
        "{note:?}"
    );
    assert_eq!(note.run_id, report.run_id);
    assert!(store.recorded_checkpoints("s").expect("records").is_empty());
}

/// Answers every request with a summary missing its sections, and counts the requests.
struct Malformed(Arc<std::sync::atomic::AtomicUsize>);

impl Summarizer for Malformed {
    async fn summarize(
        &self,
        _request: &SummaryRequest,
        _effect: &SummarizeEffect,
        _events: &[RuntimeEvent],
    ) -> Result<SummaryResponse, ProviderFailure> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(SummaryResponse {
            text: "## Goal\nfix it\n## Later\nstuff".into(),
            finish_reason: contextfold_core::compaction::FinishReason::Stop,
        })
    }
}

#[tokio::test]
async fn the_malformed_input_circuit_survives_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("rt.sqlite");
    let dispatched = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = || dispatched.load(std::sync::atomic::Ordering::SeqCst);
    // Each "process" opens the file anew: nothing but the ledger carries over.
    let process = || {
        let store = Arc::new(Store::open(&path).expect("open"));
        SessionRuntime::new(store, config(), Malformed(Arc::clone(&dispatched)), NoNativeCompactor)
    };
    process().append(history(6).events().to_vec()).await.expect("append");

    let first = process().compact_manually(&StopSignal::new()).await.expect("manual");
    assert_eq!(first.outcome.outcome, OutcomeKind::FailedOpen);
    assert_eq!(count(), 2, "the request and its one repair");

    let again = process().compact_manually(&StopSignal::new()).await.expect("manual");
    assert_eq!(
        again.outcome.reason.as_str(),
        "malformed_summary_circuit_open",
        "{:?}",
        again.outcome
    );
    assert_eq!(count(), 2, "an unchanged failed input is never dispatched again");

    // Changed source is eligible again.
    let grown = process();
    let mut more = contextfold_core::LogBuilder::extend(
        Store::open(&path).expect("open").load_events("s").expect("load"),
    );
    let before = more.events().len();
    more.turn("t-new").user("one more failing test").assistant("fixed it too");
    grown.append(more.events()[before..].to_vec()).await.expect("append");
    grown.compact_manually(&StopSignal::new()).await.expect("manual");
    assert!(count() > 2, "a changed source is dispatched");
}
