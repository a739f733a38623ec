//! Images and files of AI SDK messages: user `image` / `file` parts and the media parts of a
//! tool `content` output, as [`Attachment`]s.

use serde_json::{Map, Value};

use super::{ModelMessageImportError, Result, shape, string_field, unsupported};
use crate::attachment::Attachment;
use crate::projection::ai_sdk::CONTENT_OUTPUT;

/// The attachment of a user `image` (`image` field) or `file` (`data` field) part: a base64
/// string, a `data:` URL or an `http(s)` URL, with the part's `mediaType` and `filename`.
pub(super) fn user_attachment(
    part: &Map<String, Value>,
    kind: &str,
    path: &str,
) -> Result<Attachment> {
    let field = if kind == "image" { "image" } else { "data" };
    let data = string_field(part, field, path)?;
    let media_type = part.get("mediaType").and_then(Value::as_str);
    let name = part.get("filename").and_then(Value::as_str).map(str::to_owned);
    let path = format!("{path}.{field}");
    let attachment = attachment_from(&data, media_type, name, &path)?;
    if kind != "image" {
        return Ok(attachment);
    }
    attachment.into_image().map_err(|source| ModelMessageImportError::Attachment { path, source })
}

fn attachment_from(
    data: &str,
    media_type: Option<&str>,
    name: Option<String>,
    path: &str,
) -> Result<Attachment> {
    let result = if data.contains(':') {
        Attachment::from_url(data, media_type, name)
    } else {
        Attachment::from_base64(media_type, data, name)
    };
    result.map_err(|source| ModelMessageImportError::Attachment { path: path.into(), source })
}

/// Splits the media parts (`media`, `image-data`, `file-data`, `image-url`, `file-url`) out of
/// a `content` output into attachments; the output keeps its text parts.
pub(super) fn output_attachments(output: Value, path: &str) -> Result<(Value, Vec<Attachment>)> {
    let Value::Object(mut object) = output else { return Ok((output, Vec::new())) };
    if object.get("type").and_then(Value::as_str) != Some(CONTENT_OUTPUT) {
        return Ok((Value::Object(object), Vec::new()));
    }
    let Some(Value::Array(items)) = object.remove("value") else {
        return Ok((Value::Object(object), Vec::new()));
    };
    let (mut kept, mut attachments) = (Vec::new(), Vec::new());
    for (position, item) in items.into_iter().enumerate() {
        let item_path = format!("{path}.value[{position}]");
        let kind = item.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
        let field = |key: &str| item.get(key).and_then(Value::as_str);
        let media_type = field("mediaType");
        let name = field("filename").map(str::to_owned);
        let attachment = match kind.as_str() {
            "media" | "image-data" | "file-data" => {
                let data =
                    field("data").ok_or_else(|| shape(format!("{item_path}.data"), "a string"))?;
                attachment_from(data, media_type, name, &item_path)?
            }
            "image-url" | "file-url" => {
                let url =
                    field("url").ok_or_else(|| shape(format!("{item_path}.url"), "a string"))?;
                attachment_from(url, media_type, name, &item_path)?
            }
            "text" => {
                kept.push(item);
                continue;
            }
            other => return Err(unsupported(&item_path, other)),
        };
        attachments.push(attachment);
    }
    object.insert("value".into(), Value::Array(kept));
    Ok((Value::Object(object), attachments))
}
