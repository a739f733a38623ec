//! Anthropic Messages: mapping projected [`Message`]s to a request's `system` and `messages`,
//! and importing a Messages conversation (see [`import_anthropic`]).
//!
//! Mapping rules of [`to_anthropic`]:
//!
//! - leading system messages (the V2 checkpoint block) → the top-level `system` text, joined by
//!   a blank line; a later system message → a user text block `[system note] <text>`;
//! - user text → a `user` message with text blocks; tool results → `tool_result` blocks
//!   (`tool_use_id`, string `content`, `is_error`) in the `user` message that follows the call;
//! - assistant text → `text` blocks; a tool call → `tool_use` (`id`, `name`, `input`);
//!   reasoning → a `redacted_thinking` block (`data`) when its provider data carries
//!   `redactedData`, else a `thinking` block when it carries the `signature` Anthropic requires
//!   to accept it back, otherwise it is dropped; both keys are read flat (as the Anthropic import
//!   records them) or nested under `anthropic` (as AI SDK `providerOptions` carry them);
//! - a hosted (provider-executed) call/result pair is lowered to an ordinary `tool_use` +
//!   `tool_result` pair: the assistant message is closed after the call and the result goes in a
//!   user message, keeping chronology;
//! - consecutive messages of one role are merged (the API requires alternation), and if the
//!   first message would be the assistant's, a user message `(continuing from the summary
//!   above)` is put first (the API requires a user message first);
//! - a [`Part::ProviderState`] is a typed error: V3 state never replays on Anthropic.

mod import;

use serde_json::{Value, json};

use crate::attachment::Attachment;
use crate::projection::message::{Message, Part, Role};
use crate::projection::openai_chat::tool_result_content;

pub use import::{AnthropicImportError, import_anthropic};
pub(crate) use import::{block_attachment, plain_assistant_block, result_content};

/// Text of the user message put first when the history would start with the assistant.
pub(crate) const CONTINUATION_TEXT: &str = "(continuing from the summary above)";

/// A Messages request's history.
#[derive(Debug, Clone, PartialEq)]
pub struct AnthropicHistory {
    /// The top-level `system` text, if any.
    pub system: Option<String>,
    /// The `messages` array.
    pub messages: Vec<Value>,
}

/// Why messages cannot be mapped to Anthropic Messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnthropicMappingError {
    /// A V3 checkpoint's provider state cannot replay on Anthropic.
    #[error("message {index} carries provider-native state, which Anthropic cannot replay")]
    ProviderStateUnsupported {
        /// Index of the message.
        index: usize,
    },
}

impl AnthropicMappingError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            AnthropicMappingError::ProviderStateUnsupported { .. } => {
                "anthropic_provider_state_unsupported"
            }
        }
    }
}

/// Maps messages to Anthropic's `system` + `messages`.
pub fn to_anthropic(messages: &[Message]) -> Result<AnthropicHistory, AnthropicMappingError> {
    let mut system: Vec<&str> = Vec::new();
    let mut out = Turns::default();
    let mut leading = true;
    for (index, message) in messages.iter().enumerate() {
        if message.role == Role::System && leading {
            system.extend(message.parts.iter().filter_map(|p| match p {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            }));
            continue;
        }
        leading = false;
        for part in &message.parts {
            match (message.role, part) {
                (_, Part::ProviderState { .. }) => {
                    return Err(AnthropicMappingError::ProviderStateUnsupported { index });
                }
                (Role::System, Part::Text { text }) => {
                    out.push(
                        "user",
                        json!({"type": "text", "text": format!("[system note] {text}")}),
                    );
                }
                (Role::User, Part::Text { text }) => {
                    out.push("user", json!({"type": "text", "text": text}));
                }
                (Role::Assistant, Part::Text { text }) => {
                    out.push("assistant", json!({"type": "text", "text": text}));
                }
                (_, Part::Reasoning { text, provider_data }) => {
                    if let Some(block) = thinking_block(text, provider_data.as_ref()) {
                        out.push("assistant", block);
                    }
                }
                (_, Part::ToolCall { call_id, tool_name, input, .. }) => {
                    let block = json!({"type": "tool_use", "id": call_id, "name": tool_name, "input": input});
                    out.push("assistant", block);
                }
                (_, Part::ToolResult { call_id, output, is_error, attachments, .. }) => {
                    let text = tool_result_content(output, false);
                    let content = if attachments.is_empty() {
                        Value::String(text)
                    } else {
                        let mut blocks = vec![json!({"type": "text", "text": text})];
                        blocks.extend(attachments.iter().map(attachment_block));
                        Value::Array(blocks)
                    };
                    let block = json!({
                        "type": "tool_result",
                        "tool_use_id": call_id,
                        "content": content,
                        "is_error": is_error,
                    });
                    out.push("user", block);
                }
                (_, Part::Attachment { attachment }) => {
                    out.push("user", attachment_block(attachment));
                }
                (Role::Tool, Part::Text { text }) => {
                    out.push("user", json!({"type": "text", "text": text}));
                }
            }
        }
    }
    let mut messages = out.messages;
    if messages.first().is_some_and(|m| m["role"] == "assistant") {
        let first =
            json!({"role": "user", "content": [{"type": "text", "text": CONTINUATION_TEXT}]});
        messages.insert(0, first);
    }
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    Ok(AnthropicHistory { system, messages })
}

/// The block of an attachment: `image` for images, `document` for PDFs (a `base64` or `url`
/// source) and for inline `text/plain` (a `text` source). Anything else, and an archived
/// attachment the host did not hydrate, goes as its text stand-in.
fn attachment_block(attachment: &Attachment) -> Value {
    let kind = if attachment.is_image() { "image" } else { "document" };
    let pdf = attachment.media_type == "application/pdf";
    let source = match (&attachment.data, &attachment.url) {
        (Some(data), _) if attachment.is_image() || pdf => {
            json!({"type": "base64", "media_type": attachment.media_type, "data": data})
        }
        (Some(_), _) if attachment.media_type == "text/plain" => {
            let text = attachment.inline_bytes().map(|b| String::from_utf8_lossy(&b).into_owned());
            json!({"type": "text", "media_type": "text/plain", "data": text.unwrap_or_default()})
        }
        (None, Some(url)) if attachment.is_image() || pdf => json!({"type": "url", "url": url}),
        _ => return json!({"type": "text", "text": attachment.stand_in("")}),
    };
    let mut block = json!({"type": kind, "source": source});
    if let (Some(name), "document") = (&attachment.name, kind) {
        block["title"] = json!(name);
    }
    block
}

/// The block that replays a reasoning part, if its provider data lets Anthropic accept it back:
/// `redactedData` → `redacted_thinking`, else `signature` → `thinking`, else none.
fn thinking_block(text: &str, provider_data: Option<&Value>) -> Option<Value> {
    let data = provider_data?;
    if let Some(redacted) = anthropic_string(data, "redactedData") {
        return Some(json!({"type": "redacted_thinking", "data": redacted}));
    }
    let signature = anthropic_string(data, "signature")?;
    Some(json!({"type": "thinking", "thinking": text, "signature": signature}))
}

/// A string field of reasoning provider data, read flat (`{signature}`, as the Anthropic import
/// records it) or nested under `anthropic` (`{anthropic: {signature}}`, as the AI SDK's
/// `providerOptions` carry it); the flat field wins when both are present.
fn anthropic_string<'a>(data: &'a Value, key: &str) -> Option<&'a str> {
    data.get(key).and_then(Value::as_str).or_else(|| {
        data.get("anthropic").and_then(|nested| nested.get(key)).and_then(Value::as_str)
    })
}

/// Builds alternating messages, merging consecutive blocks of one role.
#[derive(Default)]
struct Turns {
    messages: Vec<Value>,
}

impl Turns {
    fn push(&mut self, role: &str, block: Value) {
        if let Some(last) = self.messages.last_mut()
            && last["role"] == role
            && let Some(content) = last["content"].as_array_mut()
        {
            content.push(block);
            return;
        }
        self.messages.push(json!({"role": role, "content": [block]}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LogBuilder;
    use crate::projection::materialize::materialize;

    #[test]
    fn alternates_roles_and_pairs_tool_blocks() {
        let mut log = LogBuilder::new("s");
        log.turn("t1").user("read it");
        log.response(Some("r1")).tool_call("c1", "read", json!({"p": "a.rs"})).response(None);
        log.tool_result("c1", "read", json!("fn a() {}"));
        log.response(Some("r2")).assistant("done").response(None);
        log.turn("t2").user("thanks");
        let history = to_anthropic(&materialize(None, log.events(), &[]).messages).expect("maps");
        let roles: Vec<&str> = history.messages.iter().filter_map(|m| m["role"].as_str()).collect();
        assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);
        assert_eq!(history.messages[1]["content"][0]["type"], json!("tool_use"));
        assert_eq!(history.messages[2]["content"][0]["tool_use_id"], json!("c1"));
        assert_eq!(history.system, None);
    }

    #[test]
    fn leading_system_becomes_system_and_assistant_first_gets_a_user_turn() {
        let messages = vec![
            Message::text(Role::System, "<checkpoint/>"),
            Message::text(Role::Assistant, "continuing"),
            Message::text(Role::System, "note"),
        ];
        let history = to_anthropic(&messages).expect("maps");
        assert_eq!(history.system.as_deref(), Some("<checkpoint/>"));
        assert_eq!(history.messages[0]["content"][0]["text"], json!(CONTINUATION_TEXT));
        assert_eq!(history.messages[2]["content"][0]["text"], json!("[system note] note"));
    }

    #[test]
    fn unsigned_thinking_is_dropped_and_provider_state_is_an_error() {
        let thinking = |data| Message {
            role: Role::Assistant,
            parts: vec![Part::Reasoning { text: "t".into(), provider_data: data }],
        };
        let history =
            to_anthropic(&[Message::text(Role::User, "q"), thinking(None)]).expect("maps");
        assert_eq!(history.messages.len(), 1);
        let signed = thinking(Some(json!({"signature": "sig"})));
        let history = to_anthropic(&[Message::text(Role::User, "q"), signed]).expect("maps");
        assert_eq!(history.messages[1]["content"][0]["signature"], json!("sig"));
        let nested = thinking(Some(json!({"anthropic": {"signature": "nested-sig"}})));
        let history = to_anthropic(&[Message::text(Role::User, "q"), nested]).expect("maps");
        assert_eq!(
            history.messages[1]["content"][0],
            json!({"type": "thinking", "thinking": "t", "signature": "nested-sig"})
        );
        for data in
            [json!({"redactedData": "opaque"}), json!({"anthropic": {"redactedData": "opaque"}})]
        {
            let history = to_anthropic(&[Message::text(Role::User, "q"), thinking(Some(data))])
                .expect("maps");
            assert_eq!(
                history.messages[1]["content"][0],
                json!({"type": "redacted_thinking", "data": "opaque"})
            );
        }
        let other_provider = thinking(Some(json!({"openai": {"signature": "not-anthropic"}})));
        let history =
            to_anthropic(&[Message::text(Role::User, "q"), other_provider]).expect("maps");
        assert_eq!(history.messages.len(), 1);
        let state = crate::checkpoint::ProviderState::OpenaiCodexRemoteV2 {
            connection_slug: "c".into(),
            model_id: "m".into(),
            item_id: "i".into(),
            encrypted_content: "e".into(),
        };
        let err = to_anthropic(&[Message {
            role: Role::Assistant,
            parts: vec![Part::ProviderState { state }],
        }])
        .expect_err("V3 never replays on Anthropic");
        assert_eq!(err.code(), "anthropic_provider_state_unsupported");
    }
}
