//! Building the native compaction request: fold → Responses input items, pairing, lowering of
//! hosted calls, bounded tool-result omission and the terminal trigger.

use crate::json_text::json_text;
use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use super::{
    COMPACTION_ITEM_TYPE, COMPACTION_TRIGGER_TYPE, INTERRUPTED_CALL_OUTPUT, NativeInputError,
    NativeRequest, TOOL_RESULT_OMISSION_MARKER,
};
use crate::budget::TokenEstimator;
use crate::checkpoint::ProviderState;
use crate::event::{EventContent, RuntimeEvent};

/// One input item with its estimate; outputs remember whether their payload may be omitted.
struct BuiltItem {
    value: Value,
    tokens: u64,
    omittable_output: bool,
}

/// Builds the Codex remote compaction v2 request from the previous provider state (rolling) and
/// the newly folded events, within `input_budget` estimated tokens.
///
/// Items, in order: the previous compaction item (if any), the fold (user and assistant text,
/// calls and outputs, notes as user text; reasoning omitted), then `{"type":"compaction_trigger"}`.
/// When the estimate exceeds the budget, older `function_call_output` payloads are replaced by
/// [`TOOL_RESULT_OMISSION_MARKER`], oldest first, until it fits; every pair and all text stays.
///
/// ```
/// use contextfold_core::{CharEstimator, LogBuilder};
/// use contextfold_core::compaction::build_native_request;
/// use serde_json::json;
/// let mut log = LogBuilder::new("s");
/// log.user("list files").tool_call("c1", "ls", json!({"dir": "."}));
/// log.tool_result("c1", "ls", json!("a.rs")).assistant("one file");
/// let request = build_native_request(None, log.events(), 10_000, &CharEstimator).unwrap();
/// let types: Vec<_> = request.input.iter().map(|item| item["type"].as_str().unwrap()).collect();
/// assert_eq!(types, ["message", "function_call", "function_call_output", "message", "compaction_trigger"]);
/// ```
pub fn build_native_request(
    previous_state: Option<&ProviderState>,
    fold: &[RuntimeEvent],
    input_budget: u64,
    estimator: &dyn TokenEstimator,
) -> Result<NativeRequest, NativeInputError> {
    let results = pair_results(fold)?;
    let overhead = estimator.message_overhead();
    let mut request = NativeRequest {
        input: Vec::new(),
        estimated_input_tokens: 0,
        omitted_tool_results: 0,
        interrupted_calls: 0,
        lowered_hosted_calls: 0,
        dropped_hosted_calls: 0,
    };
    let mut items = Vec::with_capacity(fold.len() + 2);
    if let Some(state) = previous_state {
        items.push(previous_state_item(state, estimator));
    }
    for (index, event) in fold.iter().enumerate() {
        match &event.content {
            EventContent::UserText { text, attachments } => {
                // Attachments go as their textual stand-ins (the bytes never leave the log here).
                let mut text = text.clone();
                for attachment in attachments {
                    text.push_str(&format!("\n{}", attachment.stand_in(&event.session_id)));
                }
                items.push(message("user", &text, estimator));
            }
            EventContent::AssistantText { text } => {
                items.push(message("assistant", text, estimator));
            }
            EventContent::Reasoning { .. } => {}
            EventContent::SystemNote { text } => {
                items.push(message("user", &format!("[system note]\n{text}"), estimator));
            }
            EventContent::RuntimeNote { code, text } => {
                let text = format!("[runtime note: {code}]\n{text}");
                items.push(message("user", &text, estimator));
            }
            EventContent::ToolCall { call_id, tool_name, input } => {
                items.push(function_call(call_id, tool_name, input, estimator));
                if !results.contains_key(&index) {
                    request.interrupted_calls += 1;
                    items.push(function_output(call_id, INTERRUPTED_CALL_OUTPUT, false, estimator));
                }
            }
            EventContent::ToolResult { call_id, output, is_error, .. } => {
                let mut output = output_text(output, *is_error);
                for attachment in event.attachments() {
                    output.push_str(&format!("\n{}", attachment.stand_in(&event.session_id)));
                }
                items.push(function_output(call_id, &output, true, estimator));
            }
            EventContent::HostedToolCall { call_id, tool_name, input } => {
                let Some(&(output, is_error)) = results.get(&index) else {
                    request.dropped_hosted_calls += 1;
                    continue;
                };
                request.lowered_hosted_calls += 1;
                items.push(function_call(call_id, tool_name, input, estimator));
                let output = output_text(output, is_error);
                items.push(function_output(call_id, &output, true, estimator));
            }
            // Emitted right after its call (lowering keeps the pair adjacent).
            EventContent::HostedToolResult { .. } => {}
        }
    }
    items.push(BuiltItem {
        value: json!({ "type": COMPACTION_TRIGGER_TYPE }),
        tokens: overhead,
        omittable_output: false,
    });

    let marker_tokens = estimator.estimate_text(TOOL_RESULT_OMISSION_MARKER) + overhead;
    let mut total: u64 = items.iter().map(|item| item.tokens).sum();
    for item in items.iter_mut() {
        if total <= input_budget {
            break;
        }
        if !item.omittable_output || item.tokens <= marker_tokens {
            continue;
        }
        item.value["output"] = Value::String(TOOL_RESULT_OMISSION_MARKER.to_owned());
        total = total - item.tokens + marker_tokens;
        item.tokens = marker_tokens;
        request.omitted_tool_results += 1;
    }
    if total > input_budget {
        return Err(NativeInputError::CannotFit { needed: total, budget: input_budget });
    }
    request.estimated_input_tokens = total;
    request.input = items.into_iter().map(|item| item.value).collect();
    Ok(request)
}

/// Maps the fold index of every call that has a result to that result's output and error
/// flag, and rejects results without an earlier open call of the same kind and repeated call ids.
fn pair_results(fold: &[RuntimeEvent]) -> Result<HashMap<usize, (&Value, bool)>, NativeInputError> {
    let mut seen_calls: HashSet<&str> = HashSet::new();
    let mut open_calls: HashMap<&str, (usize, bool)> = HashMap::new();
    let mut results = HashMap::new();
    for (index, event) in fold.iter().enumerate() {
        let hosted = matches!(
            event.content,
            EventContent::HostedToolCall { .. } | EventContent::HostedToolResult { .. }
        );
        if let Some(call_id) = event.content.call_id() {
            if !seen_calls.insert(call_id) {
                return Err(NativeInputError::DuplicateCallId {
                    index,
                    call_id: call_id.to_owned(),
                });
            }
            open_calls.insert(call_id, (index, hosted));
        } else if let EventContent::ToolResult { call_id, output, is_error, .. }
        | EventContent::HostedToolResult { call_id, output, is_error, .. } =
            &event.content
        {
            match open_calls.remove(call_id.as_str()) {
                Some((call_index, call_hosted)) if call_hosted == hosted => {
                    results.insert(call_index, (output, *is_error));
                }
                _ => {
                    return Err(NativeInputError::UnpairedResult {
                        index,
                        call_id: call_id.to_owned(),
                    });
                }
            }
        }
    }
    Ok(results)
}

fn previous_state_item(state: &ProviderState, estimator: &dyn TokenEstimator) -> BuiltItem {
    match state {
        ProviderState::OpenaiCodexRemoteV2 { item_id, encrypted_content, .. } => BuiltItem {
            value: json!({
                "type": COMPACTION_ITEM_TYPE,
                "id": item_id,
                "encrypted_content": encrypted_content,
            }),
            tokens: estimator.estimate_text(encrypted_content) + estimator.message_overhead(),
            omittable_output: false,
        },
    }
}

fn message(role: &str, text: &str, estimator: &dyn TokenEstimator) -> BuiltItem {
    let part_type = if role == "assistant" { "output_text" } else { "input_text" };
    BuiltItem {
        value: json!({
            "type": "message",
            "role": role,
            "content": [{ "type": part_type, "text": text }],
        }),
        tokens: estimator.estimate_text(text) + estimator.message_overhead(),
        omittable_output: false,
    }
}

fn function_call(
    call_id: &str,
    name: &str,
    input: &Value,
    estimator: &dyn TokenEstimator,
) -> BuiltItem {
    let arguments = json_text(input);
    BuiltItem {
        tokens: estimator.estimate_text(name)
            + estimator.estimate_text(&arguments)
            + estimator.message_overhead(),
        value: json!({
            "type": "function_call",
            "call_id": call_id,
            "name": name,
            "arguments": arguments,
        }),
        omittable_output: false,
    }
}

fn function_output(
    call_id: &str,
    output: &str,
    omittable: bool,
    estimator: &dyn TokenEstimator,
) -> BuiltItem {
    BuiltItem {
        value: json!({ "type": "function_call_output", "call_id": call_id, "output": output }),
        tokens: estimator.estimate_text(output) + estimator.message_overhead(),
        omittable_output: omittable,
    }
}

/// A result's output as the plain string the Responses API takes; failures are marked.
fn output_text(output: &Value, is_error: bool) -> String {
    let text = match output {
        Value::String(text) => text.clone(),
        other => json_text(other),
    };
    if is_error { format!("[error] {text}") } else { text }
}
