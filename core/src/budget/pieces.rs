//! [`PieceEstimator`]: a token estimate that follows how BPE tokenizers cut text.
//!
//! A characters-per-token estimate is off by a different amount for every request, even within
//! one kind of content (measured against OpenAI's `o200k_base`: -25% to +30% on prose and
//! source code, -35% to +25% on minified JSON, from one 8 KB chunk to the next), so a ratio
//! learned from one request does not carry to the next. This estimator mimics the tokenizer's
//! pre-tokenizer (the split into words, digit runs, punctuation runs and whitespace before BPE)
//! in one pass over the bytes and charges each piece what BPE typically makes of it:
//!
//! - a word (`[A-Z]*[a-z]+` or `[A-Z]+`, with one leading space or punctuation char, `'s` and
//!   the other English contractions kept) is one token plus, for every pair of adjacent letters,
//!   the chance that BPE cuts between them (a 26x26 table of four levels, fitted to where
//!   `o200k_base` cut the words of the repository's docs, code and trajectories); common words
//!   cost about one token, random letters (base64, hashes) about 0.8 per pair, with extras for
//!   long words, all-caps words, a leading punctuation char and a `\n`-style escape;
//! - digits: one token per three; whitespace: one per run (an indent keeps its last space for
//!   the next word); newline runs: one; punctuation runs: one, plus about one per change of
//!   char after the first two (`":"` is one, `"},{"` two);
//! - other characters by script: Han 0.69, kana 0.72, Hangul 0.6, Indic 0.34, two-byte letters
//!   (accented Latin, Greek, Cyrillic, Arabic, Hebrew) 0.3 inside a word, rare three-byte
//!   letters 3.2 (byte fallback), symbols and emoji 0.66.
//!
//! Measured (`host/tests/runtime/piece_estimator.rs` checks it on every test run): per class the ratio
//! to `o200k_base` varies by under 9% around its median, and the medians are 0.98-1.03 of the
//! real count (CJK and base64 included), and nearly so on text the tables were not fitted to
//! (the docs, sources and manifests of the crates the host builds from: medians 0.98-1.04,
//! sources and manifests under 11% around them, markdown up to 15%); against `cl100k_base` the
//! same, except CJK at 0.69.
//! It is not a tokenizer: calibration ([`crate::calibration`]) still corrects its ratio to each
//! provider's count, and it runs at about 260 MB/s against the characters estimate's tens of
//! GB/s, so the pure projection functions keep [`super::CharEstimator`] as their default.

use super::TokenEstimator;

/// Estimates tokens piece by piece, the way BPE tokenizers split text (module docs). Pure,
/// allocation-free, one pass.
///
/// ```
/// use contextfold_core::budget::{PieceEstimator, TokenEstimator};
/// assert_eq!(PieceEstimator.estimate_text(""), 0);
/// assert_eq!(PieceEstimator.estimate_text("hello"), 1);
/// let prose = PieceEstimator.estimate_text("The quick brown fox jumps over the lazy dog.");
/// assert!((8..=13).contains(&prose), "{prose}"); // o200k_base: 10
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PieceEstimator;

/// [`PieceEstimator`]'s [`TokenEstimator::stored_name`]. A change to its tables or rules that
/// changes any estimate must change this name, so estimates stored by an older build are not
/// taken for this one's.
pub const PIECE_ESTIMATOR_NAME: &str = "pieces-v1";

impl TokenEstimator for PieceEstimator {
    fn estimate_text(&self, text: &str) -> u64 {
        estimate_pieces(text)
    }

    fn stored_name(&self) -> Option<&'static str> {
        Some(PIECE_ESTIMATOR_NAME)
    }
}

/// The estimate, in thousandths of a token per piece, rounded once at the end.
fn estimate_pieces(text: &str) -> u64 {
    /// Boundary chance levels (thousandths) indexed by the 2-bit `PAIRS` entries.
    const LEVEL: [u64; 4] = [0, 114, 851, 819];
    /// Row: first letter; bits 2b..2b+1: level of the pair with second letter b.
    const PAIRS: [u64; 26] = [
        0x4100220044202,
        0x8ac538a25a855,
        0x9a9134a0d2844,
        0x96987da689465,
        0x9120020199104,
        0xd6913862ce594,
        0xde953967918a5,
        0x9a91b89a8ac68,
        0x2230100068000,
        0xffd8b9baae8a9,
        0xdd99b66ad9cb9,
        0xce50b8a2de428,
        0xda94a08699860,
        0xa750b46998818,
        0x9400300004101,
        0xca81245191898,
        0xffc65ae3effaa,
        0xca412806c9848,
        0x9e80245582848,
        0x8580709ac389d,
        0x5660330188401,
        0xeaa6799aceca8,
        0xeaa5396bc2868,
        0xa7f2f7ebef999,
        0xaee4b166eeeaa,
        0x6aeabeafdacbd,
    ];
    const SYMBOL: u64 = 663;
    let b = text.as_bytes();
    let n = b.len();
    let at = |j: usize| if j < n { b[j] } else { b' ' };
    // Cost of the non-ASCII char at `j` (None for a symbol) and its byte length.
    let wide = |j: usize| -> (Option<u64>, usize) {
        let c0 = b[j];
        if c0 >= 0xf0 {
            return (None, 4);
        }
        if c0 < 0xc0 {
            return (None, 1);
        }
        if c0 < 0xe0 {
            let cp = (u32::from(c0 & 0x1f) << 6) | u32::from(at(j + 1) & 0x3f);
            let sym = matches!(cp, 0xa0..=0xbf | 0xd7 | 0xf7);
            return (if sym { None } else { Some(300) }, 2);
        }
        let cp = (u32::from(c0 & 0x0f) << 12)
            | (u32::from(at(j + 1) & 0x3f) << 6)
            | u32::from(at(j + 2) & 0x3f);
        let cost = match cp {
            0x2000..=0x2bff
            | 0x3000..=0x303f
            | 0xfe30..=0xfe4f
            | 0xff00..=0xff0f
            | 0xff1a..=0xff20 => None,
            0x3040..=0x30ff => Some(724),
            0x4e00..=0x9fff | 0xf900..=0xfaff => Some(689),
            0xac00..=0xd7af | 0x1100..=0x11ff | 0x3130..=0x318f => Some(600),
            0x0800..=0x0dff => Some(340),
            _ => Some(3247),
        };
        (cost, 3)
    };
    let mut i = 0;
    let mut milli = 0u64;
    // The char attached in front of the next word: 0 none, b' ', or a punctuation byte.
    let mut lead = 0u8;
    while i < n {
        let c = b[i];
        if c.is_ascii_alphabetic() || c >= 0x80 {
            if c >= 0x80 {
                let (cost, len) = wide(i);
                if cost.is_none() {
                    milli += SYMBOL;
                    i += len;
                    lead = 0;
                    continue;
                }
            }
            let escape = i > 0 && b[i - 1] == b'\\';
            let (mut letters, mut pairs, mut first, mut wide_cost) = (0u64, 0u64, 0u64, 0u64);
            let (mut lower, mut prev) = (false, 0u8);
            while i < n {
                let x = b[i];
                if x.is_ascii_alphabetic() {
                    let upper = x < b'a';
                    if upper && lower {
                        break;
                    }
                    lower |= !upper;
                    if prev != 0 {
                        let row = PAIRS[usize::from((prev | 0x20) - b'a')];
                        let v = LEVEL[((row >> (2 * ((x | 0x20) - b'a'))) & 3) as usize];
                        if letters == 1 {
                            first = v;
                        }
                        pairs += v;
                    }
                    prev = x;
                    letters += 1;
                    i += 1;
                } else if x >= 0x80 {
                    let (cost, len) = wide(i);
                    let Some(cost) = cost else { break };
                    wide_cost += cost;
                    lower = true;
                    prev = 0;
                    i += len;
                } else {
                    break;
                }
            }
            // 's 't 're 've 'm 'll 'd stay in the word.
            if at(i) == b'\'' {
                let len = match (at(i + 1) | 0x20, at(i + 2) | 0x20) {
                    (b'r', b'e') | (b'v', b'e') | (b'l', b'l') => 3,
                    (b's' | b't' | b'm' | b'd', _) => 2,
                    _ => 0,
                };
                if len > 0 && !at(i + len).is_ascii_alphabetic() {
                    i += len;
                }
            }
            let mut tok = if letters > 0 {
                let mut w = pairs - first * 59 / 1000 + (letters * 122).saturating_sub(1065);
                if !lower && letters > 1 {
                    w = w * 1093 / 1000 + letters * 104; // all caps
                }
                1000 + w + wide_cost
            } else {
                wide_cost.max(1000)
            };
            if escape {
                tok = if letters > 1 { tok - first * 941 / 1000 + 765 } else { 1000 };
            } else if lead != 0 && lead != b' ' {
                tok += 162;
            }
            milli += tok;
            lead = 0;
        } else if c.is_ascii_digit() {
            let s = i;
            while i < n && b[i].is_ascii_digit() {
                i += 1;
            }
            milli += (i - s).div_ceil(3) as u64 * 1000 + if lead != 0 { 1000 } else { 0 };
            lead = 0;
        } else if matches!(c, b' ' | b'\t' | 0x0b | 0x0c) {
            let s = i;
            while i < n && matches!(b[i], b' ' | b'\t' | 0x0b | 0x0c) {
                i += 1;
            }
            let many = i - s > 1;
            let next = at(i);
            if i < n && matches!(next, b'\n' | b'\r') {
                // spaces before a newline join the newline's piece
            } else if i < n && !next.is_ascii_digit() {
                milli += if many { 1000 } else { 0 };
                lead = b' ';
            } else {
                milli += if many { 2000 } else { 1000 };
            }
        } else if matches!(c, b'\n' | b'\r') {
            while i < n && matches!(b[i], b'\n' | b'\r') {
                i += 1;
            }
            milli += 1000;
            lead = 0;
        } else {
            // ASCII punctuation run
            let s = i;
            let mut changes = 0u64;
            i += 1;
            while i < n
                && b[i] < 0x80
                && !b[i].is_ascii_alphanumeric()
                && !b[i].is_ascii_whitespace()
                && b[i] != 0x0b
            {
                changes += u64::from(b[i] != b[i - 1]);
                i += 1;
            }
            let k = (i - s) as u64;
            if k == 1 && lead == 0 && i < n && (b[i].is_ascii_alphabetic() || b[i] >= 0x80) {
                lead = c;
                continue;
            }
            let repeats = k - 1 - changes;
            let changes = changes + u64::from(lead == b' ');
            milli += 1000 + (changes * 1103).saturating_sub(2227) + repeats * 102;
            while i < n && matches!(b[i], b'\n' | b'\r' | b'/') {
                i += 1;
            }
            lead = 0;
        }
    }
    (milli + 500) / 1000
}
