//! Shared checks of the libFuzzer targets in `fuzz_targets/` (one per parser of outside
//! input). Every target asserts the properties of the proptest corpus fuzzer
//! (`core/tests/fuzz/fuzz_corpus.rs`): no panic, every rejection is a typed error with a stable
//! snake_case code, whatever parses round-trips unchanged, and an import produces no more
//! events than its input has bytes. A failed assertion is a panic, which libFuzzer reports
//! as a crash with its reproducer; allocation bounds are checked by libFuzzer itself
//! (`-malloc_limit_mb`, `-rss_limit_mb`, set by `scripts/fuzz.sh`).

use contextfold_core::RuntimeEvent;
use contextfold_core::event::validate_log;
use serde_json::Value;

/// Whether `code` is a stable snake_case reason code.
pub fn is_code(code: &str) -> bool {
    !code.is_empty()
        && code.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Asserts that `code` is a stable snake_case reason code, naming the `what` that failed.
pub fn assert_code(what: &str, code: &str) {
    assert!(is_code(code), "{what}: rejection without a snake_case code: {code:?}");
}

/// The input as text, invalid UTF-8 replaced (the parsers take `&str`).
pub fn text(input: &[u8]) -> String {
    String::from_utf8_lossy(input).into_owned()
}

/// The input as a JSON document, or `None` when it is not JSON (the import entry points take
/// parsed documents; serde_json's own parser is not under test).
pub fn json_of(input: &[u8]) -> Option<Value> {
    serde_json::from_slice(input).ok()
}

/// Checks an import's events: no amplification (at most one event per input byte), every
/// event round-trips through its JSON form, and the log is valid or rejected with a code.
pub fn check_imported(what: &str, input: &[u8], events: &[RuntimeEvent]) {
    assert!(
        events.len() <= input.len(),
        "{what}: {} events from {} input bytes",
        events.len(),
        input.len()
    );
    for event in events {
        let value = serde_json::to_value(event).expect("an event serializes");
        let again = RuntimeEvent::from_value(value);
        assert_eq!(again.as_ref(), Ok(event), "{what}: an event does not round-trip");
    }
    if let Err(error) = validate_log(events) {
        assert_code(what, error.code());
    }
}
