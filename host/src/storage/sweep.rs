//! Every checkpoint of a session verified in one streamed pass over its ledger.
//!
//! [`Store::verify_checkpoints`] reads the ledger rows in `seq` order and feeds each parsed
//! event to the core's [`PrefixSweep`] (hashing on a second thread with [`PipelinedSha256`]),
//! then drops it: the ledger is read and hashed once however many checkpoints it has, and
//! memory holds one event at a time plus the set of turn ids seen. Reading stops after the
//! largest claimed coverage.

use contextfold_core::checkpoint::HistoryCompactCheckpoint;
use contextfold_core::prefix_match::{PrefixSweep, SweepResult};

use crate::hashing::PipelinedSha256;

use super::stream::read_event_row;
use super::{Store, StoreError};

/// The outcome of [`Store::verify_checkpoints`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointSweep {
    /// One result per checkpoint, in the order given: what
    /// [`contextfold_core::prefix_match::match_checkpoint_prefix`] gives over the whole ledger.
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
                .prepare(
                    "SELECT seq, runtime_event_id, event_json FROM runtime_events \
                     WHERE session_id = ?1 ORDER BY seq",
                )
                .map_err(StoreError::sqlite("preparing the streamed ledger read"))?;
            let mut rows = statement
                .query([session_id])
                .map_err(StoreError::sqlite("streaming the ledger"))?;
            while !sweep.is_done()
                && let Some(row) =
                    rows.next().map_err(StoreError::sqlite("reading a ledger row"))?
            {
                sweep.push(&read_event_row(row, session_id)?);
            }
        }
        let events_read = sweep.events_seen() as u64;
        let total = usize::try_from(events).unwrap_or(usize::MAX);
        Ok(CheckpointSweep { results: sweep.finish_with_total(total), events, events_read })
    }
}
