//! Conversion between JavaScript values and the core's serde types, and error mapping.
//!
//! Fast path: the package's JavaScript wrapper passes every structured argument as JSON text
//! (`JSON.stringify`), read here into a `serde_json::Value` (the core's text reader) and from it
//! into the core's types by their serde derives (events by the core's own reader), and results
//! come back as JSON text for `JSON.parse`. Crossing the boundary as one string is far cheaper
//! than building or walking a JS object graph field by field.
//!
//! Tape: `JSON.stringify` cannot write a `BigInt`, so an argument holding one comes as a value
//! tape (a `DataView`, [`crate::tape`]) with its BigInts as exact integers; so do the events the
//! wrapper sends as plain objects, for speed. Results holding an integer
//! beyond 2^53 come back as JS objects with that integer as a `BigInt` instead of JSON text, so
//! 64-bit counts never lose precision. Every other number is a plain JS number.
//!
//! On the way in, every integral number is read as an integer, so a `seq` or `createdAtMs`
//! beyond 2^53 written as a double (`1e21`, or `2^64` rounded by `JSON.parse`) still fits the
//! core's `u64` fields: `2^64` reads as `u64::MAX`. This never changes a digest, because the
//! digest writes every number as the nearest double (see `docs/digest.md`).

use contextfold_core::binding::value_from_text;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Number, Value};
use wasm_bindgen::{JsCast, JsValue};

use crate::tape::from_tape;

/// 2^53: the largest integer below which every integer is a double.
const MAX_SAFE: u64 = 1 << 53;
/// 2^64 as a double (the double nearest to `u64::MAX`).
const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;

/// Why a binding call failed. Core errors keep the core's stable code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BindingError {
    /// An argument does not have the documented shape.
    #[error("invalid {what}: {detail}")]
    InvalidArgument {
        /// Which argument.
        what: String,
        /// What was wrong.
        detail: String,
    },
    /// A core function rejected its input; `code` is the core's stable reason code.
    #[error("{message}")]
    Core {
        /// The core's stable snake_case code.
        code: String,
        /// Human-readable detail.
        message: String,
    },
    /// A line of JSONL events is not an event, or its event breaks a log rule.
    #[error("events line {line}: {message}")]
    EventLine {
        /// 1-based line number.
        line: usize,
        /// The core's stable code (`event_*` or `log_*`).
        code: String,
        /// The core's message.
        message: String,
    },
    /// JSONL events bytes are not UTF-8.
    #[error("events line {line}: invalid UTF-8 at byte offset {offset}")]
    InvalidUtf8 {
        /// 1-based line number of the first invalid byte.
        line: usize,
        /// Byte offset of the first invalid byte.
        offset: usize,
    },
    /// A value tape written without the lone-surrogate check holds U+FFFD, which may stand for
    /// one: the wrapper checks its strings and writes it again ([`crate::tape`]).
    #[error("a value tape with unchecked strings holds U+FFFD")]
    UncheckedTape,
    /// A result could not be converted to a JavaScript value.
    #[error("cannot return {what}: {detail}")]
    Output {
        /// Which result.
        what: String,
        /// What failed.
        detail: String,
    },
}

impl BindingError {
    /// Stable machine-readable code carried by the JavaScript error.
    pub fn code(&self) -> &str {
        match self {
            BindingError::InvalidArgument { .. } => "invalid_argument",
            BindingError::Core { code, .. } => code,
            BindingError::EventLine { code, .. } => code,
            BindingError::InvalidUtf8 { .. } => "jsonl_invalid_utf8",
            BindingError::Output { .. } => "output_conversion",
            BindingError::UncheckedTape => "tape_unchecked_strings",
        }
    }

    /// The 1-based line of JSONL input an error is about.
    pub fn line(&self) -> Option<usize> {
        match self {
            BindingError::EventLine { line, .. } | BindingError::InvalidUtf8 { line, .. } => {
                Some(*line)
            }
            _ => None,
        }
    }

    /// A core error with its code.
    pub fn core(code: impl Into<String>, message: impl ToString) -> Self {
        BindingError::Core { code: code.into(), message: message.to_string() }
    }

    /// An argument error.
    pub fn invalid(what: &str, detail: impl ToString) -> Self {
        BindingError::InvalidArgument { what: what.to_owned(), detail: detail.to_string() }
    }
}

impl From<BindingError> for JsValue {
    fn from(error: BindingError) -> Self {
        let js = js_sys::Error::new(&error.to_string());
        js.set_name("ContextfoldError");
        // Setting a property on a fresh Error object cannot fail.
        let _ = js_sys::Reflect::set(&js, &"code".into(), &error.code().into());
        if let Some(line) = error.line() {
            let _ = js_sys::Reflect::set(&js, &"line".into(), &(line as f64).into());
        }
        js.into()
    }
}

/// Reads a JS argument as JSON: JSON text from the wrapper, a value tape ([`tape_bytes`]), or
/// `undefined` or `null` (null).
/// Integral numbers are read as integers.
pub fn json_from_js(value: JsValue, what: &str) -> Result<Value, BindingError> {
    let mut json: Value = match (value.as_string(), tape_bytes(&value)) {
        (Some(text), _) => value_from_text(&text).map_err(|e| BindingError::invalid(what, e))?,
        (None, Some(tape)) => from_tape(&tape?).map_err(|e| BindingError::invalid(what, e))?,
        (None, None) if value.is_undefined() || value.is_null() => Value::Null,
        (None, None) => return Err(BindingError::invalid(what, "not JSON text or a value tape")),
    };
    integral_numbers_as_integers(&mut json);
    Ok(json)
}

/// Reads a JS argument as a `T` (serde's derive over [`json_from_js`]); errors name `what`.
pub fn from_js<T: DeserializeOwned>(value: JsValue, what: &str) -> Result<T, BindingError> {
    from_json(json_from_js(value, what)?, what)
}

/// Reads a JSON value as a `T` (serde's derive); errors name `what`.
pub fn from_json<T: DeserializeOwned>(value: Value, what: &str) -> Result<T, BindingError> {
    serde_json::from_value(value).map_err(|e| BindingError::invalid(what, e))
}

/// Writes a core type for the wrapper (JSON text, or a JS value when it holds a large integer).
pub fn to_js<T: Serialize>(value: &T, what: &str) -> Result<JsValue, BindingError> {
    let json = contextfold_core::binding::to_value(value)
        .map_err(|e| BindingError::Output { what: what.to_owned(), detail: e.to_string() })?;
    json_to_js(json, what)
}

/// Writes a JSON value for the wrapper: JSON text, or — when it holds an integer beyond 2^53 —
/// a plain JS value with that integer as a `BigInt` (objects, never `Map`s).
pub fn json_to_js(json: Value, what: &str) -> Result<JsValue, BindingError> {
    if has_large_integer(&json) {
        return exact_js(&json).map_err(|e| BindingError::Output {
            what: what.to_owned(),
            detail: e.as_string().unwrap_or_else(|| "a property could not be set".to_owned()),
        });
    }
    serde_json::to_string(&json)
        .map(json_text_to_js)
        .map_err(|e| BindingError::Output { what: what.to_owned(), detail: e.to_string() })
}

/// JSON text at least this long goes to JavaScript as UTF-16 code units (see [`json_text_to_js`]).
pub const UTF16_RESULT_MIN_BYTES: usize = 64 * 1024;

/// Hands JSON text to the wrapper: a JS string, or — from [`UTF16_RESULT_MIN_BYTES`] on — a
/// `Uint16Array` of its UTF-16 code units, which the wrapper turns into a string with a plain
/// copy (`Buffer#toString('ucs2')` in Node, `TextDecoder('utf-16le')` in browsers). Transcoding
/// in wasm and copying is several times faster than Node 20's UTF-8 decoding of a JS string
/// result when the text is mostly non-ASCII (measured in docs/npm.md, "Speed in Node").
pub fn json_text_to_js(text: String) -> JsValue {
    if text.len() < UTF16_RESULT_MIN_BYTES {
        return JsValue::from(text);
    }
    // A text has at most as many UTF-16 units as UTF-8 bytes: reserved once, never regrown.
    let mut units = Vec::with_capacity(text.len());
    units.extend(text.encode_utf16());
    js_sys::Uint16Array::from(units.as_slice()).into()
}

/// Builds the JS value of `json` with integers beyond 2^53 as `BigInt`s.
fn exact_js(json: &Value) -> Result<JsValue, JsValue> {
    Ok(match json {
        Value::Null => JsValue::NULL,
        Value::Bool(b) => JsValue::from_bool(*b),
        Value::String(text) => JsValue::from_str(text),
        Value::Number(number) => match (number.as_u64(), number.as_i64()) {
            (Some(n), _) if n > MAX_SAFE => js_sys::BigInt::from(n).into(),
            (None, Some(n)) if n.unsigned_abs() > MAX_SAFE => js_sys::BigInt::from(n).into(),
            _ => JsValue::from_f64(number.as_f64().unwrap_or(f64::NAN)),
        },
        Value::Array(items) => {
            let array = js_sys::Array::new();
            for item in items {
                array.push(&exact_js(item)?);
            }
            array.into()
        }
        Value::Object(map) => {
            let object = js_sys::Object::new();
            for (key, item) in map {
                js_sys::Reflect::set(&object, &key.into(), &exact_js(item)?)?;
            }
            object.into()
        }
    })
}

/// The bytes of a value tape ([`crate::tape`]), which the wrapper passes as a `DataView` (JSONL
/// comes as a `Uint8Array`, JSON text as a string), copied into wasm memory; refused when its
/// strings may hold a lone surrogate ([`crate::tape::check_strings`]).
pub fn tape_bytes(value: &JsValue) -> Option<Result<Vec<u8>, BindingError>> {
    let view = value.dyn_ref::<js_sys::DataView>()?;
    let (offset, length) = (view.byte_offset() as u32, view.byte_length() as u32);
    let bytes = js_sys::Uint8Array::new_with_byte_offset_and_length(&view.buffer(), offset, length)
        .to_vec();
    Some(crate::tape::check_strings(&bytes).map(|()| bytes))
}

/// Whether `value` is a value tape that holds a `BigInt` (its first byte is 1).
pub fn is_exact_tape(value: &JsValue) -> bool {
    value.dyn_ref::<js_sys::DataView>().is_some_and(|v| v.byte_length() > 0 && v.get_uint8(0) == 1)
}

fn is_large(number: &Number) -> bool {
    number.as_u64().is_some_and(|n| n > MAX_SAFE)
        || number.as_i64().is_some_and(|n| n.unsigned_abs() > MAX_SAFE)
}

/// Whether `json` holds an integer beyond ±2^53 (which a JS number cannot hold exactly).
pub fn has_large_integer(json: &Value) -> bool {
    match json {
        Value::Number(number) => is_large(number),
        Value::Array(items) => items.iter().any(has_large_integer),
        Value::Object(map) => map.values().any(has_large_integer),
        _ => false,
    }
}

/// Rewrites every integral double as an integer (saturating at `u64::MAX` for `2^64`).
pub fn integral_numbers_as_integers(value: &mut Value) {
    match value {
        Value::Number(number) => {
            if let Some(x) = number.as_f64().filter(|_| number.is_f64())
                && x.fract() == 0.0
            {
                if (0.0..=TWO_POW_64).contains(&x) {
                    *number = Number::from(x as u64);
                } else if (-9.223_372_036_854_776e18..0.0).contains(&x) {
                    *number = Number::from(x as i64);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_numbers_as_integers),
        Value::Object(map) => map.values_mut().for_each(integral_numbers_as_integers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integral_doubles_become_integers_and_back() {
        let mut value = json!([1.0, 2.5, 18446744073709551616.0, -3.0, 9007199254740994.0]);
        integral_numbers_as_integers(&mut value);
        assert_eq!(value, json!([1, 2.5, u64::MAX, -3, 9007199254740994u64]));
        assert!(has_large_integer(&value));
        assert!(!has_large_integer(&json!({ "seq": 9007199254740992u64, "x": [1.5, -3] })));
    }
}
