//! Every checkpoint of a session verified in one streamed pass over its ledger, and the deep
//! check of every row's derived columns.
//!
//! [`Store::verify_checkpoints`] reads the ledger rows in `seq` order (`storage/scan.rs`, on
//! either backend) and feeds each to the core's [`PrefixSweep`] (hashing on a second thread with [`PipelinedSha256`]), then drops it:
//! the ledger is read and hashed once however many checkpoints it has, and memory holds one row
//! at a time plus the set of turn ids seen. A row holding its canonical bytes
//! (`storage/derived.rs`) is hashed as stored, with its key and derived columns, without
//! parsing: a changed byte in a covered row is a digest mismatch. Other rows are parsed and
//! hashed as events. Reading stops after the largest claimed coverage.
//!
//! [`Store::check_rows`] (`contextfold verify --deep`) parses every row and recomputes its
//! derived columns.

use contextfold_core::checkpoint::{EventKeys, HistoryCompactCheckpoint, PrefixSweep, SweepResult};

use crate::hashing::PipelinedSha256;

use super::covered::RowView;
use super::derived::{StoredFacts, matches_derived};
use super::scan::RowVisitor;
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

/// Feeds rows to the core's [`PrefixSweep`]: a canonical row hashed as stored with its key
/// columns, any other row parsed; stops after the largest claimed coverage.
pub(crate) struct CheckpointSweeper<'a> {
    session_id: &'a str,
    sweep: PrefixSweep<'a, PipelinedSha256>,
}

impl<'a> CheckpointSweeper<'a> {
    /// A sweep of `checkpoints` over `session_id`'s rows.
    pub(crate) fn new(session_id: &'a str, checkpoints: &'a [HistoryCompactCheckpoint]) -> Self {
        Self { session_id, sweep: PrefixSweep::with_engine(checkpoints) }
    }

    /// The results, given the session's event count.
    pub(crate) fn finish(self, events: u64) -> CheckpointSweep {
        let events_read = self.sweep.events_seen() as u64;
        let total = usize::try_from(events).unwrap_or(usize::MAX);
        CheckpointSweep { results: self.sweep.finish_with_total(total), events, events_read }
    }
}

impl RowVisitor for CheckpointSweeper<'_> {
    fn visit(&mut self, row: RowView<'_>) -> Result<bool, StoreError> {
        if self.sweep.is_done() {
            return Ok(false);
        }
        if row.canonical {
            let keys = EventKeys {
                session_id: self.session_id,
                runtime_event_id: row.id,
                turn_id: row.turn,
                run_id: row.run,
            };
            self.sweep.push_canonical(keys, row.json);
        } else {
            self.sweep.push(&row.event(self.session_id)?);
        }
        Ok(!self.sweep.is_done())
    }
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
        let mut sweeper = CheckpointSweeper::new(session_id, checkpoints);
        self.scan_rows(session_id, &mut sweeper)?;
        Ok(sweeper.finish(events))
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

/// Parses every row, checks it against its key columns and recomputes its canonical bytes and
/// derived columns.
pub(crate) struct RowChecker<'a> {
    session_id: &'a str,
    check: RowCheck,
}

impl<'a> RowChecker<'a> {
    /// A check of `session_id`'s rows.
    pub(crate) fn new(session_id: &'a str) -> Self {
        Self { session_id, check: RowCheck::default() }
    }

    /// What the rows gave.
    pub(crate) fn finish(self) -> RowCheck {
        self.check
    }
}

impl RowVisitor for RowChecker<'_> {
    fn visit(&mut self, row: RowView<'_>) -> Result<bool, StoreError> {
        let event = row.event(self.session_id)?;
        let facts = StoredFacts {
            json: row.json,
            canonical: row.canonical,
            turn_id: row.turn,
            run_id: row.run,
            live_head: row.live_head,
            tokens: row.tokens,
        };
        self.check.rows += 1;
        self.check.canonical_rows += u64::from(facts.canonical);
        let matches =
            matches_derived(&event, &facts).map_err(|e| StoreError::LedgerUnreadable {
                session_id: self.session_id.to_owned(),
                detail: format!("row seq {}: cannot be serialized: {e}", event.seq),
            })?;
        if !matches {
            self.check.mismatched.push(event.seq);
        }
        Ok(true)
    }
}

impl Store {
    /// Parses every row of `session_id`'s ledger, checks it against its key columns (a row that
    /// does not parse or disagrees stops the check with [`StoreError::LedgerUnreadable`]) and
    /// recomputes its canonical bytes and derived columns (`contextfold verify --deep`).
    pub fn check_rows(&self, session_id: &str) -> Result<RowCheck, StoreError> {
        let mut checker = RowChecker::new(session_id);
        self.scan_rows(session_id, &mut checker)?;
        Ok(checker.finish())
    }
}
