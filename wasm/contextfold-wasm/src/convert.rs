//! Conversion between JavaScript values and the core's serde types, and error mapping.
//!
//! Inputs go JS → [`serde_json::Value`] (through `serde-wasm-bindgen`) → core type. On the
//! way in, every integral JS number is read as an integer, so a `seq` or `createdAtMs` beyond
//! 2^53 (already rounded by `JSON.parse`) still fits the core's `u64` fields: `2^64` reads as
//! `u64::MAX`. This never changes a digest, because the digest writes every number as the
//! nearest double (see `docs/digest.md`). `BigInt` values are read exactly.
//!
//! Outputs go core type → [`serde_json::Value`] → JS with
//! [`serde_wasm_bindgen::Serializer::json_compatible`], so objects come out as plain objects
//! (never `Map`s). Integers beyond ±2^53 come out as the nearest double, exactly what
//! `JSON.parse` of the core's JSON would give; counts in practice stay far below 2^53.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Number, Value};
use wasm_bindgen::JsValue;

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
            BindingError::Output { .. } => "output_conversion",
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
        js.into()
    }
}

/// Reads a JS value as JSON, with integral numbers as integers.
pub fn json_from_js(value: JsValue, what: &str) -> Result<Value, BindingError> {
    let mut json: Value =
        serde_wasm_bindgen::from_value(value).map_err(|e| BindingError::invalid(what, e))?;
    integral_numbers_as_integers(&mut json);
    Ok(json)
}

/// Reads a JS value as a core type.
pub fn from_js<T: DeserializeOwned>(value: JsValue, what: &str) -> Result<T, BindingError> {
    from_json(json_from_js(value, what)?, what)
}

/// Reads a JSON value as a core type.
pub fn from_json<T: DeserializeOwned>(value: Value, what: &str) -> Result<T, BindingError> {
    serde_json::from_value(value).map_err(|e| BindingError::invalid(what, e))
}

/// Writes a core type as a plain JS value.
pub fn to_js<T: Serialize>(value: &T, what: &str) -> Result<JsValue, BindingError> {
    let json = serde_json::to_value(value)
        .map_err(|e| BindingError::Output { what: what.to_owned(), detail: e.to_string() })?;
    json_to_js(json, what)
}

/// Writes a JSON value as a plain JS value (objects, never `Map`s).
pub fn json_to_js(mut json: Value, what: &str) -> Result<JsValue, BindingError> {
    large_integers_as_doubles(&mut json);
    json.serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| BindingError::Output { what: what.to_owned(), detail: e.to_string() })
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

/// Rewrites every integer beyond ±2^53 as the nearest double, as `JSON.parse` reads it.
pub fn large_integers_as_doubles(value: &mut Value) {
    match value {
        Value::Number(number) => {
            let large = number.as_u64().is_some_and(|n| n > MAX_SAFE)
                || number.as_i64().is_some_and(|n| n.unsigned_abs() > MAX_SAFE);
            if large
                && let Some(x) = number.as_f64()
                && let Some(double) = Number::from_f64(x)
            {
                *number = double;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(large_integers_as_doubles),
        Value::Object(map) => map.values_mut().for_each(large_integers_as_doubles),
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
        large_integers_as_doubles(&mut value);
        assert_eq!(value[2].as_f64(), Some(TWO_POW_64));
        assert!(value[2].is_f64());
        assert_eq!(value[0], json!(1));
    }
}
