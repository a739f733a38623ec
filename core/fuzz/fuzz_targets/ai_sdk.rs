//! AI SDK `ModelMessage[]` import (`import_model_messages`), the core of the CLI's and the npm
//! package's `ai-sdk` format.
#![no_main]

use contextfold_core::projection::{ImportContext, import_model_messages};
use contextfold_fuzz::{assert_code, check_imported, json_of};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some(document) = json_of(input) else { return };
    match import_model_messages(&document, &ImportContext::new("s")) {
        Ok(events) => check_imported("ai_sdk", input, &events),
        Err(error) => assert_code("ai_sdk", error.code()),
    }
});
