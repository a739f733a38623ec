//! Ledger recovery (`select_recovered_checkpoint`) over a JSON array of recorded checkpoint
//! payloads: the selection names a record, every skip has a code, and no parsable checkpoint
//! of the session covering more than the selected one is silently dropped.
#![no_main]

use contextfold_core::HistoryCompactCheckpoint;
use contextfold_core::checkpoint::{RecordedCheckpointEvent, select_recovered_checkpoint};
use contextfold_fuzz::{assert_code, json_of};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|input: &[u8]| {
    let Some(Value::Array(payloads)) = json_of(input) else { return };
    let records: Vec<RecordedCheckpointEvent> = payloads
        .into_iter()
        .enumerate()
        .map(|(i, payload)| RecordedCheckpointEvent {
            event_id: format!("e{i}"),
            session_id: "s".into(),
            recorded_at_ms: i as u64,
            payload,
        })
        .collect();
    let recovery = select_recovered_checkpoint("s", &records);
    assert_eq!(recovery.selected.is_some(), recovery.selected_event_id.is_some());
    let selected_id = recovery.selected_event_id.as_deref();
    for skipped in &recovery.skipped {
        assert!(records.iter().any(|r| r.event_id == skipped.event_id), "unknown skip");
        assert!(Some(skipped.event_id.as_str()) != selected_id, "selected and skipped");
        assert_code("recovery", skipped.reason.code());
    }
    let covered = recovery.selected.as_ref().map_or(0, |s| s.coverage.event_count);
    for record in &records {
        let Ok(checkpoint) = HistoryCompactCheckpoint::from_value(record.payload.clone()) else {
            continue;
        };
        let skipped = recovery.skipped.iter().any(|s| s.event_id == record.event_id);
        let selected = selected_id == Some(record.event_id.as_str());
        assert!(
            skipped
                || selected
                || checkpoint.coverage.event_count <= covered
                || checkpoint.session_id != "s",
            "record {} dropped without a reason",
            record.event_id
        );
    }
});
