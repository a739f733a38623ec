//! The malformed-input circuit: fingerprints, FIFO capacity, serde, and what arms it.

use contextfold_core::compaction::{
    FingerprintInput, InputFingerprint, MALFORMED_CIRCUIT_CAPACITY, MalformedInputCircuit,
    RequestShape, SummaryPurpose, arms_circuit, build_summary_request, fingerprint,
};
use contextfold_core::digest::digest_prefix;
use contextfold_core::{CharEstimator, LogBuilder, ReasonCode};

const DIGEST: &str = "sha256:00";

fn base() -> FingerprintInput<'static> {
    FingerprintInput {
        connection: "conn",
        model: "model",
        route: "text_summary",
        history_budget: 32_000,
        input_budget: 30_000,
        shape: RequestShape {
            purpose: SummaryPurpose::Rolling,
            omitted_tool_results: 0,
            message_count: 2,
        },
        previous_checkpoint_id: Some("cp1"),
        folded_source_digest: DIGEST,
    }
}

fn numbered(n: usize) -> InputFingerprint {
    fingerprint(&FingerprintInput { input_budget: n as u64, ..base() })
}

#[test]
fn the_fingerprint_changes_when_any_input_changes() {
    let reference = fingerprint(&base());
    assert_eq!(reference, fingerprint(&base()), "deterministic");
    assert!(reference.as_str().starts_with("sha256:") && reference.as_str().len() == 71);
    let shape = base().shape;
    let variants = [
        FingerprintInput { connection: "conn2", ..base() },
        FingerprintInput { model: "model2", ..base() },
        FingerprintInput { route: "native", ..base() },
        FingerprintInput { history_budget: 32_001, ..base() },
        FingerprintInput { input_budget: 29_999, ..base() },
        FingerprintInput {
            shape: RequestShape { purpose: SummaryPurpose::Repair, ..shape },
            ..base()
        },
        FingerprintInput { shape: RequestShape { omitted_tool_results: 1, ..shape }, ..base() },
        FingerprintInput { shape: RequestShape { message_count: 3, ..shape }, ..base() },
        FingerprintInput { previous_checkpoint_id: None, ..base() },
        FingerprintInput { previous_checkpoint_id: Some("cp2"), ..base() },
        FingerprintInput { previous_checkpoint_id: Some(""), ..base() },
        FingerprintInput { folded_source_digest: "sha256:01", ..base() },
        // Length prefixes: moving bytes between adjacent fields changes the fingerprint.
        FingerprintInput { connection: "con", model: "nmodel", ..base() },
    ];
    let mut seen = std::collections::HashSet::from([reference]);
    for variant in &variants {
        assert!(seen.insert(fingerprint(variant)), "{variant:?} collides");
    }
    let none = FingerprintInput { previous_checkpoint_id: None, ..base() };
    let empty = FingerprintInput { previous_checkpoint_id: Some(""), ..base() };
    assert_ne!(fingerprint(&none), fingerprint(&empty));
}

#[test]
fn new_folded_events_make_an_input_eligible_again() {
    let mut log = LogBuilder::new("s");
    log.user("a").assistant("b");
    let fold = log.events().to_vec();
    let request = build_summary_request(None, &fold, 10_000, &CharEstimator).expect("fits");
    let digest = digest_prefix(&fold);
    let input = FingerprintInput {
        shape: RequestShape::of(&request),
        previous_checkpoint_id: None,
        folded_source_digest: &digest,
        ..base()
    };
    assert_eq!(input.shape.message_count, 2);
    assert_eq!(input.shape.purpose, SummaryPurpose::Initial);
    let mut circuit = MalformedInputCircuit::new();
    circuit.record_malformed(fingerprint(&input));
    assert!(circuit.is_open(&fingerprint(&input)), "unchanged input stays open");
    log.user("c");
    let grown = digest_prefix(log.events());
    let changed = FingerprintInput { folded_source_digest: &grown, ..input };
    assert!(!circuit.is_open(&fingerprint(&changed)));
}

#[test]
fn the_circuit_remembers_sixteen_fingerprints_and_evicts_the_oldest() {
    assert_eq!(MALFORMED_CIRCUIT_CAPACITY, 16);
    let mut circuit = MalformedInputCircuit::new();
    assert!(circuit.is_empty());
    for n in 0..16 {
        circuit.record_malformed(numbered(n));
    }
    assert_eq!(circuit.len(), 16);
    assert!((0..16).all(|n| circuit.is_open(&numbered(n))));
    circuit.record_malformed(numbered(3)); // already remembered: no change, no reorder
    assert_eq!(circuit.len(), 16);
    circuit.record_malformed(numbered(16));
    assert_eq!(circuit.len(), 16);
    assert!(!circuit.is_open(&numbered(0)), "oldest evicted");
    assert!((1..=16).all(|n| circuit.is_open(&numbered(n))));
    circuit.record_malformed(numbered(17));
    assert!(!circuit.is_open(&numbered(1)));
    assert!(circuit.is_open(&numbered(3)), "re-recording did not refresh or duplicate");
    let order: Vec<_> = circuit.fingerprints().cloned().collect();
    assert_eq!(order, (2..=17).map(numbered).collect::<Vec<_>>());
}

#[test]
fn the_circuit_round_trips_through_serde_and_rejects_bad_state() {
    let mut circuit = MalformedInputCircuit::new();
    circuit.record_malformed(numbered(1));
    circuit.record_malformed(numbered(2));
    let json = serde_json::to_string(&circuit).expect("json");
    assert!(json.starts_with("{\"fingerprints\":[\"sha256:"));
    let back: MalformedInputCircuit = serde_json::from_str(&json).expect("parse");
    assert_eq!(back, circuit);
    let many: Vec<_> = (0..17).map(|n| numbered(n).as_str().to_owned()).collect();
    let over = serde_json::json!({ "fingerprints": many });
    assert!(serde_json::from_value::<MalformedInputCircuit>(over).is_err());
    let dup = numbered(1).as_str().to_owned();
    let twice = serde_json::json!({ "fingerprints": [dup.clone(), dup] });
    assert!(serde_json::from_value::<MalformedInputCircuit>(twice).is_err());
}

#[test]
fn only_malformed_summary_outcomes_arm_the_circuit() {
    let armed: Vec<_> = ReasonCode::ALL.iter().copied().filter(|c| arms_circuit(*c)).collect();
    assert_eq!(armed.len(), 8);
    assert!(armed.iter().all(|c| c.as_str().starts_with("malformed_summary_")));
    for code in [
        ReasonCode::Cancelled,
        ReasonCode::EmptySummary,
        ReasonCode::MalformedSummaryCircuitOpen,
        ReasonCode::ProviderRateLimited,
        ReasonCode::ProviderOverflow,
        ReasonCode::AppendFailed,
        ReasonCode::CheckpointRecorded,
    ] {
        let mut circuit = MalformedInputCircuit::new();
        assert!(!circuit.record_outcome(numbered(0), code), "{code}");
        assert!(circuit.is_empty(), "{code} armed the circuit");
    }
    let mut circuit = MalformedInputCircuit::new();
    // Fingerprinting and querying never arm it either.
    let fp = fingerprint(&base());
    assert!(!circuit.is_open(&fp) && circuit.is_empty());
    assert!(circuit.record_outcome(fp.clone(), ReasonCode::MalformedSummaryOpenFence));
    assert!(circuit.is_open(&fp));
}
