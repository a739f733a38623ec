//! Retraction (issue 42): a `checkpoint_retracted` event takes a checkpoint back, with every
//! checkpoint built on it; recovery selects the previous valid one, or none.

use contextfold_core::checkpoint::{
    RecordedCheckpointEvent, RetractionEvent, select_recovered_checkpoint_with,
};

use crate::recovery::{payload, record};

const SESSION: &str = "s1";

fn retraction(checkpoint_id: &str) -> RetractionEvent {
    RetractionEvent {
        event_id: format!("retract-{checkpoint_id}"),
        session_id: SESSION.into(),
        recorded_at_ms: 50,
        checkpoint_id: checkpoint_id.into(),
        reason: "the summary lost the task's rules".into(),
    }
}

fn selected(events: &[RecordedCheckpointEvent], retracted: &[&str]) -> Option<String> {
    let retractions: Vec<RetractionEvent> = retracted.iter().map(|id| retraction(id)).collect();
    let recovery = select_recovered_checkpoint_with(SESSION, events, &retractions);
    recovery.selected.map(|c| c.checkpoint_id)
}

/// cp1 (10 events) ← cp2 (20) ← cp3 (30), a rolling chain.
fn chain() -> Vec<RecordedCheckpointEvent> {
    vec![
        record("ev1", 1, payload("cp1", 10, 'a', None)),
        record("ev2", 2, payload("cp2", 20, 'b', Some("cp1"))),
        record("ev3", 3, payload("cp3", 30, 'c', Some("cp2"))),
    ]
}

#[test]
fn retracting_the_tip_selects_the_previous_checkpoint() {
    assert_eq!(selected(&chain(), &[]).as_deref(), Some("cp3"));
    assert_eq!(selected(&chain(), &["cp3"]).as_deref(), Some("cp2"));
}

#[test]
fn retracting_a_checkpoint_takes_back_what_was_built_on_it() {
    let retractions = [retraction("cp2")];
    let recovery = select_recovered_checkpoint_with(SESSION, &chain(), &retractions);
    assert_eq!(recovery.selected.map(|c| c.checkpoint_id).as_deref(), Some("cp1"));
    let skipped: Vec<(&str, &str)> =
        recovery.skipped.iter().map(|s| (s.event_id.as_str(), s.reason.code())).collect();
    assert_eq!(skipped, [("ev2", "checkpoint_retracted"), ("ev3", "checkpoint_retracted")]);
    assert!(recovery.skipped[0].detail.contains("lost the task's rules"));
    assert!(recovery.skipped[1].detail.contains("built on retracted checkpoint `cp2`"));
}

#[test]
fn retracting_every_checkpoint_leaves_the_raw_source() {
    assert_eq!(selected(&chain(), &["cp1"]), None);
}

#[test]
fn a_checkpoint_recorded_after_a_retraction_succeeds_the_previous_one() {
    // cp3 retracted; the next compaction names cp2 (then current) with less coverage than cp3.
    let mut events = chain();
    events.push(record("ev4", 60, payload("cp4", 25, 'd', Some("cp2"))));
    assert_eq!(selected(&events, &["cp3"]).as_deref(), Some("cp4"));
    // An equal-coverage successor of cp2 recorded after its first successor was retracted is
    // the legitimate one, not a lost compare-and-swap.
    let mut events = chain();
    events.push(record("ev4", 60, payload("cp2b", 20, 'b', Some("cp2"))));
    assert_eq!(selected(&events, &["cp3"]).as_deref(), Some("cp2b"));
}
