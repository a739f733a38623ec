//! Streaming RFC 8785 (JCS) primitives: strings, numbers, key order and free-form values.
//!
//! Everything here writes into a [`CanonicalSink`], so the same code produces a `String` (for
//! [`super::canonical_event_json`]) and feeds SHA-256 through a fixed buffer (for
//! [`super::PrefixHasher`]). No `serde_json::Value` is built; objects are sorted in place by
//! borrowing their entries.

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

/// Where canonical text goes. Every write is a complete UTF-8 `&str`.
pub(crate) trait CanonicalSink {
    /// Appends `text`.
    fn write_str(&mut self, text: &str);

    /// Appends `text` as a JCS string literal. The default writes clean runs whole; a sink
    /// with a byte buffer may override it with a faster path producing the same bytes.
    fn write_json_string(&mut self, text: &str)
    where
        Self: Sized,
    {
        write_string_by_runs(self, text);
    }
}

impl CanonicalSink for String {
    fn write_str(&mut self, text: &str) {
        self.push_str(text);
    }
}

/// JCS escapes for the 32 control characters U+0000..U+001F: the five short forms
/// (`\b \t \n \f \r`) and `\u00xx` with lowercase hex for the rest.
pub(crate) const CONTROL_ESCAPES: [&str; 32] = [
    "\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007", "\\b",
    "\\t", "\\n", "\\u000b", "\\f", "\\r", "\\u000e", "\\u000f", "\\u0010", "\\u0011", "\\u0012",
    "\\u0013", "\\u0014", "\\u0015", "\\u0016", "\\u0017", "\\u0018", "\\u0019", "\\u001a",
    "\\u001b", "\\u001c", "\\u001d", "\\u001e", "\\u001f",
];

/// Writes `text` as a JCS string literal through the sink's string path.
#[inline]
pub(crate) fn write_string<S: CanonicalSink>(sink: &mut S, text: &str) {
    sink.write_json_string(text);
}

/// Writes `text` as a JCS string literal. Clean runs (no byte needing an escape) are found
/// eight bytes at a time by [`find_escape`] and written as whole slices; only `"`, `\` and
/// control characters are escaped (all ASCII, so every slice boundary is a char boundary).
fn write_string_by_runs<S: CanonicalSink>(sink: &mut S, text: &str) {
    let bytes = text.as_bytes();
    sink.write_str("\"");
    let mut run_start = 0;
    loop {
        let escape_at = find_escape(bytes, run_start);
        if run_start < escape_at {
            sink.write_str(&text[run_start..escape_at]);
        }
        let Some(&byte) = bytes.get(escape_at) else { break };
        sink.write_str(escape_for(byte));
        run_start = escape_at + 1;
    }
    sink.write_str("\"");
}

/// The escape sequence of a byte that [`needs_escape`].
pub(crate) fn escape_for(byte: u8) -> &'static str {
    match byte {
        b'"' => "\\\"",
        b'\\' => "\\\\",
        _ => CONTROL_ESCAPES[usize::from(byte & 0x1f)],
    }
}

/// Whether JCS escapes `byte` inside a string: `"`, `\` and U+0000..U+001F.
fn needs_escape(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

/// `0x01` in every byte of a word.
const ONES: u64 = 0x0101_0101_0101_0101;
/// `0x7f` in every byte of a word.
const LOW_SEVEN: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// `0x80` in each byte of `word` that is zero, `0` elsewhere. Exact: the addition never
/// carries across bytes (`0x7f + 0x7f < 0x100`).
#[inline(always)]
fn zero_bytes(word: u64) -> u64 {
    !(((word & LOW_SEVEN).wrapping_add(LOW_SEVEN)) | word | LOW_SEVEN)
}

/// `0x80` in each byte of `word` that [`needs_escape`], `0` elsewhere: a control character has
/// its top three bits clear; `"` and `\` are found by comparing with a word of them.
#[inline(always)]
pub(crate) fn escape_mask(word: u64) -> u64 {
    zero_bytes(word & (ONES * 0xe0))
        | zero_bytes(word ^ (ONES * u64::from(b'"')))
        | zero_bytes(word ^ (ONES * u64::from(b'\\')))
}

/// The index of the first byte at or after `from` that [`needs_escape`], or `bytes.len()`.
/// Reads eight bytes per step (SWAR); the little-endian load puts the first byte lowest, so
/// the lowest flagged byte is the first one.
#[inline]
pub(crate) fn find_escape(bytes: &[u8], from: usize) -> usize {
    let mut index = from;
    while let Some(chunk) = bytes.get(index..).and_then(<[u8]>::first_chunk::<8>) {
        let mask = escape_mask(u64::from_le_bytes(*chunk));
        if mask != 0 {
            return index + (mask.trailing_zeros() / 8) as usize;
        }
        index += 8;
    }
    while let Some(&byte) = bytes.get(index) {
        if needs_escape(byte) {
            return index;
        }
        index += 1;
    }
    bytes.len()
}

/// Writes an IEEE-754 double as ECMAScript `Number::toString` does (`-0` as `0`, exponent
/// form from `1e21` up and below `1e-6`). `value` must be finite.
pub(crate) fn write_f64<S: CanonicalSink>(sink: &mut S, value: f64) {
    let mut buffer = ryu_js::Buffer::new();
    sink.write_str(buffer.format_finite(value));
}

/// Writes an unsigned integer field under the digest's integer rule: the integer is taken as
/// the nearest IEEE-754 double (exact up to 2^53) and written as ECMAScript would.
pub(crate) fn write_u64<S: CanonicalSink>(sink: &mut S, value: u64) {
    // Up to 2^53 the double is the integer itself and ECMAScript writes its plain decimal
    // digits (exponent form starts at 1e21), so those are written without the float printer.
    if value <= 1 << 53 {
        let mut digits = [0u8; 20];
        let mut start = digits.len();
        let mut rest = value;
        loop {
            start -= 1;
            digits[start] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        if let Ok(text) = std::str::from_utf8(&digits[start..]) {
            sink.write_str(text);
            return;
        }
    }
    // `as` rounds to nearest, ties to even, exactly like a JSON parser reading the literal.
    write_f64(sink, value as f64);
}

/// Writes a JSON number under the digest's number rule (every number is a double).
pub(crate) fn write_number<S: CanonicalSink>(sink: &mut S, number: &Number) {
    match number.as_f64() {
        // Without serde_json's `arbitrary_precision` feature every number has an f64 view;
        // `as_f64` of an integer is the same round-to-nearest conversion as `write_u64`.
        Some(value) if value.is_finite() => write_f64(sink, value),
        _ => sink.write_str(&number.to_string()),
    }
}

/// Orders two object keys by their UTF-16 code units, as JCS requires.
///
/// Code-point (and UTF-8 byte) order differs from UTF-16 order only when a character in
/// U+E000..U+FFFF meets one above U+FFFF, whose leading surrogate (U+D800..U+DBFF) sorts first.
pub(crate) fn compare_utf16(left: &str, right: &str) -> Ordering {
    let mut left_chars = left.chars();
    let mut right_chars = right.chars();
    loop {
        match (left_chars.next(), right_chars.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(a), Some(b)) if a == b => {}
            (Some(a), Some(b)) => {
                let (mut a_units, mut b_units) = ([0u16; 2], [0u16; 2]);
                return a.encode_utf16(&mut a_units).cmp(&b.encode_utf16(&mut b_units));
            }
        }
    }
}

/// Writes any JSON value in JCS form: objects with keys sorted by UTF-16, no whitespace.
pub(crate) fn write_value<S: CanonicalSink>(sink: &mut S, value: &Value) {
    match value {
        Value::Null => sink.write_str("null"),
        Value::Bool(true) => sink.write_str("true"),
        Value::Bool(false) => sink.write_str("false"),
        Value::Number(number) => write_number(sink, number),
        Value::String(text) => write_string(sink, text),
        Value::Array(items) => {
            sink.write_str("[");
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    sink.write_str(",");
                }
                write_value(sink, item);
            }
            sink.write_str("]");
        }
        Value::Object(map) => write_object(sink, map),
    }
}

/// The entries of `map` in JCS order (by UTF-16 code units), borrowed. Not generic, and
/// sorted by the crate's one instance of std's sort ([`crate::sort`]): each instance is
/// several KB of wasm.
fn sorted_entries(map: &Map<String, Value>) -> Vec<(&str, &Value)> {
    let mut entries: Vec<(&str, &Value)> =
        map.iter().map(|(key, value)| (key.as_str(), value)).collect();
    crate::sort::sort_by(&mut entries, |a, b| compare_utf16(a.0, b.0));
    entries
}

/// Writes a JSON object in JCS form. Entries are borrowed and sorted; nothing is cloned.
pub(crate) fn write_object<S: CanonicalSink>(sink: &mut S, map: &Map<String, Value>) {
    sink.write_str("{");
    for (index, (key, value)) in sorted_entries(map).into_iter().enumerate() {
        if index > 0 {
            sink.write_str(",");
        }
        write_string(sink, key);
        sink.write_str(":");
        write_value(sink, value);
    }
    sink.write_str("}");
}
