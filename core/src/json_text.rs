//! Compact JSON text of a [`Value`], byte for byte what `serde_json::to_string` writes.
//!
//! The npm package hands large results to JavaScript as JSON text, and token estimates measure
//! the JSON text of tool inputs and outputs. serde_json's generic serializer writes that text
//! through code that is only fast where the compiler inlines it all, and the package's module is
//! built for size. This writer ([`JsonWriter`]) is non-generic over [`Value`], sharing the digest's
//! string escaping (clean runs found eight bytes at a time, see [`crate::digest`]): objects keep
//! their key order, there is no whitespace, strings are escaped as serde_json (and
//! `JSON.stringify`) escape them, and numbers are spelled by serde_json's own `Display`.

use std::borrow::Cow;
use std::fmt::Write;

use serde_json::Value;

use crate::digest::jcs;

/// The compact JSON text of `value`, the same bytes as `serde_json::to_string(value)`.
///
/// ```
/// use serde_json::json;
/// let value = json!({ "b": [1, 2.5, null], "a": "line\n\"quoted\" é" });
/// assert_eq!(
///     contextfold_core::binding::json_text(&value),
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
    let mut writer = JsonWriter::new(std::mem::take(out), None);
    writer.value(value);
    *out = writer.finish();
}

/// One step of the path to a value inside the JSON text being written: an object member or an
/// array element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathStep<'a> {
    /// An object member.
    Key(Cow<'a, str>),
    /// An array element.
    Index(usize),
}

/// Decides, for each string a [`JsonWriter`] is about to write, whether it is left out of the
/// text (written as `null`; the hook keeps what it needs): given the path of the string from
/// the writer's root and its text.
pub type StringHook<'h> = &'h mut dyn FnMut(&[PathStep<'_>], &str) -> bool;

/// Writes compact JSON text piece by piece, in the form of [`write_json_text`], keeping the path
/// of the value being written so that a [`StringHook`] can take strings out. For callers that
/// write JSON straight from their own types instead of building a [`Value`] first.
pub struct JsonWriter<'a, 'h> {
    out: String,
    path: Vec<PathStep<'a>>,
    /// No member or element written yet in the innermost open container.
    first: bool,
    hook: Option<StringHook<'h>>,
}

impl std::fmt::Debug for JsonWriter<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonWriter").field("bytes", &self.out.len()).finish_non_exhaustive()
    }
}

impl<'a, 'h> JsonWriter<'a, 'h> {
    /// A writer appending to `out`, asking `hook` (if any) about every string.
    pub fn new(out: String, hook: Option<StringHook<'h>>) -> Self {
        JsonWriter { out, path: Vec::new(), first: true, hook }
    }

    /// The text written.
    pub fn finish(self) -> String {
        self.out
    }

    /// Opens an object; its members follow as [`Self::key`] then a value.
    pub fn begin_object(&mut self) {
        self.open('{');
    }

    /// Closes the innermost object.
    pub fn end_object(&mut self) {
        self.close('}');
    }

    /// Opens an array; its elements follow as [`Self::item`] then a value.
    pub fn begin_array(&mut self) {
        self.open('[');
    }

    /// Closes the innermost array.
    pub fn end_array(&mut self) {
        self.close(']');
    }

    /// Starts the member `key` of the innermost object: its value is written next.
    pub fn key(&mut self, key: impl Into<Cow<'a, str>>) {
        self.separate();
        let key = key.into();
        jcs::write_string(&mut self.out, &key);
        self.out.push(':');
        if let Some(last) = self.path.last_mut() {
            *last = PathStep::Key(key);
        }
    }

    /// Starts element `index` of the innermost array: its value is written next.
    pub fn item(&mut self, index: usize) {
        self.separate();
        if let Some(last) = self.path.last_mut() {
            *last = PathStep::Index(index);
        }
    }

    /// Writes a string, or `null` when the hook takes it.
    pub fn string(&mut self, text: &str) {
        if let Some(hook) = self.hook.as_mut()
            && hook(&self.path, text)
        {
            self.out.push_str("null");
            return;
        }
        jcs::write_string(&mut self.out, text);
    }

    /// Writes a boolean.
    pub fn bool(&mut self, value: bool) {
        self.out.push_str(if value { "true" } else { "false" });
    }

    /// Writes any value borrowed for the writer's lifetime (object keys go into the path).
    pub fn value(&mut self, value: &'a Value) {
        match value {
            Value::String(text) => self.string(text),
            Value::Array(items) => {
                self.begin_array();
                for (index, item) in items.iter().enumerate() {
                    self.item(index);
                    self.value(item);
                }
                self.end_array();
            }
            Value::Object(map) => {
                self.begin_object();
                for (key, item) in map {
                    self.key(key.as_str());
                    self.value(item);
                }
                self.end_object();
            }
            Value::Null => self.out.push_str("null"),
            Value::Bool(value) => self.bool(*value),
            // Writing to a `String` cannot fail.
            Value::Number(number) => write!(self.out, "{number}").unwrap_or(()),
        }
    }

    /// Writes a value that lives shorter than the writer (one built while writing): the same
    /// text and hook, with the path as it is.
    pub fn temporary_value(&mut self, value: &Value) {
        let mut writer = JsonWriter {
            out: std::mem::take(&mut self.out),
            path: self.path.clone(),
            first: self.first,
            hook: self
                .hook
                .as_mut()
                .map(|hook| &mut **hook as &mut dyn FnMut(&[PathStep<'_>], &str) -> bool),
        };
        writer.value(value);
        self.first = writer.first;
        self.out = writer.out;
    }

    fn open(&mut self, bracket: char) {
        self.out.push(bracket);
        self.path.push(PathStep::Index(0));
        self.first = true;
    }

    fn close(&mut self, bracket: char) {
        self.out.push(bracket);
        self.path.pop();
        self.first = false;
    }

    fn separate(&mut self) {
        if self.first {
            self.first = false;
        } else {
            self.out.push(',');
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
