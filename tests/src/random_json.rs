//! Seeded random text and JSON values that stress canonicalization: many scripts, combining
//! marks, emoji (astral), controls, escapes, keys whose UTF-16 order differs from UTF-8 order,
//! integers around ±2^53 and floats in exponent form.

use serde_json::{Map, Number, Value};

use crate::prng::SplitMix64;

/// Words and fragments random text is built from.
const FRAGMENTS: &[&str] = &[
    "the",
    "tests",
    "fail",
    "cargo test -p core",
    "src/lib.rs:42",
    "fn main() {}",
    "SELECT * FROM t;",
    "日本語",
    "中文字符",
    "한국어",
    "Ελληνικά",
    "עברית",
    "العربية",
    "हिन्दी",
    "😀",
    "👩\u{200d}💻",
    "🏳\u{fe0f}\u{200d}🌈",
    "e\u{301}",
    "a\u{308}\u{323}",
    "\t",
    "\n",
    "\r\n",
    "\"quoted\"",
    "back\\slash",
    "</script>",
    "\u{0}",
    "\u{1b}[31m",
    "\u{7f}",
    "\u{2028}",
    "\u{feff}",
    "\u{ffff}",
    "\u{10000}",
    "\u{10ffff}",
    "",
];

/// Object keys, including pairs whose UTF-16 order differs from their code-point order
/// (U+E000..U+FFFF against astral characters).
const KEYS: &[&str] = &[
    "a",
    "b",
    "A",
    "Z",
    "_",
    "aa",
    "a b",
    "",
    "id",
    "path",
    "é",
    "ß",
    "日",
    "\u{e000}",
    "\u{ff61}",
    "\u{fffd}",
    "😀",
    "\u{10000}",
    "\u{1f600}x",
    "\n",
    "\"",
    "\u{7f}",
];

/// Random text of up to `max_fragments` fragments, separated by spaces.
pub(crate) fn random_text(prng: &mut SplitMix64, max_fragments: u64) -> String {
    let count = prng.below(max_fragments + 1);
    let mut text = String::new();
    for index in 0..count {
        if index > 0 {
            text.push(' ');
        }
        let fragment: &&str = prng.pick(FRAGMENTS);
        text.push_str(fragment);
    }
    text
}

/// A random key from [`KEYS`], sometimes with a short suffix.
pub(crate) fn random_key(prng: &mut SplitMix64) -> String {
    let mut key = (*prng.pick(KEYS)).to_owned();
    if prng.chance(1, 3) {
        key.push_str(&prng.below(10).to_string());
    }
    key
}

/// A random number: small, large or negative integers, values around ±2^53, or a float
/// `m × 10^e` with `m < 2^53` and `|e| ≤ 22` (exactly parsed by every JSON reader).
pub(crate) fn random_number(prng: &mut SplitMix64) -> Number {
    match prng.below(6) {
        0 => Number::from(prng.range(-1000, 1000)),
        1 => Number::from(prng.next_u64()),
        2 => Number::from(prng.next_u64() as i64),
        3 => Number::from((1i64 << 53) + prng.range(-3, 3)),
        4 => Number::from(-(1i64 << 53) + prng.range(-3, 3)),
        _ => {
            let mantissa = prng.below(1 << 53) as f64;
            let exponent = prng.range(-22, 22) as i32;
            let scale = 10f64.powi(exponent.abs());
            let magnitude = if exponent < 0 { mantissa / scale } else { mantissa * scale };
            let signed = if prng.chance(1, 2) { -magnitude } else { magnitude };
            Number::from_f64(signed).unwrap_or_else(|| Number::from(0))
        }
    }
}

/// A random JSON value nested at most `depth` levels.
pub(crate) fn random_value(prng: &mut SplitMix64, depth: u32) -> Value {
    let kinds = if depth == 0 { 4 } else { 6 };
    match prng.below(kinds) {
        0 => [Value::Null, Value::Bool(true), Value::Bool(false)][prng.below(3) as usize].clone(),
        1 => Value::Number(random_number(prng)),
        2 | 3 => Value::String(random_text(prng, 6)),
        4 => Value::Array((0..prng.below(4)).map(|_| random_value(prng, depth - 1)).collect()),
        _ => Value::Object(random_object(prng, depth - 1)),
    }
}

/// A random JSON object with up to four entries nested at most `depth` levels.
pub(crate) fn random_object(prng: &mut SplitMix64, depth: u32) -> Map<String, Value> {
    let mut map = Map::new();
    for _ in 0..prng.below(5) {
        let key = random_key(prng);
        let value = random_value(prng, depth);
        map.insert(key, value);
    }
    map
}
