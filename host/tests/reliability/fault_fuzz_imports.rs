//! Corpus-driven fuzzing of the host's import formats (AI SDK `ModelMessage[]`, Anthropic
//! Messages through the CLI's event sink) with the core's fuzzer (`core/tests/fuzz_support`)
//! and seeds (`core/tests/fuzz-corpus/{ai_sdk,anthropic,openai_chat}`): no panic, typed
//! errors with snake_case codes, no more events than input bytes, and every imported log is
//! structurally valid or rejected with a typed error.

use crate::fuzz_support;

use contextfold_core::event::validate_log;
use contextfold_host::cli::formats::ai_sdk::import_ai_sdk;
use contextfold_host::cli::formats::anthropic::import_anthropic;
use contextfold_host::cli::formats::{EventSink, FormatError};
use fuzz_support::{FILTERED, PARSED, Reach, fuzz, is_code};
use proptest::prelude::*;
use serde_json::Value;

fn check_import(
    input: &[u8],
    import: fn(&Value, &mut EventSink) -> Result<(), FormatError>,
) -> Result<Reach, TestCaseError> {
    let Ok(document) = serde_json::from_slice::<Value>(input) else { return FILTERED };
    let mut sink = EventSink::new("s", 1, 1);
    match import(&document, &mut sink) {
        Ok(()) => {
            let events = sink.finish();
            prop_assert!(events.len() <= input.len());
            if let Err(error) = validate_log(&events) {
                prop_assert!(is_code(error.code()));
            }
        }
        Err(error) => prop_assert!(is_code(error.code), "code {:?}", error.code),
    }
    PARSED
}

#[test]
fn fuzz_ai_sdk_import() {
    fuzz("ai_sdk", |input| check_import(input, import_ai_sdk));
}

#[test]
fn fuzz_host_anthropic_import() {
    fuzz("anthropic", |input| check_import(input, import_anthropic));
}
