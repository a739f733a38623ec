//! The tool-result archive for active pruning: raw results stored content-addressed per
//! session before a placeholder replaces them in a request, and the `archive_read` handler,
//! which also serves the addresses of stale and masked placeholders from the session's log.

use contextfold_core::budget::CharEstimator;
use contextfold_core::digest::{DOMAIN_PREFIX, canonical_event_json};
use contextfold_core::projection::{
    ArchiveAddress, ArchiveReadRequest, ArchiveSlice, archive_tool_result, read_archive_slice,
    result_body,
};
use contextfold_core::{EventContent, RuntimeEvent};
use rusqlite::{OptionalExtension, TransactionBehavior, params};
use serde_json::Value;

use super::Store;
use super::error::{ArchiveReadError, StoreError};

impl Store {
    /// Archives `body` for `session_id` and returns its address. Storing the same bytes twice
    /// keeps the first row (the address is the content's hash and size).
    pub fn archive_put(
        &self,
        session_id: &str,
        body: &[u8],
    ) -> Result<ArchiveAddress, ArchiveReadError> {
        let address = ArchiveAddress::for_content(session_id, body)?;
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(StoreError::sqlite("starting an archive write"))?;
        tx.execute(
            "INSERT OR IGNORE INTO tool_result_archive (session_id, content_sha256, byte_size, body) \
             VALUES (?1, ?2, ?3, ?4)",
            params![session_id, address.content_sha256(), address.byte_size() as i64, body],
        )
        .map_err(StoreError::sqlite("archiving a tool result"))?;
        tx.commit().map_err(StoreError::sqlite("committing an archive write"))?;
        Ok(address)
    }

    /// Active pruning of one tool result of the current turn: archives the raw result durably
    /// (content-addressed, in the event's session) and only then returns the event to send in
    /// its place, whose output is the core's placeholder with the archive address and the
    /// `archive_read` instructions. The canonical event is not changed. `Ok(None)` for an event
    /// that is not a tool result.
    pub fn archive_tool_result(
        &self,
        event: &RuntimeEvent,
    ) -> Result<Option<RuntimeEvent>, ArchiveReadError> {
        let Some(prune) = archive_tool_result(event, &CharEstimator)? else { return Ok(None) };
        let stored = self.archive_put(&event.session_id, &prune.archive_bytes)?;
        debug_assert_eq!(stored, prune.address, "the store and the core hash the same bytes");
        Ok(Some(prune.replacement))
    }

    /// The `archive_read` tool: validates the request against `session_id` and the stored
    /// body (session, hash, byte size) and returns a bounded inspect or query slice, never the
    /// whole body by default. `input` is the tool call's JSON input.
    pub fn archive_read(
        &self,
        session_id: &str,
        input: &Value,
    ) -> Result<ArchiveSlice, ArchiveReadError> {
        let request: ArchiveReadRequest = serde_json::from_value(input.clone())
            .map_err(|e| ArchiveReadError::InvalidRequest(e.to_string()))?;
        let address = ArchiveAddress::parse(&request.address)?;
        if address.session_id() != session_id {
            // Let the core report the mismatch with its own code.
            return Ok(read_archive_slice(&request, session_id, &[])?);
        }
        let body: Option<Vec<u8>> = self
            .lock()
            .query_row(
                "SELECT body FROM tool_result_archive WHERE session_id = ?1 AND content_sha256 = ?2",
                params![session_id, address.content_sha256()],
                |row| row.get(0),
            )
            .optional()
            .map_err(StoreError::sqlite("reading an archived body"))?;
        let body = match body {
            Some(body) => body,
            None => match self.body_from_log(&address)? {
                Some(body) => body,
                None => self.covered_source(&address)?.ok_or_else(|| {
                    ArchiveReadError::NotArchived { address: request.address.clone() }
                })?,
            },
        };
        Ok(read_archive_slice(&request, session_id, &body)?)
    }

    /// The body a stale or masked placeholder's address names, found among the session's tool
    /// results in the log (request pruning archives nothing; the log holds every output). Only
    /// outputs of the address's byte size are hashed.
    fn body_from_log(&self, address: &ArchiveAddress) -> Result<Option<Vec<u8>>, StoreError> {
        let events = self.load_events(address.session_id())?;
        let size = usize::try_from(address.byte_size()).unwrap_or(usize::MAX);
        Ok(events.iter().find_map(|event| {
            let (EventContent::ToolResult { output, .. }
            | EventContent::HostedToolResult { output, .. }) = &event.content
            else {
                return None;
            };
            if output.as_str().is_some_and(|text| text.len() != size) {
                return None;
            }
            let body = result_body(output);
            let found = body.len() == size
                && ArchiveAddress::for_content(address.session_id(), &body).as_ref() == Ok(address);
            found.then_some(body)
        }))
    }

    /// The body a summary checkpoint's source address names (its limitations): the bytes a
    /// prefix's source digest is taken over, [`DOMAIN_PREFIX`] and each event's canonical JSON
    /// with its `\n`, up to the prefix whose size is the address's; `None` when no prefix has
    /// that size. The reader checks the hash.
    fn covered_source(&self, address: &ArchiveAddress) -> Result<Option<Vec<u8>>, StoreError> {
        let size = usize::try_from(address.byte_size()).unwrap_or(usize::MAX);
        let mut body = DOMAIN_PREFIX.to_vec();
        for event in self.load_events(address.session_id())? {
            if body.len() >= size {
                break;
            }
            body.extend_from_slice(canonical_event_json(&event).as_bytes());
            body.push(b'\n');
        }
        Ok((body.len() == size).then_some(body))
    }
}
