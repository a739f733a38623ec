//! The content-addressed archive on PostgreSQL (`tool_result_archive`, keyed by session and
//! SHA-256, with the byte size): archived tool results and attachment bytes, stored once.
//! The rules are those of `storage/archive.rs` and `storage/attachments.rs`.

use std::borrow::Cow;

use contextfold_core::RuntimeEvent;
use contextfold_core::event::{Attachment, encode_base64};
use contextfold_core::projection::{ArchiveAddress, Message, Part};

use super::{PgError, PgLedger};
use crate::storage::{ArchiveReadError, INLINE_ATTACHMENT_MAX_BYTES, StoreError};

impl PgLedger {
    /// Archives `body` for `session_id` and returns its address; the same bytes again are a
    /// no-op (the first row stays).
    pub async fn archive_put(
        &self,
        session_id: &str,
        body: &[u8],
    ) -> Result<ArchiveAddress, ArchiveReadError> {
        let address = ArchiveAddress::for_content(session_id, body)?;
        let client = self.client("archiving a body").await.map_err(StoreError::from)?;
        client
            .execute(
                "INSERT INTO tool_result_archive (session_id, content_sha256, byte_size, body) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                &[&session_id, &address.content_sha256(), &(address.byte_size() as i64), &body],
            )
            .await
            .map_err(|e| StoreError::from(PgError::from_client("archiving a body", e)))?;
        Ok(address)
    }

    /// The archived body of `session_id` with this hash and size, if held.
    pub async fn archive_body(
        &self,
        session_id: &str,
        sha256: &str,
        byte_size: u64,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let client = self.client("reading an archived body").await?;
        let row = client
            .query_opt(
                "SELECT body FROM tool_result_archive \
                 WHERE session_id = $1 AND content_sha256 = $2 AND byte_size = $3",
                &[&session_id, &sha256, &(byte_size as i64)],
            )
            .await
            .map_err(PgError::during("reading an archived body"))?;
        Ok(row.map(|row| row.get(0)))
    }

    /// Puts archived attachment bytes back inline in `messages` (those the archive does not
    /// hold are left as they are).
    pub async fn hydrate_attachments(
        &self,
        session_id: &str,
        messages: &mut [Message],
    ) -> Result<(), StoreError> {
        for message in messages {
            for part in &mut message.parts {
                match part {
                    Part::Attachment { attachment } => self.hydrate(session_id, attachment).await?,
                    Part::ToolResult { attachments, .. } => {
                        for attachment in attachments {
                            self.hydrate(session_id, attachment).await?;
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    async fn hydrate(
        &self,
        session_id: &str,
        attachment: &mut Attachment,
    ) -> Result<(), StoreError> {
        let (Some(sha), Some(length)) = (&attachment.sha256, attachment.byte_length) else {
            return Ok(());
        };
        if !attachment.is_archived() {
            return Ok(());
        }
        if let Some(body) = self.archive_body(session_id, sha, length).await? {
            attachment.data = Some(encode_base64(&body));
        }
        Ok(())
    }
}

/// `event` as the ledger stores it: inline attachments above [`INLINE_ATTACHMENT_MAX_BYTES`]
/// archived within `tx` and kept by reference; archived references checked.
pub(super) async fn archive_attachments<'e>(
    tx: &tokio_postgres::Transaction<'_>,
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
            tx.execute(
                "INSERT INTO tool_result_archive (session_id, content_sha256, byte_size, body) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                &[&event.session_id, sha, &(length as i64), &bytes],
            )
            .await
            .map_err(PgError::during("archiving an attachment"))?;
            stored.push(Attachment { data: None, ..attachment.clone() });
        } else {
            let held = tx
                .query_opt(
                    "SELECT 1 FROM tool_result_archive \
                     WHERE session_id = $1 AND content_sha256 = $2 AND byte_size = $3",
                    &[&event.session_id, sha, &(length as i64)],
                )
                .await
                .map_err(PgError::during("looking up an archived attachment"))?;
            if held.is_none() {
                return Err(StoreError::AttachmentNotArchived { index, sha256: sha.clone() });
            }
            stored.push(attachment.clone());
        }
    }
    let content = event.content.with_attachments(stored);
    Ok(Cow::Owned(event.with_content(content)))
}
