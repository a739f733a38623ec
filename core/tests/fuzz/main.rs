//! Corpus fuzzing of every parser of outside input (`scripts/reliability.sh` runs it in
//! release mode with `CONTEXTFOLD_FUZZ_CASES`; `scripts/fuzz.sh` is the coverage-guided run).

#[path = "../fuzz_support/mod.rs"]
mod fuzz_support;

mod fuzz_corpus;
mod fuzz_parsers;
mod fuzz_session_files;
