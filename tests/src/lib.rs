//! # contextfold-conformance
//!
//! Golden vectors shared by every contextfold runtime (the native core, the wasm component, the
//! npm package), written by a committed, seeded generator so they can be rebuilt and can never
//! drift silently.
//!
//! `tests/vectors/digest.json` holds source-digest vectors (spec: `docs/digest.md`):
//!
//! ```text
//! { "seed", "generator", "version", "spec", "domainPrefix",
//!   "cases": [ { "name", "events": [RuntimeEvent…],
//!                "canonical": [canonical JSON of each event…],
//!                "prefixDigests": [digest of events[..1], events[..2], …],
//!                "digest": digest of all events } ] }
//! ```
//!
//! Regenerate with `cargo run -p contextfold-conformance --bin gen-vectors`; the test
//! `tests/regenerate.rs` fails if the committed file differs from what the seed produces.
//!
//! `tests/vectors/projection.json` (safe-prefix selection, replay decisions, materialized
//! messages, summary validation) and `tests/vectors/compaction.json` (whole compaction
//! transcripts with scripted provider answers) hold behaviour vectors, JSON in and JSON out:
//!
//! ```text
//! { "seed", "generator", "version", "ops": "tests/src/ops.rs",
//!   "cases": [ { "name", "op", "input": {...}, "expected": {...} } ] }
//! ```
//!
//! [`ops::evaluate`] is the native reference for every op; another runtime replays a file by
//! mapping each `op` to its own API and comparing its JSON with `expected`.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod epoch_cases;
mod fixed_cases;
pub mod long_turn;
pub mod ops;
pub mod prng;
mod random_json;
pub mod random_sessions;
mod scenarios;
pub mod trajectories;
pub mod transcript;
pub mod window_cases;

use std::path::PathBuf;

use contextfold_core::RuntimeEvent;
use contextfold_core::digest::{DOMAIN_PREFIX, canonical_event_json, prefix_digests};
use serde_json::{Value, json};

pub use prng::SplitMix64;

/// The seed the committed vectors were generated with.
pub const DEFAULT_SEED: u64 = 20_260_830;

/// Format version of `digest.json`; bump it when its layout changes.
pub const DIGEST_VECTORS_VERSION: u64 = 1;

/// Identifies the program that wrote the vectors.
pub const GENERATOR: &str = "contextfold-conformance gen-vectors (SplitMix64)";

/// How many random sessions follow the fixed cases.
pub const RANDOM_SESSIONS: u64 = 20;

/// Where the digest vectors live: `tests/vectors/digest.json` in this repository.
pub fn digest_vectors_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("vectors").join("digest.json")
}

/// Builds the digest vectors for `seed`: the fixed cases, then [`RANDOM_SESSIONS`] random
/// sessions, each with the canonical JSON of every event and the digest of every prefix.
///
/// Events are stored as JSON and digested as parsed back by [`RuntimeEvent::from_value`], so
/// the digests describe exactly what a reader of the file sees.
pub fn digest_vectors(seed: u64) -> Value {
    let mut prng = SplitMix64::new(seed);
    let mut cases: Vec<Value> = fixed_cases::fixed_cases(&mut prng)
        .into_iter()
        .map(|(name, events)| vector_case(name.to_owned(), events))
        .collect();
    for index in 0..RANDOM_SESSIONS {
        let events = random_sessions::random_session(&mut prng, index)
            .iter()
            .map(|event| serde_json::to_value(event).expect("a RuntimeEvent always serializes"))
            .collect();
        cases.push(vector_case(format!("random_session_{index:02}"), events));
    }
    // Appended after the random sessions so every older case keeps its place in the file.
    cases.push(vector_case("attachments".into(), fixed_cases::attachments()));
    json!({
        "seed": seed,
        "generator": GENERATOR,
        "version": DIGEST_VECTORS_VERSION,
        "spec": "docs/digest.md",
        "domainPrefix": String::from_utf8_lossy(DOMAIN_PREFIX),
        "cases": cases,
    })
}

/// The exact text of the vector file for `vectors`: pretty JSON and a final newline.
pub fn render_vectors(vectors: &Value) -> String {
    let mut text = serde_json::to_string_pretty(vectors).expect("JSON values always serialize");
    text.push('\n');
    text
}

fn vector_case(name: String, events: Vec<Value>) -> Value {
    let parsed: Vec<RuntimeEvent> = events
        .iter()
        .map(|value| {
            RuntimeEvent::from_value(value.clone()).expect("generated events are valid events")
        })
        .collect();
    let canonical: Vec<String> = parsed.iter().map(canonical_event_json).collect();
    let digests = prefix_digests(&parsed);
    let digest =
        digests.last().cloned().unwrap_or_else(|| contextfold_core::digest::digest_prefix(&[]));
    json!({
        "name": name,
        "events": events,
        "canonical": canonical,
        "prefixDigests": digests,
        "digest": digest,
    })
}

/// Format version of the behaviour vector files; bump it when their layout changes.
pub const BEHAVIOUR_VECTORS_VERSION: u64 = 1;

/// Where the projection vectors live: `tests/vectors/projection.json`.
pub fn projection_vectors_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("vectors").join("projection.json")
}

/// Where the compaction transcript vectors live: `tests/vectors/compaction.json`.
pub fn compaction_vectors_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("vectors").join("compaction.json")
}

/// Builds the behaviour vectors for `seed`: (projection vectors, compaction vectors).
pub fn behaviour_vectors(seed: u64) -> (Value, Value) {
    let (projection, compaction) = scenarios::behaviour_cases(seed);
    let file = |cases: Vec<Value>| {
        json!({
            "seed": seed,
            "generator": GENERATOR,
            "version": BEHAVIOUR_VECTORS_VERSION,
            "ops": "tests/src/ops.rs",
            "cases": cases,
        })
    };
    (file(projection), file(compaction))
}
