//! A projection's output: its messages in the requested format, as JSON text written straight
//! from the projected messages (AI SDK messages) or as a value (the other formats, and results
//! holding `BigInt`s), and the whole result's JSON text.

use contextfold_core::Diagnostic;
use contextfold_core::binding::{
    JsonWriter, PathStep, StringHook, into_model_messages, value_from_text, write_json_text,
    write_model_messages,
};
use contextfold_core::projection::{
    Message, ReplayedCheckpoint, to_anthropic, to_openai_chat, to_openai_responses,
};
use serde::Serialize;
use serde_json::Value;

use crate::convert::BindingError;
use crate::shared_strings::{SharedString, StringSources, steps_of};
use crate::string_table::{MIN_TABLE_BYTES, OutputTable, TableString};

/// The AI SDK messages of `messages` as JSON text. Each string an event holds (`sources`) is
/// left out and listed in `shared`; each other long string moves into `table` (if given) and is
/// listed in `moved`.
pub(super) fn ai_sdk_text(
    messages: &[Message],
    sources: Option<&StringSources<'_>>,
    mut table: Option<&mut OutputTable>,
    shared: &mut Vec<SharedString>,
    moved: &mut Vec<TableString>,
) -> String {
    let hooked = sources.is_some() || table.is_some();
    let mut take = |path: &[PathStep<'_>], text: &str| {
        if let Some(found) = sources.and_then(|s| s.share_string(text, || steps_of(path))) {
            shared.push(found);
            return true;
        }
        match table.as_deref_mut() {
            Some(table) if text.len() >= MIN_TABLE_BYTES => {
                moved.push(table.push_string(steps_of(path), text));
                true
            }
            _ => false,
        }
    };
    let hook: Option<StringHook<'_>> = hooked.then_some(&mut take);
    let mut writer = JsonWriter::new(String::new(), hook);
    write_model_messages(messages, &mut writer);
    writer.finish()
}

/// `messages` in `format` as a value (moved out of `messages` for `ai-sdk`), with the top-level
/// `system` of the Anthropic format.
pub(super) fn value_messages(
    format: &str,
    messages: &mut Vec<Message>,
) -> Result<(Value, Option<Option<String>>), BindingError> {
    Ok(match format {
        "ai-sdk" => (Value::Array(into_model_messages(std::mem::take(messages))), None),
        "openai-chat" => (
            Value::Array(to_openai_chat(messages).map_err(|e| BindingError::core(e.code(), e))?),
            None,
        ),
        "openai-responses" => (Value::Array(to_openai_responses(messages)), None),
        "anthropic" => {
            let history = to_anthropic(messages).map_err(|e| BindingError::core(e.code(), e))?;
            (Value::Array(history.messages), Some(history.system))
        }
        "neutral" => (
            contextfold_core::binding::to_value(&*messages).map_err(|e| BindingError::Output {
                what: "projection".into(),
                detail: e.to_string(),
            })?,
            None,
        ),
        other => {
            return Err(BindingError::invalid(
                "format",
                format!(
                    "`{other}` (expected ai-sdk, openai-chat, openai-responses, anthropic or neutral)"
                ),
            ));
        }
    })
}

/// A projection's messages in the requested format: JSON text written straight from the
/// projected messages (AI SDK messages without `BigInt`s), or a value.
pub(super) enum Messages {
    Text(String),
    Value(Value),
}

/// The result of [`project`], borrowing the projection (nothing is copied twice).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ProjectOutput<'a> {
    /// Written by [`ProjectOutput::to_json`] (nearly all of the output, and the hot path).
    #[serde(skip)]
    pub(super) messages: &'a Messages,
    /// Anthropic only: the top-level `system` text, or `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) system: Option<Option<String>>,
    pub(super) estimated_tokens: u64,
    /// `messages` measured without the calibration: the request's own estimate, which a usage
    /// fact records.
    pub(super) uncalibrated_tokens: u64,
    /// The calibration ratio `estimatedTokens` was measured with, in thousandths.
    pub(super) ratio_permille: u32,
    pub(super) history_budget: u64,
    pub(super) fits: bool,
    /// `null` when no checkpoint replays.
    pub(super) checkpoint: &'a Option<ReplayedCheckpoint>,
    pub(super) omitted_events: u64,
    pub(super) diagnostics: &'a [Diagnostic],
    /// The strings left out of `messages`, for the wrapper to put back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) shared_strings: Option<Vec<SharedString>>,
    /// The strings moved into the UTF-16 table, for the wrapper to put back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) table_strings: Option<Vec<TableString>>,
}

impl ProjectOutput<'_> {
    /// The output's JSON text: `messages` first, written by the core's non-generic writer
    /// (fast in a module built for size), the small rest by serde_json.
    pub(super) fn to_json(&self) -> Result<String, BindingError> {
        let rest = serde_json::to_string(self).map_err(Self::error)?;
        let mut json = String::with_capacity(rest.len() + 64);
        json.push_str("{\"messages\":");
        match self.messages {
            Messages::Text(text) => json.push_str(text),
            Messages::Value(value) => write_json_text(value, &mut json),
        }
        // `rest` is an object with at least `estimatedTokens`: its members follow.
        json.push(',');
        json.push_str(rest.strip_prefix('{').unwrap_or(&rest));
        Ok(json)
    }

    /// The output as one JSON value, `messages` first (for results holding `BigInt`s).
    pub(super) fn to_value(&self) -> Result<Value, BindingError> {
        let mut value = serde_json::Map::new();
        let messages = match self.messages {
            Messages::Value(value) => value.clone(),
            Messages::Text(text) => value_from_text(text).map_err(Self::error)?,
        };
        value.insert("messages".into(), messages);
        // A struct serializes to an object: its members follow.
        if let Value::Object(rest) = serde_json::to_value(self).map_err(Self::error)? {
            value.extend(rest);
        }
        Ok(Value::Object(value))
    }

    fn error(error: impl ToString) -> BindingError {
        BindingError::Output { what: "projection".into(), detail: error.to_string() }
    }
}
