//! Admission of a provider's native compaction output (`accept_native_output`).
#![no_main]

use contextfold_core::compaction::{NativeBinding, accept_native_output};
use contextfold_fuzz::{assert_code, json_of};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|input: &[u8]| {
    let Some(Value::Array(items)) = json_of(input) else { return };
    let binding = NativeBinding { connection_slug: "c".into(), model_id: "m".into() };
    if let Err(defect) = accept_native_output(&items, &binding) {
        assert_code("native_output", defect.code());
    }
});
