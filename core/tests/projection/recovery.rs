//! Recovery selection from the AgentRun ledger, and the successor rules.

use contextfold_core::ReasonCode;
use contextfold_core::checkpoint::{
    HistoryCompactCheckpoint, RecordedCheckpointEvent, SkipReason, SuccessorError,
    is_valid_successor, select_recovered_checkpoint,
};
use serde_json::{Value, json};

const SESSION: &str = "s1";

/// A V2 checkpoint payload covering `count` events with a digest made of `digest` repeated.
pub(crate) fn payload(id: &str, count: u64, digest: char, previous: Option<&str>) -> Value {
    let mut value = json!({
        "schemaVersion": 2,
        "checkpointId": id,
        "sessionId": SESSION,
        "createdAtMs": 1_000,
        "highWater": {"name": "pre_turn", "seq": count},
        "coverage": {
            "eventCount": count,
            "turnCount": count / 2 + 1,
            "through": {"runId": "r1", "turnId": "t1", "runtimeEventId": format!("e{count}")},
            "sourceDigest": format!("sha256:{}", digest.to_string().repeat(64)),
        },
        "summary": format!("summary of {id}"),
        "limitations": ["exact wording remains in the ledger"],
        "estimatedTokens": 100,
    });
    if let Some(previous) = previous {
        value["previousCheckpointId"] = json!(previous);
    }
    value
}

pub(crate) fn record(
    event_id: &str,
    recorded_at_ms: u64,
    payload: Value,
) -> RecordedCheckpointEvent {
    RecordedCheckpointEvent {
        event_id: event_id.into(),
        session_id: SESSION.into(),
        recorded_at_ms,
        payload,
    }
}

fn checkpoint(
    id: &str,
    count: u64,
    digest: char,
    previous: Option<&str>,
) -> HistoryCompactCheckpoint {
    HistoryCompactCheckpoint::from_value(payload(id, count, digest, previous)).expect("valid")
}

fn selected_id(events: &[RecordedCheckpointEvent]) -> Option<String> {
    select_recovered_checkpoint(SESSION, events).selected.map(|c| c.checkpoint_id)
}

fn skipped_codes(events: &[RecordedCheckpointEvent]) -> Vec<(String, &'static str)> {
    let recovery = select_recovered_checkpoint(SESSION, events);
    recovery.skipped.iter().map(|s| (s.event_id.clone(), s.reason.code())).collect()
}

#[test]
fn empty_ledger_selects_nothing() {
    let recovery = select_recovered_checkpoint(SESSION, &[]);
    assert_eq!(recovery.selected, None);
    assert_eq!(recovery.selected_event_id, None);
    assert!(recovery.skipped.is_empty());
}

#[test]
fn largest_coverage_beats_a_later_write_with_stale_coverage() {
    let events = [
        record("ev1", 1, payload("big", 10, 'a', None)),
        record("ev2", 9, payload("stale", 5, 'b', Some("big"))),
    ];
    let recovery = select_recovered_checkpoint(SESSION, &events);
    assert_eq!(recovery.selected.map(|c| c.checkpoint_id).as_deref(), Some("big"));
    assert_eq!(recovery.selected_event_id.as_deref(), Some("ev1"));
    assert!(recovery.skipped.is_empty(), "a stale valid checkpoint is superseded, not skipped");
}

#[test]
fn equal_coverage_follows_a_chain_of_three_to_its_tip_regardless_of_timestamps() {
    // root <- c2 <- c3 at equal coverage; the tip is recorded with the OLDEST timestamp.
    let events = [
        record("ev-lower", 1, payload("lower", 4, 'z', None)),
        record("ev-c3", 2, payload("c3", 8, 'a', Some("c2"))),
        record("ev-c2", 50, payload("c2", 8, 'a', Some("root"))),
        record("ev-root", 90, payload("root", 8, 'a', Some("lower"))),
    ];
    assert_eq!(selected_id(&events).as_deref(), Some("c3"));
    let mut reversed = events.to_vec();
    reversed.reverse();
    assert_eq!(selected_id(&reversed).as_deref(), Some("c3"));
    assert!(skipped_codes(&events).is_empty());
}

#[test]
fn a_later_write_naming_an_already_succeeded_checkpoint_lost_the_compare_and_swap() {
    let events = [
        record("ev-root", 1, payload("root", 8, 'a', None)),
        record("ev-c2", 2, payload("c2", 8, 'a', Some("root"))),
        record("ev-late", 3, payload("late", 8, 'a', Some("root"))),
        record("ev-late-child", 4, payload("late-child", 8, 'a', Some("late"))),
    ];
    assert_eq!(selected_id(&events).as_deref(), Some("c2"));
    assert_eq!(
        skipped_codes(&events),
        vec![
            ("ev-late".to_owned(), "successor_conflict"),
            ("ev-late-child".to_owned(), "successor_conflict"),
        ]
    );
}

#[test]
fn unrelated_equal_coverage_chains_tie_on_time_then_event_id() {
    let chain = [
        record("ev-a1", 10, payload("a1", 6, 'a', None)),
        record("ev-a2", 20, payload("a2", 6, 'a', Some("a1"))),
    ];
    let later_root = record("ev-b", 30, payload("b", 6, 'a', None));
    let mut events = chain.to_vec();
    events.push(later_root);
    assert_eq!(selected_id(&events).as_deref(), Some("b"), "latest tip wins");

    let same_time = [
        record("ev-x", 7, payload("x", 6, 'a', None)),
        record("ev-y", 7, payload("y", 6, 'a', None)),
    ];
    assert_eq!(selected_id(&same_time).as_deref(), Some("y"), "larger event id wins");
    let swapped = [same_time[1].clone(), same_time[0].clone()];
    assert_eq!(selected_id(&swapped).as_deref(), Some("y"));
}

#[test]
fn two_digests_at_the_largest_count_are_a_fork_with_the_loser_reported() {
    let events = [
        record("ev-lower", 1, payload("lower", 3, 'c', None)),
        record("ev-a", 5, payload("fork-a", 9, 'a', Some("lower"))),
        record("ev-b", 6, payload("fork-b", 9, 'b', Some("lower"))),
    ];
    let recovery = select_recovered_checkpoint(SESSION, &events);
    assert_eq!(recovery.selected.as_ref().map(|c| c.checkpoint_id.as_str()), Some("fork-b"));
    assert_eq!(recovery.skipped.len(), 1);
    let loser = &recovery.skipped[0];
    assert_eq!((loser.event_id.as_str(), loser.reason), ("ev-a", SkipReason::Fork));
    assert!(loser.detail.contains("fork-b") && loser.detail.contains(&"a".repeat(64)));
    assert_eq!(loser.to_diagnostic().code, ReasonCode::CheckpointFork);
}

#[test]
fn every_invalid_event_is_skipped_with_its_own_reason() {
    let mut bad_shape = payload("shape", 5, 'a', None);
    bad_shape["coverage"]["eventCount"] = json!(0);
    let mut no_schema = payload("noschema", 5, 'a', None);
    no_schema.as_object_mut().map(|o| o.remove("schemaVersion"));
    let mut future = payload("future", 50, 'a', None);
    future["schemaVersion"] = json!(9);
    let mut other_payload_session = payload("foreign", 50, 'a', None);
    other_payload_session["sessionId"] = json!("s2");
    let mut wrong_session = record("ev-wrong", 9, payload("wrong", 60, 'a', None));
    wrong_session.session_id = "s2".into();
    let events = [
        record("ev-damaged", 1, json!("{\"schemaVersion\": 2, \"checkpointId\": ")),
        record("ev-noschema", 2, no_schema),
        record("ev-future", 3, future),
        record("ev-shape", 4, bad_shape),
        wrong_session,
        record("ev-foreign", 6, other_payload_session),
        record("ev-good", 7, payload("good", 5, 'a', None)),
    ];
    let recovery = select_recovered_checkpoint(SESSION, &events);
    assert_eq!(recovery.selected.as_ref().map(|c| c.checkpoint_id.as_str()), Some("good"));
    let codes: Vec<_> =
        recovery.skipped.iter().map(|s| (s.event_id.as_str(), s.reason.code())).collect();
    assert_eq!(
        codes,
        vec![
            ("ev-damaged", "checkpoint_syntax"),
            ("ev-noschema", "checkpoint_missing_schema_version"),
            ("ev-future", "checkpoint_schema_unsupported"),
            ("ev-shape", "checkpoint_invalid"),
            ("ev-wrong", "session_mismatch"),
            ("ev-foreign", "checkpoint_session_mismatch"),
        ]
    );
    assert!(recovery.skipped.iter().all(|s| !s.detail.is_empty()));
    let diagnostics = recovery.diagnostics();
    assert_eq!(diagnostics.len(), 6);
    assert!(diagnostics.iter().all(|d| d.code == ReasonCode::RecoveryEventSkipped));
    assert!(
        diagnostics[0].detail.contains("ev-damaged")
            && diagnostics[0].detail.contains("checkpoint_syntax")
    );
}

#[test]
fn only_invalid_events_select_nothing() {
    let events = [record("ev1", 1, json!(42)), record("ev2", 2, json!("not json"))];
    let recovery = select_recovered_checkpoint(SESSION, &events);
    assert_eq!(recovery.selected, None);
    assert_eq!(recovery.selected_event_id, None);
    assert_eq!(recovery.skipped.len(), 2);
}

#[test]
fn payload_stored_as_json_text_is_accepted() {
    let text = payload("textual", 4, 'a', None).to_string();
    assert_eq!(selected_id(&[record("ev1", 1, json!(text))]).as_deref(), Some("textual"));
}

#[test]
fn a_repeated_checkpoint_id_keeps_its_earliest_record() {
    let events = [
        record("ev-retry", 8, payload("cp", 4, 'a', None)),
        record("ev-first", 2, payload("cp", 4, 'a', None)),
    ];
    let recovery = select_recovered_checkpoint(SESSION, &events);
    assert_eq!(recovery.selected_event_id.as_deref(), Some("ev-first"));
    assert_eq!(skipped_codes(&events), vec![("ev-retry".to_owned(), "checkpoint_id_duplicate")]);
}

#[test]
fn a_lineage_cycle_at_the_top_falls_back_to_lower_coverage() {
    let events = [
        record("ev-low", 1, payload("low", 2, 'c', None)),
        record("ev-p", 2, payload("p", 7, 'a', Some("q"))),
        record("ev-q", 3, payload("q", 7, 'a', Some("p"))),
    ];
    assert_eq!(selected_id(&events).as_deref(), Some("low"));
    assert_eq!(
        skipped_codes(&events),
        vec![("ev-p".to_owned(), "successor_conflict"), ("ev-q".to_owned(), "successor_conflict")]
    );
}

#[test]
fn recorded_event_json_is_camel_case() {
    let event = record("ev1", 5, json!({}));
    let value = serde_json::to_value(&event).expect("serializes");
    assert_eq!(
        value,
        json!({"eventId": "ev1", "sessionId": "s1", "recordedAtMs": 5, "payload": {}})
    );
    let back: RecordedCheckpointEvent = serde_json::from_value(value).expect("parses");
    assert_eq!(back, event);
}

#[test]
fn successor_rules_accept_growth_and_compare_and_swap_rewrites() {
    let current = checkpoint("cur", 6, 'a', None);
    assert_eq!(is_valid_successor(None, &current), Ok(()));
    assert_eq!(
        is_valid_successor(Some(&current), &checkpoint("next", 9, 'b', Some("cur"))),
        Ok(())
    );
    assert_eq!(is_valid_successor(Some(&current), &checkpoint("rw", 6, 'a', Some("cur"))), Ok(()));
}

#[test]
fn successor_rules_reject_each_conflict_with_its_own_variant() {
    let current = checkpoint("cur", 6, 'a', None);
    let check =
        |candidate: &HistoryCompactCheckpoint| is_valid_successor(Some(&current), candidate);

    let fewer = check(&checkpoint("n", 5, 'a', Some("cur")));
    assert_eq!(fewer, Err(SuccessorError::FewerEvents { current: 6, candidate: 5 }));
    assert!(matches!(
        check(&checkpoint("n", 6, 'a', None)),
        Err(SuccessorError::EqualCoverageNotNamingCurrent { .. })
    ));
    assert!(matches!(
        check(&checkpoint("n", 9, 'a', None)),
        Err(SuccessorError::MissingPredecessor { .. })
    ));
    assert!(matches!(
        check(&checkpoint("n", 9, 'b', Some("other"))),
        Err(SuccessorError::NamesDifferentPredecessor { named, .. }) if named == "other"
    ));
    assert!(matches!(
        check(&checkpoint("n", 6, 'b', Some("cur"))),
        Err(SuccessorError::DigestChangedAtEqualCount { .. })
    ));
    let mut moved = checkpoint("n", 6, 'a', Some("cur"));
    moved.coverage.through.runtime_event_id = "elsewhere".into();
    assert_eq!(check(&moved), Err(SuccessorError::BoundaryChangedAtEqualCount));
    let mut recounted = checkpoint("n", 6, 'a', Some("cur"));
    recounted.coverage.turn_count += 1;
    assert!(matches!(check(&recounted), Err(SuccessorError::TurnCountChangedAtEqualCount { .. })));
    let mut foreign = checkpoint("n", 9, 'a', Some("cur"));
    foreign.session_id = "s2".into();
    assert!(matches!(check(&foreign), Err(SuccessorError::SessionMismatch { .. })));
    assert!(matches!(
        check(&checkpoint("cur", 9, 'a', Some("cur"))),
        Err(SuccessorError::SameCheckpointId { .. })
    ));
    let error = fewer.expect_err("conflict");
    assert_eq!(
        (error.code(), error.reason_code()),
        ("successor_conflict", ReasonCode::SuccessorConflict)
    );
}

#[cfg(not(target_arch = "wasm32"))]
mod properties {
    use super::*;
    use proptest::prelude::*;

    /// A ledger of valid and invalid records over a few coverage levels and lineages.
    fn ledger() -> impl Strategy<Value = Vec<RecordedCheckpointEvent>> {
        let one =
            (0u8..6, 1u64..5, prop::sample::select(vec!['a', 'b']), 0u64..4, 0u8..8, any::<bool>());
        prop::collection::vec(one, 0..12).prop_map(|rows| {
            rows.into_iter()
                .enumerate()
                .map(|(i, (kind, count, digest, time, previous, damaged))| {
                    let id = format!("cp{i}");
                    let previous = (previous < 6).then(|| format!("cp{previous}"));
                    let body = if damaged && kind == 0 {
                        json!("{damaged")
                    } else {
                        payload(&id, count * 2, digest, previous.as_deref())
                    };
                    let mut event = record(&format!("ev{}", i % 7), time, body);
                    if kind == 1 && damaged {
                        event.session_id = "other".into();
                    }
                    event
                })
                .collect()
        })
    }

    /// A deterministic permutation of `items` driven by `seed`.
    fn permute<T: Clone>(items: &[T], mut seed: u64) -> Vec<T> {
        let mut pool = items.to_vec();
        let mut out = Vec::with_capacity(pool.len());
        while !pool.is_empty() {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            out.push(pool.remove((seed >> 33) as usize % pool.len()));
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn selection_ignores_input_order_and_picks_the_largest_valid_coverage(
            events in ledger(),
            seed in any::<u64>(),
        ) {
            let recovery = select_recovered_checkpoint(SESSION, &events);
            let again = select_recovered_checkpoint(SESSION, &permute(&events, seed));
            prop_assert_eq!(&recovery.selected, &again.selected);
            prop_assert_eq!(&recovery.selected_event_id, &again.selected_event_id);

            let skipped: Vec<&str> = recovery.skipped.iter().map(|s| s.event_id.as_str()).collect();
            let admissible: Vec<HistoryCompactCheckpoint> = events
                .iter()
                .filter(|e| e.session_id == SESSION)
                .filter_map(|e| HistoryCompactCheckpoint::from_value(e.payload.clone()).ok())
                .collect();
            // Every record that fails the schema or session check is listed as skipped.
            for event in &events {
                let valid = event.session_id == SESSION
                    && HistoryCompactCheckpoint::from_value(event.payload.clone()).is_ok();
                if !valid {
                    prop_assert!(skipped.contains(&event.event_id.as_str()));
                }
            }
            prop_assert!(recovery.skipped.len() <= events.len());
            let sorted = |r: &contextfold_core::checkpoint::Recovery| {
                let mut all: Vec<_> =
                    r.skipped.iter().map(|s| (s.event_id.clone(), s.reason.code(), s.detail.clone())).collect();
                all.sort();
                all
            };
            prop_assert_eq!(sorted(&recovery), sorted(&again));
            match &recovery.selected {
                // Nothing selected: every admissible checkpoint was skipped with a reason (for
                // example, all of them sit on a lineage cycle).
                None => prop_assert!(admissible.iter().all(|c| events
                    .iter()
                    .filter(|e| e.payload.get("checkpointId").and_then(Value::as_str)
                        == Some(c.checkpoint_id.as_str()))
                    .all(|e| skipped.contains(&e.event_id.as_str())))),
                Some(selected) => {
                    prop_assert!(admissible.contains(selected));
                    let max = admissible.iter().map(|c| c.coverage.event_count).max().unwrap_or(0);
                    prop_assert!(selected.coverage.event_count <= max);
                    let reasons = |id: &str| -> Vec<SkipReason> {
                        let event_ids: Vec<&str> = events
                            .iter()
                            .filter(|e| e.payload.get("checkpointId").and_then(Value::as_str) == Some(id))
                            .map(|e| e.event_id.as_str())
                            .collect();
                        recovery.skipped.iter().filter(|s| event_ids.contains(&s.event_id.as_str())).map(|s| s.reason).collect()
                    };
                    for other in admissible.iter().filter(|c| c.coverage.event_count == max) {
                        if selected.coverage.event_count < max {
                            // Only a lineage cycle can push selection below the largest count.
                            prop_assert!(reasons(&other.checkpoint_id).contains(&SkipReason::SuccessorConflict));
                        } else if other.coverage != selected.coverage {
                            // Another coverage at the top is a reported fork (or lost a CAS).
                            let r = reasons(&other.checkpoint_id);
                            prop_assert!(r.contains(&SkipReason::Fork) || r.contains(&SkipReason::SuccessorConflict));
                        }
                    }
                }
            }
        }
    }
}
