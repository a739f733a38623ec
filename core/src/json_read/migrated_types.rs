//! The model facts, provider identity, malformed-input circuit and recorded checkpoint events
//! read by hand against copies of the derives they replaced: every field left out or given each of a dozen values (and an
//! unknown key added): the same accepted and built, the same refused; what is accepted is
//! written back and read again unchanged.

use serde::Deserialize;
use serde_json::{Value, json};

use super::test_support::{sample_values, variants};
use crate::budget::ModelFacts;
use crate::compaction::circuit::MalformedInputCircuit;
use crate::compaction::native::ProviderIdentity;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct DerivedFacts {
    #[serde(default)]
    context_window: Option<u64>,
    #[serde(default)]
    fixed_overhead_tokens: u64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct DerivedIdentity {
    provider: String,
    connection_slug: String,
    model_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
struct DerivedCircuit {
    fingerprints: Vec<String>,
}

/// Compares `ours` with the derive over every variant of `base`; returns how many were accepted.
fn compare<T: PartialEq + std::fmt::Debug, D: serde::de::DeserializeOwned + std::fmt::Debug>(
    base: Value,
    ours: fn(&Value) -> Result<T, super::JsonReadError>,
    write: fn(&T) -> Value,
    rule: fn(&D) -> bool,
) -> usize {
    let mut accepted = 0;
    for case in variants(&base, &sample_values(&["sha256:a"])) {
        let mine = ours(&case);
        let derived: Result<D, _> = serde_json::from_value(case.clone());
        let derived_ok = derived.as_ref().is_ok_and(rule);
        if case.is_array() {
            continue;
        }
        assert_eq!(mine.is_ok(), derived_ok, "{case}: {mine:?} / {derived:?}");
        if let Ok(value) = mine {
            assert_eq!(ours(&write(&value)).as_ref(), Ok(&value), "{case} written back");
            accepted += 1;
        }
    }
    accepted
}

#[test]
fn model_facts_read_as_the_derive_read_them() {
    let base = json!({ "contextWindow": 8000, "fixedOverheadTokens": 300 });
    let accepted =
        compare::<_, DerivedFacts>(base, ModelFacts::from_json, ModelFacts::to_json, |_| true);
    assert!(accepted >= 8, "{accepted}");
    assert_eq!(ModelFacts::default().to_json(), json!({}));
}

#[test]
fn provider_identities_read_as_the_derive_read_them() {
    let base = json!({ "provider": "openai", "connectionSlug": "c", "modelId": "m" });
    let accepted = compare::<_, DerivedIdentity>(
        base,
        ProviderIdentity::from_json,
        ProviderIdentity::to_json,
        |_| true,
    );
    assert!(accepted >= 4, "{accepted}");
}

#[test]
fn circuits_read_as_the_derive_and_its_checks_read_them() {
    let unique = |d: &DerivedCircuit| {
        let mut seen = d.fingerprints.clone();
        seen.sort();
        seen.dedup();
        seen.len() == d.fingerprints.len() && d.fingerprints.len() <= 16
    };
    let base = json!({ "fingerprints": ["sha256:a", "sha256:b"] });
    let accepted = compare::<_, DerivedCircuit>(
        base,
        MalformedInputCircuit::from_json,
        MalformedInputCircuit::to_json,
        unique,
    );
    assert!(accepted >= 2, "{accepted}");
    let full: Vec<String> = (0..17).map(|i| format!("sha256:{i}")).collect();
    let error = MalformedInputCircuit::from_json(&json!({ "fingerprints": full })).unwrap_err();
    assert_eq!(error.0, "circuit holds 17 fingerprints, more than the capacity of 16");
    let twice = json!({ "fingerprints": ["sha256:a", "sha256:a"] });
    assert_eq!(
        MalformedInputCircuit::from_json(&twice).unwrap_err().0,
        "circuit repeats a fingerprint"
    );
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct DerivedRecord {
    event_id: String,
    session_id: String,
    recorded_at_ms: u64,
    payload: Value,
}

#[test]
fn recorded_checkpoint_events_read_as_the_derive_read_them() {
    use crate::recovery::RecordedCheckpointEvent;
    let base = json!({ "eventId": "e", "sessionId": "s", "recordedAtMs": 5, "payload": {"a": 1} });
    let write = |record: &RecordedCheckpointEvent| serde_json::to_value(record).expect("writes");
    let accepted =
        compare::<_, DerivedRecord>(base, RecordedCheckpointEvent::from_json, write, |_| true);
    assert!(accepted >= 10, "{accepted}");
}
