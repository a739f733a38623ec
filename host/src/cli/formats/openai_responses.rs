//! OpenAI Responses API input items from neutral messages.
//!
//! System text → `{"type":"message","role":"system","content":[{"type":"input_text",…}]}`;
//! user text → `input_text` parts; assistant text → `output_text` parts; a tool call →
//! `function_call` (arguments as JSON *text*); a result → `function_call_output` (string output,
//! errors prefixed like the Chat mapping). A hosted call/result pair is lowered to the same
//! ordinary pair, since `store: false` requests cannot resend provider-executed results.
//! Reasoning is replayed as a `reasoning` item only when its `providerData` holds an `id` and
//! `encrypted_content`; otherwise it is left out. A V3 checkpoint's state becomes the
//! `{"type":"compaction","id","encrypted_content"}` item.

use contextfold_core::projection::openai_chat::tool_result_content;
use contextfold_core::projection::{Message, Part, Role};
use serde_json::{Value, json};

/// Maps neutral messages to Responses `input` items.
pub fn to_openai_responses(messages: &[Message]) -> Vec<Value> {
    let mut items = Vec::new();
    for message in messages {
        let (role, text_type) = match message.role {
            Role::System => ("system", "input_text"),
            Role::User => ("user", "input_text"),
            Role::Assistant | Role::Tool => ("assistant", "output_text"),
        };
        let mut texts = Vec::new();
        for part in &message.parts {
            match part {
                Part::Text { text } => texts.push(json!({"type": text_type, "text": text})),
                other => {
                    flush(&mut items, role, &mut texts);
                    if let Some(item) = item_of(other) {
                        items.push(item);
                    }
                }
            }
        }
        flush(&mut items, role, &mut texts);
    }
    items
}

fn flush(items: &mut Vec<Value>, role: &str, texts: &mut Vec<Value>) {
    if !texts.is_empty() {
        items.push(json!({"type": "message", "role": role, "content": std::mem::take(texts)}));
    }
}

fn item_of(part: &Part) -> Option<Value> {
    Some(match part {
        Part::Text { .. } => return None,
        Part::Reasoning { provider_data, .. } => {
            let data = provider_data.as_ref()?;
            let id = data.get("id")?;
            let encrypted = data.get("encrypted_content")?;
            json!({"type": "reasoning", "id": id, "encrypted_content": encrypted, "summary": []})
        }
        Part::ToolCall { call_id, tool_name, input, .. } => json!({
            "type": "function_call",
            "call_id": call_id,
            "name": tool_name,
            "arguments": input.to_string(),
        }),
        Part::ToolResult { call_id, output, is_error, .. } => json!({
            "type": "function_call_output",
            "call_id": call_id,
            "output": tool_result_content(output, *is_error),
        }),
        Part::ProviderState { state } => {
            let contextfold_core::ProviderState::OpenaiCodexRemoteV2 {
                item_id,
                encrypted_content,
                ..
            } = state
            else {
                return None;
            };
            json!({"type": "compaction", "id": item_id, "encrypted_content": encrypted_content})
        }
    })
}
