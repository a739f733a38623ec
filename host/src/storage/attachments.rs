//! Attachment bytes in the session archive: large inline attachments move there when their
//! event is appended, and the projection of a request gets them back ("hydration").
//!
//! The archive is the content-addressed `tool_result_archive` table (session, SHA-256, byte
//! length). An attachment whose inline bytes exceed [`INLINE_ATTACHMENT_MAX_BYTES`] is stored
//! there in the same transaction as its event, and the event keeps only its media type, length,
//! hash, name and dimensions: the ledger stays small, a screenshot repeated on every step is
//! stored once, and the digest (which covers the hash) still pins the exact bytes. An appended
//! event that names archived bytes the archive does not hold is refused.

use std::borrow::Cow;

use contextfold_core::RuntimeEvent;
use contextfold_core::event::{Attachment, encode_base64};
use contextfold_core::projection::{Message, Part};
use rusqlite::{OptionalExtension, Transaction, params};

use super::Store;
use super::error::StoreError;

/// Inline attachments up to this many bytes stay in their event; larger ones move to the
/// archive on append.
pub const INLINE_ATTACHMENT_MAX_BYTES: u64 = 16 * 1024;

/// `event` as the ledger stores it: large inline attachments archived within `tx` and kept by
/// reference; archived references checked against the archive.
pub(super) fn archive_attachments<'e>(
    tx: &Transaction<'_>,
    index: usize,
    event: &'e RuntimeEvent,
) -> Result<Cow<'e, RuntimeEvent>, StoreError> {
    let attachments = event.attachments();
    if attachments.is_empty() {
        return Ok(Cow::Borrowed(event));
    }
    let mut stored = Vec::with_capacity(attachments.len());
    for attachment in attachments {
        let (Some(sha), Some(length)) = (&attachment.sha256, attachment.byte_length) else {
            stored.push(attachment.clone());
            continue;
        };
        if attachment.url.is_some() {
            stored.push(attachment.clone());
        } else if let Some(bytes) = attachment.inline_bytes() {
            if length <= INLINE_ATTACHMENT_MAX_BYTES {
                stored.push(attachment.clone());
                continue;
            }
            tx.prepare_cached(
                "INSERT OR IGNORE INTO tool_result_archive \
                 (session_id, content_sha256, byte_size, body) VALUES (?1, ?2, ?3, ?4)",
            )
            .and_then(|mut insert| {
                insert.execute(params![event.session_id, sha, length as i64, bytes])
            })
            .map_err(StoreError::sqlite("archiving an attachment"))?;
            stored.push(Attachment { data: None, ..attachment.clone() });
        } else {
            let held: Option<i64> = tx
                .prepare_cached(
                    "SELECT 1 FROM tool_result_archive \
                     WHERE session_id = ?1 AND content_sha256 = ?2 AND byte_size = ?3",
                )
                .and_then(|mut find| {
                    find.query_row(params![event.session_id, sha, length as i64], |row| row.get(0))
                        .optional()
                })
                .map_err(StoreError::sqlite("looking up an archived attachment"))?;
            if held.is_none() {
                return Err(StoreError::AttachmentNotArchived { index, sha256: sha.clone() });
            }
            stored.push(attachment.clone());
        }
    }
    let content = event.content.with_attachments(stored);
    Ok(Cow::Owned(event.with_content(content)))
}

impl Store {
    /// Puts the archived bytes of every attachment in `messages` back inline, so the wire
    /// formats can send them. An attachment whose bytes are not in the archive is left as it
    /// is (the mappings then send its text stand-in).
    pub fn hydrate_attachments(
        &self,
        session_id: &str,
        messages: &mut [Message],
    ) -> Result<(), StoreError> {
        let conn = self.lock();
        let mut find = conn
            .prepare_cached(
                "SELECT body FROM tool_result_archive \
                 WHERE session_id = ?1 AND content_sha256 = ?2 AND byte_size = ?3",
            )
            .map_err(StoreError::sqlite("preparing an attachment read"))?;
        let mut hydrate = |attachment: &mut Attachment| -> Result<(), StoreError> {
            let (Some(sha), Some(length)) = (&attachment.sha256, attachment.byte_length) else {
                return Ok(());
            };
            if !attachment.is_archived() {
                return Ok(());
            }
            let body: Option<Vec<u8>> = find
                .query_row(params![session_id, sha, length as i64], |row| row.get(0))
                .optional()
                .map_err(StoreError::sqlite("reading an archived attachment"))?;
            if let Some(body) = body {
                attachment.data = Some(encode_base64(&body));
            }
            Ok(())
        };
        for message in messages {
            for part in &mut message.parts {
                match part {
                    Part::Attachment { attachment } => hydrate(attachment)?,
                    Part::ToolResult { attachments, .. } => {
                        for attachment in attachments {
                            hydrate(attachment)?;
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}
