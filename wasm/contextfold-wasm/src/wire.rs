//! Projected [`Message`]s as OpenAI Responses input items and Anthropic Messages.
//!
//! Pure mapping, meant to move into the core beside its Chat Completions mapping.
//!
//! OpenAI Responses ([`to_openai_responses`]): system/user/assistant text → `message` items
//! (`input_text` / `output_text` content); reasoning → a `reasoning` item only when its
//! `providerData` holds the item (`itemId` / `encryptedContent`, as the AI SDK records them),
//! else left out; a call → `function_call` with JSON-text `arguments`; a result →
//! `function_call_output` (text as is, other JSON as its text, errors prefixed like chat); a
//! hosted call/result pair is lowered to the same pair; a V3 checkpoint → the `compaction` item
//! `{ type, id, encrypted_content }`.
//!
//! Anthropic ([`to_anthropic`]): leading system messages form the top-level `system` text; later
//! system messages become user text blocks; assistant text → `text`, reasoning with a
//! `signature` in `providerData` → `thinking` (unsigned reasoning is left out, Anthropic refuses
//! it), calls (hosted ones lowered) → `tool_use`; results → `tool_result` blocks of one user
//! message. A V3 checkpoint is a typed error: it never replays on Anthropic.

use contextfold_core::checkpoint::ProviderState;
use contextfold_core::projection::openai_chat::tool_result_content;
use contextfold_core::projection::{Message, Part, Role};
use serde_json::{Value, json};

use crate::convert::BindingError;

/// Writes projected messages as OpenAI Responses API input items.
pub fn to_openai_responses(messages: &[Message]) -> Vec<Value> {
    let mut items = Vec::new();
    for message in messages {
        let (role, text_type) = match message.role {
            Role::System => ("system", "input_text"),
            Role::User => ("user", "input_text"),
            Role::Assistant => ("assistant", "output_text"),
            Role::Tool => ("tool", ""),
        };
        for part in &message.parts {
            match part {
                Part::Text { text } => items.push(json!({
                    "type": "message", "role": role,
                    "content": [{ "type": text_type, "text": text }],
                })),
                Part::Reasoning { text, provider_data } => {
                    if let Some(item) = responses_reasoning(text, provider_data.as_ref()) {
                        items.push(item);
                    }
                }
                Part::ToolCall { call_id, tool_name, input, .. } => items.push(json!({
                    "type": "function_call", "call_id": call_id, "name": tool_name,
                    "arguments": input.to_string(),
                })),
                Part::ToolResult { call_id, output, is_error, .. } => items.push(json!({
                    "type": "function_call_output", "call_id": call_id,
                    "output": tool_result_content(output, *is_error),
                })),
                Part::ProviderState { state } => items.push(compaction_item(state)),
            }
        }
    }
    items
}

fn responses_reasoning(text: &str, provider_data: Option<&Value>) -> Option<Value> {
    let data = provider_data?.get("openai").or(provider_data)?;
    let id = data.get("itemId").and_then(Value::as_str)?;
    let mut item = json!({
        "type": "reasoning", "id": id,
        "summary": if text.is_empty() { json!([]) } else { json!([{ "type": "summary_text", "text": text }]) },
    });
    if let Some(encrypted) = data.get("reasoningEncryptedContent").or(data.get("encryptedContent"))
    {
        item["encrypted_content"] = encrypted.clone();
    }
    Some(item)
}

fn compaction_item(state: &ProviderState) -> Value {
    match state {
        ProviderState::OpenaiCodexRemoteV2 { item_id, encrypted_content, .. } => json!({
            "type": "compaction", "id": item_id, "encrypted_content": encrypted_content,
        }),
        #[allow(unreachable_patterns)]
        other => json!({ "type": other.kind_name() }),
    }
}

/// An Anthropic Messages request body fragment: `{ system, messages }`.
pub fn to_anthropic(messages: &[Message]) -> Result<Value, BindingError> {
    let mut system: Vec<String> = Vec::new();
    let mut out: Vec<Value> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let mut blocks = Vec::new();
        for part in &message.parts {
            match part {
                Part::Text { text } if message.role == Role::System && out.is_empty() => {
                    system.push(text.clone());
                }
                Part::Text { text } => blocks.push(json!({ "type": "text", "text": text })),
                Part::Reasoning { text, provider_data } => {
                    if let Some(block) = anthropic_thinking(text, provider_data.as_ref()) {
                        blocks.push(block);
                    }
                }
                Part::ToolCall { call_id, tool_name, input, .. } => blocks.push(json!({
                    "type": "tool_use", "id": call_id, "name": tool_name, "input": input,
                })),
                Part::ToolResult { call_id, output, is_error, .. } => {
                    let content = tool_result_content(output, false);
                    let mut block = json!({ "type": "tool_result", "tool_use_id": call_id, "content": content });
                    if *is_error {
                        block["is_error"] = Value::Bool(true);
                    }
                    if message.role == Role::Assistant {
                        // A hosted result inside an assistant message: close the assistant
                        // turn so the lowered result sits in a user message after its call.
                        push_blocks(&mut out, "assistant", std::mem::take(&mut blocks));
                        push_blocks(&mut out, "user", vec![block]);
                    } else {
                        blocks.push(block);
                    }
                }
                Part::ProviderState { .. } => {
                    return Err(BindingError::core(
                        "provider_state_unsupported",
                        format!(
                            "message {index} carries provider-native state, which Anthropic \
                             cannot replay"
                        ),
                    ));
                }
            }
        }
        let role = match message.role {
            Role::Assistant => "assistant",
            Role::System | Role::User | Role::Tool => "user",
        };
        push_blocks(&mut out, role, blocks);
    }
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    Ok(json!({ "system": system, "messages": out }))
}

/// Appends blocks as a message, merging into the previous message of the same role.
fn push_blocks(out: &mut Vec<Value>, role: &str, blocks: Vec<Value>) {
    if blocks.is_empty() {
        return;
    }
    if let Some(last) = out.last_mut()
        && last["role"] == role
        && let Some(content) = last["content"].as_array_mut()
    {
        content.extend(blocks);
        return;
    }
    out.push(json!({ "role": role, "content": blocks }));
}

fn anthropic_thinking(text: &str, provider_data: Option<&Value>) -> Option<Value> {
    let data = provider_data?.get("anthropic").or(provider_data)?;
    if let Some(redacted) = data.get("redactedData").and_then(Value::as_str) {
        return Some(json!({ "type": "redacted_thinking", "data": redacted }));
    }
    let signature = data.get("signature").and_then(Value::as_str)?;
    Some(json!({ "type": "thinking", "thinking": text, "signature": signature }))
}
