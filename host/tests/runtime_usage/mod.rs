//! Usage facts and calibration through the session runtime on a real SQLite file: a reported
//! usage is durable before it counts, changes what fits, survives a restart, and an overflow
//! fact raises the ratio.

use std::sync::Arc;

use contextfold_core::budget::{UNIT_RATIO_PERMILLE, UsageReport};
use contextfold_host::runtime::{ExtractiveSummarizer, NoNativeCompactor, SessionRuntime};
use contextfold_host::storage::agent_run_kind;

use crate::runtime_support::{config, history, runtime_with, start_turn};

fn response(input_tokens: u64) -> UsageReport {
    UsageReport::Response {
        input_tokens,
        cached_input_tokens: 0,
        cache_write_tokens: 0,
        output_tokens: 12,
    }
}

#[tokio::test]
async fn a_reported_usage_is_durable_and_changes_what_fits() {
    let (_dir, store, runtime) = runtime_with(config(), ExtractiveSummarizer, NoNativeCompactor);
    let mut builder = history(3);
    runtime.append(builder.events().to_vec()).await.expect("append");
    start_turn(&runtime, &mut builder, "t-now").await;
    let before = runtime.project(false).await.expect("project");
    assert_eq!(before.ratio_permille, UNIT_RATIO_PERMILLE);
    assert!(before.projection.fits, "three turns fit the window uncalibrated");
    assert_eq!(before.uncalibrated_tokens, before.projection.estimated_tokens);

    // The provider counted twice the estimate: the same history no longer fits.
    let fact = runtime.usage_fact(&before, response(before.uncalibrated_tokens * 2));
    assert_eq!(runtime.record_usage(fact.clone()).await.expect("record"), 2_040);
    assert_eq!(store.usage_facts("s").expect("facts"), vec![fact]);
    let kinds: Vec<String> =
        store.agent_run_events("s").expect("ledger").into_iter().map(|r| r.kind).collect();
    assert_eq!(kinds, [agent_run_kind::USAGE_RECORDED]);
    let after = runtime.project(false).await.expect("project");
    assert_eq!(after.ratio_permille, 2_040);
    assert_eq!(after.uncalibrated_tokens, before.uncalibrated_tokens);
    let doubled =
        after.projection.estimated_tokens as f64 / before.projection.estimated_tokens as f64;
    assert!((1.99..=2.09).contains(&doubled), "calibrated/uncalibrated = {doubled}");
    assert!(!after.projection.fits, "at twice the estimate the history is over budget");
    // The trigger measures with the calibration: pre-turn compacts now.
    let report = runtime.evaluate_pre_turn().await.expect("evaluate");
    assert!(report.is_some(), "the calibrated projection does not fit, so pre-turn compacts");

    // A new runtime (a restarted host) starts from the ledger's facts.
    let restarted =
        SessionRuntime::new(Arc::clone(&store), config(), ExtractiveSummarizer, NoNativeCompactor);
    assert_eq!(restarted.calibration().await.expect("load").ratio_permille("local", "m"), 2_040);
}

#[tokio::test]
async fn an_overflow_fact_raises_the_ratio() {
    let (_dir, _store, runtime) = runtime_with(config(), ExtractiveSummarizer, NoNativeCompactor);
    let mut builder = history(2);
    runtime.append(builder.events().to_vec()).await.expect("append");
    start_turn(&runtime, &mut builder, "t-now").await;
    let report = runtime.project(false).await.expect("project");
    runtime
        .record_usage(runtime.usage_fact(&report, response(report.uncalibrated_tokens)))
        .await
        .expect("record");
    let overflow = UsageReport::Overflow {
        counted_tokens: Some(report.uncalibrated_tokens * 3),
        limit_tokens: Some(8_000),
    };
    assert_eq!(
        runtime.record_usage(runtime.usage_fact(&report, overflow)).await.expect("record"),
        3_060
    );
}

#[tokio::test]
async fn a_fact_that_cannot_be_true_is_refused_and_writes_nothing() {
    let (_dir, store, runtime) = runtime_with(config(), ExtractiveSummarizer, NoNativeCompactor);
    let report = runtime.project(false).await.expect("project");
    let impossible = UsageReport::Response {
        input_tokens: 100,
        cached_input_tokens: 90,
        cache_write_tokens: 20,
        output_tokens: 1,
    };
    let error = runtime.record_usage(runtime.usage_fact(&report, impossible)).await;
    assert_eq!(error.map_err(|e| e.code()), Err("invalid_usage_fact"));
    let none = runtime.usage_fact(&report, response(0));
    assert!(runtime.record_usage(none).await.is_err());
    assert!(store.usage_facts("s").expect("facts").is_empty(), "nothing was written");
}
