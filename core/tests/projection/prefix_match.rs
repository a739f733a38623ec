//! Prefix matching: a checkpoint replaces history only over the exact prefix it claims.

use contextfold_core::checkpoint::{
    CheckpointProjection, HighWater, HistoryCompactCheckpoint, PrefixMismatch, coverage_of,
    match_checkpoint_prefix, match_checkpoint_prefix_from,
};
use contextfold_core::digest::PrefixHasher;
use contextfold_core::{LogBuilder, ReasonCode, RuntimeEvent};
use serde_json::json;

fn session() -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new("s1");
    for turn in 0..4 {
        log.turn(&format!("t{turn}"))
            .user(&format!("step {turn}: run tests"))
            .tool_call("c", "shell", json!({"cmd": "cargo test"}))
            .tool_result("c", "shell", json!("3 passed"))
            .assistant("done");
    }
    log.build()
}

fn checkpoint_over(prefix: &[RuntimeEvent]) -> HistoryCompactCheckpoint {
    HistoryCompactCheckpoint {
        checkpoint_id: "cp1".into(),
        session_id: "s1".into(),
        created_at_ms: 1,
        high_water: HighWater { name: "manual".into(), seq: prefix.last().map_or(0, |e| e.seq) },
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
fn matching_prefix_is_accepted_even_after_appends() {
    let events = session();
    let cp = checkpoint_over(&events[..8]);
    assert_eq!(match_checkpoint_prefix(&cp, &events).map(|m| m.covered), Ok(8));
    assert_eq!(match_checkpoint_prefix(&cp, &events[..8]).map(|m| m.covered), Ok(8));
}

#[test]
fn too_few_events_is_coverage_miss() {
    let events = session();
    let cp = checkpoint_over(&events[..8]);
    let err = match_checkpoint_prefix(&cp, &events[..7]).unwrap_err();
    assert!(matches!(err, PrefixMismatch::NotEnoughEvents { claimed: 8, available: 7 }));
    assert_eq!(err.code(), ReasonCode::CoverageMiss);
}

#[test]
fn different_boundary_is_coverage_miss() {
    let events = session();
    let mut cp = checkpoint_over(&events[..8]);
    cp.coverage.through.runtime_event_id = "other".into();
    let err = match_checkpoint_prefix(&cp, &events).unwrap_err();
    assert!(matches!(err, PrefixMismatch::BoundaryMismatch { index: 7 }));
    assert_eq!(err.code(), ReasonCode::CoverageMiss);
}

#[test]
fn wrong_turn_count_is_coverage_miss() {
    let events = session();
    let mut cp = checkpoint_over(&events[..8]);
    cp.coverage.turn_count = 3;
    assert_eq!(match_checkpoint_prefix(&cp, &events).unwrap_err().code(), ReasonCode::CoverageMiss);
}

#[test]
fn edited_covered_event_is_source_hash_mismatch() {
    let mut events = session();
    let cp = checkpoint_over(&events[..8]);
    events[2] = {
        let mut e = events[2].clone();
        e.content = contextfold_core::EventContent::ToolResult {
            call_id: "c".into(),
            tool_name: "shell".into(),
            output: json!("3 passed, 1 failed"),
            is_error: false,
            attachments: Vec::new(),
        };
        e
    };
    let err = match_checkpoint_prefix(&cp, &events).unwrap_err();
    assert_eq!(err.code(), ReasonCode::SourceHashMismatch);
    // An edit after the covered prefix does not matter.
    let mut later = session();
    later[10].pinned = true;
    assert!(match_checkpoint_prefix(&cp, &later).is_ok());
}

#[test]
fn other_session_is_session_mismatch() {
    let events = session();
    let mut cp = checkpoint_over(&events[..4]);
    cp.session_id = "s2".into();
    assert_eq!(
        match_checkpoint_prefix(&cp, &events).unwrap_err().code(),
        ReasonCode::SessionMismatch
    );
}

#[test]
fn resumed_hasher_gives_the_same_answer() {
    let events = session();
    let cp = checkpoint_over(&events[..12]);
    let mut hasher = PrefixHasher::new();
    for e in &events[..5] {
        hasher.push(e);
    }
    assert_eq!(match_checkpoint_prefix_from(&cp, &events, hasher, None).map(|m| m.covered), Ok(12));
    // A hasher that went past the coverage falls back to a full verification.
    let mut long = PrefixHasher::new();
    for e in &events {
        long.push(e);
    }
    assert_eq!(match_checkpoint_prefix_from(&cp, &events, long, None).map(|m| m.covered), Ok(12));
    let mut tampered = events.clone();
    tampered[11].runtime_event_id = "x".into();
    assert!(match_checkpoint_prefix_from(&cp, &tampered, PrefixHasher::new(), None).is_err());
}

#[test]
fn checkpoint_json_round_trips_and_rejects_unknown_schema() {
    let events = session();
    let cp = checkpoint_over(&events[..4]);
    let json = cp.to_json();
    assert_eq!(HistoryCompactCheckpoint::from_json(&json), Ok(cp.clone()));
    let mut value: serde_json::Value = serde_json::from_str(&json).expect("json");
    value["schemaVersion"] = json!(4);
    let err = HistoryCompactCheckpoint::from_value(value.clone()).unwrap_err();
    assert_eq!(err.code(), "checkpoint_schema_unsupported");
    value["schemaVersion"] = json!(3);
    assert_eq!(
        HistoryCompactCheckpoint::from_value(value).unwrap_err().code(),
        "checkpoint_invalid"
    );
}

/// One sweep over the log gives, for every checkpoint, what matching it alone gives: matches,
/// every kind of mismatch, checkpoints given out of order, on the whole log and on a prefix.
#[test]
fn one_sweep_equals_matching_each_checkpoint() {
    use contextfold_core::checkpoint::PrefixSweep;
    let events = session();
    let mut checkpoints: Vec<HistoryCompactCheckpoint> =
        [16, 3, 8, 1, 12].iter().map(|&n| checkpoint_over(&events[..n])).collect();
    let mut boundary = checkpoint_over(&events[..5]);
    boundary.coverage.through.runtime_event_id = "other".into();
    let mut turns = checkpoint_over(&events[..6]);
    turns.coverage.turn_count += 1;
    let mut digest = checkpoint_over(&events[..7]);
    digest.coverage.source_digest = "0".repeat(64);
    let mut session_of = checkpoint_over(&events[..2]);
    session_of.session_id = "s2".into();
    let mut empty = checkpoint_over(&events[..1]);
    empty.coverage.event_count = 0;
    checkpoints.extend([boundary, turns, digest, session_of, empty, checkpoint_over(&events[..8])]);
    for log in [&events[..], &events[..10]] {
        let mut sweep = PrefixSweep::new(&checkpoints);
        for event in log {
            sweep.push(event);
        }
        let swept = sweep.finish();
        let each: Vec<_> = checkpoints.iter().map(|cp| match_checkpoint_prefix(cp, log)).collect();
        assert_eq!(swept, each, "log of {} events", log.len());
        assert!(each.iter().any(|r| r.is_ok()) && each.iter().any(|r| r.is_err()));
    }
}

/// The sweep stops hashing once every checkpoint is decided; the length it is then told
/// still fills in the checkpoints that claim more.
#[test]
fn a_sweep_may_stop_reading_when_every_checkpoint_is_decided() {
    use contextfold_core::checkpoint::PrefixSweep;
    let events = session();
    let checkpoints = [checkpoint_over(&events[..4])];
    let mut sweep = PrefixSweep::new(&checkpoints);
    for event in &events[..4] {
        sweep.push(event);
    }
    assert!(sweep.is_done());
    assert_eq!(
        sweep.finish_with_total(events.len()),
        [match_checkpoint_prefix(&checkpoints[0], &events)]
    );
}

/// Pushing each event as its key fields and canonical bytes (as the native ledger stores it)
/// gives what pushing the parsed events gives; one changed byte in a covered row is a digest
/// mismatch for every checkpoint covering it, and only for those.
#[test]
fn a_sweep_over_canonical_bytes_equals_one_over_events() {
    use contextfold_core::checkpoint::{EventKeys, PrefixMismatch, PrefixSweep};
    use contextfold_core::digest::canonical_event_json;
    let events = session();
    let checkpoints: Vec<HistoryCompactCheckpoint> =
        [1, 4, 9, 16].iter().map(|&n| checkpoint_over(&events[..n])).collect();
    let sweep_with = |edit: Option<usize>| {
        let mut sweep = PrefixSweep::new(&checkpoints);
        for (index, event) in events.iter().enumerate() {
            let mut bytes = canonical_event_json(event).into_bytes();
            if edit == Some(index) {
                let last = bytes.len() - 2;
                bytes[last] ^= 1;
            }
            let keys = EventKeys {
                session_id: &event.session_id,
                runtime_event_id: &event.runtime_event_id,
                turn_id: &event.turn_id,
                run_id: &event.run_id,
            };
            sweep.push_canonical(keys, &bytes);
        }
        sweep.finish()
    };
    let mut parsed = PrefixSweep::new(&checkpoints);
    for event in &events {
        parsed.push(event);
    }
    assert_eq!(sweep_with(None), parsed.finish());
    let edited = sweep_with(Some(5));
    assert!(edited[..2].iter().all(Result::is_ok), "{edited:?}");
    assert!(
        edited[2..].iter().all(|r| matches!(r, Err(PrefixMismatch::SourceHash { .. }))),
        "{edited:?}"
    );
}
