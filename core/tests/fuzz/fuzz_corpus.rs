//! Corpus-driven fuzzing of every parser that takes outside input (see `fuzz_support`):
//! RuntimeEvent JSON and JSON Lines (with log validation), checkpoint JSON (V2 and V3),
//! OpenAI Chat and Anthropic imports, summary validation, Codex native output admission,
//! archive addresses and `archive_read` requests. Properties: no panic; every rejection is a
//! typed error with a stable snake_case code; whatever parses round-trips unchanged; imports
//! produce no more events than the input has bytes (no amplification). Inputs a target's filter
//! turns away before its parser (not JSON where the parser takes a document) count as
//! `filtered`, not as executions. The seeds are in
//! `core/tests/fuzz-corpus/`, written by the ignored `write_corpus_seeds` generator.

use crate::fuzz_support;

use contextfold_core::compaction::{
    FinishReason, NativeBinding, accept_native_output, validate_summary,
};
use contextfold_core::event::validate_log;
use contextfold_core::projection::{
    ArchiveAddress, ArchiveReadRequest, ImportContext, import_anthropic, import_openai_chat,
    read_archive_slice,
};
use contextfold_core::{CharEstimator, HistoryCompactCheckpoint, RuntimeEvent};
use fuzz_support::{FILTERED, PARSED, fuzz, is_code};
use proptest::prelude::*;
use serde_json::Value;

fn text(input: &[u8]) -> String {
    String::from_utf8_lossy(input).into_owned()
}

#[test]
fn fuzz_events_jsonl() {
    fuzz("events_jsonl", |input| {
        match RuntimeEvent::parse_jsonl(&text(input)) {
            Ok(events) => {
                prop_assert!(events.len() <= input.len());
                for event in &events {
                    let again =
                        RuntimeEvent::from_value(serde_json::to_value(event).expect("serializes"));
                    prop_assert_eq!(again.as_ref(), Ok(event));
                }
                if let Err(error) = validate_log(&events) {
                    prop_assert!(is_code(error.code()));
                }
            }
            Err(error) => prop_assert!(is_code(error.source.code())),
        }
        PARSED
    });
}

#[test]
fn fuzz_checkpoints() {
    fuzz("checkpoint", |input| {
        match HistoryCompactCheckpoint::from_json(&text(input)) {
            Ok(checkpoint) => {
                let again = HistoryCompactCheckpoint::from_json(&checkpoint.to_json());
                prop_assert_eq!(again, Ok(checkpoint));
            }
            Err(error) => prop_assert!(is_code(error.code())),
        }
        PARSED
    });
}

fn json_of(input: &[u8]) -> Option<Value> {
    serde_json::from_slice(input).ok()
}

#[test]
fn fuzz_openai_chat_import() {
    fuzz("openai_chat", |input| {
        let Some(document) = json_of(input) else { return FILTERED };
        match import_openai_chat(&document, &ImportContext::new("s")) {
            Ok(events) => {
                prop_assert!(events.len() <= input.len());
                if let Err(error) = validate_log(&events) {
                    prop_assert!(is_code(error.code()));
                }
            }
            Err(error) => prop_assert!(is_code(error.code())),
        }
        PARSED
    });
}

#[test]
fn fuzz_anthropic_import() {
    fuzz("anthropic", |input| {
        let Some(document) = json_of(input) else { return FILTERED };
        match import_anthropic(&document, &ImportContext::new("s")) {
            Ok(events) => prop_assert!(events.len() <= input.len()),
            Err(error) => prop_assert!(is_code(error.code())),
        }
        PARSED
    });
}

#[test]
fn fuzz_summary_validation() {
    fuzz("summary", |input| {
        let summary = text(input);
        for (finish, fold) in
            [(FinishReason::Stop, 100), (FinishReason::Stop, 20_000), (FinishReason::Length, 100)]
        {
            let stop = finish == FinishReason::Stop;
            match validate_summary(&summary, finish, fold, &CharEstimator) {
                Ok(_) => prop_assert!(stop && !summary.trim().is_empty()),
                Err(defect) => prop_assert!(is_code(defect.code().as_str())),
            }
        }
        PARSED
    });
}

#[test]
fn fuzz_native_output() {
    fuzz("native_output", |input| {
        let Some(Value::Array(items)) = json_of(input) else { return FILTERED };
        let binding = NativeBinding { connection_slug: "c".into(), model_id: "m".into() };
        if let Err(defect) = accept_native_output(&items, &binding) {
            prop_assert!(is_code(defect.code()));
        }
        PARSED
    });
}

#[test]
fn fuzz_archive_addresses() {
    fuzz("archive_address", |input| {
        let uri = text(input);
        match ArchiveAddress::parse(uri.trim()) {
            Ok(address) => {
                let again = ArchiveAddress::parse(&address.to_uri());
                prop_assert_eq!(again.as_ref(), Ok(&address));
            }
            Err(error) => prop_assert!(is_code(error.code())),
        }
        PARSED
    });
}

#[test]
fn fuzz_archive_read_requests() {
    fuzz("archive_read", |input| {
        // Not JSON at all: the request parser is never reached. JSON of the wrong shape is
        // refused by the request's own deserializer, which is the parser under test.
        if json_of(input).is_none() {
            return FILTERED;
        }
        let Ok(request) = serde_json::from_slice::<ArchiveReadRequest>(input) else {
            return PARSED;
        };
        let body = b"fn main() {}\nerror[E0425]: cannot find value\n".repeat(4);
        match read_archive_slice(&request, "s", &body) {
            Ok(slice) => {
                let size = serde_json::to_string(&slice).expect("serializes").len();
                prop_assert!(size <= body.len() * 8 + 4_096, "slice larger than its body");
            }
            Err(error) => prop_assert!(is_code(error.code())),
        }
        PARSED
    });
}

/// Writes the committed seed files from valid documents built by the core (run with
/// `cargo test -p contextfold-core --test fuzz_corpus -- --ignored write_corpus_seeds`).
#[test]
#[ignore = "generator of the committed corpus seeds"]
fn write_corpus_seeds() {
    seeds::write_all();
}

#[path = "../fuzz_support/seeds.rs"]
mod seeds;
