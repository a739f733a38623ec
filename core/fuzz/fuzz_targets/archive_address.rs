//! Archive addresses (`ArchiveAddress::parse`): whatever parses round-trips through its URI.
#![no_main]

use contextfold_core::projection::ArchiveAddress;
use contextfold_fuzz::{assert_code, text};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let uri = text(input);
    match ArchiveAddress::parse(uri.trim()) {
        Ok(address) => {
            let again = ArchiveAddress::parse(&address.to_uri());
            assert_eq!(again.as_ref(), Ok(&address), "an archive address does not round-trip");
        }
        Err(error) => assert_code("archive_address", error.code()),
    }
});
