//! A corpus-driven, proptest-based fuzzer that runs on the stable toolchain (the
//! coverage-guided one is cargo-fuzz in `core/fuzz/`): committed seed files
//! (`core/tests/fuzz-corpus/<target>/`) are mutated byte-wise (truncation, bit flips,
//! insertions of JSON tokens and random bytes, deletions, duplications, splices with other
//! seeds) and fed to a target. Each target counts its executions, the inputs that reached the
//! parser under test (a check answers [`Reach::Parsed`]), apart from the inputs its own filter
//! turned away before the call ([`Reach::Filtered`]: not JSON where the parser takes a parsed
//! document, not the shape the parser's argument needs), and prints
//! `FUZZ-EXECUTIONS target=<name> executions=<n> filtered=<m>`.
#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

mod structural;

/// The corpus directory (`core/tests/fuzz-corpus`).
pub fn corpus_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/tests/fuzz-corpus")
}

/// The seeds of `target`, in file-name order.
pub fn load_corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = corpus_root().join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus {}: {e}", dir.display()))
        .map(|entry| entry.expect("entry").path())
        .collect();
    files.sort();
    let seeds: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).expect("seed")).collect();
    assert!(!seeds.is_empty(), "no seeds for {target}");
    seeds
}

/// Fuzz executions per target: `CONTEXTFOLD_FUZZ_CASES`, default 512.
pub fn fuzz_cases() -> u32 {
    std::env::var("CONTEXTFOLD_FUZZ_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(512)
}

#[derive(Debug, Clone)]
enum Mutation {
    Truncate(usize),
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Duplicate(usize, usize),
    Splice(usize, usize, usize),
}

const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    ",",
    ":",
    "null",
    "true",
    "-0",
    "1e999",
    "18446744073709551616",
    "\\u0000",
    "\\ud800",
    "\u{feff}",
    "\n",
    "```",
    "## Goal\n",
    "contextfold://archive/",
    "%2F",
    "{\"type\":\"compaction\"}",
    "\"schemaVersion\":3",
    "\"role\":\"tool\"",
    "\u{10ffff}",
];

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Mutation::Flip(p, b)),
        (any::<usize>(), prop::sample::select(TOKENS).prop_map(|t| t.as_bytes().to_vec()))
            .prop_map(|(p, t)| Mutation::Insert(p, t)),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(p, b)| Mutation::Insert(p, b)),
        (any::<usize>(), 1usize..64).prop_map(|(p, n)| Mutation::Delete(p, n)),
        (any::<usize>(), 1usize..256).prop_map(|(p, n)| Mutation::Duplicate(p, n)),
        (any::<usize>(), any::<usize>(), any::<usize>())
            .prop_map(|(s, p, n)| Mutation::Splice(s, p, n)),
    ]
}

fn apply(mut input: Vec<u8>, mutations: &[Mutation], corpus: &[Vec<u8>]) -> Vec<u8> {
    for m in mutations {
        let len = input.len();
        let at = |p: usize| if len == 0 { 0 } else { p % (len + 1) };
        match m {
            Mutation::Truncate(p) => input.truncate(at(*p)),
            Mutation::Flip(p, b) if len > 0 => input[p % len] ^= b | 1,
            Mutation::Flip(..) => {}
            Mutation::Insert(p, bytes) => {
                let p = at(*p);
                input.splice(p..p, bytes.iter().copied());
            }
            Mutation::Delete(p, n) => {
                let p = at(*p);
                let end = (p + n).min(len);
                input.drain(p..end);
            }
            Mutation::Duplicate(p, n) => {
                let p = at(*p);
                let end = (p + n).min(len);
                let copy = input[p..end].to_vec();
                input.splice(end..end, copy);
            }
            Mutation::Splice(s, p, n) => {
                let other = &corpus[s % corpus.len()];
                let from = if other.is_empty() { 0 } else { p % other.len() };
                let end = (from + n % 512).min(other.len());
                let here = at(*p);
                input.splice(here..here, other[from..end].iter().copied());
            }
        }
        input.truncate(1 << 20);
    }
    input
}

/// Whether one input reached the parser under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The parser was called on the input (whatever it answered): one execution.
    Parsed,
    /// The check's own filter turned the input away before any parser call.
    Filtered,
}

/// The result of a check whose parser was called and whose properties held.
pub const PARSED: Result<Reach, TestCaseError> = Ok(Reach::Parsed);
/// The result of a check that turned its input away before the parser.
pub const FILTERED: Result<Reach, TestCaseError> = Ok(Reach::Filtered);

/// Executions and filtered inputs of one target.
#[derive(Debug, Default)]
struct Counts {
    executions: AtomicU64,
    filtered: AtomicU64,
}

impl Counts {
    fn count(&self, reach: Reach) {
        let counter = match reach {
            Reach::Parsed => &self.executions,
            Reach::Filtered => &self.filtered,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs `check` on mutated seeds of `target` (and on every seed unmutated first); panics
/// with the minimal failing input. Returns the executions (inputs that reached the parser).
pub fn fuzz(target: &str, check: impl Fn(&[u8]) -> Result<Reach, TestCaseError>) -> u64 {
    fuzz_seeds(target, load_corpus(target), check)
}

/// [`fuzz`] over the given seeds instead of the committed corpus of `target`.
pub fn fuzz_seeds(
    target: &str,
    corpus: Vec<Vec<u8>>,
    check: impl Fn(&[u8]) -> Result<Reach, TestCaseError>,
) -> u64 {
    assert!(!corpus.is_empty(), "no seeds for {target}");
    let counts = Counts::default();
    for seed in &corpus {
        let reach =
            check(seed).unwrap_or_else(|e| panic!("{target}: an unmutated seed fails: {e}"));
        counts.count(reach);
    }
    let mut runner = TestRunner::new(Config {
        cases: fuzz_cases(),
        failure_persistence: None,
        ..Config::default()
    });
    // Half the cases edit the seed's JSON tree (valid JSON of a wrong shape: the parser runs),
    // half mutate its bytes (and any case whose seed is not JSON).
    let strategy = (
        0..corpus.len(),
        prop::collection::vec(mutation(), 1..6),
        prop::collection::vec(structural::edit(), 1..4),
        any::<bool>(),
    );
    let result = runner.run(&strategy, |(seed, mutations, edits, tree)| {
        let input = tree
            .then(|| structural::apply_edits(&corpus[seed], &edits, &corpus))
            .flatten()
            .unwrap_or_else(|| apply(corpus[seed].clone(), &mutations, &corpus));
        counts.count(check(&input)?);
        Ok(())
    });
    if let Err(error) = result {
        panic!("{target}: {error}");
    }
    let n = counts.executions.load(Ordering::Relaxed);
    let filtered = counts.filtered.load(Ordering::Relaxed);
    eprintln!("FUZZ-EXECUTIONS target={target} executions={n} filtered={filtered}");
    n
}

/// Whether `code` is a stable snake_case reason code.
pub fn is_code(code: &str) -> bool {
    !code.is_empty()
        && code.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}
