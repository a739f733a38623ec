//! The event's hand-written reader's parts: JSON text read into values ([`text`]), and the
//! helpers `event/json.rs` reads fields with, in serde's words. Every other type is read by its
//! serde derive; events stay here because the npm package reads them by the thousand
//! (docs/performance.md).

mod float;
mod number;
pub(crate) mod text;

use serde_json::{Map, Value};

/// Why a JSON value is not the type it was read as: a message in serde's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct JsonReadError(pub String);

impl JsonReadError {
    /// `value` is not what was `expected` (`u64`, `a string`, `struct Calibration`).
    #[inline(never)]
    pub(crate) fn invalid_type(value: &Value, expected: &str) -> Self {
        let found = match value {
            Value::Null => "null".to_owned(),
            Value::Bool(b) => format!("boolean `{b}`"),
            Value::Number(n) if n.is_f64() => format!("floating point `{n}`"),
            Value::Number(n) => format!("integer `{n}`"),
            Value::String(s) => format!("string {}", Value::String(s.clone())),
            Value::Array(_) => "sequence".to_owned(),
            Value::Object(_) => "map".to_owned(),
        };
        JsonReadError(format!("invalid type: {found}, expected {expected}"))
    }
}

/// `unknown field `key`, expected one of `a`, `b``, as serde words it.
#[inline(never)]
pub(crate) fn unknown_field(key: &str, known: &[&str]) -> JsonReadError {
    let expected = match known {
        [] => "there are no fields".to_owned(),
        [only] => format!("expected `{only}`"),
        [first, second] => format!("expected `{first}` or `{second}`"),
        _ => {
            let names: Vec<String> = known.iter().map(|name| format!("`{name}`")).collect();
            format!("expected one of {}", names.join(", "))
        }
    };
    JsonReadError(format!("unknown field `{key}`, {expected}"))
}

/// `unknown variant `tag`, expected one of `a`, `b``, as serde words it.
#[inline(never)]
pub(crate) fn unknown_variant(tag: &str, known: &[&str]) -> JsonReadError {
    let names: Vec<String> = known.iter().map(|name| format!("`{name}`")).collect();
    JsonReadError(format!("unknown variant `{tag}`, expected one of {}", names.join(", ")))
}

/// `missing field `name``, as serde words it.
#[inline(never)]
pub(crate) fn missing_field(name: &str) -> JsonReadError {
    JsonReadError(format!("missing field `{name}`"))
}

/// `value`'s object, moved out: the entries of a type read from an owned value (events, whose
/// strings are moved into the typed value rather than copied).
#[inline(never)]
pub(crate) fn into_object(
    value: Value,
    expecting: &str,
) -> Result<Map<String, Value>, JsonReadError> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(JsonReadError::invalid_type(&other, expecting)),
    }
}

/// A JSON string, moved out.
#[inline(never)]
pub(crate) fn into_string(value: Value) -> Result<String, JsonReadError> {
    match value {
        Value::String(text) => Ok(text),
        other => Err(JsonReadError::invalid_type(&other, "a string")),
    }
}

/// An optional field's value: `null` is `None`, anything else is read by `read`.
pub(crate) fn nullable<T>(
    value: Value,
    read: impl FnOnce(Value) -> Result<T, JsonReadError>,
) -> Result<Option<T>, JsonReadError> {
    match value {
        Value::Null => Ok(None),
        value => read(value).map(Some),
    }
}

/// A JSON integer in `u64`'s range.
#[inline(never)]
pub(crate) fn u64(value: &Value) -> Result<u64, JsonReadError> {
    match value {
        Value::Number(number) => match (number.as_u64(), number.as_i64()) {
            (Some(n), _) => Ok(n),
            (None, Some(n)) => {
                Err(JsonReadError(format!("invalid value: integer `{n}`, expected u64")))
            }
            (None, None) => Err(JsonReadError::invalid_type(value, "u64")),
        },
        other => Err(JsonReadError::invalid_type(other, "u64")),
    }
}

/// A JSON boolean.
#[inline(never)]
pub(crate) fn boolean(value: &Value) -> Result<bool, JsonReadError> {
    value.as_bool().ok_or_else(|| JsonReadError::invalid_type(value, "a boolean"))
}

/// Inputs for tests that compare a hand-written reader with the derive it replaced.
#[cfg(test)]
pub(crate) mod test_support {
    use serde_json::{Value, json};

    /// `base` as it is, then with each key removed, each key set to each of `values` and an
    /// unknown key added, and the same again inside every object `base` holds.
    pub(crate) fn variants(base: &Value, values: &[Value]) -> Vec<Value> {
        let Value::Object(map) = base else { return vec![base.clone()] };
        let mut out = vec![base.clone()];
        for (key, field) in map {
            let mut removed = map.clone();
            removed.remove(key);
            out.push(Value::Object(removed));
            let nested = if field.is_object() { variants(field, values) } else { Vec::new() };
            for value in values.iter().chain(nested.iter().skip(1)) {
                let mut set = map.clone();
                set.insert(key.clone(), value.clone());
                out.push(Value::Object(set));
            }
        }
        let mut extra = map.clone();
        extra.insert("extra".into(), json!(1));
        out.push(Value::Object(extra));
        out
    }

    /// One value of each JSON shape, and a few of the strings and numbers readers look for.
    pub(crate) fn sample_values(strings: &[&str]) -> Vec<Value> {
        let mut values = vec![
            json!(null),
            json!(true),
            json!(0),
            json!(7),
            json!(-1),
            json!(1.5),
            json!(4294967296u64),
            json!("x"),
            json!([]),
            json!(["a", 2]),
            json!({}),
        ];
        values.extend(strings.iter().map(|s| json!(s)));
        values
    }
}
