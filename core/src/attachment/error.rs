//! [`AttachmentError`]: why an image or file was refused.

use super::MAX_ATTACHMENT_BYTES;

/// Why an attachment was refused. Nothing is written when an importer returns one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AttachmentError {
    /// A `data:` URL or base64 field that is not canonical padded base64.
    #[error("attachment data is not valid base64")]
    InvalidBase64,
    /// A `data:` URL without `;base64` or without its comma.
    #[error("data URL is not of the form data:<media type>;base64,<data>")]
    InvalidDataUrl,
    /// The declared media type contradicts the bytes' signature.
    #[error("declared media type `{declared}` but the bytes are {found}")]
    MediaTypeMismatch {
        /// The declared type.
        declared: String,
        /// What the signature says (`image/png`, …, or `unrecognized bytes`).
        found: String,
    },
    /// More bytes than [`MAX_ATTACHMENT_BYTES`].
    #[error("attachment of {byte_length} bytes exceeds the {MAX_ATTACHMENT_BYTES}-byte limit")]
    TooLarge {
        /// Its length.
        byte_length: u64,
    },
    /// A URL where the target format needs the bytes, or a URL that is not `http(s)`.
    #[error("{0}")]
    UrlNotAllowed(String),
    /// The fields do not describe one consistent attachment (both `data` and `url`, a length
    /// or hash that does not match the data, an archived attachment without its hash, …).
    #[error("inconsistent attachment: {0}")]
    Inconsistent(String),
}

impl AttachmentError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidBase64 => "attachment_invalid_base64",
            Self::InvalidDataUrl => "attachment_invalid_data_url",
            Self::MediaTypeMismatch { .. } => "attachment_media_type_mismatch",
            Self::TooLarge { .. } => "attachment_too_large",
            Self::UrlNotAllowed(_) => "attachment_url_not_allowed",
            Self::Inconsistent(_) => "attachment_inconsistent",
        }
    }
}
