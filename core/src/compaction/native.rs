//! Provider-native compaction (schema V3): the OpenAI Codex remote compaction v2 request and
//! response rules, as pure functions.
//!
//! The compaction transaction asks the host to "compact natively" with a [`NativeRequest`] built
//! by [`build_native_request`], the host sends it on the streaming Responses path, consumes the
//! whole stream, and hands the response's output items back to [`accept_native_output`], which
//! admits exactly one compaction item bound to the connection and model. A V3 checkpoint replays
//! only where [`provider_state_matches`] holds, and [`redact_provider_state`] strips the opaque
//! state from any captured request or response before it reaches telemetry.
//!
//! # Wire shapes (what the public sources show)
//!
//! Learned from the OpenAI Responses API reference, the OpenAI Agents SDK docs and the
//! `openai/codex` protocol model (`ResponseItem`), plus gateway threads about Codex remote
//! compaction v2; nothing here is copied from them.
//!
//! - Input items of a Responses request (`store: false`, so every item is resent inline):
//!   - `{"type":"message","role":"user","content":[{"type":"input_text","text":"…"}]}`;
//!     assistant text uses role `assistant` with `{"type":"output_text","text":"…"}` parts.
//!   - `{"type":"function_call","call_id":"…","name":"…","arguments":"<JSON text>"}`: the
//!     arguments are a *string* holding JSON, never a JSON object.
//!   - `{"type":"function_call_output","call_id":"…","output":"…"}`: the plain-string form.
//!     The API rejects an output whose `call_id` has no `function_call` in the same input.
//!   - `{"type":"reasoning",…,"encrypted_content":"…"}`: never sent here (thinking is omitted).
//! - Compaction: the Codex client appends one terminal `{"type":"compaction_trigger"}` item
//!   to an ordinary streaming `/responses` request (the "body signal" form of remote compaction
//!   v2; the older dedicated endpoint was `/responses/compact`). The response's output then holds
//!   one `{"type":"compaction","id":"cmp_…","encrypted_content":"…"}` item, possibly next to
//!   reasoning or message items. Codex still deserializes the older type name
//!   `compaction_summary` as the same item, so both names count as compaction items here.
//! - Replay (rolling): the previous state is resent as the first input item in the same
//!   `{"type":"compaction","id":…,"encrypted_content":…}` shape.
//! - The AI SDK surfaces the same item as an `openai.compaction` part whose provider metadata
//!   uses `itemId` / `encryptedContent`; the checkpoint stores those camelCase names.
//!
//! # Decisions
//!
//! - History only: no system prompt, no tool catalog (see the design's "history-only contract").
//! - System and runtime notes are conversation facts, not instructions to the compactor, so they
//!   become **user**-role messages with a visible `[system note]` / `[runtime note: code]` prefix.
//!   A developer-role message would carry instruction authority the notes never had, and Codex
//!   treats developer context as re-injectable rather than as history to keep.
//! - A settled hosted (provider-executed) call is lowered, for this request only, to an ordinary
//!   `function_call` immediately followed by its `function_call_output`; the assistant text of the
//!   step keeps its place after them. An unsettled hosted call is dropped and counted.
//! - An ordinary call without a result gets [`INTERRUPTED_CALL_OUTPUT`] right after it, so no
//!   call is orphaned. A failed result's output is prefixed with `[error] `.
//! - The opaque compaction item is estimated as the text of its `encrypted_content` (a
//!   conservative stand-in: the server expands it to an unknown size).

mod output;
mod request;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::diagnostics::ReasonCode;

pub use output::{accept_native_output, provider_state_matches, redact_provider_state};
pub use request::build_native_request;

pub(crate) use crate::compaction::summary_template::TOOL_RESULT_OMISSION_MARKER;

/// The output given to an ordinary tool call that has no recorded result in the fold.
pub const INTERRUPTED_CALL_OUTPUT: &str =
    "[tool call interrupted: no result was recorded; treat the call as failed]";

/// What [`redact_provider_state`] writes in place of encrypted content.
pub const REDACTED: &str = "[redacted]";

/// Provider kind of the OpenAI Codex subscription connection.
pub const OPENAI_CODEX_PROVIDER: &str = "openai-codex";

/// `type` of the terminal input item that asks Codex to compact.
pub const COMPACTION_TRIGGER_TYPE: &str = "compaction_trigger";

/// `type` of the compaction item, in output and when replayed as input.
pub(crate) const COMPACTION_ITEM_TYPE: &str = "compaction";

/// Older `type` name of the compaction item that Codex still accepts as an alias.
pub(crate) const LEGACY_COMPACTION_ITEM_TYPE: &str = "compaction_summary";

/// A native compaction request, ready for the host to send as the Responses `input` array.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NativeRequest {
    /// Responses API input items; the last one is always `{"type":"compaction_trigger"}`.
    pub input: Vec<Value>,
    /// Estimated input tokens of `input`, after any omission; never above the budget.
    pub estimated_input_tokens: u64,
    /// Tool-result payloads replaced by [`TOOL_RESULT_OMISSION_MARKER`].
    pub omitted_tool_results: u64,
    /// Ordinary calls without a result that received [`INTERRUPTED_CALL_OUTPUT`].
    pub interrupted_calls: u64,
    /// Settled hosted calls lowered to a `function_call` + `function_call_output` pair.
    pub lowered_hosted_calls: u64,
    /// Hosted calls without a result, left out of the request.
    pub dropped_hosted_calls: u64,
}

/// Why no native request was built. The request is never dispatched in these cases.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NativeInputError {
    /// Even with every eligible tool-result payload omitted, the request exceeds its budget.
    #[error("native compaction input needs {needed} tokens but the budget is {budget}")]
    CannotFit {
        /// Estimated tokens of the smallest request that keeps all pairs and grounded text.
        needed: u64,
        /// The history-input budget.
        budget: u64,
    },
    /// A tool result has no earlier, unresolved call of the same kind (ordinary or hosted)
    /// in the fold: the fold was not a validated safe prefix.
    #[error("event {index}: tool result `{call_id}` has no matching earlier call in the fold")]
    UnpairedResult {
        /// Index of the result in the fold.
        index: usize,
        /// Its call id.
        call_id: String,
    },
    /// Two calls in the fold share one call id, so results cannot be paired unambiguously.
    #[error("event {index}: call id `{call_id}` is used by an earlier call in the fold")]
    DuplicateCallId {
        /// Index of the second call in the fold.
        index: usize,
        /// The repeated call id.
        call_id: String,
    },
}

impl NativeInputError {
    /// The diagnostic reason code: `native_input_cannot_fit` or `native_input_invalid`.
    pub fn reason_code(&self) -> ReasonCode {
        match self {
            NativeInputError::CannotFit { .. } => ReasonCode::NativeInputCannotFit,
            NativeInputError::UnpairedResult { .. } | NativeInputError::DuplicateCallId { .. } => {
                ReasonCode::NativeInputInvalid
            }
        }
    }

    /// Stable machine-readable reason code, as a string.
    pub fn code(&self) -> &'static str {
        self.reason_code().as_str()
    }
}

/// The connection and model a native compaction ran on; the accepted state is bound to them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NativeBinding {
    /// Slug of the connection the request was sent on.
    pub connection_slug: String,
    /// Id of the model that produced the state.
    pub model_id: String,
}

/// Which provider, connection and model a request is about to use. JSON: `{ "provider",
/// "connectionSlug", "modelId" }` (other keys are ignored).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderIdentity {
    /// Provider kind, e.g. [`OPENAI_CODEX_PROVIDER`].
    pub provider: String,
    /// Connection slug.
    pub connection_slug: String,
    /// Model id.
    pub model_id: String,
}

/// Why a native compaction response was not admitted. Every variant is the reason code
/// `native_no_unique_item`: nothing partial or ambiguous is ever persisted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NativeOutputDefect {
    /// The output holds no compaction item at all.
    #[error("no compaction item in {ignored_items} output item(s)")]
    NoCompactionItem {
        /// Other output items that were ignored.
        ignored_items: u64,
    },
    /// The output holds more than one compaction item, so none is trusted.
    #[error("{count} compaction items in one output; exactly one is required")]
    MultipleCompactionItems {
        /// How many compaction items there were.
        count: u64,
        /// Other output items that were ignored.
        ignored_items: u64,
    },
    /// The single compaction item has no non-empty string `id`.
    #[error("the compaction item has no item id")]
    MissingItemId {
        /// Other output items that were ignored.
        ignored_items: u64,
    },
    /// The single compaction item has no non-empty string `encrypted_content`.
    #[error("the compaction item has no encrypted content")]
    MissingEncryptedContent {
        /// Other output items that were ignored.
        ignored_items: u64,
    },
}

impl NativeOutputDefect {
    /// The diagnostic reason code, `native_no_unique_item` for every variant.
    pub fn reason_code(&self) -> ReasonCode {
        ReasonCode::NativeNoUniqueItem
    }

    /// Stable machine-readable reason code, as a string.
    pub fn code(&self) -> &'static str {
        self.reason_code().as_str()
    }

    /// Output items other than compaction items that were ignored.
    pub fn ignored_items(&self) -> u64 {
        match self {
            NativeOutputDefect::NoCompactionItem { ignored_items }
            | NativeOutputDefect::MultipleCompactionItems { ignored_items, .. }
            | NativeOutputDefect::MissingItemId { ignored_items }
            | NativeOutputDefect::MissingEncryptedContent { ignored_items } => *ignored_items,
        }
    }
}
