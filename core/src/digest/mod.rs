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
//! 16 KiB buffer (`hash_sink`), escaping strings thirty-two bytes at a time. Neither the prefix nor a `serde_json::Value` of an event is ever built.
//! [`canonical_json`] is the independent generic path used to check it.
//!
//! The SHA-256 implementation is pluggable ([`HashEngine`]): `sha2`'s by default, or one the
//! embedder provides (the npm package hands the 16 KiB chunks to Node's `crypto`, which uses the
//! CPU's SHA instructions where WebAssembly cannot). The bytes hashed never depend on it.

mod event_writer;
mod hash_sink;
pub(crate) mod jcs;
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

/// A SHA-256 implementation fed by [`PrefixHasher`]: the canonical bytes arrive in order, in
/// chunks of about 16 KiB (one per filled buffer; the domain prefix and a digest's pending tail
/// come as single smaller calls).
///
/// `Default` is the state over no bytes; `Clone` copies the state (a digest of a prefix is taken
/// from a clone, so the hasher can go on). Every engine must compute plain SHA-256: the
/// conformance vectors fix the digests.
pub trait HashEngine: Clone + Default {
    /// Absorbs `bytes`.
    fn update(&mut self, bytes: &[u8]);

    /// The SHA-256 of everything absorbed.
    fn finish(self) -> [u8; 32];
}

/// The default [`HashEngine`]: the `sha2` crate's SHA-256, which uses the CPU's SHA
/// instructions where it has them (x86 SHA-NI, ARMv8 SHA2) and portable code elsewhere
/// (including WebAssembly).
#[derive(Clone, Default)]
pub struct Sha2Engine(Sha256);

impl std::fmt::Debug for Sha2Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sha2Engine")
    }
}

impl HashEngine for Sha2Engine {
    fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(self) -> [u8; 32] {
        self.0.finalize().into()
    }
}

/// Incremental hasher over an ordered prefix: push events in order, then finish. `E` is the
/// SHA-256 implementation ([`HashEngine`]); the digest is the same whichever it is.
#[derive(Clone)]
pub struct PrefixHasher<E: HashEngine = Sha2Engine> {
    hasher: E,
    /// Canonical bytes not yet handed to `hasher`.
    pending: HashBuffer,
    event_count: u64,
}

impl<E: HashEngine> std::fmt::Debug for PrefixHasher<E> {
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
    /// A hasher over the empty prefix, with `sha2`'s SHA-256.
    pub fn new() -> Self {
        Self::with_engine(Sha2Engine::default())
    }
}

impl<E: HashEngine> PrefixHasher<E> {
    /// A hasher over the empty prefix that feeds `engine` (a fresh engine: no bytes absorbed).
    pub fn with_engine(mut engine: E) -> Self {
        engine.update(DOMAIN_PREFIX);
        Self { hasher: engine, pending: HashBuffer::new(), event_count: 0 }
    }

    /// Appends one event: its canonical JSON and one `\n` byte.
    pub fn push(&mut self, event: &RuntimeEvent) {
        let mut sink = HashSink { hasher: &mut self.hasher, buffer: &mut self.pending };
        event_writer::write_event(&mut sink, event);
        sink.write_str("\n");
        self.event_count += 1;
    }

    /// Appends one event given as its stored canonical JSON (exactly what
    /// [`canonical_event_json`] gives for it) and one `\n` byte, without parsing it. Bytes that
    /// are not an event's canonical form give a digest no checkpoint of that event matches: a
    /// store that keeps the canonical bytes hashes them at the speed of SHA-256, and a row
    /// changed after the checkpoint was made is a digest mismatch, never a false match.
    pub fn push_canonical(&mut self, canonical: &[u8]) {
        let mut sink = HashSink { hasher: &mut self.hasher, buffer: &mut self.pending };
        sink.put(canonical);
        sink.put(b"\n");
        self.event_count += 1;
    }

    /// Number of events pushed so far.
    pub fn event_count(&self) -> u64 {
        self.event_count
    }

    /// Number of bytes the digest covers so far: [`DOMAIN_PREFIX`] and every event's canonical
    /// JSON with its `\n`.
    pub fn byte_count(&self) -> u64 {
        DOMAIN_PREFIX.len() as u64 + self.pending.written()
    }

    /// The `sha256:<hex>` digest of the prefix pushed so far (the hasher stays usable).
    pub fn digest(&self) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut hasher = self.hasher.clone();
        hasher.update(self.pending.pending());
        let out = hasher.finish();
        let mut text = String::with_capacity(7 + 2 * out.len());
        text.push_str("sha256:");
        for byte in out {
            text.push(char::from(HEX[usize::from(byte >> 4)]));
            text.push(char::from(HEX[usize::from(byte & 0x0f)]));
        }
        text
    }
}

/// `sha256:<hex>` of `bytes` (not a prefix digest: for fingerprints of other data, such as a
/// summarizer request's shape).
pub(crate) fn sha256_text(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    let mut text = String::from("sha256:");
    for byte in sha2::Sha256::digest(bytes) {
        text.push_str(&format!("{byte:02x}"));
    }
    text
}

/// The `sha256:<hex>` digest of `events` (the whole slice is the prefix).
pub fn digest_prefix(events: &[RuntimeEvent]) -> String {
    digest_prefix_with::<Sha2Engine>(events)
}

/// [`digest_prefix`] computed with the SHA-256 engine `E`.
pub fn digest_prefix_with<E: HashEngine>(events: &[RuntimeEvent]) -> String {
    let mut hasher = PrefixHasher::with_engine(E::default());
    for event in events {
        hasher.push(event);
    }
    hasher.digest()
}

/// The digests of every non-empty prefix of `events`: element `i` is the digest of
/// `events[..=i]`. Computed in one pass.
pub fn prefix_digests(events: &[RuntimeEvent]) -> Vec<String> {
    prefix_digests_with::<Sha2Engine>(events)
}

/// [`prefix_digests`] computed with the SHA-256 engine `E`.
pub fn prefix_digests_with<E: HashEngine>(events: &[RuntimeEvent]) -> Vec<String> {
    let mut hasher = PrefixHasher::with_engine(E::default());
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

#[cfg(test)]
mod engine_tests {
    use super::*;
    use crate::LogBuilder;

    /// An engine that counts its `update` calls and delegates to [`Sha2Engine`].
    #[derive(Clone, Default)]
    struct CountingEngine {
        inner: Sha2Engine,
        calls: usize,
        largest: usize,
    }

    impl HashEngine for CountingEngine {
        fn update(&mut self, bytes: &[u8]) {
            self.calls += 1;
            self.largest = self.largest.max(bytes.len());
            self.inner.update(bytes);
        }

        fn finish(self) -> [u8; 32] {
            self.inner.finish()
        }
    }

    #[test]
    fn any_engine_gives_the_same_digests_in_buffer_sized_chunks() {
        let mut log = LogBuilder::new("s");
        for turn in 0..40 {
            log.user(&format!("turn {turn}: {}", "é\"\n".repeat(3000)));
            log.assistant("ok");
        }
        let events = log.build();
        assert_eq!(digest_prefix_with::<CountingEngine>(&events), digest_prefix(&events));
        assert_eq!(prefix_digests_with::<CountingEngine>(&events), prefix_digests(&events));
        let mut hasher = PrefixHasher::with_engine(CountingEngine::default());
        for event in &events {
            hasher.push(event);
        }
        // About 560 KB of canonical bytes arrive in a few dozen full buffers, not per write.
        assert!(hasher.hasher.calls < 64, "{} update calls", hasher.hasher.calls);
        // The buffer's 16 KiB, plus at most its slack (one escaped 16-byte string block).
        let largest = hasher.hasher.largest;
        assert!(largest <= 16 * 1024 + 96, "a chunk of {largest} bytes");
    }
}
