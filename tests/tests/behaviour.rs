//! Replays every vector file on the native core and keeps the behaviour vectors honest: they
//! must be exactly what their seed generates. Prints `native: N/N vectors passed`.

use contextfold_conformance::{
    DEFAULT_SEED, behaviour_vectors, compaction_vectors_path, digest_vectors_path, ops,
    projection_vectors_path, render_vectors,
};
use contextfold_core::RuntimeEvent;
use contextfold_core::digest::prefix_digests;
use serde_json::Value;

fn read(path: &std::path::Path) -> (String, Value) {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("read {}: {error}", path.display()));
    let value = serde_json::from_str(&text).expect("vector files are JSON");
    (text, value)
}

#[test]
fn behaviour_vectors_equal_a_fresh_generation_from_their_seed() {
    let (projection, compaction) = behaviour_vectors(DEFAULT_SEED);
    for (path, fresh) in
        [(projection_vectors_path(), projection), (compaction_vectors_path(), compaction)]
    {
        let (text, _) = read(&path);
        assert!(
            render_vectors(&fresh) == text,
            "{} is stale or edited by hand; regenerate it with \
             `cargo run -p contextfold-conformance --bin gen-vectors` and review the diff",
            path.display()
        );
    }
}

#[test]
fn native_core_replays_every_vector() {
    let mut total = 0usize;
    let mut failed = Vec::new();
    let (_, digest) = read(&digest_vectors_path());
    for case in digest["cases"].as_array().expect("cases") {
        total += 1;
        let events: Vec<RuntimeEvent> = case["events"]
            .as_array()
            .expect("events")
            .iter()
            .map(|e| RuntimeEvent::from_value(e.clone()).expect("valid event"))
            .collect();
        if Value::from(prefix_digests(&events)) != case["prefixDigests"] {
            failed.push(format!("digest {}", case["name"]));
        }
    }
    for path in [projection_vectors_path(), compaction_vectors_path()] {
        let (_, file) = read(&path);
        for case in file["cases"].as_array().expect("cases") {
            total += 1;
            let op = case["op"].as_str().expect("op");
            if ops::evaluate(op, &case["input"]) != case["expected"] {
                failed.push(format!("{op} {}", case["name"]));
            }
        }
    }
    println!("native: {}/{total} vectors passed", total - failed.len());
    assert!(total > 200, "only {total} vectors");
    assert!(failed.is_empty(), "native mismatches: {failed:?}");
}

/// The vectors cover every op and the outcomes the issue names, so a runtime that passes them
/// has been checked on more than the happy path.
#[test]
fn behaviour_vectors_cover_ops_and_outcomes() {
    let (_, projection) = read(&projection_vectors_path());
    let (_, compaction) = read(&compaction_vectors_path());
    let cases: Vec<&Value> = projection["cases"]
        .as_array()
        .into_iter()
        .chain(compaction["cases"].as_array())
        .flatten()
        .collect();
    let ops: std::collections::BTreeSet<&str> =
        cases.iter().filter_map(|c| c["op"].as_str()).collect();
    assert_eq!(
        ops.into_iter().collect::<Vec<_>>(),
        ["compaction", "evaluate_replay", "project", "select_safe_prefix", "validate_summary"]
    );
    let outcomes: std::collections::BTreeSet<&str> =
        cases.iter().filter_map(|c| c["expected"]["outcome"]["outcome"].as_str()).collect();
    for outcome in ["recorded", "skipped", "failed_open", "exhausted", "cancelled"] {
        assert!(outcomes.contains(outcome), "no transcript ends {outcome}: {outcomes:?}");
    }
    let v3 = cases.iter().any(|c| c["expected"]["outcome"]["checkpoint"]["schemaVersion"] == 3);
    assert!(v3, "no transcript records a V3 checkpoint");
    let armed = cases
        .iter()
        .any(|c| c["input"]["circuit"]["fingerprints"].as_array().is_some_and(|f| !f.is_empty()));
    assert!(armed, "no transcript starts with an armed malformed-input circuit");
    let rolled =
        cases.iter().any(|c| c["op"] == "compaction" && !c["input"]["checkpoint"].is_null());
    assert!(rolled, "no transcript rolls an existing checkpoint forward");
    assert!(cases.iter().all(|c| c["expected"].get("error").is_none()), "a case errors");
}
