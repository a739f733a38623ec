//! OpenAI Chat Completions message import (`import_openai_chat`).
#![no_main]

use contextfold_core::projection::{ImportContext, import_openai_chat};
use contextfold_fuzz::{assert_code, check_imported, json_of};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some(document) = json_of(input) else { return };
    match import_openai_chat(&document, &ImportContext::new("s")) {
        Ok(events) => check_imported("openai_chat", input, &events),
        Err(error) => assert_code("openai_chat", error.code()),
    }
});
