//! Long strings of a result sent beside its JSON text, as one table of UTF-16 code units.
//!
//! When the caller holds no JS copy of the events' strings (events given as JSONL, or held by an
//! `EventLog`), a projection's long texts and tool outputs must cross back into JS. As JSON text
//! they cost a JSON escaping in wasm and a `JSON.parse` scan in JS of nearly every byte of the
//! result. Instead, each string of at least [`MIN_TABLE_BYTES`] bytes is moved out of the value
//! (written as `null`), its UTF-16 code units written to one table, and listed with where it goes
//! and its range in the table. The JSON text of the rest of the result follows in the same table.
//!
//! The table stays in wasm memory, in a buffer reused by the next call ([`OutputTable`]): the
//! wrapper reads it straight from the module's memory (`[memory, address, tableUnits,
//! totalUnits]`, see [`OutputTable::to_js`]), makes one JS string of it with one copy, parses
//! its JSON part and puts `table.slice(start, end)` at each listed place (V8 makes such a slice
//! without copying). The result is the same value either way.

use std::cell::RefCell;

use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::JsValue;

use contextfold_core::binding::PathStep;

/// One step of a path into a JSON value: an object key or an array index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Step {
    /// An object member.
    Key(String),
    /// An array element.
    Index(usize),
}

/// The owned steps of a path of the core's JSON writer.
pub fn steps_of(path: &[PathStep<'_>]) -> Vec<Step> {
    path.iter()
        .map(|step| match step {
            PathStep::Key(key) => Step::Key(key.to_string()),
            PathStep::Index(index) => Step::Index(*index),
        })
        .collect()
}

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

/// Moves every long string of `value` into `table` (UTF-16 code units, written after what it
/// holds) and lists them. The strings are moved, not copied: each is transcoded once into a
/// table grown once to the size they need.
pub fn move_long_strings(value: &mut Value, table: &mut Vec<u16>) -> Vec<TableString> {
    let mut taken = Vec::new();
    take_long_strings(value, &mut Vec::new(), &mut taken);
    // A UTF-8 string never has more UTF-16 code units than bytes.
    table.reserve(taken.iter().map(|(_, text)| text.len()).sum::<usize>());
    taken
        .into_iter()
        .map(|(at, text)| {
            let start = table.len();
            table.extend(text.encode_utf16());
            TableString { at, start, end: table.len() }
        })
        .collect()
}

fn take_long_strings(value: &mut Value, at: &mut Vec<Step>, taken: &mut Vec<(Vec<Step>, String)>) {
    match value {
        Value::String(text) if text.len() >= MIN_TABLE_BYTES => {
            taken.push((at.clone(), std::mem::take(text)));
            *value = Value::Null;
        }
        Value::Array(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                at.push(Step::Index(index));
                take_long_strings(item, at, taken);
                at.pop();
            }
        }
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                at.push(Step::Key(key.clone()));
                take_long_strings(item, at, taken);
                at.pop();
            }
        }
        _ => {}
    }
}

thread_local! {
    /// The code units of the last [`OutputTable`], kept for the wrapper to read and reused
    /// (cleared, its capacity kept) by the next one.
    static LAST_TABLE: RefCell<Vec<u16>> = const { RefCell::new(Vec::new()) };
}

/// A result's long strings and its JSON text, as UTF-16 code units for the wrapper.
#[derive(Debug, Default)]
pub struct OutputTable {
    units: Vec<u16>,
}

impl OutputTable {
    /// An empty table in the reused buffer (whose last contents the wrapper has read: every
    /// call that hands one out returns before the next starts).
    pub fn reuse() -> Self {
        let mut units = LAST_TABLE.with(|last| std::mem::take(&mut *last.borrow_mut()));
        units.clear();
        OutputTable { units }
    }

    /// Moves the long strings of `value` into the table (see [`move_long_strings`]).
    pub fn move_long_strings(&mut self, value: &mut Value) -> Vec<TableString> {
        move_long_strings(value, &mut self.units)
    }

    /// Moves `text`, at `at` in the result, into the table (the writer leaves `null` there).
    pub fn push_string(&mut self, at: Vec<Step>, text: &str) -> TableString {
        let start = self.units.len();
        self.units.extend(text.encode_utf16());
        TableString { at, start, end: self.units.len() }
    }

    /// Hands the table to the wrapper with `json` (the result's JSON text) after its strings:
    /// `[memory, address, tableUnits, totalUnits]`, the units being at `address` in the
    /// module's `memory` until the next call that returns a table.
    pub fn to_js(mut self, json: &str) -> JsValue {
        let table_units = self.units.len();
        self.units.extend(json.encode_utf16());
        let address = self.units.as_ptr() as usize;
        let total_units = self.units.len();
        LAST_TABLE.with(|last| *last.borrow_mut() = self.units);
        let array = js_sys::Array::new();
        array.push(&wasm_bindgen::memory());
        for number in [address, table_units, total_units] {
            array.push(&JsValue::from_f64(number as f64));
        }
        array.into()
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
