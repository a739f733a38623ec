//! The session runtime reads only what was appended since its previous projection, and its
//! projections equal those of a fresh runtime (which reads and verifies the whole ledger):
//! across steps, compactions, usage facts that move the calibration, appends from another
//! runtime, and a ledger whose last rows were removed behind its back.

use crate::reliability_support;

use std::sync::Arc;

use contextfold_core::CharEstimator;
use contextfold_core::budget::UsageReport;
use contextfold_host::runtime::{
    ExtractiveSummarizer, NoNativeCompactor, SessionRuntime, StopSignal,
};
use contextfold_host::storage::Store;
use reliability_support::{SESSION, config, extend, history};

const WINDOW: u64 = 12_000;

fn runtime(store: &Arc<Store>) -> SessionRuntime<ExtractiveSummarizer, NoNativeCompactor> {
    SessionRuntime::new(
        Arc::clone(store),
        config(WINDOW, false),
        ExtractiveSummarizer,
        NoNativeCompactor,
    )
}

/// What a fresh runtime (an empty cache) projects for turn `turn`.
async fn cold_projection(
    store: &Arc<Store>,
    turn: &str,
) -> contextfold_host::runtime::ProjectionReport {
    let cold = runtime(store);
    cold.begin_turn(turn).expect("begin");
    cold.project(false).await.expect("cold projection")
}

#[tokio::test]
async fn warm_projections_read_only_new_events_and_equal_cold_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(Store::open(dir.path().join("s.sqlite")).expect("open"));
    store.append_events(SESSION, &history(4).build()).expect("seed");
    let warm = runtime(&store);
    let first = warm.project(false).await.expect("first");
    assert_eq!(first.ledger_events_read, store.event_count(SESSION).expect("count") as usize);

    let mut builder = history(4);
    let mut compactions = 0;
    let mut from_rows = 0;
    for turn in 4..40 {
        let before = store.event_count(SESSION).expect("count");
        let turn_id = format!("t{turn}");
        extend(&mut builder, turn);
        let events = builder.clone().build();
        warm.begin_turn(&turn_id).expect("begin");
        warm.append(events[before as usize..].to_vec()).await.expect("append");
        compactions += usize::from(warm.evaluate_mid_turn().await.expect("mid-turn").is_some());
        let appended = store.event_count(SESSION).expect("count") - before;
        let report = warm.project(false).await.expect("warm");
        if turn % 7 == 0 {
            // A usage fact moves the calibration ratio: the cached prefix (its token tally is
            // in base units) stays valid, and the ledger is still read only for what is new.
            let fact = warm.usage_fact(
                &report,
                UsageReport::Response {
                    input_tokens: report.uncalibrated_tokens * (4 + turn as u64 / 7) / 4,
                    cached_input_tokens: 0,
                    cache_write_tokens: 0,
                    output_tokens: 10,
                },
            );
            warm.record_usage(fact).await.expect("usage");
        }
        let report = warm.project(false).await.expect("warm");
        assert_eq!(report.ledger_events_read, 0, "turn {turn}: nothing new to read");
        let cold = cold_projection(&store, &turn_id).await;
        assert_eq!(report.projection, cold.projection, "turn {turn}");
        // A fresh runtime proves the checkpoint's coverage from the stored rows, without
        // loading the covered events.
        let covered = cold.projection.checkpoint.as_ref().map_or(0, |cp| cp.covered_events);
        assert_eq!(cold.proven_from_rows, covered, "turn {turn}");
        from_rows += usize::from(covered > 0);
        assert_eq!(cold.ledger_events_read as u64, before + appended);
        warm.end_turn().expect("end");
    }
    assert!(compactions >= 3, "the session compacts along the way ({compactions})");
    assert!(from_rows >= 20, "cold projections replay a checkpoint proven from the rows");

    // Appends by another runtime (another process) are read on the next projection.
    let other = runtime(&store);
    let before = store.event_count(SESSION).expect("count");
    extend(&mut builder, 40);
    other.append(builder.clone().build()[before as usize..].to_vec()).await.expect("append");
    let report = warm.project(false).await.expect("warm");
    assert_eq!(
        report.ledger_events_read as u64,
        store.event_count(SESSION).expect("count") - before
    );
    assert_eq!(report.projection, cold_projection(&store, "none").await.projection);

    // Another base estimator measures the prefix again (from memory, not from the ledger).
    let warm = warm.with_estimator(Arc::new(CharEstimator));
    let report = warm.project(false).await.expect("warm");
    assert_eq!(report.ledger_events_read, 0);
    let cold = runtime(&store).with_estimator(Arc::new(CharEstimator));
    assert_eq!(report.projection, cold.project(false).await.expect("cold").projection);
}

#[tokio::test]
async fn a_ledger_changed_behind_the_cache_is_read_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.sqlite");
    let store = Arc::new(Store::open(&path).expect("open"));
    store.append_events(SESSION, &history(6).build()).expect("seed");
    let warm = runtime(&store);
    warm.project(false).await.expect("first");
    // A writer that bypasses the append-only rules removes the last turn.
    let raw = rusqlite::Connection::open(&path).expect("raw");
    raw.execute_batch(
        "DROP TRIGGER runtime_events_no_delete;
         DELETE FROM runtime_events WHERE seq > (SELECT max(seq) - 5 FROM runtime_events);",
    )
    .expect("tamper");
    let left = store.event_count(SESSION).expect("count") as usize;
    let report = warm.project(false).await.expect("after tampering");
    assert_eq!(report.ledger_events_read, left, "the whole ledger is read again");
    assert_eq!(report.projection, cold_projection(&store, "none").await.projection);
}

/// A runtime resumed on a compacted session proves the checkpoint from the rows and then reads
/// only each step's new events, under the same checkpoint, projecting what a runtime holding
/// the whole log projects; when the ledger behind its last row changes it starts over.
#[tokio::test]
async fn a_resumed_runtime_steps_from_the_rows_and_equals_one_holding_the_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.sqlite");
    let store = Arc::new(Store::open(&path).expect("open"));
    let mut builder = history(30);
    store.append_events(SESSION, &builder.clone().build()).expect("seed");
    let first = runtime(&store);
    let compacted = first.compact_manually(&StopSignal::new()).await.expect("compacts");
    assert!(
        store.current_checkpoint(SESSION).expect("lookup").checkpoint.is_some(),
        "{:?}",
        compacted.outcome
    );

    let resumed = runtime(&store);
    let report = resumed.project(false).await.expect("resumed");
    let covered = report.projection.checkpoint.as_ref().map_or(0, |cp| cp.covered_events);
    assert!(covered > 0 && report.proven_from_rows == covered, "{}", report.proven_from_rows);
    let mut steps = 0;
    for turn in 30..36 {
        let before = store.event_count(SESSION).expect("count") as usize;
        extend(&mut builder, turn);
        resumed.append(builder.clone().build()[before..].to_vec()).await.expect("append");
        let report = resumed.project(false).await.expect("a step");
        let appended = store.event_count(SESSION).expect("count") as usize - before;
        let holding = runtime(&store);
        holding.load().await.expect("holds the whole log");
        let whole = holding.project(false).await.expect("whole");
        assert_eq!(whole.proven_from_rows, 0);
        assert_eq!(report.projection, whole.projection, "turn {turn}");
        if whole.projection.checkpoint.is_none() {
            // Over the budget the core does not replay the checkpoint: the whole log is read.
            assert_eq!(report.proven_from_rows, 0, "turn {turn}");
            break;
        }
        assert_eq!(report.ledger_events_read, appended, "turn {turn}: only the new events");
        assert_eq!(report.proven_from_rows, covered, "turn {turn}: still from the rows");
        steps += 1;
    }
    assert!(steps >= 3, "{steps} steps from the rows");
    let raw = rusqlite::Connection::open(&path).expect("raw");
    raw.execute_batch(
        "DROP TRIGGER runtime_events_no_delete;
         DELETE FROM runtime_events WHERE seq = (SELECT max(seq) FROM runtime_events);",
    )
    .expect("tamper");
    let report = resumed.project(false).await.expect("after tampering");
    assert_eq!(report.ledger_events_read, store.event_count(SESSION).expect("count") as usize);
    assert_eq!(report.projection, cold_projection(&store, "none").await.projection);
}

/// A compaction taken back by another process (issue 42): the warm runtime, whose cache holds
/// the retracted checkpoint's prefix, projects the previous checkpoint (here: the raw source)
/// exactly as a fresh runtime does, and its next compaction records a new one.
#[tokio::test]
async fn a_retraction_by_another_process_is_seen_by_a_warm_runtime() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.sqlite");
    let store = Arc::new(Store::open(&path).expect("open"));
    store.append_events(SESSION, &history(30).build()).expect("seed");
    let warm = runtime(&store);
    warm.compact_manually(&StopSignal::new()).await.expect("compacts");
    let compacted = warm.project(false).await.expect("with the checkpoint");
    let checkpoint =
        compacted.projection.checkpoint.as_ref().expect("replayed").checkpoint_id.clone();

    let other = Store::open(&path).expect("a second handle");
    let lookup = other
        .retract_checkpoint(SESSION, "retract-1", 1, &checkpoint, "lost the task")
        .expect("retract");
    assert_eq!(lookup.checkpoint, None);
    let events = other.event_count(SESSION).expect("count");

    let report = warm.project(false).await.expect("after the retraction");
    assert!(report.projection.checkpoint.is_none(), "the raw source is projected");
    assert_eq!(report.projection, cold_projection(&store, "none").await.projection);
    let again = warm.compact_manually(&StopSignal::new()).await.expect("compacts again");
    let recorded = again.outcome.checkpoint.as_ref().expect("a new checkpoint");
    assert_ne!(recorded.checkpoint_id, checkpoint);
    assert_eq!(store.event_count(SESSION).expect("count"), events, "the log is untouched");
    assert_eq!(
        store.current_checkpoint(SESSION).expect("lookup").checkpoint.map(|c| c.checkpoint_id),
        Some(recorded.checkpoint_id.clone())
    );
}
