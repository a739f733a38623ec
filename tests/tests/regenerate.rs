//! Keeps `tests/vectors/digest.json` honest: it must be exactly what its seed generates, and
//! every digest in it must also come out of the generic (non-streaming) canonicalization.

use contextfold_conformance::{
    DEFAULT_SEED, DIGEST_VECTORS_VERSION, RANDOM_SESSIONS, digest_vectors, digest_vectors_path,
    render_vectors,
};
use contextfold_core::RuntimeEvent;
use contextfold_core::digest::{DOMAIN_PREFIX, canonical_json};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn committed_text() -> String {
    let path = digest_vectors_path();
    std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("read {}: {error}", path.display()))
}

fn committed() -> Value {
    serde_json::from_str(&committed_text()).expect("the vector file is JSON")
}

fn cases(vectors: &Value) -> &Vec<Value> {
    vectors["cases"].as_array().expect("cases is an array")
}

#[test]
fn committed_vectors_equal_a_fresh_generation_from_their_seed() {
    let text = committed_text();
    let seed = committed()["seed"].as_u64().expect("seed is an integer");
    assert_eq!(seed, DEFAULT_SEED, "the committed file uses the default seed");
    let regenerated = render_vectors(&digest_vectors(seed));
    assert!(
        regenerated == text,
        "tests/vectors/digest.json is stale or edited by hand; regenerate it with \
         `cargo run -p contextfold-conformance --bin gen-vectors` and review the diff"
    );
}

#[test]
fn generation_is_deterministic_and_depends_on_the_seed() {
    assert_eq!(digest_vectors(7), digest_vectors(7));
    assert_ne!(digest_vectors(7)["cases"], digest_vectors(8)["cases"]);
}

/// Digests recomputed without the streaming hasher: `canonical_json(to_value(event))` for each
/// parsed event, concatenated after the domain prefix and hashed with sha2 in one call.
#[test]
fn every_digest_matches_the_generic_canonicalization() {
    let vectors = committed();
    for case in cases(&vectors) {
        let name = case["name"].as_str().expect("name");
        let events = case["events"].as_array().expect("events");
        let expected_prefixes = case["prefixDigests"].as_array().expect("prefixDigests");
        assert_eq!(expected_prefixes.len(), events.len(), "{name}");
        let mut bytes = DOMAIN_PREFIX.to_vec();
        for (index, event) in events.iter().enumerate() {
            let parsed = RuntimeEvent::from_value(event.clone())
                .unwrap_or_else(|error| panic!("{name}[{index}]: {error}"));
            let generic = canonical_json(&serde_json::to_value(&parsed).expect("to_value"));
            assert_eq!(case["canonical"][index], generic.as_str(), "{name}[{index}] canonical");
            bytes.extend_from_slice(generic.as_bytes());
            bytes.push(b'\n');
            let hex: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(expected_prefixes[index], format!("sha256:{hex}"), "{name}[{index}]");
        }
        assert_eq!(case["digest"], expected_prefixes[events.len() - 1], "{name}");
    }
}

#[test]
fn vectors_cover_the_required_cases_and_stay_small() {
    let text = committed_text();
    assert!(text.len() < 2 * 1024 * 1024, "digest.json is {} bytes", text.len());
    let vectors = committed();
    assert_eq!(vectors["version"], DIGEST_VECTORS_VERSION);
    let names: Vec<&str> = cases(&vectors).iter().filter_map(|c| c["name"].as_str()).collect();
    for required in [
        "every_kind",
        "unicode",
        "numbers",
        "empty_fields",
        "escapes_and_controls",
        "flags_and_optionals",
        "explicit_defaults",
        "large_tool_output",
        "attachments",
    ] {
        assert!(names.contains(&required), "missing case {required}");
    }
    let random = names.iter().filter(|name| name.starts_with("random_session_")).count();
    assert_eq!(random as u64, RANDOM_SESSIONS);
    let kinds: std::collections::BTreeSet<&str> = cases(&vectors)
        .iter()
        .flat_map(|case| case["events"].as_array().into_iter().flatten())
        .filter_map(|event| event["content"]["type"].as_str())
        .collect();
    assert_eq!(kinds.len(), contextfold_core::event::EVENT_KINDS.len(), "{kinds:?}");
    let large = cases(&vectors).iter().find(|c| c["name"] == "large_tool_output");
    let largest_output = large
        .and_then(|case| case["events"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|event| event["content"]["output"].as_str())
        .map(str::len)
        .max();
    assert!(largest_output.is_some_and(|len| len >= 200_000), "{largest_output:?}");
}

/// `tests/python/check_digest_vectors.py` implements `docs/digest.md` from scratch (Python
/// standard library only) and must reproduce every canonical line and digest in the file.
#[test]
fn an_independent_python_implementation_reproduces_every_vector() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/python/check_digest_vectors.py");
    let output = std::process::Command::new("python3")
        .arg(script)
        .arg(digest_vectors_path())
        .output()
        .expect("python3 runs (it is already required by scripts/wasm_imports.py)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains(" 0 mismatches"), "{stdout}");
}
