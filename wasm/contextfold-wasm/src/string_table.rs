//! Long strings of a result sent beside its JSON text, as one table of UTF-16 code units.
//!
//! When the caller holds no JS copy of the events' strings (events given as JSONL, or held by an
//! `EventLog`), a projection's long texts and tool outputs must cross back into JS. As JSON text
//! they cost a JSON escaping in wasm and a `JSON.parse` scan in JS of nearly every byte of the
//! result. Instead, each string of at least [`MIN_TABLE_BYTES`] bytes is moved out of the value
//! (written as `null`), its UTF-16 code units appended to one table, and listed with where it goes
//! and its range in the table. The wrapper turns the table into one JS string with a copy and
//! puts `table.slice(start, end)` at each place (V8 makes such a slice without copying). The
//! result is the same value either way.

use serde::Serialize;
use serde_json::Value;

use crate::utf16::utf16_units_into;
use crate::shared_strings::Step;

/// Shorter strings stay in the JSON text: each table entry costs a path and a JS assignment.
pub const MIN_TABLE_BYTES: usize = 256;

/// A string moved into the table: `table.slice(start, end)` goes at `at`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TableString {
    /// Path of the string in the value it was moved out of (a projection's `messages`).
    pub at: Vec<Step>,
    /// First UTF-16 code unit in the table.
    pub start: usize,
    /// One past its last code unit.
    pub end: usize,
}

/// Moves every long string of `value` into `table` (UTF-16 code units) and lists them.
pub fn move_long_strings(value: &mut Value, table: &mut Vec<u16>) -> Vec<TableString> {
    let mut moved = Vec::new();
    move_in(value, &mut Vec::new(), table, &mut moved);
    moved
}

fn move_in(
    value: &mut Value,
    at: &mut Vec<Step>,
    table: &mut Vec<u16>,
    moved: &mut Vec<TableString>,
) {
    match value {
        Value::String(text) if text.len() >= MIN_TABLE_BYTES => {
            let start = table.len();
            utf16_units_into(text, table);
            moved.push(TableString { at: at.clone(), start, end: table.len() });
            *value = Value::Null;
        }
        Value::Array(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                at.push(Step::Index(index));
                move_in(item, at, table, moved);
                at.pop();
            }
        }
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                at.push(Step::Key(key.clone()));
                move_in(item, at, table, moved);
                at.pop();
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn long_strings_move_into_the_table_and_come_back() {
        let long = "🚀 output é 测试 ".repeat(30);
        let other = "x".repeat(MIN_TABLE_BYTES);
        let original = json!([{ "content": [{ "value": long, "short": "s" }] }, other]);
        let mut value = original.clone();
        let mut table = Vec::new();
        let moved = move_long_strings(&mut value, &mut table);
        assert_eq!(value, json!([{ "content": [{ "value": null, "short": "s" }] }, null]));
        assert_eq!(moved.len(), 2);
        assert_eq!(
            serde_json::to_value(&moved[0]).expect("json"),
            json!({ "at": [0, "content", 0, "value"], "start": 0, "end": long.encode_utf16().count() })
        );
        for entry in &moved {
            let text = String::from_utf16(&table[entry.start..entry.end]).expect("utf16");
            let place = entry.at.iter().fold(&original, |v, step| match step {
                Step::Key(key) => &v[key.as_str()],
                Step::Index(index) => &v[*index],
            });
            assert_eq!(place, &Value::String(text));
        }
    }
}
