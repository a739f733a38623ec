//! The buffer between the canonical writer and SHA-256.
//!
//! Canonical bytes are collected in a fixed buffer and handed to SHA-256 a whole buffer at a
//! time, so short writes (keys, punctuation, escapes) cost a copy, not a hasher call. JSON
//! strings, which are nearly all of the bytes, take a block path: thirty-two bytes are checked
//! at once (vector compares) for characters needing an escape, and the block is copied with
//! one fixed-size move; each escape in it is then written as a fixed eight-byte word followed
//! by a fixed-size copy of the rest of the block, without scanning the block again. The buffer
//! keeps [`SLACK`] spare bytes past its nominal size so those moves may over-copy and then
//! advance by the bytes that count.

use super::HashEngine;

use super::jcs::{CONTROL_ESCAPES, CanonicalSink};

/// Bytes checked per step of the string path.
const BLOCK: usize = 32;

/// The buffer's offsets lie below this power of two: the string path masks its offsets with
/// `INDEX_SPACE - 1` (which never changes them), so the compiler can drop their bounds checks.
const INDEX_SPACE: usize = 16 * 1024;

/// Nominal size of the buffer: when it would overflow, it is hashed and emptied.
const HASH_BUFFER_SIZE: usize = INDEX_SPACE - SLACK;

/// The buffer: every offset below [`INDEX_SPACE`], plus room for a `BLOCK`-byte store there.
type BufferBytes = [u8; INDEX_SPACE + BLOCK];

/// Spare bytes past [`HASH_BUFFER_SIZE`]: room for one string block written whole (each of
/// its bytes escaped to at most six) followed by the fixed-size over-copy of the next block.
const SLACK: usize = BLOCK * 6 + BLOCK;

/// A string block needs a second block of input behind it: after an escape, the rest of the
/// block is written with one fixed-size copy that reads on into the following bytes.
const WINDOW: usize = 2 * BLOCK;

/// The JCS escape of each byte as one little-endian word: the escape's bytes first, its
/// length in the top byte, so an escape is written with one fixed eight-byte store. Bytes
/// that need no escape map to zero (never read).
const ESCAPE_WORDS: [u64; 256] = escape_words();

const fn escape_words() -> [u64; 256] {
    let mut table = [0u64; 256];
    let mut byte = 0;
    while byte < 256 {
        let text = escape_for_const(byte as u8);
        let mut word = (text.len() as u64) << 56;
        let mut at = 0;
        while at < text.len() {
            word |= (text[at] as u64) << (8 * at);
            at += 1;
        }
        if !text.is_empty() {
            table[byte] = word;
        }
        byte += 1;
    }
    table
}

/// [`escape_for`] in a `const` context, empty for bytes that need no escape.
const fn escape_for_const(byte: u8) -> &'static [u8] {
    match byte {
        b'"' => b"\\\"",
        b'\\' => b"\\\\",
        0..0x20 => CONTROL_ESCAPES[byte as usize].as_bytes(),
        _ => b"",
    }
}

/// Canonical bytes not yet handed to SHA-256.
#[derive(Clone)]
pub(crate) struct HashBuffer {
    bytes: Box<BufferBytes>,
    filled: usize,
    /// Bytes already handed to SHA-256 through this buffer.
    hashed: u64,
}

impl HashBuffer {
    /// An empty buffer.
    pub(crate) fn new() -> Self {
        Self { bytes: Box::new([0; INDEX_SPACE + BLOCK]), filled: 0, hashed: 0 }
    }

    /// The bytes written and not yet hashed.
    pub(crate) fn pending(&self) -> &[u8] {
        &self.bytes[..self.filled]
    }

    /// Every byte written so far, hashed or pending.
    pub(crate) fn written(&self) -> u64 {
        self.hashed + self.filled as u64
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
        self.buffer.hashed += self.buffer.filled as u64;
        self.buffer.filled = 0;
    }

    /// Copies `bytes` into the buffer (or hashes them in place when they alone fill it).
    #[inline]
    pub(super) fn put(&mut self, bytes: &[u8]) {
        if self.buffer.filled + bytes.len() > HASH_BUFFER_SIZE {
            self.flush();
            if bytes.len() >= HASH_BUFFER_SIZE {
                self.hasher.update(bytes);
                self.buffer.hashed += bytes.len() as u64;
                return;
            }
        }
        let start = self.buffer.filled;
        self.buffer.bytes[start..start + bytes.len()].copy_from_slice(bytes);
        self.buffer.filled += bytes.len();
    }
}

/// One bit per byte of `block` (bit `i` for byte `i`) that needs a JCS escape: `"`, `\\` or
/// U+0000..U+001F. Written so that the compiler checks the block with vector compares; each
/// eight flags (one per byte) are then gathered into a byte by one multiplication whose
/// partial products never overlap.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
#[inline(always)]
fn escape_bits(block: &[u8; BLOCK]) -> u32 {
    let mut flags = [0u8; BLOCK];
    for (flag, &byte) in flags.iter_mut().zip(block) {
        *flag = u8::from((byte < 0x20) | (byte == b'"') | (byte == b'\\'));
    }
    let mut bits = 0;
    for (index, word) in flags.chunks_exact(8).enumerate() {
        let word = word.first_chunk::<8>().map_or(0, |w| u64::from_le_bytes(*w));
        bits |= ((word.wrapping_mul(0x0102_0408_1020_4080) >> 56) as u32) << (8 * index);
    }
    bits
}

/// [`escape_bits`] with `simd128`, written out: a wasm module built for size is not
/// vectorized by the compiler. Sixteen bytes per compare, their flags gathered by a bitmask.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[inline(always)]
fn escape_bits(block: &[u8; BLOCK]) -> u32 {
    use core::arch::wasm32::{i8x16_bitmask, u8x16_eq, u8x16_lt, u8x16_splat, u64x2, v128_or};
    /// The flags of the 16 bytes of `words[first..first + 2]` as bits.
    #[inline(always)]
    fn half(words: &[[u8; 8]], first: usize) -> u32 {
        let word = |k: usize| words.get(k).map_or(0, |w| u64::from_le_bytes(*w));
        let bytes = u64x2(word(first), word(first + 1));
        let flags = v128_or(
            u8x16_lt(bytes, u8x16_splat(0x20)),
            v128_or(u8x16_eq(bytes, u8x16_splat(b'"')), u8x16_eq(bytes, u8x16_splat(b'\\'))),
        );
        u32::from(i8x16_bitmask(flags))
    }
    const _: () = assert!(BLOCK == 32);
    let (words, _) = block.as_chunks::<8>();
    half(words, 0) | (half(words, 2) << 16)
}

/// Writes the block `window[..BLOCK]`, escaped, at `out[at..]` and returns the end of what it
/// wrote; only the first `valid` bytes of the block count (the others must be clean).
///
/// The block is copied whole; at each escape (found from one bit mask, no rescan) the escape
/// is stored as a fixed eight-byte word and the rest of the block is copied again, as one
/// fixed `BLOCK`-byte move from `window`, right after it. Every store may run past the bytes
/// that count; later stores overwrite that excess. `out` needs `SLACK` bytes past `at`.
#[inline(always)]
fn escape_block(out: &mut BufferBytes, at: usize, window: &[u8; WINDOW], valid: usize) -> usize {
    let (block, _) = window.split_first_chunk::<BLOCK>().unwrap_or((&[0; BLOCK], &[]));
    let offset = |index: usize| index & (INDEX_SPACE - 1);
    out[offset(at)..offset(at) + BLOCK].copy_from_slice(block);
    let mut bits = escape_bits(block);
    // `written` is where the byte at `next` of the block goes.
    let (mut written, mut next) = (at, 0);
    while bits != 0 {
        let escape_at = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        let word = ESCAPE_WORDS[usize::from(block[escape_at])];
        let store = offset(written + (escape_at - next));
        out[store..store + 8].copy_from_slice(&word.to_le_bytes());
        written = offset(store + (word >> 56) as usize);
        next = escape_at + 1;
        let rest = window[next..].first_chunk::<BLOCK>().unwrap_or(&[0; BLOCK]);
        out[written..written + BLOCK].copy_from_slice(rest);
    }
    written + valid - next
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
        while let Some(window) = bytes.get(index..).and_then(<[u8]>::first_chunk::<WINDOW>) {
            if self.buffer.filled > HASH_BUFFER_SIZE {
                self.flush();
            }
            self.buffer.filled =
                escape_block(&mut self.buffer.bytes, self.buffer.filled, window, BLOCK);
            index += BLOCK;
        }
        // The last bytes (fewer than `WINDOW`) go through a padded copy; the padding is a
        // clean byte and is never counted.
        let rest = &bytes[index..];
        if !rest.is_empty() {
            let mut padded = [b' '; WINDOW + BLOCK];
            padded[..rest.len()].copy_from_slice(rest);
            for start in (0..rest.len()).step_by(BLOCK) {
                if self.buffer.filled > HASH_BUFFER_SIZE {
                    self.flush();
                }
                let window = padded[start..].first_chunk::<WINDOW>().unwrap_or(&[b' '; WINDOW]);
                let valid = BLOCK.min(rest.len() - start);
                self.buffer.filled =
                    escape_block(&mut self.buffer.bytes, self.buffer.filled, window, valid);
            }
        }
        self.put(b"\"");
    }
}
