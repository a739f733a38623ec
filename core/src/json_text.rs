//! Compact JSON text of a [`Value`], byte for byte what `serde_json::to_string` writes.
//!
//! The npm package hands large results to JavaScript as JSON text, and token estimates measure
//! the JSON text of tool inputs and outputs. serde_json's generic serializer writes that text
//! through code that is only fast where the compiler inlines it all, and the package's module is
//! built for size. This writer is one non-generic function over [`Value`], sharing the digest's
//! string escaping (clean runs found eight bytes at a time, see [`crate::digest`]): objects keep
//! their key order, there is no whitespace, strings are escaped as serde_json (and
//! `JSON.stringify`) escape them, and numbers are spelled by serde_json's own `Display`.

use std::fmt::Write;

use serde_json::Value;

use crate::digest::jcs;

/// The compact JSON text of `value`, the same bytes as `serde_json::to_string(value)`.
///
/// ```
/// use serde_json::json;
/// let value = json!({ "b": [1, 2.5, null], "a": "line\n\"quoted\" é" });
/// assert_eq!(
///     contextfold_core::json_text::json_text(&value),
///     r#"{"b":[1,2.5,null],"a":"line\n\"quoted\" é"}"#
/// );
/// ```
pub fn json_text(value: &Value) -> String {
    let mut text = String::new();
    write_json_text(value, &mut text);
    text
}

/// Appends the compact JSON text of `value` to `out` (see [`json_text`]).
pub fn write_json_text(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        // Writing to a `String` cannot fail.
        Value::Number(number) => write!(out, "{number}").unwrap_or(()),
        Value::String(text) => jcs::write_string(out, text),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_json_text(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (index, (key, item)) in map.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                jcs::write_string(out, key);
                out.push(':');
                write_json_text(item, out);
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_keys_numbers_and_nesting_match_serde_json_byte_for_byte() {
        let every_control: String = (0u8..0x20).map(char::from).collect();
        let texts = [
            String::new(),
            every_control,
            "\"quoted\" \\ back / slash \u{7f} \u{2028} \u{2029} é 测试 🦀".to_owned(),
            "clean ascii that runs past one eight-byte word".repeat(3),
            "a\"b\\c\nd\te".repeat(5),
        ];
        let numbers =
            json!([0, -0.0, 1, -1, 2.5, 1e21, 1e-7, 123456789012345678u64, -42, 0.1, 1.0]);
        for text in &texts {
            let value = json!({ text.clone(): [text, { "k": text }], "z": null, "a": true, "m": false, "n": numbers });
            assert_eq!(json_text(&value), serde_json::to_string(&value).expect("json"));
        }
    }
}
