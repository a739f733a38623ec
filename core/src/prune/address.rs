//! Archive addresses of actively pruned tool results, and the archive error type.
//!
//! An address names one archived body by session, SHA-256 and byte size:
//! `contextfold://archive/<session_id>/<sha256>/<byte_size>`. Parsing is strict: the scheme and
//! host are exact, the session id matches `[A-Za-z0-9._:-]{1,128}` (and is neither `.` nor `..`),
//! the hash is 64 lowercase hex digits, the size is a canonical decimal (no sign, no leading
//! zero) of at most [`MAX_ARCHIVE_BYTES`], and there is nothing else: no extra segment, no
//! trailing slash, no query, no fragment, no percent-encoding.

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::diagnostics::ReasonCode;

/// Scheme and host every archive address starts with.
pub(crate) const ARCHIVE_URI_PREFIX: &str = "contextfold://archive/";
/// Largest archived body an address may name: 1 GiB.
pub const MAX_ARCHIVE_BYTES: u64 = 1 << 30;
/// Longest session id an address may carry.
pub(crate) const MAX_SESSION_ID_LEN: usize = 128;

/// The bounded address of one archived tool result.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ArchiveAddress {
    session_id: String,
    content_sha256: String,
    byte_size: u64,
}

impl ArchiveAddress {
    /// An address from its parts, validated like [`ArchiveAddress::parse`].
    pub fn new(
        session_id: &str,
        content_sha256: &str,
        byte_size: u64,
    ) -> Result<Self, ArchiveError> {
        validate_session_id(session_id)?;
        validate_sha256(content_sha256)?;
        if byte_size > MAX_ARCHIVE_BYTES {
            return Err(ArchiveError::SizeTooLarge { byte_size });
        }
        Ok(Self {
            session_id: session_id.to_owned(),
            content_sha256: content_sha256.to_owned(),
            byte_size,
        })
    }

    /// The address of `bytes` archived in `session_id` (hash and size computed here).
    pub fn for_content(session_id: &str, bytes: &[u8]) -> Result<Self, ArchiveError> {
        let byte_size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        Self::new(session_id, &sha256_hex(bytes), byte_size)
    }

    /// The address of exactly what a checkpoint covers: the bytes its source digest
    /// (`sha256:<hex>`) is taken over, [`crate::digest::DOMAIN_PREFIX`] and then each covered
    /// event's canonical JSON and `\n` (`byte_size` from
    /// [`crate::digest::PrefixHasher::byte_count`]).
    pub fn for_source_digest(
        session_id: &str,
        source_digest: &str,
        byte_size: u64,
    ) -> Result<Self, ArchiveError> {
        let hex = source_digest.strip_prefix("sha256:").unwrap_or(source_digest);
        Self::new(session_id, hex, byte_size)
    }

    /// Parses an address, rejecting anything that is not exactly canonical.
    pub fn parse(uri: &str) -> Result<Self, ArchiveError> {
        let rest = uri.strip_prefix(ARCHIVE_URI_PREFIX).ok_or(ArchiveError::WrongScheme)?;
        if rest.contains(['?', '#']) {
            return Err(ArchiveError::QueryOrFragment);
        }
        let segments: Vec<&str> = rest.split('/').collect();
        let [session_id, content_sha256, size] = segments[..] else {
            return Err(ArchiveError::SegmentCount { found: segments.len() });
        };
        Self::new(session_id, content_sha256, parse_canonical_size(size)?)
    }

    /// The canonical URI form.
    pub fn to_uri(&self) -> String {
        format!(
            "{ARCHIVE_URI_PREFIX}{}/{}/{}",
            self.session_id, self.content_sha256, self.byte_size
        )
    }

    /// Session the body was archived in.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// SHA-256 of the body, 64 lowercase hex digits.
    pub fn content_sha256(&self) -> &str {
        &self.content_sha256
    }

    /// Size of the body in bytes.
    pub fn byte_size(&self) -> u64 {
        self.byte_size
    }
}

impl fmt::Display for ArchiveAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_uri())
    }
}

impl TryFrom<String> for ArchiveAddress {
    type Error = ArchiveError;

    fn try_from(uri: String) -> Result<Self, Self::Error> {
        Self::parse(&uri)
    }
}

impl From<ArchiveAddress> for String {
    fn from(address: ArchiveAddress) -> Self {
        address.to_uri()
    }
}

/// Lowercase hex SHA-256 of `bytes`.
pub(super) fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for byte in digest.iter() {
        hex.push(char::from(HEX[usize::from(byte >> 4)]));
        hex.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    hex
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn validate_session_id(session_id: &str) -> Result<(), ArchiveError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-');
    let ok = !session_id.is_empty()
        && session_id.len() <= MAX_SESSION_ID_LEN
        && session_id.chars().all(allowed)
        && session_id != "."
        && session_id != "..";
    if ok {
        Ok(())
    } else {
        Err(ArchiveError::InvalidSessionId { session_id: session_id.to_owned() })
    }
}

fn validate_sha256(hex: &str) -> Result<(), ArchiveError> {
    let ok = hex.len() == 64 && hex.bytes().all(|b| HEX.contains(&b));
    if ok { Ok(()) } else { Err(ArchiveError::InvalidSha256) }
}

fn parse_canonical_size(text: &str) -> Result<u64, ArchiveError> {
    let digits_only = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    let canonical = digits_only && (text == "0" || !text.starts_with('0'));
    if !canonical {
        return Err(ArchiveError::InvalidByteSize);
    }
    // More than 10 digits is always above the 1 GiB bound; avoid overflow on huge inputs.
    if text.len() > 10 {
        return Err(ArchiveError::SizeTooLarge { byte_size: u64::MAX });
    }
    let byte_size: u64 = text.parse().map_err(|_| ArchiveError::InvalidByteSize)?;
    if byte_size > MAX_ARCHIVE_BYTES {
        return Err(ArchiveError::SizeTooLarge { byte_size });
    }
    Ok(byte_size)
}

/// Why an archive address or an archive read was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArchiveError {
    /// The address does not start with `contextfold://archive/`.
    #[error("archive address must start with `{ARCHIVE_URI_PREFIX}`")]
    WrongScheme,
    /// The address carries a query string or fragment.
    #[error("archive address must not carry a query or fragment")]
    QueryOrFragment,
    /// The path does not have exactly three segments (session, hash, size).
    #[error("archive address must have 3 path segments, found {found}")]
    SegmentCount {
        /// Number of `/`-separated segments found after the prefix.
        found: usize,
    },
    /// The session id is empty, too long, `.`/`..`, or has a character outside
    /// `[A-Za-z0-9._:-]`.
    #[error("invalid session id in archive address: {session_id:?}")]
    InvalidSessionId {
        /// The rejected session id.
        session_id: String,
    },
    /// The hash is not 64 lowercase hex digits.
    #[error("archive hash must be 64 lowercase hex digits")]
    InvalidSha256,
    /// The size is not a canonical decimal number.
    #[error("archive byte size must be a canonical decimal number")]
    InvalidByteSize,
    /// The size is above [`MAX_ARCHIVE_BYTES`].
    #[error("archive byte size {byte_size} exceeds the bound of {MAX_ARCHIVE_BYTES}")]
    SizeTooLarge {
        /// The rejected size (`u64::MAX` when it does not even fit).
        byte_size: u64,
    },
    /// The address names another session than the one reading it.
    #[error("archive belongs to session `{found}`, not `{expected}`")]
    SessionMismatch {
        /// Session doing the read.
        expected: String,
        /// Session named by the address.
        found: String,
    },
    /// The stored body has another byte size than the address.
    #[error("stored archive has {actual} bytes, address says {expected}")]
    SizeMismatch {
        /// Size named by the address.
        expected: u64,
        /// Size of the stored body.
        actual: u64,
    },
    /// The stored body does not hash to the address's SHA-256.
    #[error("stored archive hashes to {actual}, address says {expected}")]
    HashMismatch {
        /// Hash named by the address.
        expected: String,
        /// Hash of the stored body.
        actual: String,
    },
    /// An inspect offset beyond the end of the body.
    #[error("inspect offset {offset} is beyond the archive's {byte_size} bytes")]
    OffsetBeyondEnd {
        /// Requested offset.
        offset: u64,
        /// Size of the body.
        byte_size: u64,
    },
    /// An inspect length of zero, or a query match count of zero.
    #[error("archive read asks for nothing: {0} must be at least 1")]
    ZeroLimit(&'static str),
    /// A query pattern that is empty, longer than the bound, or contains a line break.
    #[error("query pattern must be 1 to {max} bytes without line breaks")]
    InvalidPattern {
        /// The pattern length bound.
        max: usize,
    },
}

impl ArchiveError {
    /// The stable reason code.
    pub fn reason_code(&self) -> ReasonCode {
        match self {
            ArchiveError::SessionMismatch { .. } => ReasonCode::ArchiveSessionMismatch,
            ArchiveError::SizeMismatch { .. } => ReasonCode::ArchiveSizeMismatch,
            ArchiveError::HashMismatch { .. } => ReasonCode::ArchiveHashMismatch,
            ArchiveError::OffsetBeyondEnd { .. }
            | ArchiveError::ZeroLimit(_)
            | ArchiveError::InvalidPattern { .. } => ReasonCode::ArchiveReadInvalid,
            ArchiveError::WrongScheme
            | ArchiveError::QueryOrFragment
            | ArchiveError::SegmentCount { .. }
            | ArchiveError::InvalidSessionId { .. }
            | ArchiveError::InvalidSha256
            | ArchiveError::InvalidByteSize
            | ArchiveError::SizeTooLarge { .. } => ReasonCode::ArchiveAddressInvalid,
        }
    }

    /// The stable snake_case code.
    pub fn code(&self) -> &'static str {
        self.reason_code().as_str()
    }
}
