//! Images and documents of Anthropic messages (`image` / `document` blocks, also inside a
//! `tool_result`), as [`Attachment`]s.

use serde_json::Value;

use super::{AnthropicImportError, block_text, block_type, shape, unsupported};
use crate::attachment::Attachment;

/// The text and attachments of a `tool_result`'s `content`: a string, or `text` blocks (joined
/// by newlines) with `image` / `document` blocks.
pub(crate) fn result_content(
    block: &Value,
    at: &str,
) -> Result<(Value, Vec<Attachment>), AnthropicImportError> {
    match block.get("content") {
        None | Some(Value::Null) => Ok((Value::String(String::new()), Vec::new())),
        Some(Value::String(text)) => Ok((Value::String(text.clone()), Vec::new())),
        Some(Value::Array(parts)) => {
            let (mut texts, mut attachments) = (Vec::new(), Vec::new());
            for (j, part) in parts.iter().enumerate() {
                let path = format!("{at}.content[{j}]");
                match block_type(part, &path)? {
                    "image" | "document" => attachments.push(block_attachment(part, &path)?),
                    _ => texts.push(block_text(part, &path)?),
                }
            }
            Ok((Value::String(texts.join("\n")), attachments))
        }
        Some(_) => Err(shape(format!("{at}.content"), "text or content blocks")),
    }
}

/// The attachment of an `image` or `document` block: `source` of type `base64` (`media_type`,
/// `data`), `url`, or (documents) `text` (plain text, `media_type` `text/plain`); a document's
/// `title` becomes the name. A `file` source names bytes elsewhere and is refused.
pub(crate) fn block_attachment(
    block: &Value,
    at: &str,
) -> Result<Attachment, AnthropicImportError> {
    let source = block.get("source").ok_or_else(|| shape(format!("{at}.source"), "a source"))?;
    let field = |key: &str| source.get(key).and_then(Value::as_str);
    let name = block.get("title").and_then(Value::as_str).map(str::to_owned);
    let media_type = field("media_type");
    let result = match field("type") {
        Some("base64") => {
            let data = field("data").ok_or_else(|| shape(format!("{at}.source.data"), "base64"))?;
            Attachment::from_base64(media_type, data, name)
        }
        Some("url") => {
            let url = field("url").ok_or_else(|| shape(format!("{at}.source.url"), "a URL"))?;
            Attachment::from_url(url, media_type, name)
        }
        Some("text") => {
            let data = field("data").ok_or_else(|| shape(format!("{at}.source.data"), "text"))?;
            Attachment::from_bytes(Some(media_type.unwrap_or("text/plain")), data.as_bytes(), name)
        }
        other => {
            let kind = format!("{} source", other.unwrap_or("untyped"));
            return Err(unsupported(&format!("{at}.source"), &kind));
        }
    };
    let is_image = block.get("type").and_then(Value::as_str) == Some("image");
    let result = if is_image { result.and_then(Attachment::into_image) } else { result };
    result.map_err(|source| AnthropicImportError::Attachment { path: at.to_owned(), source })
}
