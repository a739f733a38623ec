//! The malformed-input circuit: an unchanged summarizer input that already produced a
//! malformed summary is not dispatched again.
//!
//! A host keeps one [`MalformedInputCircuit`] per session backend (it is serde-serializable)
//! and, before dispatching a summarizer request, computes the [`InputFingerprint`] of the
//! exact input with [`fingerprint`]. If [`MalformedInputCircuit::is_open`] says the circuit is
//! open for it, compaction fails open with `malformed_summary_circuit_open` and no provider
//! call. After the one repair also failed as malformed, the host records the fingerprint.
//!
//! Callers record ONLY malformed outcomes. Cancellation, provider errors (authentication,
//! billing, rate limit, unavailability, overflow), append failures and successes never arm the
//! circuit; [`MalformedInputCircuit::record_outcome`] enforces that for callers holding a
//! [`ReasonCode`]. Any change to the input (new events, another model, another budget, another
//! previous checkpoint) yields a different fingerprint and is eligible again.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::compaction::summary_request::{SummaryPurpose, SummaryRequest};
use crate::diagnostics::ReasonCode;

/// How many fingerprints one circuit remembers; recording more evicts the oldest.
pub const MALFORMED_CIRCUIT_CAPACITY: usize = 16;

/// Domain separation for the fingerprint encoding.
const FINGERPRINT_DOMAIN: &[u8] = b"contextfold-malformed-input-v1";

/// The shape of the summarizer request, as far as the fingerprint is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestShape {
    /// Initial, rolling or repair.
    pub purpose: SummaryPurpose,
    /// Tool-result payloads replaced by the omission marker.
    pub omitted_tool_results: u64,
    /// Number of messages in the request.
    pub message_count: u64,
}

impl RequestShape {
    /// The shape of a built request.
    pub fn of(request: &SummaryRequest) -> Self {
        Self {
            purpose: request.purpose,
            omitted_tool_results: request.omitted_tool_results,
            message_count: request.messages.len() as u64,
        }
    }
}

/// Everything that identifies one summarizer input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FingerprintInput<'a> {
    /// Connection slug the request goes to.
    pub connection: &'a str,
    /// Model id.
    pub model: &'a str,
    /// Route (e.g. `text_summary`, or the provider API path the host uses).
    pub route: &'a str,
    /// History budget in force (policy).
    pub history_budget: u64,
    /// Input budget the request was sized for.
    pub input_budget: u64,
    /// Request shape.
    pub shape: RequestShape,
    /// Id of the previous checkpoint the rolling input starts from.
    pub previous_checkpoint_id: Option<&'a str>,
    /// `sha256:<hex>` digest of the folded source events
    /// ([`crate::digest::digest_prefix`] of the fold).
    pub folded_source_digest: &'a str,
}

/// A `sha256:<hex>` fingerprint of one exact summarizer input.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct InputFingerprint(String);

impl InputFingerprint {
    /// The `sha256:<hex>` text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn put_bytes(hasher: &mut Sha256, bytes: &[u8]) {
    hasher.update((bytes.len() as u64).to_be_bytes());
    hasher.update(bytes);
}

fn put_u64(hasher: &mut Sha256, value: u64) {
    hasher.update(value.to_be_bytes());
}

/// Fingerprints an input: SHA-256 over the domain tag followed by every field in declaration
/// order, strings as a big-endian u64 byte length then the UTF-8 bytes, numbers as big-endian
/// u64, the purpose as its snake_case name, and the optional checkpoint id as a `0` byte
/// (absent) or a `1` byte and the string. Length prefixes make the encoding unambiguous.
pub fn fingerprint(input: &FingerprintInput<'_>) -> InputFingerprint {
    let mut hasher = Sha256::new();
    put_bytes(&mut hasher, FINGERPRINT_DOMAIN);
    put_bytes(&mut hasher, input.connection.as_bytes());
    put_bytes(&mut hasher, input.model.as_bytes());
    put_bytes(&mut hasher, input.route.as_bytes());
    put_u64(&mut hasher, input.history_budget);
    put_u64(&mut hasher, input.input_budget);
    put_bytes(&mut hasher, input.shape.purpose.as_str().as_bytes());
    put_u64(&mut hasher, input.shape.omitted_tool_results);
    put_u64(&mut hasher, input.shape.message_count);
    match input.previous_checkpoint_id {
        None => hasher.update([0u8]),
        Some(id) => {
            hasher.update([1u8]);
            put_bytes(&mut hasher, id.as_bytes());
        }
    }
    put_bytes(&mut hasher, input.folded_source_digest.as_bytes());
    let digest = hasher.finalize();
    let mut text = String::with_capacity(71);
    text.push_str("sha256:");
    for byte in digest.iter() {
        text.push_str(&format!("{byte:02x}"));
    }
    InputFingerprint(text)
}

/// Whether an outcome with this reason code arms the circuit: only the granular
/// `malformed_summary_*` defects do (not the circuit-open code itself, not an empty summary,
/// not cancellation, provider or append failures).
pub fn arms_circuit(code: ReasonCode) -> bool {
    code != ReasonCode::MalformedSummaryCircuitOpen
        && code.as_str().starts_with("malformed_summary_")
}

/// Up to [`MALFORMED_CIRCUIT_CAPACITY`] fingerprints of inputs that produced malformed
/// summaries, oldest first.
///
/// JSON: `{ "fingerprints": ["sha256:...", ...] }` (no other key), checked on the way in: at
/// most [`MALFORMED_CIRCUIT_CAPACITY`] fingerprints, none twice.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "CircuitWire")]
pub struct MalformedInputCircuit {
    fingerprints: VecDeque<InputFingerprint>,
}

/// The serialized form, checked on the way in.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CircuitWire {
    fingerprints: Vec<InputFingerprint>,
}

impl TryFrom<CircuitWire> for MalformedInputCircuit {
    type Error = CircuitStateError;

    fn try_from(wire: CircuitWire) -> Result<Self, Self::Error> {
        if wire.fingerprints.len() > MALFORMED_CIRCUIT_CAPACITY {
            return Err(CircuitStateError::OverCapacity(wire.fingerprints.len()));
        }
        let mut circuit = MalformedInputCircuit::new();
        for fp in wire.fingerprints {
            if circuit.is_open(&fp) {
                return Err(CircuitStateError::Duplicate);
            }
            circuit.fingerprints.push_back(fp);
        }
        Ok(circuit)
    }
}

/// Why a serialized circuit was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CircuitStateError {
    /// More fingerprints than [`MALFORMED_CIRCUIT_CAPACITY`].
    #[error("circuit holds {0} fingerprints, more than the capacity of 16")]
    OverCapacity(usize),
    /// The same fingerprint appears twice.
    #[error("circuit repeats a fingerprint")]
    Duplicate,
}

impl CircuitStateError {
    /// Stable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            CircuitStateError::OverCapacity(_) => "circuit_over_capacity",
            CircuitStateError::Duplicate => "circuit_duplicate_fingerprint",
        }
    }
}

impl MalformedInputCircuit {
    /// An empty circuit (nothing is open).
    pub fn new() -> Self {
        Self::default()
    }

    /// True when this exact input already produced a malformed summary: do not dispatch it.
    pub fn is_open(&self, fingerprint: &InputFingerprint) -> bool {
        self.fingerprints.contains(fingerprint)
    }

    /// Remembers a malformed input. Recording a remembered fingerprint changes nothing; a 17th
    /// distinct fingerprint evicts the oldest.
    pub fn record_malformed(&mut self, fingerprint: InputFingerprint) {
        if self.is_open(&fingerprint) {
            return;
        }
        if self.fingerprints.len() == MALFORMED_CIRCUIT_CAPACITY {
            self.fingerprints.pop_front();
        }
        self.fingerprints.push_back(fingerprint);
    }

    /// Records `fingerprint` only if `code` [arms the circuit](arms_circuit). Returns whether
    /// it did.
    pub fn record_outcome(&mut self, fingerprint: InputFingerprint, code: ReasonCode) -> bool {
        if !arms_circuit(code) {
            return false;
        }
        self.record_malformed(fingerprint);
        true
    }

    /// Remembers every fingerprint `other` remembers (oldest first), as if recorded here: for
    /// a host that ran two transactions side by side (a background preparation beside a
    /// foreground compaction) on copies of one circuit.
    pub fn merge(&mut self, other: &MalformedInputCircuit) {
        for fingerprint in other.fingerprints() {
            self.record_malformed(fingerprint.clone());
        }
    }

    /// Number of remembered fingerprints.
    pub fn len(&self) -> usize {
        self.fingerprints.len()
    }

    /// True when nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.fingerprints.is_empty()
    }

    /// The remembered fingerprints, oldest first.
    pub fn fingerprints(&self) -> impl Iterator<Item = &InputFingerprint> {
        self.fingerprints.iter()
    }
}
