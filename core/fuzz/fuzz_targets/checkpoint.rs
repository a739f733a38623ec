//! Checkpoint JSON, V2 and V3 (`HistoryCompactCheckpoint::from_json`).
#![no_main]

use contextfold_core::HistoryCompactCheckpoint;
use contextfold_fuzz::{assert_code, text};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    match HistoryCompactCheckpoint::from_json(&text(input)) {
        Ok(checkpoint) => {
            let again = HistoryCompactCheckpoint::from_json(&checkpoint.to_json());
            assert_eq!(again, Ok(checkpoint), "a checkpoint does not round-trip");
        }
        Err(error) => assert_code("checkpoint", error.code()),
    }
});
