//! The generic path: JCS (RFC 8785) of any `serde_json::Value`, written independently of the
//! streaming writer in [`super::jcs`] (char-wise escaping, iterator-based UTF-16 key order,
//! decimal integers) so that the two can check each other.

use std::fmt::Write as _;

use serde_json::{Number, Value};

/// Integers with an absolute value up to 2^53 are exact IEEE-754 doubles.
const MAX_EXACT_INTEGER: u64 = 1 << 53;

/// Canonical JSON (RFC 8785 / JCS) of `value`.
///
/// Objects have their keys sorted by UTF-16 code units, there is no whitespace, strings escape
/// only `"`, `\` and control characters, and every number is written as the ECMAScript
/// `Number::toString` of the nearest IEEE-754 double (integers beyond ±2^53 are therefore
/// rounded, exactly as `JSON.parse` rounds them). See `docs/digest.md`.
///
/// ```
/// let value = serde_json::json!({"b": [1.0, -0.0, 1e21], "a": "\u{1}\"é"});
/// assert_eq!(
///     contextfold_core::digest::canonical_json(&value),
///     r#"{"a":"\u0001\"é","b":[1,0,1e+21]}"#
/// );
/// ```
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    append_value(&mut out, value);
    out
}

fn append_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Number(number) => append_number(out, number),
        Value::String(text) => append_string(out, text),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                append_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            crate::sort::sort_by(&mut keys, |a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (index, key) in keys.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                append_string(out, key);
                out.push(':');
                if let Some(item) = map.get(key) {
                    append_value(out, item);
                }
            }
            out.push('}');
        }
    }
}

fn append_number(out: &mut String, number: &Number) {
    if let Some(unsigned) = number.as_u64().filter(|n| *n <= MAX_EXACT_INTEGER) {
        let _ = write!(out, "{unsigned}");
    } else if let Some(signed) = number.as_i64().filter(|n| n.unsigned_abs() <= MAX_EXACT_INTEGER) {
        let _ = write!(out, "{signed}");
    } else if let Some(float) = number.as_f64().filter(|f| f.is_finite()) {
        out.push_str(ryu_js::Buffer::new().format_finite(float));
    } else {
        out.push_str(&number.to_string());
    }
}

fn append_string(out: &mut String, text: &str) {
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            control if u32::from(control) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(control));
            }
            other => out.push(other),
        }
    }
    out.push('"');
}
