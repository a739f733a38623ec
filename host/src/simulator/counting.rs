//! Counting: each wire shape's request rendered deterministically into `o200k_base` tokens.
//!
//! The rendering, in order: tool schemas (each tool's JSON, no framing), then every message
//! (system / instructions first) as [`MESSAGE_FRAME_TOKENS`] framing tokens + the role's
//! tokens + its content. Content is text as written; tool calls, tool uses and any other block
//! as their JSON (`cache_control` removed, so moving a breakpoint does not change the tokens);
//! tool results as their text. Images count by the provider's published rule (OpenAI tiles or
//! Anthropic's pixel area, `contextfold_core::event`), as stand-in tokens derived from the
//! image's bytes, so a changed image breaks a cached prefix. Each piece is encoded on its own,
//! so a request that appends to an earlier one repeats its tokens exactly.

use std::hash::{DefaultHasher, Hash, Hasher};

use contextfold_core::event::{Attachment, anthropic_image_tokens, openai_image_tokens};
use serde_json::Value;

use super::WireShape;
use crate::tokenizer::OpenAiTokenizer;

/// Framing tokens of every message, on top of its role's tokens (OpenAI's
/// `tokens_per_message`; see [`crate::tokenizer::CHAT_MESSAGE_OVERHEAD_TOKENS`]).
pub const MESSAGE_FRAME_TOKENS: u64 = 3;

/// Stand-in ids of framing tokens: outside every real vocabulary.
const FRAME_TOKEN: u32 = 0xffff_ff00;
/// Image stand-in ids are this bit plus a hash of the image.
const IMAGE_TOKEN_BIT: u32 = 0x8000_0000;

/// A request as tokens, with the end of each `cache_control` block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Rendering {
    /// The request's tokens, in rendering order.
    pub(crate) tokens: Vec<u32>,
    /// Token offsets just after each block marked `cache_control` (Anthropic only).
    pub(crate) breakpoints: Vec<usize>,
}

/// Builds a [`Rendering`] piece by piece.
struct Renderer {
    tokenizer: OpenAiTokenizer,
    shape: WireShape,
    out: Rendering,
}

impl Renderer {
    fn message(&mut self, role: &str) {
        self.out.tokens.extend((0..MESSAGE_FRAME_TOKENS as u32).map(|k| FRAME_TOKEN + k));
        self.text(role);
    }

    fn text(&mut self, text: &str) {
        self.out.tokens.extend(self.tokenizer.encode(text));
    }

    fn json(&mut self, value: &Value) {
        let mut value = value.clone();
        if let Value::Object(map) = &mut value {
            map.remove("cache_control");
        }
        self.text(&value.to_string());
    }

    /// An image by URL (a `data:` URL or a remote one) or by base64 bytes.
    fn image(&mut self, source: &str, media_type: Option<&str>, detail: Option<&str>) {
        let attachment = if source.starts_with("data:") || source.starts_with("http") {
            Attachment::from_url(source, media_type, None)
        } else {
            Attachment::from_base64(media_type, source, None)
        };
        let size = attachment.ok().and_then(|a| a.width.zip(a.height));
        let count = match (self.shape, size) {
            (WireShape::AnthropicMessages, Some((w, h))) => anthropic_image_tokens(w, h),
            // Unknown size: the largest image the rule allows.
            (WireShape::AnthropicMessages, None) => anthropic_image_tokens(1568, 1568),
            (_, Some((w, h))) => openai_image_tokens(w, h, detail),
            (_, None) => openai_image_tokens(768, 2048, detail),
        };
        let mut hasher = DefaultHasher::new();
        source.hash(&mut hasher);
        let seed = hasher.finish() as u32;
        self.out.tokens.extend(
            (0..count as u32).map(|k| IMAGE_TOKEN_BIT | (seed.wrapping_add(k) & !IMAGE_TOKEN_BIT)),
        );
    }

    fn mark_if_cached(&mut self, block: &Value) {
        if self.shape == WireShape::AnthropicMessages
            && block.get("cache_control").is_some_and(|c| !c.is_null())
        {
            self.out.breakpoints.push(self.out.tokens.len());
        }
    }
}

/// Renders `body` of `shape` into tokens (see the module docs). Unknown fields are ignored.
pub(crate) fn render(shape: WireShape, body: &Value) -> Rendering {
    let mut r =
        Renderer { tokenizer: OpenAiTokenizer::o200k_base(), shape, out: Rendering::default() };
    for tool in array(body.get("tools")) {
        r.json(tool);
        r.mark_if_cached(tool);
    }
    match shape {
        WireShape::OpenAiChat => render_chat(&mut r, body),
        WireShape::OpenAiResponses => render_responses(&mut r, body),
        WireShape::AnthropicMessages => render_anthropic(&mut r, body),
    }
    r.out
}

fn array(value: Option<&Value>) -> &[Value] {
    value.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn str_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

fn render_chat(r: &mut Renderer, body: &Value) {
    for message in array(body.get("messages")) {
        r.message(str_of(message, "role").unwrap_or("user"));
        match message.get("content") {
            Some(Value::String(text)) => r.text(text),
            Some(Value::Array(parts)) => {
                for part in parts {
                    match str_of(part, "type") {
                        Some("text") => r.text(str_of(part, "text").unwrap_or_default()),
                        Some("image_url") => {
                            let image = part.get("image_url").unwrap_or(&Value::Null);
                            let url = str_of(image, "url").or_else(|| image.as_str());
                            r.image(url.unwrap_or_default(), None, str_of(image, "detail"));
                        }
                        _ => r.json(part),
                    }
                }
            }
            _ => {}
        }
        if let Some(refusal) = str_of(message, "refusal") {
            r.text(refusal);
        }
        for call in array(message.get("tool_calls")) {
            r.json(call);
        }
    }
}

fn render_responses(r: &mut Renderer, body: &Value) {
    if let Some(instructions) = str_of(body, "instructions") {
        r.message("system");
        r.text(instructions);
    }
    let items = match body.get("input") {
        Some(Value::String(text)) => {
            r.message("user");
            r.text(text);
            return;
        }
        other => array(other),
    };
    for item in items {
        let kind = str_of(item, "type").unwrap_or("message");
        if kind != "message" {
            r.message(kind);
            match (kind, item.get("output")) {
                ("function_call_output", Some(Value::String(output))) => r.text(output),
                _ => r.json(item),
            }
            continue;
        }
        r.message(str_of(item, "role").unwrap_or("user"));
        match item.get("content") {
            Some(Value::String(text)) => r.text(text),
            Some(Value::Array(parts)) => {
                for part in parts {
                    match str_of(part, "type") {
                        Some("input_text" | "output_text" | "text") => {
                            r.text(str_of(part, "text").unwrap_or_default());
                        }
                        Some("refusal") => r.text(str_of(part, "refusal").unwrap_or_default()),
                        Some("input_image") => {
                            let url = str_of(part, "image_url").or_else(|| str_of(part, "file_id"));
                            r.image(url.unwrap_or_default(), None, str_of(part, "detail"));
                        }
                        _ => r.json(part),
                    }
                }
            }
            _ => {}
        }
    }
}

fn render_anthropic(r: &mut Renderer, body: &Value) {
    match body.get("system") {
        Some(Value::String(text)) => {
            r.message("system");
            r.text(text);
        }
        Some(Value::Array(blocks)) => {
            r.message("system");
            for block in blocks {
                anthropic_block(r, block);
            }
        }
        _ => {}
    }
    for message in array(body.get("messages")) {
        r.message(str_of(message, "role").unwrap_or("user"));
        match message.get("content") {
            Some(Value::String(text)) => r.text(text),
            Some(Value::Array(blocks)) => {
                for block in blocks {
                    anthropic_block(r, block);
                }
            }
            _ => {}
        }
    }
}

fn anthropic_block(r: &mut Renderer, block: &Value) {
    match str_of(block, "type") {
        Some("text") => r.text(str_of(block, "text").unwrap_or_default()),
        Some("thinking") => r.text(str_of(block, "thinking").unwrap_or_default()),
        Some("image") => {
            let source = block.get("source").unwrap_or(&Value::Null);
            let data = str_of(source, "data").or_else(|| str_of(source, "url"));
            r.image(data.unwrap_or_default(), str_of(source, "media_type"), None);
        }
        Some("tool_result") => match block.get("content") {
            Some(Value::String(text)) => r.text(text),
            Some(Value::Array(inner)) => {
                for part in inner {
                    anthropic_block(r, part);
                }
            }
            _ => {}
        },
        _ => r.json(block),
    }
    r.mark_if_cached(block);
}
