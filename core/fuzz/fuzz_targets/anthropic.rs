//! Anthropic Messages import (`import_anthropic`).
#![no_main]

use contextfold_core::projection::{ImportContext, import_anthropic};
use contextfold_fuzz::{assert_code, check_imported, json_of};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some(document) = json_of(input) else { return };
    match import_anthropic(&document, &ImportContext::new("s")) {
        Ok(events) => check_imported("anthropic", input, &events),
        Err(error) => assert_code("anthropic", error.code()),
    }
});
