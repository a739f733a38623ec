//! `Store::verify_checkpoints`: every checkpoint checked in one streamed pass over a real
//! SQLite ledger gives what matching each checkpoint alone over the loaded ledger gives, and
//! reads no further than the largest claimed coverage.

use contextfold_core::checkpoint::{
    CheckpointProjection, HighWater, HistoryCompactCheckpoint, coverage_of, match_checkpoint_prefix,
};
use contextfold_core::{LogBuilder, RuntimeEvent};
use contextfold_host::storage::Store;
use serde_json::json;

fn session() -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new("s");
    for turn in 0..30 {
        log.turn(&format!("t{turn}"))
            .user(&format!("step {turn}: run the tests"))
            .tool_call("c", "shell", json!({"cmd": format!("cargo test case_{turn}")}))
            .tool_result("c", "shell", json!("test result: ok. 3 passed\n".repeat(turn + 1)))
            .assistant("done");
    }
    log.build()
}

fn checkpoint_over(prefix: &[RuntimeEvent]) -> HistoryCompactCheckpoint {
    HistoryCompactCheckpoint {
        checkpoint_id: format!("cp{}", prefix.len()),
        session_id: "s".into(),
        created_at_ms: 1,
        high_water: HighWater { name: "manual".into(), seq: 0 },
        coverage: coverage_of(prefix).expect("non-empty"),
        projection: CheckpointProjection::Summary("## Goal\nx".into()),
        limitations: vec![],
        estimated_tokens: 10,
        previous_checkpoint_id: None,
        produced_by: None,
        manifest: None,
    }
}

#[test]
fn one_streamed_pass_equals_matching_each_checkpoint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("ledger.sqlite")).expect("open");
    let events = session();
    store.append_events("s", &events).expect("append");
    let mut checkpoints: Vec<HistoryCompactCheckpoint> =
        [40, 4, 80, 17, 60].iter().map(|&n| checkpoint_over(&events[..n])).collect();
    let mut forged = checkpoint_over(&events[..50]);
    forged.coverage.source_digest = format!("sha256:{}", "0".repeat(64));
    let mut beyond = checkpoint_over(&events);
    beyond.coverage.event_count += 1;
    checkpoints.extend([forged, beyond]);

    let loaded = store.load_events("s").expect("load");
    let expected: Vec<_> =
        checkpoints.iter().map(|cp| match_checkpoint_prefix(cp, &loaded)).collect();
    let sweep = store.verify_checkpoints("s", &checkpoints).expect("sweep");
    assert_eq!(sweep.results, expected);
    assert_eq!(sweep.events, events.len() as u64);
    assert_eq!(sweep.events_read, events.len() as u64, "a claim beyond the log reads it all");
    assert_eq!(sweep.results.iter().filter(|r| r.is_ok()).count(), 5);

    let early = store.verify_checkpoints("s", &checkpoints[..2]).expect("sweep");
    assert_eq!(early.events_read, 40, "reading stops after the largest claimed coverage");
    assert_eq!(early.results, expected[..2]);
}
