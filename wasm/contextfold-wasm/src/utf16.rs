//! UTF-8 → UTF-16 transcoding of the text handed to JavaScript as code units.
//!
//! Large results cross into JS as UTF-16 code units (see [`crate::convert::json_text_to_js`] and
//! [`crate::string_table`]), which JS turns into strings with a plain copy. The transcoding is
//! on the hot path of every `EventLog.project()` (megabytes of tool output, mixed ASCII, CJK and
//! emoji), so it works on blocks of [`BLOCK`] bytes, without a branch per character:
//!
//! - a block that is all ASCII is widened to 16 code units;
//! - any other block is read lane by lane as if every byte started a character (with the byte
//!   before the block and the two after it): a byte that starts one gives its unit (the high
//!   surrogate for a 4-byte character), the byte after a 4-byte lead gives the low surrogate,
//!   other continuation bytes give nothing. With `simd128` (every wasm build of this crate, see
//!   `.cargo/config.toml`) the lanes are computed 8 at a time and packed with one shuffle from
//!   a table; elsewhere (native tests) the same arithmetic runs one lane at a time;
//! - the first character, and the bytes after the last full block, one character at a time.
//!
//! The input is a `str`, so it is well formed and nothing is validated. The output is written
//! by index into a slice sized once: a step may write units past the real ones (overwritten by
//! the next step), never beyond `text.len()` units, because a UTF-8 string never has more
//! UTF-16 code units than bytes.

/// Bytes transcoded per step.
pub const BLOCK: usize = 16;

/// The high bit of each byte of a `u64`.
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// The UTF-16 code units of `text` (what `str::encode_utf16` gives).
pub fn utf16_units(text: &str) -> Vec<u16> {
    let mut units = Vec::new();
    utf16_units_into(text, &mut units);
    units
}

/// Appends the UTF-16 code units of `text` to `units` (reserve the total beforehand when
/// appending many strings: this grows `units` by `text.len()` before cutting it back).
pub fn utf16_units_into(text: &str, units: &mut Vec<u16>) {
    let start = units.len();
    grow_zeroed(units, text.len());
    let written = write_utf16(text, &mut units[start..]);
    units.truncate(start + written);
}

/// Appends `count` zero units to `units`, a block copy at a time (`Vec::resize` writes them one
/// by one where the module is built for size).
pub fn grow_zeroed(units: &mut Vec<u16>, count: usize) {
    const ZEROS: [u16; 1024] = [0; 1024];
    units.reserve(count);
    let mut left = count;
    while left > 0 {
        let step = left.min(ZEROS.len());
        units.extend_from_slice(&ZEROS[..step]);
        left -= step;
    }
}

/// Writes the UTF-16 code units of `text` at the start of `out` and returns their number.
///
/// # Panics
/// If `out` is shorter than `text.len()` (the most units `text` can have).
pub fn write_utf16(text: &str, out: &mut [u16]) -> usize {
    let bytes = text.as_bytes();
    assert!(out.len() >= bytes.len(), "write_utf16: {} units for {} bytes", out.len(), bytes.len());
    let (mut read, mut written) = (0, 0);
    // The first character by itself, so that every block has the byte before it.
    if let Some(&lead) = bytes.first() {
        let (len, units) = decode_char(lead, bytes);
        written += units.write(&mut out[written..]);
        read += len;
    }
    while read > 0
        && let Some(window) = bytes.get(read - 1..read + BLOCK + 2)
    {
        let Ok(window) = <&[u8; BLOCK + 3]>::try_from(window) else { break };
        let Some(dst) = out.get_mut(written..written + BLOCK) else { break };
        if is_ascii_block(window) {
            widen_ascii(window, dst);
            read += BLOCK;
            written += BLOCK;
            continue;
        }
        written += transcode_block(window, &mut out[written..]);
        read += BLOCK;
    }
    // The low surrogate of a 4-byte character starting at the last byte of the last block, then
    // the characters starting after it.
    if read > 0 && bytes[read - 1] >= 0xf0 {
        let (_, units) = decode_char(bytes[read - 1], &bytes[read - 1..]);
        if let Units::Pair(_, low) = units {
            out[written] = low;
            written += 1;
        }
    }
    while let Some(&byte) = bytes.get(read) {
        if byte & 0xc0 == 0x80 {
            read += 1;
            continue;
        }
        let (len, units) = decode_char(byte, &bytes[read..]);
        written += units.write(&mut out[written..]);
        read += len;
    }
    written
}

/// Whether the 16 bytes of the block of `window` (its bytes 1 to 16) are all ASCII.
#[inline(always)]
fn is_ascii_block(window: &[u8; BLOCK + 3]) -> bool {
    (le_word(window, 1) | le_word(window, 9)) & HIGH_BITS == 0
}

/// The 8 bytes of `bytes` from `start` as a little-endian `u64` (all high bits set when there
/// are fewer, which never happens for the fixed-size windows it is given).
#[inline(always)]
fn le_word(bytes: &[u8], start: usize) -> u64 {
    let word = bytes.get(start..start + 8).and_then(|word| word.try_into().ok());
    u64::from_le_bytes(word.unwrap_or([0x80; 8]))
}

/// Transcodes the block of `window` (its bytes 1 to 16; byte 0 is the byte before the block,
/// bytes 17 and 18 the two after it) into `out` and returns the number of units written. Every
/// byte is read as if it started a character, without a branch: a byte that does start one gives
/// the character's unit (the high surrogate for a 4-byte character); the byte after a 4-byte
/// lead gives its low surrogate; the other continuation bytes give nothing. `out` has room for
/// 16 units, all of which may be written.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
#[inline(always)]
fn transcode_block(window: &[u8; BLOCK + 3], out: &mut [u16]) -> usize {
    let mut written = 0;
    for k in 0..BLOCK {
        let lane = |offset: usize| u16::from(window[k + offset]);
        let (before, b0, b1, b2) = (lane(0), lane(1), lane(2), lane(3));
        let unit = match b0 {
            0x00..=0x7f => b0,
            0x80..=0xdf => ((b0 & 0x1f) << 6) | (b1 & 0x3f),
            0xe0..=0xef => ((b0 & 0x0f) << 12) | ((b1 & 0x3f) << 6) | (b2 & 0x3f),
            _ => high_surrogate(b0, b1, b2),
        };
        // After a 4-byte lead `b0` is its first continuation byte: `before b0 b1 b2`.
        let after_four = before >= 0xf0;
        out[written] = if after_four { low_surrogate(b1, b2) } else { unit };
        written += usize::from(after_four || b0 & 0xc0 != 0x80);
    }
    written
}

/// The high surrogate of the 4-byte character whose first 3 bytes are `b0 b1 b2`.
#[inline(always)]
fn high_surrogate<T: Lanes>(b0: T, b1: T, b2: T) -> T {
    // (code - 0x10000) >> 10, from the lead's 3 bits, 6 bits of `b1` and 2 of `b2`.
    let bits = b0.and(0x07).shl(8).or(b1.and(0x3f).shl(2)).or(b2.shr(4).and(0x03));
    bits.add(0xd800 - 0x40)
}

/// The low surrogate of the 4-byte character whose last 2 bytes are `b2 b3`.
#[inline(always)]
fn low_surrogate<T: Lanes>(b2: T, b3: T) -> T {
    b2.and(0x0f).shl(6).or(b3.and(0x3f)).or_const(0xdc00)
}

/// The arithmetic [`high_surrogate`] and [`low_surrogate`] need, on one `u16` or on 8 lanes.
trait Lanes: Copy {
    fn and(self, mask: u16) -> Self;
    fn or(self, other: Self) -> Self;
    fn or_const(self, bits: u16) -> Self;
    fn shl(self, by: u32) -> Self;
    fn shr(self, by: u32) -> Self;
    fn add(self, value: u16) -> Self;
}

impl Lanes for u16 {
    #[inline(always)]
    fn and(self, mask: u16) -> Self {
        self & mask
    }
    #[inline(always)]
    fn or(self, other: Self) -> Self {
        self | other
    }
    #[inline(always)]
    fn or_const(self, bits: u16) -> Self {
        self | bits
    }
    #[inline(always)]
    fn shl(self, by: u32) -> Self {
        self << by
    }
    #[inline(always)]
    fn shr(self, by: u32) -> Self {
        self >> by
    }
    #[inline(always)]
    fn add(self, value: u16) -> Self {
        self.wrapping_add(value)
    }
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd {
    //! [`transcode_block`](super::transcode_block) with `simd128`: the lanes computed 8 at a
    //! time, then packed with one shuffle per 8 lanes from a table indexed by which lanes give
    //! a unit.
    use core::arch::wasm32::*;

    use super::{BLOCK, Lanes, high_surrogate, low_surrogate};

    impl Lanes for v128 {
        #[inline(always)]
        fn and(self, mask: u16) -> Self {
            v128_and(self, u16x8_splat(mask))
        }
        #[inline(always)]
        fn or(self, other: Self) -> Self {
            v128_or(self, other)
        }
        #[inline(always)]
        fn or_const(self, bits: u16) -> Self {
            v128_or(self, u16x8_splat(bits))
        }
        #[inline(always)]
        fn shl(self, by: u32) -> Self {
            u16x8_shl(self, by)
        }
        #[inline(always)]
        fn shr(self, by: u32) -> Self {
            u16x8_shr(self, by)
        }
        #[inline(always)]
        fn add(self, value: u16) -> Self {
            u16x8_add(self, u16x8_splat(value))
        }
    }

    /// Per 8-bit mask of the lanes that give a unit: the byte shuffle that packs those `u16`
    /// lanes at the front.
    static PACK: [[u8; 16]; 256] = pack_table();

    const fn pack_table() -> [[u8; 16]; 256] {
        let mut table = [[0u8; 16]; 256];
        let mut mask = 0;
        while mask < 256 {
            let (mut lane, mut next) = (0, 0);
            while lane < 8 {
                if mask & (1 << lane) != 0 {
                    table[mask][2 * next] = 2 * lane as u8;
                    table[mask][2 * next + 1] = 2 * lane as u8 + 1;
                    next += 1;
                }
                lane += 1;
            }
            mask += 1;
        }
        table
    }

    #[inline(always)]
    fn load(bytes: &[u8]) -> v128 {
        u64x2(super::le_word(bytes, 0), super::le_word(bytes, 8))
    }

    /// Writes the 8 lanes of `units` at the start of `out` (which has room for them).
    #[inline(always)]
    fn store(units: v128, out: &mut [u16]) {
        let (low, high) = (u64x2_extract_lane::<0>(units), u64x2_extract_lane::<1>(units));
        if let Some(out) = out.first_chunk_mut::<8>() {
            *out = [
                low as u16,
                (low >> 16) as u16,
                (low >> 32) as u16,
                (low >> 48) as u16,
                high as u16,
                (high >> 16) as u16,
                (high >> 32) as u16,
                (high >> 48) as u16,
            ];
        }
    }

    /// See [`super::widen_ascii`].
    #[inline(always)]
    pub(super) fn widen_ascii(window: &[u8; BLOCK + 3], out: &mut [u16]) {
        let block = load(&window[1..]);
        store(u16x8_extend_low_u8x16(block), out);
        store(u16x8_extend_high_u8x16(block), &mut out[8..]);
    }

    /// The units of 8 lanes: `before`, `b0`, `b1`, `b2` widened to `u16` (so below 256, where
    /// signed comparisons, single instructions, order them as bytes).
    #[inline(always)]
    fn lane_units(before: v128, b0: v128, b1: v128, b2: v128) -> v128 {
        let b1_bits = b1.and(0x3f);
        let two = b0.and(0x1f).shl(6).or(b1_bits);
        let three = b0.and(0x0f).shl(12).or(b1_bits.shl(6)).or(b2.and(0x3f));
        let below = |bound: i16| i16x8_lt(b0, i16x8_splat(bound));
        let unit = v128_bitselect(
            b0,
            v128_bitselect(
                two,
                v128_bitselect(three, high_surrogate(b0, b1, b2), below(0xf0)),
                below(0xe0),
            ),
            below(0x80),
        );
        v128_bitselect(low_surrogate(b1, b2), unit, i16x8_gt(before, i16x8_splat(0xef)))
    }

    /// See [`super::transcode_block`].
    #[inline(always)]
    pub(super) fn transcode_block(window: &[u8; BLOCK + 3], out: &mut [u16]) -> usize {
        let before = load(&window[0..]);
        let b0 = load(&window[1..]);
        let b1 = load(&window[2..]);
        let b2 = load(&window[3..]);
        let starts = u8x16_ne(v128_and(b0, u8x16_splat(0xc0)), u8x16_splat(0x80));
        let emits = v128_or(starts, u8x16_gt(before, u8x16_splat(0xef)));
        let mask = u32::from(i8x16_bitmask(emits));
        let low = lane_units(
            u16x8_extend_low_u8x16(before),
            u16x8_extend_low_u8x16(b0),
            u16x8_extend_low_u8x16(b1),
            u16x8_extend_low_u8x16(b2),
        );
        let high = lane_units(
            u16x8_extend_high_u8x16(before),
            u16x8_extend_high_u8x16(b0),
            u16x8_extend_high_u8x16(b1),
            u16x8_extend_high_u8x16(b2),
        );
        let (low_mask, high_mask) = (mask & 0xff, mask >> 8);
        store(i8x16_swizzle(low, load(&PACK[low_mask as usize])), &mut out[..8]);
        let written = low_mask.count_ones() as usize;
        store(i8x16_swizzle(high, load(&PACK[high_mask as usize])), &mut out[written..written + 8]);
        written + high_mask.count_ones() as usize
    }
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
use simd::{transcode_block, widen_ascii};

/// Widens the 16 bytes of the block of `window` (its bytes 1 to 16, all ASCII) into the first
/// 16 units of `out`.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
fn widen_ascii(window: &[u8; BLOCK + 3], out: &mut [u16]) {
    for (unit, &byte) in out.iter_mut().zip(&window[1..=BLOCK]) {
        *unit = u16::from(byte);
    }
}

/// The code units of one character.
enum Units {
    One(u16),
    Pair(u16, u16),
}

impl Units {
    /// Writes the units at the start of `out` and returns their number.
    #[inline(always)]
    fn write(self, out: &mut [u16]) -> usize {
        match self {
            Units::One(unit) => {
                out[0] = unit;
                1
            }
            Units::Pair(high, low) => {
                out[0] = high;
                out[1] = low;
                2
            }
        }
    }
}

/// Decodes the character starting `rest` (whose first byte is `lead`): its UTF-8 length and
/// its code units. `rest` starts at a character boundary of a `str`, so it is well formed.
#[inline(always)]
fn decode_char(lead: u8, rest: &[u8]) -> (usize, Units) {
    let tail = |k: usize| u32::from(rest.get(k).copied().unwrap_or(0) & 0x3f);
    match lead {
        0x00..=0x7f => (1, Units::One(u16::from(lead))),
        0xc0..=0xdf => (2, Units::One(((u32::from(lead & 0x1f) << 6) | tail(1)) as u16)),
        0xe0..=0xef => {
            let code = (u32::from(lead & 0x0f) << 12) | (tail(1) << 6) | tail(2);
            (3, Units::One(code as u16))
        }
        _ => {
            let code = (u32::from(lead & 0x07) << 18) | (tail(1) << 12) | (tail(2) << 6) | tail(3);
            let offset = code - 0x1_0000;
            (4, Units::Pair(0xd800 | (offset >> 10) as u16, 0xdc00 | (offset & 0x3ff) as u16))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expected(text: &str) -> Vec<u16> {
        text.encode_utf16().collect()
    }

    #[test]
    fn every_utf8_length_class_at_every_block_offset() {
        let chars = ["a", "\u{0}", "\u{7f}", "\u{80}", "é", "\u{7ff}", "\u{800}", "测", "\u{ffff}"];
        let chars = [&chars[..], &["\u{10000}", "🦀", "\u{10ffff}"]].concat();
        for c in &chars {
            for ascii_before in 0..=2 * BLOCK + 1 {
                for ascii_after in [0, 1, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK] {
                    let text =
                        format!("{}{c}{}", "x".repeat(ascii_before), "y".repeat(ascii_after));
                    assert_eq!(utf16_units(&text), expected(&text), "{text:?}");
                }
            }
        }
    }

    #[test]
    fn runs_of_mixed_characters_and_empty_strings() {
        assert_eq!(utf16_units(""), Vec::<u16>::new());
        let mixed = "a测试🦀b\u{7f}\u{80}\u{7ff}\u{800}\u{ffff}\u{10000}\u{10ffff} ошибка café ✅";
        for repeat in [1, 2, 7, 33] {
            let long = mixed.repeat(repeat);
            for (skip, _) in long.char_indices().take(20) {
                let text = &long[skip..];
                assert_eq!(utf16_units(text), expected(text), "{text:?}");
            }
        }
        let emoji = "🚀".repeat(3 * BLOCK);
        assert_eq!(utf16_units(&emoji), expected(&emoji));
    }

    #[test]
    fn appends_after_existing_units_into_an_exact_slice() {
        let mut units = vec![1, 2, 3];
        utf16_units_into("héllo 🦀 wörld, a longer ascii tail", &mut units);
        assert_eq!(units[..3], [1, 2, 3]);
        assert_eq!(units[3..], expected("héllo 🦀 wörld, a longer ascii tail")[..]);
        let text = "é".repeat(40);
        let mut out = vec![0; text.len()];
        assert_eq!(write_utf16(&text, &mut out), 40);
        assert_eq!(out[..40], expected(&text)[..]);
    }
}
