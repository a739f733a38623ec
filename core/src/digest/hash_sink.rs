//! The buffer between the canonical writer and SHA-256.
//!
//! Canonical bytes are collected in a fixed buffer and handed to SHA-256 a whole buffer at a
//! time, so short writes (keys, punctuation, escapes) cost a copy, not a hasher call. JSON
//! strings, which are nearly all of the bytes, take a block path: sixteen bytes are checked at
//! once (two words, bitwise) for characters needing an escape, and a clean block is copied with one fixed-size move.
//! The buffer keeps [`SLACK`] spare bytes past its nominal size so those moves may over-copy
//! and then advance by the bytes that count.

use super::HashEngine;

use super::jcs::{CanonicalSink, escape_for, escape_mask};

/// Nominal size of the buffer: when it would overflow, it is hashed and emptied.
pub(crate) const HASH_BUFFER_SIZE: usize = 16 * 1024;

/// Spare bytes past [`HASH_BUFFER_SIZE`]: room for one string block written whole (sixteen
/// bytes, each escaped to at most six).
const SLACK: usize = 16 * 6;

/// Bytes checked per step of the string path.
const BLOCK: usize = 16;

/// Canonical bytes not yet handed to SHA-256.
#[derive(Clone)]
pub(crate) struct HashBuffer {
    bytes: Box<[u8]>,
    filled: usize,
}

impl HashBuffer {
    /// An empty buffer.
    pub(crate) fn new() -> Self {
        Self { bytes: vec![0; HASH_BUFFER_SIZE + SLACK].into_boxed_slice(), filled: 0 }
    }

    /// The bytes written and not yet hashed.
    pub(crate) fn pending(&self) -> &[u8] {
        &self.bytes[..self.filled]
    }
}

/// A [`CanonicalSink`] writing through a [`HashBuffer`] into a SHA-256 engine.
pub(crate) struct HashSink<'a, E: HashEngine> {
    pub(crate) hasher: &'a mut E,
    pub(crate) buffer: &'a mut HashBuffer,
}

impl<E: HashEngine> HashSink<'_, E> {
    /// Hashes and empties the buffer.
    #[cold]
    #[inline(never)]
    fn flush(&mut self) {
        self.hasher.update(&self.buffer.bytes[..self.buffer.filled]);
        self.buffer.filled = 0;
    }

    /// Copies `bytes` into the buffer (or hashes them in place when they alone fill it).
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        if self.buffer.filled + bytes.len() > HASH_BUFFER_SIZE {
            self.flush();
            if bytes.len() >= HASH_BUFFER_SIZE {
                self.hasher.update(bytes);
                return;
            }
        }
        let start = self.buffer.filled;
        self.buffer.bytes[start..start + bytes.len()].copy_from_slice(bytes);
        self.buffer.filled += bytes.len();
    }
}

/// Index of the first byte of `block` needing a JCS escape (`"`, `\`, U+0000..U+001F), if
/// any: two eight-byte words checked with [`escape_mask`].
#[inline(always)]
fn first_escape(block: &[u8; BLOCK]) -> Option<usize> {
    let (low, high) = block.split_at(BLOCK / 2);
    let word = |half: &[u8]| half.first_chunk::<8>().map_or(0, |w| u64::from_le_bytes(*w));
    let (low, high) = (escape_mask(word(low)), escape_mask(word(high)));
    if low | high == 0 {
        None
    } else if low != 0 {
        Some(low.trailing_zeros() as usize / 8)
    } else {
        Some(BLOCK / 2 + high.trailing_zeros() as usize / 8)
    }
}

impl<E: HashEngine> CanonicalSink for HashSink<'_, E> {
    #[inline]
    fn write_str(&mut self, text: &str) {
        self.put(text.as_bytes());
    }

    fn write_json_string(&mut self, text: &str) {
        let bytes = text.as_bytes();
        self.put(b"\"");
        let mut index = 0;
        while let Some(block) = bytes.get(index..).and_then(<[u8]>::first_chunk::<BLOCK>) {
            if self.buffer.filled > HASH_BUFFER_SIZE {
                self.flush();
            }
            let start = self.buffer.filled;
            // Copy the whole block, then keep only the clean bytes before the first escape.
            self.buffer.bytes[start..start + BLOCK].copy_from_slice(block);
            let Some(clean) = first_escape(block) else {
                self.buffer.filled += BLOCK;
                index += BLOCK;
                continue;
            };
            let escape = escape_for(block[clean]).as_bytes();
            let at = start + clean;
            self.buffer.bytes[at..at + escape.len()].copy_from_slice(escape);
            self.buffer.filled = at + escape.len();
            index += clean + 1;
        }
        for &byte in &bytes[index..] {
            let needs_escape = (byte < 0x20) | (byte == b'"') | (byte == b'\\');
            if needs_escape {
                self.put(escape_for(byte).as_bytes());
            } else {
                self.put(&[byte]);
            }
        }
        self.put(b"\"");
    }
}
