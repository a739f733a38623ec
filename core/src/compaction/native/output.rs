//! Admitting the native compaction output, matching a V3 checkpoint to the provider about to
//! replay it, and redacting provider state from captured JSON.

use serde_json::Value;

use super::{
    COMPACTION_ITEM_TYPE, LEGACY_COMPACTION_ITEM_TYPE, NativeBinding, NativeOutputDefect,
    OPENAI_CODEX_PROVIDER, ProviderIdentity, REDACTED,
};
use crate::checkpoint::ProviderState;

/// Admits exactly one compaction item from a Responses output array and binds it to the
/// connection and model it was produced on.
///
/// Compaction items are objects whose `type` is `compaction` (or the older alias
/// `compaction_summary`); every other item (reasoning, message, anything unknown) is ignored and
/// counted. Zero or several compaction items, or one without a non-empty string `id` and
/// `encrypted_content`, is a [`NativeOutputDefect`] (`native_no_unique_item`).
///
/// ```
/// use contextfold_core::compaction::{NativeBinding, accept_native_output};
/// use serde_json::json;
/// let binding = NativeBinding { connection_slug: "codex".into(), model_id: "gpt-5".into() };
/// let output = [
///     json!({"type": "reasoning", "id": "rs_1", "summary": []}),
///     json!({"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAA"}),
/// ];
/// let state = accept_native_output(&output, &binding).unwrap();
/// assert_eq!(state.binding(), ("codex", "gpt-5"));
/// ```
pub fn accept_native_output(
    output_items: &[Value],
    binding: &NativeBinding,
) -> Result<ProviderState, NativeOutputDefect> {
    let (compaction_items, others): (Vec<&Value>, Vec<&Value>) =
        output_items.iter().partition(|item| is_compaction_item(item));
    let ignored_items = others.len() as u64;
    let item = match compaction_items.as_slice() {
        [] => return Err(NativeOutputDefect::NoCompactionItem { ignored_items }),
        [item] => *item,
        several => {
            return Err(NativeOutputDefect::MultipleCompactionItems {
                count: several.len() as u64,
                ignored_items,
            });
        }
    };
    let item_id =
        non_empty_string(item, "id").ok_or(NativeOutputDefect::MissingItemId { ignored_items })?;
    let encrypted_content = non_empty_string(item, "encrypted_content")
        .ok_or(NativeOutputDefect::MissingEncryptedContent { ignored_items })?;
    Ok(ProviderState::OpenaiCodexRemoteV2 {
        connection_slug: binding.connection_slug.clone(),
        model_id: binding.model_id.clone(),
        item_id: item_id.to_owned(),
        encrypted_content: encrypted_content.to_owned(),
    })
}

fn is_compaction_item(item: &Value) -> bool {
    matches!(
        item.get("type").and_then(Value::as_str),
        Some(COMPACTION_ITEM_TYPE | LEGACY_COMPACTION_ITEM_TYPE)
    )
}

/// The field as a string, if it is one and holds more than whitespace.
fn non_empty_string<'a>(item: &'a Value, field: &str) -> Option<&'a str> {
    item.get(field).and_then(Value::as_str).filter(|text| !text.trim().is_empty())
}

/// Whether a V3 checkpoint's state may replay for `provider`: the same provider kind, the same
/// connection and the same model. Anything else reprojects from raw events.
///
/// ```
/// use contextfold_core::ProviderState;
/// use contextfold_core::compaction::{ProviderIdentity, provider_state_matches};
/// let state = ProviderState::OpenaiCodexRemoteV2 {
///     connection_slug: "codex".into(), model_id: "gpt-5".into(),
///     item_id: "cmp_1".into(), encrypted_content: "gAAA".into(),
/// };
/// let same = ProviderIdentity { provider: "openai-codex".into(), connection_slug: "codex".into(), model_id: "gpt-5".into() };
/// assert!(provider_state_matches(&state, &same));
/// let other_model = ProviderIdentity { model_id: "gpt-5-mini".into(), ..same };
/// assert!(!provider_state_matches(&state, &other_model));
/// ```
pub fn provider_state_matches(state: &ProviderState, provider: &ProviderIdentity) -> bool {
    match state {
        ProviderState::OpenaiCodexRemoteV2 { connection_slug, model_id, .. } => {
            provider.provider == OPENAI_CODEX_PROVIDER
                && provider.connection_slug == *connection_slug
                && provider.model_id == *model_id
        }
    }
}

/// Replaces the value of every `encrypted_content` / `encryptedContent` field, at any depth of a
/// captured request or response, with [`REDACTED`]. A `null` stays `null`; any other value
/// (normally a string) is replaced, so no encrypted payload survives in telemetry.
///
/// Parse a captured body to JSON before calling this: text that merely embeds JSON inside a
/// string is not searched.
pub fn redact_provider_state(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, field) in map.iter_mut() {
                if (key == "encrypted_content" || key == "encryptedContent") && !field.is_null() {
                    *field = Value::String(REDACTED.to_owned());
                } else {
                    redact_provider_state(field);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_provider_state),
        _ => {}
    }
}
