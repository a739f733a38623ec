//! Replays the shared golden vectors (`tests/vectors/digest.json`, written by the seeded
//! generator in the `contextfold-conformance` crate) against the streaming digest.

use contextfold_core::RuntimeEvent;
use contextfold_core::digest::{PrefixHasher, canonical_event_json, digest_prefix, prefix_digests};
use serde_json::Value;

fn vectors() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/vectors/digest.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| panic!("read {path}: {error}"));
    serde_json::from_str(&text).expect("the vector file is JSON")
}

#[test]
fn every_prefix_digest_in_the_golden_vectors_matches() {
    let vectors = vectors();
    assert_eq!(vectors["version"], 1);
    let cases = vectors["cases"].as_array().expect("cases is an array");
    assert!(cases.len() >= 28, "expected the fixed and random cases, got {}", cases.len());
    let mut checked = 0;
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let events: Vec<RuntimeEvent> = case["events"]
            .as_array()
            .expect("events")
            .iter()
            .enumerate()
            .map(|(index, value)| {
                RuntimeEvent::from_value(value.clone())
                    .unwrap_or_else(|error| panic!("{name}[{index}] does not parse: {error}"))
            })
            .collect();
        let expected: Vec<&str> = case["prefixDigests"]
            .as_array()
            .expect("prefixDigests")
            .iter()
            .map(|digest| digest.as_str().expect("a digest string"))
            .collect();
        assert_eq!(prefix_digests(&events), expected, "{name}: prefix digests");
        assert_eq!(digest_prefix(&events), case["digest"].as_str().expect("digest"), "{name}");
        let mut hasher = PrefixHasher::new();
        for (index, event) in events.iter().enumerate() {
            assert_eq!(canonical_event_json(event), case["canonical"][index], "{name}[{index}]");
            hasher.push(event);
            assert_eq!(hasher.digest(), expected[index], "{name}[{index}]: incremental");
        }
        assert_eq!(hasher.event_count(), events.len() as u64);
        checked += events.len();
    }
    assert!(checked > 300, "only {checked} events checked");
}

/// The vectors are read exactly: a one-character change to any event changes its digest.
#[test]
fn a_changed_event_no_longer_matches_its_vector() {
    let vectors = vectors();
    let case = &vectors["cases"][0];
    let mut event = case["events"][0].clone();
    let text = event["content"]["text"].as_str().unwrap_or_default().to_owned();
    event["content"]["text"] = Value::String(format!("{text}!"));
    let changed = RuntimeEvent::from_value(event).expect("still a valid event");
    assert_ne!(digest_prefix(&[changed]), case["prefixDigests"][0].as_str().expect("digest"));
}
