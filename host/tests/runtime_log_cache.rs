//! The session runtime reads only what was appended since its previous projection, and its
//! projections equal those of a fresh runtime (which reads and verifies the whole ledger):
//! across steps, compactions, usage facts that move the calibration, appends from another
//! runtime, and a ledger whose last rows were removed behind its back.

#[path = "reliability_support/mod.rs"]
mod reliability_support;

use std::sync::Arc;

use contextfold_core::CharEstimator;
use contextfold_core::calibration::UsageReport;
use contextfold_host::runtime::{ExtractiveSummarizer, NoNativeCompactor, SessionRuntime};
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
        assert_eq!(cold.ledger_events_read as u64, before + appended);
        warm.end_turn().expect("end");
    }
    assert!(compactions >= 3, "the session compacts along the way ({compactions})");

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
