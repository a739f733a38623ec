//! Goal 3 of issue 20: one mid-turn evaluation through `SessionRuntime` (public API calls,
//! in process) on a long session against the same on a short one.
//!
//! Per fixture: a runtime over the SQLite file starts a new turn (its task appended, one
//! projection to warm the runtime's log cache as an agent's first request would), then plays
//! `steps` agent steps: each appends a tool call and its ~1 KB result and calls
//! `evaluate_mid_turn`, which is timed (the window is large enough that none compacts). The
//! median is reported, and the time of one evaluation right after a usage fact moved the
//! calibration ratio (the verified prefix then starts over from the events in memory).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use contextfold_core::budget::UsageReport;
use contextfold_core::compaction::{Compactor, ProviderIdentity};
use contextfold_core::{LogBuilder, ModelFacts, RuntimeEvent};
use contextfold_host::runtime::{
    ExtractiveSummarizer, NoNativeCompactor, SessionConfig, SessionRuntime,
};
use contextfold_host::storage::Store;
use serde_json::json;

use crate::support::SESSION;

/// Median seconds of one evaluation, and seconds of the one after a ratio change.
pub(crate) struct Evaluations {
    pub(crate) median: f64,
    pub(crate) after_ratio_change: f64,
}

/// The events of the new turn: its task, then `steps` (call, result) pairs, numbered after
/// `last_seq`.
fn turn_events(last_seq: u64, steps: usize) -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new(SESSION);
    log.turn("bench-turn").user("Find and fix the failing test in the parser.");
    for step in 0..steps {
        log.response(Some(&format!("r{step}"))).tool_call(
            &format!("call-{step}"),
            "shell",
            json!({"cmd": format!("cargo test {step}")}),
        );
        log.response(None).tool_result(
            &format!("call-{step}"),
            "shell",
            json!(format!("test parser::case_{step} ... ok\n").repeat(30)),
        );
    }
    let mut events = log.build();
    for event in &mut events {
        event.seq += last_seq;
        event.runtime_event_id = format!("bench-turn-{}", event.runtime_event_id);
    }
    events
}

/// Plays the new turn on the fixture at `db`.
pub(crate) fn evaluate(db: &Path, steps: usize) -> Evaluations {
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio");
    tokio.block_on(async {
        let store = Arc::new(Store::open(db).expect("the fixture"));
        let last_seq = store.load_events(SESSION).expect("ledger").last().map_or(0, |e| e.seq);
        let config = SessionConfig {
            session_id: SESSION.into(),
            model: ModelFacts { context_window: Some(400_000), ..Default::default() },
            provider: ProviderIdentity {
                provider: "bench".into(),
                connection_slug: "offline".into(),
                model_id: "bench-model".into(),
            },
            compactor: Compactor::TextSummary,
        };
        let runtime = SessionRuntime::new(store, config, ExtractiveSummarizer, NoNativeCompactor);
        let events = turn_events(last_seq, steps);
        runtime.begin_turn("bench-turn").expect("begin");
        runtime.append(events[..1].to_vec()).await.expect("task");
        let first = runtime.project_for_request().await.expect("first request");
        let mut times = Vec::new();
        for pair in events[1..].chunks(2) {
            runtime.append(pair.to_vec()).await.expect("step");
            let started = Instant::now();
            let compacted = runtime.evaluate_mid_turn().await.expect("evaluation");
            times.push(started.elapsed().as_secs_f64());
            assert!(compacted.is_none(), "the bench window must not compact");
        }
        let usage = UsageReport::Response {
            input_tokens: first.uncalibrated_tokens * 11 / 10,
            cached_input_tokens: 0,
            cache_write_tokens: 0,
            output_tokens: 10,
        };
        runtime.record_usage(runtime.usage_fact(&first, usage)).await.expect("usage");
        let started = Instant::now();
        runtime.evaluate_mid_turn().await.expect("evaluation");
        let after_ratio_change = started.elapsed().as_secs_f64();
        times.sort_by(f64::total_cmp);
        Evaluations { median: times[times.len() / 2], after_ratio_change }
    })
}
