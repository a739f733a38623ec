//! AI SDK `ModelMessage`s written straight as JSON text from the projected messages, without a
//! [`Value`] tree in between: byte for byte the text of [`super::to_model_messages`]' values
//! (see [`write_model_messages`]), for a binding that hands the projection to JavaScript as
//! text. The common parts (texts, tool calls, tool results) are written from the messages; the
//! rare ones (attachments, provider state, reasoning options) through the same helpers as the
//! values.

use serde_json::Value;

use super::{
    compaction_part, is_whole_output, output_kind, owned_tool_output, reasoning_provider_options,
    system_text, user_media_part, with_media,
};
use crate::json_text::JsonWriter;
use crate::projection::message::{Message, Part, Role};

/// Writes `messages` as the JSON array of AI SDK `ModelMessage`s: the same bytes as the compact
/// text of `Value::Array(to_model_messages(messages))`, each string offered to the writer's hook
/// at its path from the array.
pub fn write_model_messages<'a>(messages: &'a [Message], writer: &mut JsonWriter<'a, '_>) {
    writer.begin_array();
    for (index, message) in messages.iter().enumerate() {
        writer.item(index);
        write_message(message, writer);
    }
    writer.end_array();
}

fn write_message<'a>(message: &'a Message, writer: &mut JsonWriter<'a, '_>) {
    writer.begin_object();
    writer.key("role");
    match message.role {
        Role::System => {
            writer.string("system");
            writer.key("content");
            writer.string(&system_text(message));
        }
        Role::User => {
            writer.string("user");
            writer.key("content");
            match message.parts.as_slice() {
                [Part::Text { text }] => writer.string(text),
                parts => write_parts(parts, writer),
            }
        }
        Role::Assistant | Role::Tool => {
            writer.string(if message.role == Role::Assistant { "assistant" } else { "tool" });
            writer.key("content");
            write_parts(&message.parts, writer);
        }
    }
    writer.end_object();
}

fn write_parts<'a>(parts: &'a [Part], writer: &mut JsonWriter<'a, '_>) {
    writer.begin_array();
    for (index, part) in parts.iter().enumerate() {
        writer.item(index);
        write_part(part, writer);
    }
    writer.end_array();
}

fn write_part<'a>(part: &'a Part, writer: &mut JsonWriter<'a, '_>) {
    match part {
        Part::Text { text } => {
            writer.begin_object();
            member_string(writer, "type", "text");
            member_string(writer, "text", text);
            writer.end_object();
        }
        Part::Reasoning { text, provider_data } => {
            writer.begin_object();
            member_string(writer, "type", "reasoning");
            member_string(writer, "text", text);
            if let Some(Value::Object(options)) = provider_data {
                writer.key("providerOptions");
                writer.temporary_value(&reasoning_provider_options(options));
            }
            writer.end_object();
        }
        Part::ToolCall { call_id, tool_name, input, hosted } => {
            writer.begin_object();
            member_string(writer, "type", "tool-call");
            member_string(writer, "toolCallId", call_id);
            member_string(writer, "toolName", tool_name);
            writer.key("input");
            writer.value(input);
            if *hosted {
                writer.key("providerExecuted");
                writer.bool(true);
            }
            writer.end_object();
        }
        Part::ToolResult { call_id, tool_name, output, is_error, attachments, .. } => {
            writer.begin_object();
            member_string(writer, "type", "tool-result");
            member_string(writer, "toolCallId", call_id);
            member_string(writer, "toolName", tool_name);
            writer.key("output");
            if !attachments.is_empty() {
                let output = owned_tool_output(output.clone(), *is_error);
                writer.temporary_value(&with_media(output, attachments));
            } else if is_whole_output(output) {
                writer.value(output);
            } else {
                writer.begin_object();
                member_string(writer, "type", output_kind(output, *is_error));
                writer.key("value");
                writer.value(output);
                writer.end_object();
            }
            writer.end_object();
        }
        Part::Attachment { attachment } => writer.temporary_value(&user_media_part(attachment)),
        Part::ProviderState { state } => writer.temporary_value(&compaction_part(state)),
    }
}

fn member_string<'a>(writer: &mut JsonWriter<'a, '_>, key: &'static str, text: &str) {
    writer.key(key);
    writer.string(text);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::attachment::Attachment;
    use crate::checkpoint::ProviderState;
    use crate::json_text::{PathStep, json_text};
    use crate::projection::ai_sdk::to_model_messages;

    fn text(value: &str) -> Part {
        Part::Text { text: value.into() }
    }

    fn result(output: Value, is_error: bool, attachments: Vec<Attachment>) -> Part {
        Part::ToolResult {
            call_id: "c\"1".into(),
            tool_name: "read".into(),
            output,
            is_error,
            hosted: false,
            attachments,
        }
    }

    /// Every role and part kind, the tool-output kinds, attachments and escapes.
    fn every_shape() -> Vec<Message> {
        let image = Attachment::from_url("data:image/png;base64,iVBORw0KGgo=", None, None)
            .expect("data url");
        let file = Attachment::from_url("https://example.com/a.pdf", None, Some("a.pdf".into()))
            .expect("url");
        let long = "long 测试 🦀 \"quoted\"\n".repeat(20);
        let message = |role, parts| Message { role, parts };
        vec![
            message(Role::System, vec![text("be brief"), text("and kind")]),
            message(Role::User, vec![text(&long)]),
            message(Role::User, vec![text("look"), Part::Attachment { attachment: image.clone() }]),
            message(
                Role::Assistant,
                vec![
                    Part::Reasoning { text: "think".into(), provider_data: None },
                    Part::Reasoning {
                        text: "signed".into(),
                        provider_data: Some(json!({ "signature": "sig" })),
                    },
                    Part::ToolCall {
                        call_id: "c1".into(),
                        tool_name: "read".into(),
                        input: json!({ "path": long, "lines": [1, 2.5, null, true] }),
                        hosted: false,
                    },
                    Part::ToolCall {
                        call_id: "h1".into(),
                        tool_name: "web".into(),
                        input: json!({}),
                        hosted: true,
                    },
                    Part::ProviderState {
                        state: ProviderState::OpenaiCodexRemoteV2 {
                            connection_slug: "c".into(),
                            model_id: "m".into(),
                            item_id: "cmp_1".into(),
                            encrypted_content: long.clone(),
                        },
                    },
                ],
            ),
            message(
                Role::Tool,
                vec![
                    result(json!(long), false, Vec::new()),
                    result(json!("failed"), true, Vec::new()),
                    result(json!({ "n": 1, "text": long }), false, Vec::new()),
                    result(json!([1]), true, Vec::new()),
                    result(json!({ "type": "execution-denied", "reason": "no" }), true, Vec::new()),
                    result(
                        json!({ "type": "content", "value": [{ "type": "text", "text": long }] }),
                        false,
                        Vec::new(),
                    ),
                    result(json!("see the files"), false, vec![image, file]),
                ],
            ),
            message(Role::User, Vec::new()),
        ]
    }

    fn written(messages: &[Message], hook: Option<crate::json_text::StringHook<'_>>) -> String {
        let mut writer = JsonWriter::new(String::new(), hook);
        write_model_messages(messages, &mut writer);
        writer.finish()
    }

    #[test]
    fn the_text_is_that_of_the_model_message_values_byte_for_byte() {
        let messages = every_shape();
        let values = Value::Array(to_model_messages(&messages));
        assert_eq!(written(&messages, None), json_text(&values));
        assert_eq!(written(&[], None), "[]");
    }

    /// The hook sees every string at its path in the values, and a string it takes is `null`.
    #[test]
    fn the_hook_takes_strings_at_their_paths_in_the_values() {
        let messages = every_shape();
        let mut expected = Value::Array(to_model_messages(&messages));
        let mut expected_paths = Vec::new();
        take_long(&mut expected, &mut Vec::new(), &mut expected_paths);
        let mut paths = Vec::new();
        let mut hook = |path: &[PathStep<'_>], text: &str| {
            let long = text.len() >= 100;
            if long {
                paths.push(path.iter().map(step_text).collect::<Vec<_>>());
            }
            long
        };
        let text = written(&messages, Some(&mut hook));
        assert_eq!(text, json_text(&expected));
        assert_eq!(paths, expected_paths);
        assert!(paths.len() >= 6, "{paths:?}");
    }

    fn step_text(step: &PathStep<'_>) -> String {
        match step {
            PathStep::Key(key) => key.to_string(),
            PathStep::Index(index) => index.to_string(),
        }
    }

    /// Strings of at least 100 bytes become `null`, their paths listed in document order.
    fn take_long(value: &mut Value, at: &mut Vec<String>, taken: &mut Vec<Vec<String>>) {
        match value {
            Value::String(text) if text.len() >= 100 => {
                taken.push(at.clone());
                *value = Value::Null;
            }
            Value::Array(items) => {
                for (index, item) in items.iter_mut().enumerate() {
                    at.push(index.to_string());
                    take_long(item, at, taken);
                    at.pop();
                }
            }
            Value::Object(map) => {
                for (key, item) in map.iter_mut() {
                    at.push(key.clone());
                    take_long(item, at, taken);
                    at.pop();
                }
            }
            _ => {}
        }
    }
}
