//! [`ProviderFailure`] and [`AppendFailure`] read and written by hand (see
//! [`crate::json_read`]): a host reports them now and then, and serde's derive would add a
//! reader per deserializer to the npm module. The same JSON as the derives they replaced
//! (`{ kind, message }`, `{ conflict, message }`; unknown keys ignored), checked against copies
//! of those derives in the tests.

use serde_json::{Map, Value};

use super::{AppendFailure, ProviderFailure, ProviderFailureKind};
use crate::json_read::{self, Fields, JsonReadError};

/// Every kind with its JSON name.
const KIND_NAMES: [(ProviderFailureKind, &str); 7] = [
    (ProviderFailureKind::Rejected, "rejected"),
    (ProviderFailureKind::Overflow, "overflow"),
    (ProviderFailureKind::Auth, "auth"),
    (ProviderFailureKind::Billing, "billing"),
    (ProviderFailureKind::RateLimited, "rate_limited"),
    (ProviderFailureKind::Unavailable, "unavailable"),
    (ProviderFailureKind::Cancelled, "cancelled"),
];

impl ProviderFailureKind {
    /// The kind's JSON name (`rate_limited`).
    pub fn name(self) -> &'static str {
        KIND_NAMES.iter().find(|(kind, _)| *kind == self).map_or("rejected", |(_, name)| name)
    }

    fn from_json(value: &Value) -> Result<Self, JsonReadError> {
        // The derive also took `{ "<name>": null }`; only the name is read now.
        let name = match value {
            Value::String(name) => name,
            Value::Object(map) if map.len() != 1 => {
                return Err(JsonReadError(
                    "invalid value: map, expected map with a single key".into(),
                ));
            }
            Value::Object(_) => return Err(JsonReadError::invalid_type(value, "string")),
            other => return Err(JsonReadError::invalid_type(other, "string or map")),
        };
        KIND_NAMES.iter().find(|(_, known)| known == name).map(|(kind, _)| *kind).ok_or_else(|| {
            let names: Vec<&str> = KIND_NAMES.iter().map(|(_, name)| *name).collect();
            json_read::unknown_variant(name, &names)
        })
    }
}

impl ProviderFailure {
    /// Reads `{ kind, message }`.
    pub fn from_json(value: &Value) -> Result<Self, JsonReadError> {
        let fields = Fields::of(value, "struct ProviderFailure", None)?;
        Ok(ProviderFailure {
            kind: fields.required("kind", ProviderFailureKind::from_json)?,
            message: fields.required("message", json_read::string)?,
        })
    }

    /// Writes `{ kind, message }`.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("kind".into(), self.kind.name().into());
        map.insert("message".into(), self.message.clone().into());
        Value::Object(map)
    }
}

crate::serde_via_value!(ProviderFailure);

impl AppendFailure {
    /// Reads `{ conflict, message }`.
    pub fn from_json(value: &Value) -> Result<Self, JsonReadError> {
        let fields = Fields::of(value, "struct AppendFailure", None)?;
        Ok(AppendFailure {
            conflict: fields.required("conflict", json_read::boolean)?,
            message: fields.required("message", json_read::string)?,
        })
    }

    /// Writes `{ conflict, message }`.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("conflict".into(), self.conflict.into());
        map.insert("message".into(), self.message.clone().into());
        Value::Object(map)
    }
}

crate::serde_via_value!(AppendFailure);

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;
    use crate::json_read::test_support::{sample_values, variants};

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum DerivedKind {
        Rejected,
        Overflow,
        Auth,
        Billing,
        RateLimited,
        Unavailable,
        Cancelled,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct DerivedFailure {
        kind: DerivedKind,
        message: String,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct DerivedAppend {
        conflict: bool,
        message: String,
    }

    fn compare<T: PartialEq + std::fmt::Debug, D: serde::de::DeserializeOwned + std::fmt::Debug>(
        base: Value,
        ours: fn(&Value) -> Result<T, JsonReadError>,
        write: fn(&T) -> Value,
    ) -> usize {
        let mut accepted = 0;
        let extra = [json!("rate_limited"), json!("cancelled"), json!("Overflow"), json!(false)];
        for case in
            variants(&base, &sample_values(&[])).into_iter().chain(extra.iter().map(|kind| {
                let mut case = base.clone();
                case["kind"] = kind.clone();
                case
            }))
        {
            if case.is_array() {
                continue;
            }
            let mine = ours(&case);
            let derived: Result<D, _> = serde_json::from_value(case.clone());
            match (&mine, &derived) {
                (Ok(value), Ok(_)) => {
                    assert_eq!(ours(&write(value)).as_ref(), Ok(value), "{case} written back");
                    accepted += 1;
                }
                (Err(mine), Err(derived)) => assert_eq!(mine.0, derived.to_string(), "{case}"),
                _ => panic!("{case}: {mine:?} / {derived:?}"),
            }
        }
        accepted
    }

    #[test]
    fn provider_failures_read_as_the_derive_read_them() {
        let base = json!({ "kind": "overflow", "message": "too long" });
        let accepted = compare::<_, DerivedFailure>(
            base,
            ProviderFailure::from_json,
            ProviderFailure::to_json,
        );
        assert!(accepted >= 5, "{accepted}");
        for (kind, name) in KIND_NAMES {
            let failure = ProviderFailure { kind, message: "m".into() };
            assert_eq!(failure.to_json(), json!({ "kind": name, "message": "m" }));
        }
    }

    #[test]
    fn append_failures_read_as_the_derive_read_them() {
        let base = json!({ "conflict": true, "message": "lost" });
        let accepted =
            compare::<_, DerivedAppend>(base, AppendFailure::from_json, AppendFailure::to_json);
        assert!(accepted >= 3, "{accepted}");
    }
}
