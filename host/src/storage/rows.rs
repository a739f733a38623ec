//! The stored form of the RuntimeEvent ledger, row by row, as the ledger trait exposes it
//! ([`crate::ledger::StoredRow`]): what a cold projection proves coverage from, and what
//! another backend must store byte for byte.

use rusqlite::params;

use super::{Store, StoreError};
use crate::ledger::StoredRow;

impl Store {
    /// Up to `limit` stored rows of `session_id` with `seq` above `after` (`None`: from the
    /// start), in `seq` order, exactly as stored.
    pub fn stored_rows(
        &self,
        session_id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<StoredRow>, StoreError> {
        let after = after.map_or(-1, |seq| i64::try_from(seq).unwrap_or(i64::MAX));
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let conn = self.lock();
        let mut statement = conn
            .prepare_cached(
                "SELECT seq, runtime_event_id, event_json, canonical, turn_id, run_id, live_head, \
                 tokens FROM runtime_events WHERE session_id = ?1 AND seq > ?2 ORDER BY seq \
                 LIMIT ?3",
            )
            .map_err(StoreError::sqlite("reading stored rows"))?;
        let rows = statement
            .query_map(params![session_id, after, limit], |row| {
                Ok(StoredRow {
                    seq: row.get::<_, i64>(0)? as u64,
                    runtime_event_id: row.get(1)?,
                    event_json: row.get(2)?,
                    canonical: row.get(3)?,
                    turn_id: row.get(4)?,
                    run_id: row.get(5)?,
                    live_head: row.get(6)?,
                    tokens: row.get::<_, Option<i64>>(7)?.map(|t| t.max(0) as u64),
                })
            })
            .map_err(StoreError::sqlite("reading stored rows"))?;
        rows.collect::<Result<_, _>>().map_err(StoreError::sqlite("reading stored rows"))
    }

    /// The highest `seq` of `session_id`, if it has events.
    pub fn last_seq(&self, session_id: &str) -> Result<Option<u64>, StoreError> {
        self.lock()
            .query_row(
                "SELECT max(seq) FROM runtime_events WHERE session_id = ?1",
                [session_id],
                |row| row.get::<_, Option<i64>>(0),
            )
            .map(|seq| seq.map(|seq| seq as u64))
            .map_err(StoreError::sqlite("reading the last seq"))
    }

    /// The archived body of `session_id` with this hash and size, if held.
    pub fn archive_body(
        &self,
        session_id: &str,
        sha256: &str,
        byte_size: u64,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        use rusqlite::OptionalExtension;
        self.lock()
            .query_row(
                "SELECT body FROM tool_result_archive \
                 WHERE session_id = ?1 AND content_sha256 = ?2 AND byte_size = ?3",
                params![session_id, sha256, byte_size as i64],
                |row| row.get(0),
            )
            .optional()
            .map_err(StoreError::sqlite("reading an archived body"))
    }
}
