//! Every checkpoint of a session verified in one streamed pass over its ledger, and the deep
//! check of every row's derived columns.
//!
//! [`Store::verify_checkpoints`] reads the ledger rows in `seq` order and feeds each to the
//! core's [`PrefixSweep`] (hashing on a second thread with [`PipelinedSha256`]), then drops it:
//! the ledger is read and hashed once however many checkpoints it has, and memory holds one row
//! at a time plus the set of turn ids seen. A row holding its canonical bytes
//! (`storage/derived.rs`) is hashed as stored, with its key and derived columns, without
//! parsing: a changed byte in a covered row is a digest mismatch. Other rows are parsed and
//! hashed as events. Reading stops after the largest claimed coverage.
//!
//! [`Store::check_rows`] (`contextfold verify --deep`) parses every row and recomputes its
//! derived columns.

use contextfold_core::checkpoint::{HistoryCompactCheckpoint, PrefixSweep, SweepResult};
use rusqlite::params;

use crate::hashing::PipelinedSha256;

use super::derived::{StoredFacts, matches_derived};
use super::stream::{read_event_row, stored_row};
use super::{Store, StoreError};

/// The outcome of [`Store::verify_checkpoints`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointSweep {
    /// One result per checkpoint, in the order given: what
    /// [`contextfold_core::checkpoint::match_checkpoint_prefix`] gives over the whole ledger.
    pub results: Vec<SweepResult>,
    /// Events in the session's ledger.
    pub events: u64,
    /// Events read and hashed (up to the largest claimed coverage).
    pub events_read: u64,
}

impl Store {
    /// Checks every one of `checkpoints` against the ledger of `session_id` in one streamed
    /// pass (module docs). A row that does not parse or disagrees with its key columns stops the
    /// check with [`StoreError::LedgerUnreadable`].
    pub fn verify_checkpoints(
        &self,
        session_id: &str,
        checkpoints: &[HistoryCompactCheckpoint],
    ) -> Result<CheckpointSweep, StoreError> {
        let events = self.event_count(session_id)?;
        let mut sweep = PrefixSweep::<PipelinedSha256>::with_engine(checkpoints);
        {
            let conn = self.lock();
            let mut statement = conn
                .prepare_cached(
                    "SELECT seq, runtime_event_id, event_json, canonical, turn_id, run_id \
                     FROM runtime_events WHERE session_id = ?1 ORDER BY seq",
                )
                .map_err(StoreError::sqlite("preparing the streamed ledger read"))?;
            let mut rows = statement
                .query([session_id])
                .map_err(StoreError::sqlite("streaming the ledger"))?;
            while !sweep.is_done()
                && let Some(row) =
                    rows.next().map_err(StoreError::sqlite("reading a ledger row"))?
            {
                match stored_row(row, session_id)? {
                    Some((keys, canonical)) => sweep.push_canonical(keys, canonical),
                    None => sweep.push(&read_event_row(row, session_id)?),
                }
            }
        }
        let events_read = sweep.events_seen() as u64;
        let total = usize::try_from(events).unwrap_or(usize::MAX);
        Ok(CheckpointSweep { results: sweep.finish_with_total(total), events, events_read })
    }
}

/// The outcome of [`Store::check_rows`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RowCheck {
    /// Rows read (the whole ledger of the session).
    pub rows: u64,
    /// Rows holding their event's canonical bytes (the others are parsed on every read).
    pub canonical_rows: u64,
    /// `seq` of every row whose stored bytes or derived columns disagree with the event it
    /// parses to.
    pub mismatched: Vec<u64>,
}

impl Store {
    /// Parses every row of `session_id`'s ledger, checks it against its key columns (a row that
    /// does not parse or disagrees stops the check with [`StoreError::LedgerUnreadable`]) and
    /// recomputes its canonical bytes and derived columns (`contextfold verify --deep`).
    pub fn check_rows(&self, session_id: &str) -> Result<RowCheck, StoreError> {
        let conn = self.lock();
        let mut statement = conn
            .prepare_cached(
                "SELECT seq, runtime_event_id, event_json, canonical, turn_id, run_id, \
                 live_head, tokens FROM runtime_events WHERE session_id = ?1 ORDER BY seq",
            )
            .map_err(StoreError::sqlite("preparing the row check"))?;
        let mut rows =
            statement.query(params![session_id]).map_err(StoreError::sqlite("checking rows"))?;
        let mut check = RowCheck::default();
        while let Some(row) = rows.next().map_err(StoreError::sqlite("reading a ledger row"))? {
            let event = read_event_row(row, session_id)?;
            let read = |e| StoreError::Sqlite { operation: "reading a ledger row", source: e };
            let facts = StoredFacts {
                json: row.get_ref(2).and_then(|v| Ok(v.as_bytes()?)).map_err(read)?,
                canonical: row.get(3).map_err(read)?,
                turn_id: row.get_ref(4).and_then(|v| Ok(v.as_str()?)).map_err(read)?,
                run_id: row.get_ref(5).and_then(|v| Ok(v.as_str()?)).map_err(read)?,
                live_head: row.get(6).map_err(read)?,
                tokens: row.get::<_, Option<i64>>(7).map_err(read)?.map(|t| t.max(0) as u64),
            };
            check.rows += 1;
            check.canonical_rows += u64::from(facts.canonical);
            let matches =
                matches_derived(&event, &facts).map_err(|e| StoreError::LedgerUnreadable {
                    session_id: session_id.to_owned(),
                    detail: format!("row seq {}: cannot be serialized: {e}", event.seq),
                })?;
            if !matches {
                check.mismatched.push(event.seq);
            }
        }
        Ok(check)
    }
}
