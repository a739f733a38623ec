//! RuntimeEvent JSON Lines (`RuntimeEvent::parse_jsonl`) and log validation.
#![no_main]

use contextfold_fuzz::{assert_code, check_imported, text};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    match contextfold_core::RuntimeEvent::parse_jsonl(&text(input)) {
        Ok(events) => check_imported("events_jsonl", input, &events),
        Err(error) => {
            assert!(error.line >= 1, "a JSON Lines error names line {}", error.line);
            assert_code("events_jsonl", error.source.code());
        }
    }
});
