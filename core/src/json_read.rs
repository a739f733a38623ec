//! Hand-written JSON readers and writers for the core's small, rarely read types.
//!
//! serde's derive generates, for every type, a visitor specialized to each deserializer it is
//! read with, and for an internally tagged or flattened type a buffered second copy of its
//! fields' code besides. In the npm package's wasm module that generated code outweighed the
//! logic it reads for (docs/performance.md, "Package size (issue 21)"). A type read only now
//! and then (options, usage facts, calibrations) is read here instead, from a parsed
//! `serde_json::Value`, by plain functions over [`Fields`], and written by building a `Value`.
//! Its serde impls are the two adapters [`serde_via_value!`](crate::serde_via_value) writes,
//! so every caller (the host, the component, the npm binding) still reads and writes it through
//! serde, with one generated parser (`Value`'s) behind them all.
//!
//! The readers keep the derive's rules: a missing field is an error unless it has a default, a
//! `null` is `None` for an optional field and an error elsewhere, and a type that refused
//! unknown fields still does. The messages read as serde's (`missing field `x``, `unknown
//! field `x`, expected one of ...`, `invalid type: string "x", expected u64`). What the derive
//! accepted by accident is refused: a struct written as an array of its fields' values, an
//! enum's tag written as the variant's index.

mod decimal;
pub mod text;

use serde_json::{Map, Value};

/// Why a JSON value is not the type it was read as: a message in serde's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JsonReadError(pub String);

impl JsonReadError {
    /// `value` is not what was `expected` (`u64`, `a string`, `struct Calibration`).
    #[inline(never)]
    pub fn invalid_type(value: &Value, expected: &str) -> Self {
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

/// The fields of one JSON object, read one by one.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'a> {
    map: &'a Map<String, Value>,
}

impl<'a> Fields<'a> {
    /// `value` as the object of `expecting` (`struct Calibration`). With `known`, a key not in
    /// it is refused, as `#[serde(deny_unknown_fields)]` refuses it.
    #[inline(never)]
    pub fn of(
        value: &'a Value,
        expecting: &str,
        known: Option<&[&str]>,
    ) -> Result<Self, JsonReadError> {
        let Value::Object(map) = value else {
            return Err(JsonReadError::invalid_type(value, expecting));
        };
        if let Some(known) = known
            && let Some(key) = map.keys().find(|key| !known.contains(&key.as_str()))
        {
            return Err(unknown_field(key, known));
        }
        Ok(Fields { map })
    }

    /// The string of tag field `name` (`kind`, `type`) of an internally tagged enum.
    #[inline(never)]
    pub fn tag(&self, name: &str) -> Result<&'a str, JsonReadError> {
        match self.map.get(name) {
            Some(Value::String(tag)) => Ok(tag),
            Some(other) => Err(JsonReadError::invalid_type(other, "variant identifier")),
            None => Err(JsonReadError(format!("missing field `{name}`"))),
        }
    }

    /// The value of field `name`, `null` included; `None` when absent.
    pub fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name)
    }

    /// Field `name`, which must be present.
    #[inline(never)]
    pub fn required<T>(
        &self,
        name: &str,
        read: fn(&'a Value) -> Result<T, JsonReadError>,
    ) -> Result<T, JsonReadError> {
        match self.map.get(name) {
            Some(value) => read(value),
            None => Err(JsonReadError(format!("missing field `{name}`"))),
        }
    }

    /// Field `name`: absent or `null` is `None`.
    #[inline(never)]
    pub fn optional<T>(
        &self,
        name: &str,
        read: fn(&'a Value) -> Result<T, JsonReadError>,
    ) -> Result<Option<T>, JsonReadError> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => read(value).map(Some),
        }
    }

    /// Field `name`, its type's default when absent (`#[serde(default)]`: a `null` is read, so
    /// refused by a reader that does not take it).
    #[inline(never)]
    pub fn or_default<T: Default>(
        &self,
        name: &str,
        read: fn(&'a Value) -> Result<T, JsonReadError>,
    ) -> Result<T, JsonReadError> {
        match self.map.get(name) {
            None => Ok(T::default()),
            Some(value) => read(value),
        }
    }
}

/// `unknown field `key`, expected one of `a`, `b``, as serde words it.
#[inline(never)]
pub fn unknown_field(key: &str, known: &[&str]) -> JsonReadError {
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
pub fn unknown_variant(tag: &str, known: &[&str]) -> JsonReadError {
    let names: Vec<String> = known.iter().map(|name| format!("`{name}`")).collect();
    JsonReadError(format!("unknown variant `{tag}`, expected one of {}", names.join(", ")))
}

/// A JSON string.
#[inline(never)]
pub fn string(value: &Value) -> Result<String, JsonReadError> {
    match value {
        Value::String(text) => Ok(text.clone()),
        other => Err(JsonReadError::invalid_type(other, "a string")),
    }
}

/// `missing field `name``, as serde words it.
#[inline(never)]
pub fn missing_field(name: &str) -> JsonReadError {
    JsonReadError(format!("missing field `{name}`"))
}

/// `value`'s object, moved out: the entries of a type read from an owned value (events, whose
/// strings are moved into the typed value rather than copied).
#[inline(never)]
pub fn into_object(value: Value, expecting: &str) -> Result<Map<String, Value>, JsonReadError> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(JsonReadError::invalid_type(&other, expecting)),
    }
}

/// A JSON string, moved out.
#[inline(never)]
pub fn into_string(value: Value) -> Result<String, JsonReadError> {
    match value {
        Value::String(text) => Ok(text),
        other => Err(JsonReadError::invalid_type(&other, "a string")),
    }
}

/// An optional field's value: `null` is `None`, anything else is read by `read`.
pub fn nullable<T>(
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
pub fn u64(value: &Value) -> Result<u64, JsonReadError> {
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
pub fn boolean(value: &Value) -> Result<bool, JsonReadError> {
    value.as_bool().ok_or_else(|| JsonReadError::invalid_type(value, "a boolean"))
}

/// A JSON integer in `u32`'s range.
#[inline(never)]
pub fn u32(value: &Value) -> Result<u32, JsonReadError> {
    let n = u64(value).map_err(|JsonReadError(m)| JsonReadError(m.replace("u64", "u32")))?;
    u32::try_from(n)
        .map_err(|_| JsonReadError(format!("invalid value: integer `{n}`, expected u32")))
}

/// An `Option<T>`: `null` is `None`, anything else is read by `read`.
pub fn optional<T>(
    value: &Value,
    read: fn(&Value) -> Result<T, JsonReadError>,
) -> Result<Option<T>, JsonReadError> {
    match value {
        Value::Null => Ok(None),
        value => read(value).map(Some),
    }
}

/// A JSON array, each item read by `read`.
#[inline(never)]
pub fn vec<T>(
    value: &Value,
    read: fn(&Value) -> Result<T, JsonReadError>,
) -> Result<Vec<T>, JsonReadError> {
    match value {
        Value::Array(items) => items.iter().map(read).collect(),
        other => Err(JsonReadError::invalid_type(other, "a sequence")),
    }
}

/// Implements `serde::Deserialize` and `serde::Serialize` for a type through its
/// `from_json(&Value) -> Result<Self, JsonReadError>` and `to_json(&self) -> Value`: the value
/// is parsed (or written) by `serde_json::Value`'s one generated reader (writer), then read by
/// hand (see the module documentation).
#[macro_export]
macro_rules! serde_via_value {
    ($type:ty) => {
        $crate::deserialize_via_value!($type, |value| <$type>::from_json(&value));

        impl ::serde::Serialize for $type {
            fn serialize<S: ::serde::Serializer>(
                &self,
                serializer: S,
            ) -> ::core::result::Result<S::Ok, S::Error> {
                ::serde::Serialize::serialize(&self.to_json(), serializer)
            }
        }
    };
}

/// Implements `serde::Deserialize` for a type through a reader of an owned JSON value
/// (`|value| read(value)`): the value is parsed by `serde_json::Value`'s one generated reader,
/// then read by hand (see the module documentation).
#[macro_export]
macro_rules! deserialize_via_value {
    ($type:ty, $read:expr) => {
        impl<'de> ::serde::Deserialize<'de> for $type {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::core::result::Result<Self, D::Error> {
                let value =
                    <::serde_json::Value as ::serde::Deserialize>::deserialize(deserializer)?;
                let read: fn(
                    ::serde_json::Value,
                ) -> Result<$type, $crate::json_read::JsonReadError> = $read;
                read(value).map_err(<D::Error as ::serde::de::Error>::custom)
            }
        }
    };
}

#[cfg(test)]
mod migrated_types;

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_follow_the_derive_rules() {
        let value = json!({ "a": 1, "b": null, "c": "x" });
        let fields = Fields::of(&value, "struct S", Some(&["a", "b", "c"])).unwrap();
        assert_eq!(fields.required("a", u64), Ok(1));
        assert_eq!(fields.optional("b", u64), Ok(None));
        assert_eq!(fields.optional("z", u64), Ok(None));
        assert_eq!(fields.or_default("z", u64), Ok(0));
        assert!(fields.or_default("b", u64).is_err(), "null is not a default");
        assert_eq!(fields.required("z", u64), Err(JsonReadError("missing field `z`".into())));
        assert_eq!(
            fields.required("c", u64),
            Err(JsonReadError("invalid type: string \"x\", expected u64".into()))
        );
        assert_eq!(
            Fields::of(&value, "struct S", Some(&["a", "b"])).unwrap_err(),
            JsonReadError("unknown field `c`, expected `a` or `b`".into())
        );
        assert!(
            Fields::of(&value, "struct S", None).is_ok(),
            "unknown fields allowed without a list"
        );
        assert_eq!(
            Fields::of(&json!([1]), "struct S", None).unwrap_err(),
            JsonReadError("invalid type: sequence, expected struct S".into())
        );
    }

    #[test]
    fn numbers_keep_their_range() {
        assert_eq!(u64(&json!(u64::MAX)), Ok(u64::MAX));
        assert!(u64(&json!(-1)).is_err());
        assert!(u64(&json!(1.5)).is_err());
        assert_eq!(u32(&json!(7)), Ok(7));
        assert_eq!(
            u32(&json!(1u64 << 32)),
            Err(JsonReadError("invalid value: integer `4294967296`, expected u32".into()))
        );
        assert_eq!(
            u32(&json!("7")),
            Err(JsonReadError("invalid type: string \"7\", expected u32".into()))
        );
    }
}
