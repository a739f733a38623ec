//! The host's answers to a compaction session's effects, read by hand
//! (`contextfold_core::json_read`; a few per compaction, so serde's derive would only add a
//! reader): the same rules as the derives they replaced (every field optional, `null` as
//! absent, no other field), checked against copies of those derives in the tests.

use contextfold_core::compaction::{AppendFailure, ProviderFailure};
use contextfold_core::json_read::{self, Fields, JsonReadError};
use serde_json::Value;
use wasm_bindgen::JsValue;

use crate::convert::{BindingError, json_from_js};

/// Reads the JS answer `value` with `read`; an error names `what`.
pub(super) fn read_answer<T>(
    value: JsValue,
    what: &str,
    read: fn(&Value) -> Result<T, JsonReadError>,
) -> Result<T, BindingError> {
    read(&json_from_js(value, what)?).map_err(|e| BindingError::invalid(what, e))
}

/// The answer to a `summarize` effect: `{ text, finishReason }` or `{ error }`.
#[derive(Debug, PartialEq)]
pub(super) struct SummaryResult {
    pub(super) text: Option<String>,
    pub(super) finish_reason: Option<String>,
    pub(super) error: Option<ProviderFailure>,
}

impl SummaryResult {
    pub(super) fn from_json(value: &Value) -> Result<Self, JsonReadError> {
        const KNOWN: &[&str] = &["text", "finishReason", "error"];
        let fields = Fields::of(value, "struct SummaryResult", Some(KNOWN))?;
        Ok(SummaryResult {
            text: fields.optional("text", json_read::string)?,
            finish_reason: fields.optional("finishReason", json_read::string)?,
            error: fields.optional("error", ProviderFailure::from_json)?,
        })
    }
}

/// The answer to a `compact-natively` effect: `{ items }` or `{ error }`.
#[derive(Debug, PartialEq)]
pub(super) struct NativeResult {
    pub(super) items: Option<Vec<Value>>,
    pub(super) error: Option<ProviderFailure>,
}

impl NativeResult {
    pub(super) fn from_json(value: &Value) -> Result<Self, JsonReadError> {
        let fields = Fields::of(value, "struct NativeResult", Some(&["items", "error"]))?;
        Ok(NativeResult {
            items: fields
                .optional("items", |items| json_read::vec(items, |item| Ok(item.clone())))?,
            error: fields.optional("error", ProviderFailure::from_json)?,
        })
    }
}

/// The answer to an `append-checkpoint` effect: `{}` once durable, or `{ error }`.
#[derive(Debug, PartialEq)]
pub(super) struct AppendResult {
    pub(super) error: Option<AppendFailure>,
}

impl AppendResult {
    pub(super) fn from_json(value: &Value) -> Result<Self, JsonReadError> {
        let fields = Fields::of(value, "struct AppendResult", Some(&["error"]))?;
        Ok(AppendResult { error: fields.optional("error", AppendFailure::from_json)? })
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde::de::DeserializeOwned;
    use serde_json::json;

    use super::*;

    /// Copies of the derives the readers replaced.
    mod derived {
        use super::*;

        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        pub(super) struct SummaryResult {
            #[serde(default)]
            pub(super) text: Option<String>,
            #[serde(default)]
            pub(super) finish_reason: Option<String>,
            #[serde(default)]
            pub(super) error: Option<ProviderFailure>,
        }

        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        pub(super) struct NativeResult {
            #[serde(default)]
            pub(super) items: Option<Vec<Value>>,
            #[serde(default)]
            pub(super) error: Option<ProviderFailure>,
        }

        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        pub(super) struct AppendResult {
            #[serde(default)]
            pub(super) error: Option<AppendFailure>,
        }
    }

    /// Compares `read` with the derive `D` (turned into `T` by `convert`) over every variant
    /// of `base`; returns how many both accepted.
    fn compare<T: PartialEq + std::fmt::Debug, D: DeserializeOwned>(
        base: Value,
        read: fn(&Value) -> Result<T, JsonReadError>,
        convert: fn(D) -> T,
    ) -> usize {
        let mut accepted = 0;
        for case in crate::test_support::variants(&base, "errors") {
            if case.is_array() {
                // The derive took a struct written as an array of its fields; refused now.
                assert!(read(&case).is_err(), "{case}");
                continue;
            }
            match (serde_json::from_value::<D>(case.clone()), read(&case)) {
                (Ok(derived), Ok(mine)) => {
                    assert_eq!(mine, convert(derived), "{case}");
                    accepted += 1;
                }
                (Err(derived), Err(mine)) => assert_eq!(mine.0, derived.to_string(), "{case}"),
                (derived, mine) => panic!("{case}: derive {:?}, hand {mine:?}", derived.is_ok()),
            }
        }
        accepted
    }

    #[test]
    fn effect_answers_read_as_the_derives_read_them() {
        let failure = json!({ "kind": "overflow", "message": "long" });
        let summary = json!({ "text": "s", "finishReason": "stop", "error": failure });
        let accepted = compare(summary, SummaryResult::from_json, |d: derived::SummaryResult| {
            SummaryResult { text: d.text, finish_reason: d.finish_reason, error: d.error }
        });
        assert!(accepted >= 6, "{accepted}");
        let native = json!({ "items": [{ "type": "compaction" }], "error": failure });
        let accepted = compare(native, NativeResult::from_json, |d: derived::NativeResult| {
            NativeResult { items: d.items, error: d.error }
        });
        assert!(accepted >= 4, "{accepted}");
        let append = json!({ "error": { "conflict": true, "message": "lost" } });
        let accepted = compare(append, AppendResult::from_json, |d: derived::AppendResult| {
            AppendResult { error: d.error }
        });
        assert!(accepted >= 2, "{accepted}");
    }
}
