//! Bounded reads of an archived tool result (the `archive_read` tool).
//!
//! The host stores the raw result under its [`ArchiveAddress`] before a placeholder replaces it;
//! when the model calls `archive_read`, the host loads the stored bytes and calls
//! [`read_archive_slice`], which validates the address, the session, the byte size and the
//! SHA-256 of what was loaded, then returns a bounded slice:
//!
//! - `inspect`: at most [`MAX_INSPECT_BYTES`] bytes of text (the default length), starting at the
//!   first character boundary at or after `offset` and never splitting a character. A request
//!   ending inside a character stops before it, unless that would return nothing, in which case
//!   the one character is included. Invalid UTF-8 becomes U+FFFD (`lossy: true`), counted in the
//!   output bound. `nextOffset` says where to continue.
//! - `query`: the lines containing `pattern` (case-sensitive bytes), at most `maxMatches` of them
//!   (capped at [`MAX_QUERY_MATCHES`]), each as an excerpt of at most [`MAX_MATCH_LINE_BYTES`]
//!   bytes that shows the match, with its 1-based line number and archive offset.
//!
//! The whole body is never returned by default.

use serde::{Deserialize, Serialize};

use super::address::{ArchiveAddress, ArchiveError, sha256_hex};

/// Largest inspect slice, in bytes of returned text; also the default inspect length.
pub const MAX_INSPECT_BYTES: usize = 16 * 1024;
/// Largest number of query matches returned; also the default.
pub const MAX_QUERY_MATCHES: u32 = 20;
/// Largest excerpt of one matching line, in bytes of returned text.
pub const MAX_MATCH_LINE_BYTES: usize = 512;
/// Longest query pattern, in bytes.
pub const MAX_PATTERN_BYTES: usize = 1024;
/// Bytes of a long line shown before the match when the match lies beyond the first excerpt.
pub(crate) const MATCH_CONTEXT_BEFORE: usize = 128;

/// One `archive_read` tool call: `{"address": "...", "mode": "inspect", "offset": 0,
/// "length": 16384}` or `{"address": "...", "mode": "query", "pattern": "error",
/// "maxMatches": 20}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArchiveReadRequest {
    /// The `contextfold://archive/...` address from the placeholder.
    pub address: String,
    /// What to read.
    #[serde(flatten)]
    pub mode: ArchiveReadMode,
}

/// How to read an archived body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum ArchiveReadMode {
    /// A byte range, returned as text.
    Inspect {
        /// Byte offset to start at (default 0).
        #[serde(default)]
        offset: u64,
        /// Bytes to read (default and cap [`MAX_INSPECT_BYTES`]).
        #[serde(default = "default_length")]
        length: u64,
    },
    /// The lines that contain a substring.
    #[serde(rename_all = "camelCase")]
    Query {
        /// The substring to search for (case-sensitive).
        pattern: String,
        /// Most matching lines to return (default and cap [`MAX_QUERY_MATCHES`]).
        #[serde(default = "default_max_matches")]
        max_matches: u32,
    },
}

fn default_length() -> u64 {
    MAX_INSPECT_BYTES as u64
}

fn default_max_matches() -> u32 {
    MAX_QUERY_MATCHES
}

/// A bounded result of [`read_archive_slice`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum ArchiveSlice {
    /// A text slice of the body.
    #[serde(rename_all = "camelCase")]
    Inspect {
        /// Byte offset where the text starts (the requested offset moved forward to the next
        /// character boundary when it fell inside a character).
        offset: u64,
        /// Byte offset just past the text.
        end: u64,
        /// Size of the whole body.
        byte_size: u64,
        /// The text.
        text: String,
        /// Where to continue, or `None` at the end of the body.
        next_offset: Option<u64>,
        /// Invalid UTF-8 was replaced by U+FFFD.
        lossy: bool,
    },
    /// Matching lines.
    #[serde(rename_all = "camelCase")]
    Query {
        /// The pattern searched for.
        pattern: String,
        /// The matches, in body order.
        matches: Vec<ArchiveMatch>,
        /// More lines match than were returned.
        more_matches: bool,
    },
}

/// One matching line of a query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArchiveMatch {
    /// 1-based line number.
    pub line_number: u64,
    /// Byte offset of the excerpt in the body (usable as an inspect offset).
    pub offset: u64,
    /// The excerpt, at most [`MAX_MATCH_LINE_BYTES`] bytes.
    pub text: String,
    /// The excerpt is not the whole line.
    pub truncated: bool,
}

/// Validates `request` against `expected_session` and the `stored` bytes, then returns a bounded
/// slice (see the module docs).
pub fn read_archive_slice(
    request: &ArchiveReadRequest,
    expected_session: &str,
    stored: &[u8],
) -> Result<ArchiveSlice, ArchiveError> {
    let address = ArchiveAddress::parse(&request.address)?;
    if address.session_id() != expected_session {
        return Err(ArchiveError::SessionMismatch {
            expected: expected_session.to_owned(),
            found: address.session_id().to_owned(),
        });
    }
    let actual = u64::try_from(stored.len()).unwrap_or(u64::MAX);
    if actual != address.byte_size() {
        return Err(ArchiveError::SizeMismatch { expected: address.byte_size(), actual });
    }
    let hash = sha256_hex(stored);
    if hash != address.content_sha256() {
        return Err(ArchiveError::HashMismatch {
            expected: address.content_sha256().to_owned(),
            actual: hash,
        });
    }
    match &request.mode {
        ArchiveReadMode::Inspect { offset, length } => inspect(stored, *offset, *length),
        ArchiveReadMode::Query { pattern, max_matches } => query(stored, pattern, *max_matches),
    }
}

fn inspect(stored: &[u8], offset: u64, length: u64) -> Result<ArchiveSlice, ArchiveError> {
    let byte_size = stored.len() as u64;
    if offset > byte_size {
        return Err(ArchiveError::OffsetBeyondEnd { offset, byte_size });
    }
    if length == 0 {
        return Err(ArchiveError::ZeroLimit("length"));
    }
    let window = usize::try_from(length).unwrap_or(usize::MAX).min(MAX_INSPECT_BYTES);
    // `offset <= stored.len()`, so it fits in usize.
    let start = snap_to_char_start(stored, offset as usize);
    let decoded = decode_bounded(&stored[start..], window, MAX_INSPECT_BYTES);
    let end = start + decoded.consumed;
    Ok(ArchiveSlice::Inspect {
        offset: start as u64,
        end: end as u64,
        byte_size,
        text: decoded.text,
        next_offset: (end < stored.len()).then_some(end as u64),
        lossy: decoded.lossy,
    })
}

fn query(stored: &[u8], pattern: &str, max_matches: u32) -> Result<ArchiveSlice, ArchiveError> {
    if pattern.is_empty() || pattern.len() > MAX_PATTERN_BYTES || pattern.contains(['\n', '\r']) {
        return Err(ArchiveError::InvalidPattern { max: MAX_PATTERN_BYTES });
    }
    if max_matches == 0 {
        return Err(ArchiveError::ZeroLimit("maxMatches"));
    }
    let cap = max_matches.min(MAX_QUERY_MATCHES) as usize;
    let needle = pattern.as_bytes();
    let mut matches = Vec::new();
    let mut more_matches = false;
    let mut line_start = 0usize;
    for (index, raw_line) in stored.split(|&b| b == b'\n').enumerate() {
        let line = raw_line.strip_suffix(b"\r").unwrap_or(raw_line);
        if let Some(position) = find(line, needle) {
            if matches.len() == cap {
                more_matches = true;
                break;
            }
            matches.push(excerpt(line, line_start, index as u64 + 1, position, needle.len()));
        }
        line_start += raw_line.len() + 1;
    }
    Ok(ArchiveSlice::Query { pattern: pattern.to_owned(), matches, more_matches })
}

/// The excerpt of a matching line that shows the match.
fn excerpt(
    line: &[u8],
    line_start: usize,
    line_number: u64,
    at: usize,
    len: usize,
) -> ArchiveMatch {
    let from =
        if at + len <= MAX_MATCH_LINE_BYTES { 0 } else { at.saturating_sub(MATCH_CONTEXT_BEFORE) };
    let from = snap_to_char_start(line, from);
    let decoded = decode_bounded(&line[from..], MAX_MATCH_LINE_BYTES, MAX_MATCH_LINE_BYTES);
    ArchiveMatch {
        line_number,
        offset: (line_start + from) as u64,
        text: decoded.text,
        truncated: from > 0 || from + decoded.consumed < line.len(),
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > haystack.len() {
        return None;
    }
    haystack.windows(needle.len()).position(|window| window == needle)
}

/// `offset`, moved past the character it falls inside of (if it falls inside a valid one).
fn snap_to_char_start(bytes: &[u8], offset: usize) -> usize {
    let is_continuation = |b: u8| b & 0xC0 == 0x80;
    if offset >= bytes.len() || !is_continuation(bytes[offset]) {
        return offset;
    }
    for back in 1..=3 {
        let Some(lead_at) = offset.checked_sub(back) else { break };
        let lead = bytes[lead_at];
        if is_continuation(lead) {
            continue;
        }
        let width = match lead {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => 0,
        };
        let end = lead_at + width;
        if width > back && end <= bytes.len() && std::str::from_utf8(&bytes[lead_at..end]).is_ok() {
            return end;
        }
        break;
    }
    offset
}

/// Text decoded from the front of some bytes.
struct Decoded {
    text: String,
    consumed: usize,
    lossy: bool,
}

/// Decodes from the front of `bytes`, consuming at most `max_source` bytes (but at least one
/// character when `bytes` is not empty) and producing at most `max_output` bytes of text;
/// characters are never split and each invalid sequence becomes one U+FFFD.
fn decode_bounded(bytes: &[u8], max_source: usize, max_output: usize) -> Decoded {
    let mut decoded = Decoded { text: String::new(), consumed: 0, lossy: false };
    let fits = |decoded: &Decoded, source: usize, output: usize| {
        let first = decoded.consumed == 0;
        (first || decoded.consumed + source <= max_source)
            && decoded.text.len() + output <= max_output
    };
    for chunk in bytes.utf8_chunks() {
        for ch in chunk.valid().chars() {
            if !fits(&decoded, ch.len_utf8(), ch.len_utf8()) {
                return decoded;
            }
            decoded.text.push(ch);
            decoded.consumed += ch.len_utf8();
        }
        let invalid = chunk.invalid().len();
        if invalid > 0 {
            if !fits(&decoded, invalid, char::REPLACEMENT_CHARACTER.len_utf8()) {
                return decoded;
            }
            decoded.text.push(char::REPLACEMENT_CHARACTER);
            decoded.consumed += invalid;
            decoded.lossy = true;
        }
    }
    decoded
}
