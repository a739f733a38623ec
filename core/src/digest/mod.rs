//! Source digest: SHA-256 over the canonical serialization of an ordered event prefix.
//!
//! The digest of `events[..n]` is `sha256:` followed by the lowercase hex SHA-256 of
//!
//! ```text
//! DOMAIN_PREFIX || canonical(events[0]) || "\n" || … || canonical(events[n-1]) || "\n"
//! ```
//!
//! where `canonical(e)` is RFC 8785 (JCS) applied to the event's serde JSON form, with every
//! number taken as an IEEE-754 double. `docs/digest.md` is the full, language-neutral spec.
//!
//! Hashing streams: [`PrefixHasher::push`] writes the event's known fields directly in their
//! sorted order, canonicalizes only the free-form JSON values, and feeds SHA-256 through a fixed
//! 16 KiB buffer (`hash_sink`), escaping strings sixteen bytes at a time. Neither the prefix nor a `serde_json::Value` of an event is ever built.
//! [`canonical_json`] is the independent generic path used to check it.

mod event_writer;
mod hash_sink;
mod jcs;
mod reference;

#[cfg(all(test, not(target_arch = "wasm32")))]
mod property_tests;
#[cfg(test)]
mod tests;

use sha2::{Digest, Sha256};

use crate::event::RuntimeEvent;
use hash_sink::{HashBuffer, HashSink};
use jcs::CanonicalSink;

pub use reference::canonical_json;

/// Prefix written before the first event (domain separation).
pub const DOMAIN_PREFIX: &[u8] = b"contextfold-source-v1\n";

/// Incremental hasher over an ordered prefix: push events in order, then finish.
#[derive(Clone)]
pub struct PrefixHasher {
    hasher: Sha256,
    /// Canonical bytes not yet handed to `hasher`.
    pending: HashBuffer,
    event_count: u64,
}

impl std::fmt::Debug for PrefixHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrefixHasher")
            .field("event_count", &self.event_count)
            .field("pending_bytes", &self.pending.pending().len())
            .finish()
    }
}

impl Default for PrefixHasher {
    fn default() -> Self {
        Self::new()
    }
}

impl PrefixHasher {
    /// A hasher over the empty prefix.
    pub fn new() -> Self {
        let mut hasher = Sha256::new();
        hasher.update(DOMAIN_PREFIX);
        Self { hasher, pending: HashBuffer::new(), event_count: 0 }
    }

    /// Appends one event: its canonical JSON and one `\n` byte.
    pub fn push(&mut self, event: &RuntimeEvent) {
        let mut sink = HashSink { hasher: &mut self.hasher, buffer: &mut self.pending };
        event_writer::write_event(&mut sink, event);
        sink.write_str("\n");
        self.event_count += 1;
    }

    /// Number of events pushed so far.
    pub fn event_count(&self) -> u64 {
        self.event_count
    }

    /// The `sha256:<hex>` digest of the prefix pushed so far (the hasher stays usable).
    pub fn digest(&self) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut hasher = self.hasher.clone();
        hasher.update(self.pending.pending());
        let out = hasher.finalize();
        let mut text = String::with_capacity(7 + 2 * out.len());
        text.push_str("sha256:");
        for byte in out.iter() {
            text.push(char::from(HEX[usize::from(byte >> 4)]));
            text.push(char::from(HEX[usize::from(byte & 0x0f)]));
        }
        text
    }
}

/// The `sha256:<hex>` digest of `events` (the whole slice is the prefix).
pub fn digest_prefix(events: &[RuntimeEvent]) -> String {
    let mut hasher = PrefixHasher::new();
    for event in events {
        hasher.push(event);
    }
    hasher.digest()
}

/// The digests of every non-empty prefix of `events`: element `i` is the digest of
/// `events[..=i]`. Computed in one pass.
pub fn prefix_digests(events: &[RuntimeEvent]) -> Vec<String> {
    let mut hasher = PrefixHasher::new();
    events
        .iter()
        .map(|event| {
            hasher.push(event);
            hasher.digest()
        })
        .collect()
}

/// The canonical JSON of one event: exactly the bytes [`PrefixHasher::push`] hashes for it,
/// without the trailing `\n`. For tests and for debugging other runtimes' digests.
///
/// It equals [`canonical_json`] of `serde_json::to_value(event)`, except that a reasoning
/// `providerData` of `null` is omitted (it parses back as absent, and the digest of an event
/// must equal the digest of its JSON round trip).
pub fn canonical_event_json(event: &RuntimeEvent) -> String {
    let mut out = String::new();
    event_writer::write_event(&mut out, event);
    out
}
