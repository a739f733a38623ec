//! The host's answers to a compaction session's effects (serde's derive): every field optional,
//! `null` as absent, no other field.

use contextfold_core::compaction::{AppendFailure, ProviderFailure};
use serde::Deserialize;
use serde_json::Value;

/// The answer to a `summarize` effect: `{ text, finishReason }` or `{ error }`.
#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct SummaryResult {
    #[serde(default)]
    pub(super) text: Option<String>,
    #[serde(default)]
    pub(super) finish_reason: Option<String>,
    #[serde(default)]
    pub(super) error: Option<ProviderFailure>,
}

/// The answer to a `compact-natively` effect: `{ items }` or `{ error }`.
#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct NativeResult {
    #[serde(default)]
    pub(super) items: Option<Vec<Value>>,
    #[serde(default)]
    pub(super) error: Option<ProviderFailure>,
}

/// The answer to an `append-checkpoint` effect: `{}` once durable, or `{ error }`.
#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct AppendResult {
    #[serde(default)]
    pub(super) error: Option<AppendFailure>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn answers_accept_the_documented_shapes_only() {
        let summary: SummaryResult =
            serde_json::from_value(json!({ "text": "s", "finishReason": "stop" })).unwrap();
        assert_eq!(summary.text.as_deref(), Some("s"));
        let failed: SummaryResult = serde_json::from_value(
            json!({ "error": { "kind": "rate_limited", "message": "m" }, "text": null }),
        )
        .unwrap();
        assert!(failed.error.is_some() && failed.text.is_none());
        assert!(serde_json::from_value::<SummaryResult>(json!({ "texts": "s" })).is_err());
        assert!(serde_json::from_value::<SummaryResult>(json!({ "text": 1 })).is_err());
        let native: NativeResult = serde_json::from_value(json!({ "items": [{}] })).unwrap();
        assert_eq!(native.items, Some(vec![json!({})]));
        assert!(serde_json::from_value::<NativeResult>(json!({ "items": {} })).is_err());
        let append: AppendResult = serde_json::from_value(json!({})).unwrap();
        assert_eq!(append.error, None);
        let conflict = json!({ "error": { "conflict": true, "message": "m" } });
        assert!(serde_json::from_value::<AppendResult>(conflict).unwrap().error.is_some());
        assert!(serde_json::from_value::<AppendResult>(json!({ "ok": true })).is_err());
    }
}
