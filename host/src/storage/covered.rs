//! A checkpoint's covered prefix proven from the stored rows in one pass, holding only what a
//! projection needs from it: the live head of the turn the coverage ends in, and the raw tail.
//!
//! [`Store::read_covered`] reads the ledger in `seq` order. A covered row that holds its
//! canonical bytes (`storage/derived.rs`) is hashed as stored, its turn and Run read from its
//! columns and its token estimate from the `tokens` column (when the caller's base estimator is
//! the one that column records); a live-head row's bytes are kept for as long as its run is the
//! last one seen, and only those of the final run are parsed. Other rows are parsed. The checkpoint's event count, through
//! boundary, turn count and digest are then checked exactly as
//! [`contextfold_core::checkpoint::match_checkpoint_prefix`] checks them, and every row after
//! the coverage is parsed into the tail. Memory holds the turn ids seen, one turn's head and the
//! tail, never the covered events.

use std::collections::HashSet;

use contextfold_core::RuntimeEvent;
use contextfold_core::budget::{TokenEstimator, estimate_event};
use contextfold_core::checkpoint::HistoryCompactCheckpoint;
use contextfold_core::digest::PrefixHasher;
use contextfold_core::projection::is_live_head_kind;

use crate::hashing::PipelinedSha256;

use super::derived::{TOKENS_ESTIMATOR, TOKENS_ESTIMATOR_KEY};
use super::scan::RowVisitor;
use super::{Store, StoreError};

/// What the stream proved about a checkpoint's covered prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CoveredPrefix {
    /// The checkpoint it was proven for.
    pub(crate) checkpoint_id: String,
    /// Covered events.
    pub(crate) covered: u64,
    /// The checkpoint's source digest.
    pub(crate) source_digest: String,
    /// `(seq, runtime_event_id)` of the last covered event.
    pub(crate) last: (u64, String),
    /// Every turn id of the covered events.
    pub(crate) turn_ids: HashSet<String>,
    /// The turn of the last covered event.
    pub(crate) final_turn: String,
    /// Whether that turn also has covered events before its final run (it was left and
    /// re-entered).
    pub(crate) final_turn_reentered: bool,
    /// The covered events' token estimate in the base estimator's units
    /// ([`TokenEstimator::tally_base`]).
    pub(crate) base_tokens: u64,
}

impl CoveredPrefix {
    /// Whether this is the proof of `checkpoint`'s coverage.
    pub(crate) fn proves(&self, checkpoint: &HistoryCompactCheckpoint) -> bool {
        checkpoint.checkpoint_id == self.checkpoint_id
            && checkpoint.coverage.event_count == self.covered
            && checkpoint.coverage.source_digest == self.source_digest
    }
}

/// A checkpoint's covered prefix proven from the stored rows, with the events a projection
/// replays around it (the live head and the tail); what [`crate::ledger::Ledger::read_covered`]
/// answers.
#[derive(Debug, Clone, PartialEq)]
pub struct CoveredLog {
    /// What was proven.
    pub(crate) prefix: CoveredPrefix,
    /// The live-head events of the covered final run of [`CoveredPrefix::final_turn`].
    pub(crate) head: Vec<RuntimeEvent>,
    /// Every event after the coverage.
    pub(crate) tail: Vec<RuntimeEvent>,
}

/// One stored `runtime_events` row as a backend reads it, borrowed from its driver's row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowView<'r> {
    /// `seq`.
    pub(crate) seq: u64,
    /// `runtime_event_id`.
    pub(crate) id: &'r str,
    /// `event_json` as stored (bytes: a canonical row is hashed without a UTF-8 check).
    pub(crate) json: &'r [u8],
    /// `canonical`.
    pub(crate) canonical: bool,
    /// `turn_id`.
    pub(crate) turn: &'r str,
    /// `run_id`.
    pub(crate) run: &'r str,
    /// `live_head`.
    pub(crate) live_head: bool,
    /// `tokens`.
    pub(crate) tokens: Option<u64>,
}

impl RowView<'_> {
    /// The row's event, checked against its key columns.
    pub(crate) fn event(&self, session_id: &str) -> Result<RuntimeEvent, StoreError> {
        event_of_row(self.seq, self.id, self.json, session_id)
    }
}

/// Parses a stored event, checking it against its key columns (`seq`, `runtime_event_id`,
/// `session_id`); any failure is [`StoreError::LedgerUnreadable`].
pub(crate) fn event_of_row(
    seq: u64,
    id: &str,
    json: &[u8],
    session_id: &str,
) -> Result<RuntimeEvent, StoreError> {
    let unreadable = |detail: String| StoreError::LedgerUnreadable {
        session_id: session_id.to_owned(),
        detail: format!("row seq {seq}: {detail}"),
    };
    let text = std::str::from_utf8(json).map_err(|e| unreadable(format!("cannot read it: {e}")))?;
    let event =
        RuntimeEvent::from_json(text).map_err(|e| unreadable(format!("{e} ({})", e.code())))?;
    if event.seq != seq || event.runtime_event_id != id || event.session_id != session_id {
        return Err(unreadable("the event JSON disagrees with its key columns".into()));
    }
    Ok(event)
}

/// The one-pass proof of a checkpoint's coverage, fed the session's rows in `seq` order by any
/// backend ([`Store::read_covered`], the PostgreSQL ledger's `read_covered`).
pub(crate) struct CoveredReader<'c, E: TokenEstimator + ?Sized> {
    session_id: &'c str,
    checkpoint: &'c HistoryCompactCheckpoint,
    /// The caller's estimator (its base measures: [`TokenEstimator::tally_base`]).
    estimator: &'c E,
    /// Whether the `tokens` column is in `base`'s units.
    stored_tokens: bool,
    hasher: PrefixHasher<PipelinedSha256>,
    walk: CoveredWalk,
    head: Vec<HeadRow>,
    tail: Vec<RuntimeEvent>,
    /// Whether the rows still agree with the checkpoint.
    matched: bool,
}

impl<'c, E: TokenEstimator + ?Sized> CoveredReader<'c, E> {
    /// A reader proving `checkpoint` over `session_id`'s rows, measuring with `estimator`'s
    /// base; `ledger_estimator` is the estimator the ledger's `tokens` column records (its
    /// `ledger_meta` row). `None` when there is nothing to prove (no coverage, another session).
    pub(crate) fn new(
        session_id: &'c str,
        checkpoint: &'c HistoryCompactCheckpoint,
        estimator: &'c E,
        ledger_estimator: Option<&str>,
    ) -> Option<Self> {
        if checkpoint.coverage.event_count == 0 || checkpoint.session_id != session_id {
            return None;
        }
        let stored_tokens = base_of(&estimator).stored_name() == Some(TOKENS_ESTIMATOR)
            && ledger_estimator == Some(TOKENS_ESTIMATOR);
        Some(Self {
            session_id,
            checkpoint,
            estimator,
            stored_tokens,
            hasher: PrefixHasher::with_engine(PipelinedSha256::default()),
            walk: CoveredWalk::default(),
            head: Vec::new(),
            tail: Vec::new(),
            matched: true,
        })
    }

    /// Reads the next row. `Ok(false)`: the rows do not match the checkpoint, stop reading
    /// (the caller falls back to the full projection). A row that does not parse is
    /// [`StoreError::LedgerUnreadable`].
    fn push(&mut self, row: RowView<'_>) -> Result<bool, StoreError> {
        let covered = self.checkpoint.coverage.event_count;
        if self.walk.seen >= covered {
            self.tail.push(row.event(self.session_id)?);
            return Ok(true);
        }
        let parsed = if row.canonical { None } else { Some(row.event(self.session_id)?) };
        let (seq, id, turn, run) = match &parsed {
            Some(e) => (e.seq, e.runtime_event_id.as_str(), e.turn_id.as_str(), e.run_id.as_str()),
            None => (row.seq, row.id, row.turn, row.run),
        };
        match &parsed {
            Some(event) => self.hasher.push(event),
            None => self.hasher.push_canonical(row.json),
        }
        let stored = row.tokens.filter(|_| self.stored_tokens);
        self.walk.base_tokens += match (stored, &parsed) {
            (Some(tokens), _) => tokens,
            (None, Some(event)) => estimate_event(base_of(&self.estimator), event),
            (None, None) => estimate_event(base_of(&self.estimator), &row.event(self.session_id)?),
        };
        if self.walk.enter(turn) {
            self.head.clear();
        }
        self.walk.seen += 1;
        if self.walk.seen == covered {
            let coverage = &self.checkpoint.coverage;
            let through = &coverage.through;
            let matches = id == through.runtime_event_id
                && turn == through.turn_id
                && run == through.run_id
                && self.walk.turn_ids.len() as u64 == coverage.turn_count
                && self.hasher.digest() == coverage.source_digest;
            if !matches {
                self.matched = false;
                return Ok(false);
            }
            self.walk.last = Some((seq, id.to_owned()));
        }
        // The head of a run is parsed only if the run turns out to be the last one.
        let is_head = match &parsed {
            Some(event) => is_live_head_kind(&event.content),
            None => row.live_head,
        };
        if is_head {
            self.head.push(match parsed {
                Some(event) => HeadRow::Parsed(Box::new(event)),
                None => HeadRow::Stored { seq, id: id.to_owned(), json: row.json.to_vec() },
            });
        }
        Ok(true)
    }

    /// The proven prefix with its head and tail; `None` when the rows ended before the
    /// coverage did, or did not match it.
    pub(crate) fn finish(self) -> Result<Option<CoveredLog>, StoreError> {
        if !self.matched {
            return Ok(None);
        }
        let session_id = self.session_id;
        let head = self
            .head
            .into_iter()
            .map(|row| row.into_event(session_id))
            .collect::<Result<Vec<_>, _>>()?;
        let Some(last) = self.walk.last else { return Ok(None) };
        let prefix = CoveredPrefix {
            checkpoint_id: self.checkpoint.checkpoint_id.clone(),
            covered: self.checkpoint.coverage.event_count,
            source_digest: self.checkpoint.coverage.source_digest.clone(),
            last,
            final_turn: self.walk.current_turn.unwrap_or_default(),
            final_turn_reentered: self.walk.reentered,
            turn_ids: self.walk.turn_ids,
            base_tokens: self.walk.base_tokens,
        };
        Ok(Some(CoveredLog { prefix, head, tail: self.tail }))
    }
}

impl<E: TokenEstimator + Sync + ?Sized> RowVisitor for CoveredReader<'_, E> {
    fn visit(&mut self, row: RowView<'_>) -> Result<bool, StoreError> {
        self.push(row)
    }
}

/// The estimator that measures `estimator`'s tallies (itself, unless it scales another).
fn base_of<'a, E: TokenEstimator + ?Sized>(estimator: &'a &E) -> &'a dyn TokenEstimator {
    match estimator.tally_base() {
        Some(base) => base,
        None => estimator,
    }
}

impl Store {
    /// Proves `checkpoint`'s coverage of `session_id`'s ledger from the stored rows (module
    /// docs), measuring tokens with `estimator`'s base. `None` when the rows do not match the
    /// checkpoint: the caller falls back to the full projection, whose diagnostics are the
    /// core's own. A row that does not parse stops the read with
    /// [`StoreError::LedgerUnreadable`].
    pub(crate) fn read_covered(
        &self,
        session_id: &str,
        checkpoint: &HistoryCompactCheckpoint,
        estimator: &(dyn TokenEstimator + Sync),
    ) -> Result<Option<CoveredLog>, StoreError> {
        let conn = self.lock();
        let ledger_estimator = conn
            .query_row(
                "SELECT value FROM ledger_meta WHERE key = ?1",
                [TOKENS_ESTIMATOR_KEY],
                |row| row.get::<_, String>(0),
            )
            .ok();
        drop(conn);
        let Some(mut reader) =
            CoveredReader::new(session_id, checkpoint, estimator, ledger_estimator.as_deref())
        else {
            return Ok(None);
        };
        self.scan_rows(session_id, &mut reader)?;
        reader.finish()
    }
}

/// A live-head row of the current run: parsed already, or as stored (parsed at the end, when
/// its run is the last covered one).
#[derive(Debug)]
enum HeadRow {
    Parsed(Box<RuntimeEvent>),
    Stored { seq: u64, id: String, json: Vec<u8> },
}

impl HeadRow {
    /// The event, checked against its key columns.
    fn into_event(self, session_id: &str) -> Result<RuntimeEvent, StoreError> {
        match self {
            Self::Parsed(event) => Ok(*event),
            Self::Stored { seq, id, json } => event_of_row(seq, &id, &json, session_id),
        }
    }
}

/// The running state of the covered rows.
#[derive(Debug, Default)]
struct CoveredWalk {
    seen: u64,
    turn_ids: HashSet<String>,
    current_turn: Option<String>,
    /// Whether the current run's turn had covered events before this run.
    reentered: bool,
    base_tokens: u64,
    last: Option<(u64, String)>,
}

impl CoveredWalk {
    /// Notes the next row's turn; `true` when it starts a new run (the head restarts).
    fn enter(&mut self, turn: &str) -> bool {
        if self.current_turn.as_deref() == Some(turn) {
            return false;
        }
        self.reentered = !self.turn_ids.insert(turn.to_owned());
        self.current_turn = Some(turn.to_owned());
        true
    }
}
