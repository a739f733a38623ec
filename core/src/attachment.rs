//! Content-addressed attachments: images and files carried by `user_text` and `tool_result`
//! events.
//!
//! An [`Attachment`] names its bytes by media type, byte length and SHA-256, with optional
//! name and pixel dimensions, and holds them in exactly one place:
//! - **inline**: `data` is their padded standard base64 (what importers produce from `data:`
//!   URLs and base64 parts);
//! - **archive**: neither `data` nor `url`; the bytes are in the session's content-addressed
//!   archive at `contextfold://archive/<session>/<sha256>/<byteLength>` (a host moves large ones
//!   there before appending the event);
//! - **url**: `url` is an `http(s)` URL the provider fetches; length and hash may be unknown.
//!
//! The digest covers an attachment through its JSON form, so through its hash. Every
//! attachment is checked ([`Attachment::verify`]) by importers and whenever JSON is read:
//! inline data must be canonical base64 whose length and SHA-256 match, a signed format must
//! carry its signature (PNG, JPEG, GIF, WebP, PDF), and nothing may exceed
//! [`MAX_ATTACHMENT_BYTES`].

mod base64;
mod error;
mod sniff;
mod tokens;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub(crate) use base64::decode as decode_base64;
pub use base64::encode as encode_base64;
pub use error::AttachmentError;
pub(crate) use sniff::{SIGNED_MEDIA_TYPES, image_dimensions, sniff_media_type};
pub use tokens::{anthropic_image_tokens, attachment_tokens, openai_image_tokens};

/// The largest attachment accepted: 32 MiB, the request limit Anthropic publishes for the
/// Messages API and OpenAI for PDF inputs. Larger bytes are refused, never truncated.
pub const MAX_ATTACHMENT_BYTES: u64 = 32 << 20;

/// One image or file (see the module docs for the three places its bytes can be). Reading one
/// from JSON checks it ([`Attachment::verify`]): every reader, typed or not, refuses a
/// tampered or inconsistent attachment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "AttachmentFields")]
pub struct Attachment {
    /// IANA media type, lower case (`image/png`, `application/pdf`, …).
    pub media_type: String,
    /// Length of the bytes (absent only for a URL whose bytes were never seen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub byte_length: Option<u64>,
    /// SHA-256 of the bytes, 64 lowercase hex digits (absent only with `byte_length`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// File name, when the source gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Width in pixels (images whose header was read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    /// Height in pixels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
    /// Provider detail hint for images (`low`, `high`, `auto`), kept for replay and estimates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The bytes as padded standard base64 (inline attachments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// An `http(s)` URL the provider fetches (URL attachments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// The prefix of the message a refused attachment gives any JSON reader.
pub(crate) const INVALID_ATTACHMENT_PREFIX: &str = "invalid attachment (";

/// An attachment as read, before it is checked: unknown fields refused, `null` for an absent
/// optional one.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AttachmentFields {
    media_type: String,
    #[serde(default)]
    byte_length: Option<u64>,
    #[serde(default)]
    sha256: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    width: Option<u32>,
    #[serde(default)]
    height: Option<u32>,
    #[serde(default)]
    detail: Option<String>,
    #[serde(default)]
    data: Option<String>,
    #[serde(default)]
    url: Option<String>,
}

impl TryFrom<AttachmentFields> for Attachment {
    type Error = String;

    /// Checks the attachment read ([`Attachment::verify`]); a refused one is named by
    /// [`INVALID_ATTACHMENT_PREFIX`].
    fn try_from(f: AttachmentFields) -> Result<Self, String> {
        let attachment = Attachment {
            media_type: f.media_type,
            byte_length: f.byte_length,
            sha256: f.sha256,
            name: f.name,
            width: f.width,
            height: f.height,
            detail: f.detail,
            data: f.data,
            url: f.url,
        };
        match attachment.verify() {
            Ok(()) => Ok(attachment),
            Err(e) => Err(format!("{INVALID_ATTACHMENT_PREFIX}{}): {e}", e.code())),
        }
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// `image/jpg` and upper-case spellings read as their canonical type.
fn normalize_media_type(media_type: &str) -> String {
    let lower = media_type.trim().to_ascii_lowercase();
    match lower.as_str() {
        "image/jpg" | "image/pjpeg" => "image/jpeg".into(),
        _ => lower,
    }
}

/// Checks `bytes` against the declared media type (`None`: take the signature's).
fn checked_media_type(declared: Option<&str>, bytes: &[u8]) -> Result<String, AttachmentError> {
    let found = sniff_media_type(bytes);
    let declared = declared.map(normalize_media_type);
    match (declared, found) {
        (Some(d), Some(f)) if d != f => {
            Err(AttachmentError::MediaTypeMismatch { declared: d, found: f.into() })
        }
        (Some(d), None) if SIGNED_MEDIA_TYPES.contains(&d.as_str()) => {
            Err(AttachmentError::MediaTypeMismatch {
                declared: d,
                found: "unrecognized bytes".into(),
            })
        }
        (Some(d), _) if !d.is_empty() => Ok(d),
        (_, Some(f)) => Ok(f.into()),
        _ => Ok("application/octet-stream".into()),
    }
}

impl Attachment {
    /// An inline attachment of `bytes`: hash, length and (for images) dimensions computed here,
    /// the media type checked against the signature. `media_type: None` takes the signature's.
    pub fn from_bytes(
        media_type: Option<&str>,
        bytes: &[u8],
        name: Option<String>,
    ) -> Result<Self, AttachmentError> {
        let byte_length = bytes.len() as u64;
        if byte_length > MAX_ATTACHMENT_BYTES {
            return Err(AttachmentError::TooLarge { byte_length });
        }
        let media_type = checked_media_type(media_type, bytes)?;
        let (width, height) = image_dimensions(bytes).unzip();
        Ok(Self {
            media_type,
            byte_length: Some(byte_length),
            sha256: Some(sha256_hex(bytes)),
            name,
            width,
            height,
            detail: None,
            data: Some(encode_base64(bytes)),
            url: None,
        })
    }

    /// An inline attachment from base64 text (a provider's `data` field).
    pub fn from_base64(
        media_type: Option<&str>,
        data: &str,
        name: Option<String>,
    ) -> Result<Self, AttachmentError> {
        // Refuse before decoding what could only decode to more than the limit.
        if (data.len() as u64 / 4) * 3 > MAX_ATTACHMENT_BYTES + 2 {
            return Err(AttachmentError::TooLarge { byte_length: data.len() as u64 / 4 * 3 });
        }
        let bytes = decode_base64(data).ok_or(AttachmentError::InvalidBase64)?;
        Self::from_bytes(media_type, &bytes, name)
    }

    /// An attachment from a URL: a `data:<type>;base64,<data>` URL becomes inline (the URL's
    /// type is the declared one, `media_type` a fallback); an `http(s)` URL stays a URL.
    pub fn from_url(
        url: &str,
        media_type: Option<&str>,
        name: Option<String>,
    ) -> Result<Self, AttachmentError> {
        if let Some(rest) = url.strip_prefix("data:") {
            let (header, data) = rest.split_once(',').ok_or(AttachmentError::InvalidDataUrl)?;
            let declared = header.strip_suffix(";base64").ok_or(AttachmentError::InvalidDataUrl)?;
            let declared = declared.split(';').next().filter(|t| t.contains('/'));
            return Self::from_base64(declared.or(media_type), data, name);
        }
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Err(AttachmentError::UrlNotAllowed(format!(
                "attachment URL must be data:, http: or https: (got `{}`)",
                url.chars().take(40).collect::<String>()
            )));
        }
        let media_type = media_type.map(normalize_media_type).unwrap_or_else(|| guess_type(url));
        Ok(Self {
            media_type,
            byte_length: None,
            sha256: None,
            name,
            width: None,
            height: None,
            detail: None,
            data: None,
            url: Some(url.to_owned()),
        })
    }

    /// This attachment as an image, where the source says it is one (an `image` part, an
    /// `image_url`, an `input_image`, an Anthropic `image` block): a URL whose extension names
    /// no image type reads as `image/*`; bytes that are not an image are refused.
    pub fn into_image(self) -> Result<Self, AttachmentError> {
        if self.is_image() {
            Ok(self)
        } else if self.url.is_some() {
            Ok(Self { media_type: "image/*".into(), ..self })
        } else {
            let found = self.media_type;
            Err(AttachmentError::MediaTypeMismatch { declared: "an image".into(), found })
        }
    }

    /// This attachment with a provider detail hint.
    pub fn with_detail(mut self, detail: Option<String>) -> Self {
        self.detail = detail;
        self
    }

    /// An image (its media type is `image/*`).
    pub fn is_image(&self) -> bool {
        self.media_type.starts_with("image/")
    }

    /// The decoded inline bytes, if the attachment is inline and its data decodes.
    pub fn inline_bytes(&self) -> Option<Vec<u8>> {
        self.data.as_deref().and_then(decode_base64)
    }

    /// The bytes live in the session archive (neither inline nor a URL).
    pub fn is_archived(&self) -> bool {
        self.data.is_none() && self.url.is_none()
    }

    /// `data:<media type>;base64,<data>` for an inline attachment.
    pub fn data_url(&self) -> Option<String> {
        self.data.as_ref().map(|data| format!("data:{};base64,{data}", self.media_type))
    }

    /// The archive address of the bytes in `session_id` (`None` without hash and length).
    pub fn archive_uri(&self, session_id: &str) -> Option<String> {
        let (sha, length) = (self.sha256.as_ref()?, self.byte_length?);
        crate::prune::ArchiveAddress::new(session_id, sha, length).ok().map(|a| a.to_string())
    }

    /// The short text that stands for the attachment where its bytes cannot go (summarizer
    /// transcripts, pruned requests, wire formats without attachments in that position).
    pub fn stand_in(&self, session_id: &str) -> String {
        let mut text = format!("[attachment {}", self.media_type);
        if let Some(name) = &self.name {
            text.push_str(&format!(" {}", serde_json::Value::String(name.clone())));
        }
        if let (Some(w), Some(h)) = (self.width, self.height) {
            text.push_str(&format!(" {w}x{h}"));
        }
        if let Some(length) = self.byte_length {
            text.push_str(&format!(", {length} bytes"));
        }
        match (self.archive_uri(session_id), &self.url, &self.sha256) {
            (Some(uri), ..) => text.push_str(&format!(", {uri}")),
            (None, Some(url), _) => text.push_str(&format!(", {url}")),
            (None, None, Some(sha)) => text.push_str(&format!(", sha256 {sha}")),
            _ => {}
        }
        text.push(']');
        text
    }

    /// Checks the rules in the module docs: one place for the bytes, length and hash present
    /// (except for a URL) and matching inline data, a signed format's signature, the size limit.
    pub fn verify(&self) -> Result<(), AttachmentError> {
        let inconsistent = |why: &str| Err(AttachmentError::Inconsistent(why.into()));
        if self.media_type.is_empty() || self.media_type != normalize_media_type(&self.media_type) {
            return inconsistent("mediaType must be a lower-case media type");
        }
        if let Some(length) = self.byte_length
            && length > MAX_ATTACHMENT_BYTES
        {
            return Err(AttachmentError::TooLarge { byte_length: length });
        }
        if let Some(sha) = &self.sha256
            && (sha.len() != 64
                || !sha.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
        {
            return inconsistent("sha256 must be 64 lowercase hex digits");
        }
        match (&self.data, &self.url) {
            (Some(_), Some(_)) => inconsistent("both data and url are set"),
            (None, Some(url)) => {
                if url.starts_with("https://") || url.starts_with("http://") {
                    Ok(())
                } else {
                    Err(AttachmentError::UrlNotAllowed("url must be http: or https:".into()))
                }
            }
            (data, None) => {
                let (Some(length), Some(sha)) = (self.byte_length, &self.sha256) else {
                    return inconsistent(
                        "inline and archived attachments need byteLength and sha256",
                    );
                };
                let Some(data) = data else { return Ok(()) };
                let bytes = decode_base64(data).ok_or(AttachmentError::InvalidBase64)?;
                if bytes.len() as u64 != length || &sha256_hex(&bytes) != sha {
                    return inconsistent("byteLength or sha256 does not match data");
                }
                checked_media_type(Some(&self.media_type), &bytes).map(|_| ())
            }
        }
    }
}

/// The media type a URL's file extension suggests (`application/octet-stream` otherwise).
fn guess_type(url: &str) -> String {
    let path = url.split(['?', '#']).next().unwrap_or(url).to_ascii_lowercase();
    let extension = path.rsplit('.').next().unwrap_or("");
    match extension {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        _ => "application/octet-stream",
    }
    .into()
}

#[cfg(test)]
mod tests;
