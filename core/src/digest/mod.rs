//! Source digest: SHA-256 over the canonical serialization of an ordered event prefix.
//!
//! PLACEHOLDER implementation (to be replaced by the canonical, streaming one described in
//! `docs/digest.md`). The public API below is stable.

use sha2::{Digest, Sha256};

use crate::event::RuntimeEvent;

/// Prefix written before the first event (domain separation).
pub const DOMAIN_PREFIX: &[u8] = b"contextfold-source-v1\n";

/// Incremental hasher over an ordered prefix: push events in order, then finish.
#[derive(Debug, Clone)]
pub struct PrefixHasher {
    hasher: Sha256,
    event_count: u64,
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
        Self { hasher, event_count: 0 }
    }

    /// Appends one event.
    pub fn push(&mut self, event: &RuntimeEvent) {
        let bytes = serde_json::to_vec(event).unwrap_or_default();
        self.hasher.update(&bytes);
        self.hasher.update(b"\n");
        self.event_count += 1;
    }

    /// Number of events pushed so far.
    pub fn event_count(&self) -> u64 {
        self.event_count
    }

    /// The `sha256:<hex>` digest of the prefix pushed so far (the hasher stays usable).
    pub fn digest(&self) -> String {
        let out = self.hasher.clone().finalize();
        let mut text = String::with_capacity(71);
        text.push_str("sha256:");
        for byte in out.iter() {
            text.push_str(&format!("{byte:02x}"));
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
