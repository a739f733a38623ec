//! `archive_read` requests (`read_archive_slice`) against a small archived body: the slice
//! stays bounded by its body whatever offsets, lengths and patterns the request claims.
#![no_main]

use contextfold_core::projection::{ArchiveReadRequest, read_archive_slice};
use contextfold_fuzz::assert_code;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Ok(request) = serde_json::from_slice::<ArchiveReadRequest>(input) else { return };
    let body = b"fn main() {}\nerror[E0425]: cannot find value\n".repeat(4);
    match read_archive_slice(&request, "s", &body) {
        Ok(slice) => {
            let size = serde_json::to_string(&slice).expect("a slice serializes").len();
            assert!(size <= body.len() * 8 + 4_096, "a slice of {size} bytes from a small body");
        }
        Err(error) => assert_code("archive_read", error.code()),
    }
});
