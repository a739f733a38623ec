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
use rusqlite::params;

use crate::hashing::PipelinedSha256;

use super::derived::{TOKENS_ESTIMATOR, TOKENS_ESTIMATOR_KEY};
use super::stream::read_event_row;
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

/// A covered prefix with the events a projection replays around it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CoveredLog {
    /// What was proven.
    pub(crate) prefix: CoveredPrefix,
    /// The live-head events of the covered final run of [`CoveredPrefix::final_turn`].
    pub(crate) head: Vec<RuntimeEvent>,
    /// Every event after the coverage.
    pub(crate) tail: Vec<RuntimeEvent>,
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
        estimator: &dyn TokenEstimator,
    ) -> Result<Option<CoveredLog>, StoreError> {
        let covered = checkpoint.coverage.event_count;
        if covered == 0 || checkpoint.session_id != session_id {
            return Ok(None);
        }
        let base = estimator.tally_base().unwrap_or(estimator);
        let conn = self.lock();
        let stored_tokens = base.stored_name() == Some(TOKENS_ESTIMATOR)
            && conn
                .query_row(
                    "SELECT value FROM ledger_meta WHERE key = ?1",
                    [TOKENS_ESTIMATOR_KEY],
                    |row| row.get::<_, String>(0),
                )
                .is_ok_and(|name| name == TOKENS_ESTIMATOR);
        let mut statement = conn
            .prepare_cached(
                "SELECT seq, runtime_event_id, event_json, canonical, turn_id, run_id, \
                 live_head, tokens FROM runtime_events WHERE session_id = ?1 ORDER BY seq",
            )
            .map_err(StoreError::sqlite("preparing the streamed ledger read"))?;
        let mut rows = statement
            .query(params![session_id])
            .map_err(StoreError::sqlite("streaming the ledger"))?;
        let read = |e| StoreError::Sqlite { operation: "reading a ledger row", source: e };
        let mut hasher = PrefixHasher::with_engine(PipelinedSha256::default());
        let mut walk = CoveredWalk::default();
        let mut head: Vec<HeadRow> = Vec::new();
        let mut tail = Vec::new();
        while let Some(row) = rows.next().map_err(read)? {
            if walk.seen >= covered {
                tail.push(read_event_row(row, session_id)?);
                continue;
            }
            let canonical: bool = row.get(3).map_err(read)?;
            let stored = row.get::<_, Option<i64>>(7).map_err(read)?;
            let stored = stored.filter(|_| stored_tokens).map(|t| t.max(0) as u64);
            let parsed = if canonical { None } else { Some(read_event_row(row, session_id)?) };
            let text = |index: usize| row.get_ref(index).and_then(|v| Ok(v.as_str()?));
            let (seq, id, turn, run) = match &parsed {
                Some(e) => {
                    (e.seq, e.runtime_event_id.as_str(), e.turn_id.as_str(), e.run_id.as_str())
                }
                None => {
                    let seq: i64 = row.get(0).map_err(read)?;
                    (
                        seq as u64,
                        text(1).map_err(read)?,
                        text(4).map_err(read)?,
                        text(5).map_err(read)?,
                    )
                }
            };
            let bytes = row.get_ref(2).and_then(|v| Ok(v.as_bytes()?)).map_err(read)?;
            match &parsed {
                Some(event) => hasher.push(event),
                None => hasher.push_canonical(bytes),
            }
            walk.base_tokens += match (stored, &parsed) {
                (Some(tokens), _) => tokens,
                (None, Some(event)) => estimate_event(base, event),
                (None, None) => estimate_event(base, &read_event_row(row, session_id)?),
            };
            if walk.enter(turn) {
                head.clear();
            }
            walk.seen += 1;
            if walk.seen == covered {
                let through = &checkpoint.coverage.through;
                let matches = id == through.runtime_event_id
                    && turn == through.turn_id
                    && run == through.run_id
                    && walk.turn_ids.len() as u64 == checkpoint.coverage.turn_count
                    && hasher.digest() == checkpoint.coverage.source_digest;
                if !matches {
                    return Ok(None);
                }
                walk.last = Some((seq, id.to_owned()));
            }
            // The head of a run is parsed only if the run turns out to be the last one.
            let is_head = match &parsed {
                Some(event) => is_live_head_kind(&event.content),
                None => row.get(6).map_err(read)?,
            };
            if is_head {
                head.push(match parsed {
                    Some(event) => HeadRow::Parsed(Box::new(event)),
                    None => HeadRow::Stored { seq, id: id.to_owned(), json: bytes.to_vec() },
                });
            }
        }
        let head = head
            .into_iter()
            .map(|row| row.into_event(session_id))
            .collect::<Result<Vec<_>, _>>()?;
        let Some(last) = walk.last else { return Ok(None) };
        let prefix = CoveredPrefix {
            checkpoint_id: checkpoint.checkpoint_id.clone(),
            covered,
            source_digest: checkpoint.coverage.source_digest.clone(),
            last,
            final_turn: walk.current_turn.unwrap_or_default(),
            final_turn_reentered: walk.reentered,
            turn_ids: walk.turn_ids,
            base_tokens: walk.base_tokens,
        };
        Ok(Some(CoveredLog { prefix, head, tail }))
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
    /// The event, checked against its key columns like [`read_event_row`].
    fn into_event(self, session_id: &str) -> Result<RuntimeEvent, StoreError> {
        let (seq, id, json) = match self {
            Self::Parsed(event) => return Ok(*event),
            Self::Stored { seq, id, json } => (seq, id, json),
        };
        let unreadable = |detail: String| StoreError::LedgerUnreadable {
            session_id: session_id.to_owned(),
            detail: format!("row seq {seq}: {detail}"),
        };
        let text = std::str::from_utf8(&json).map_err(|e| unreadable(e.to_string()))?;
        let event =
            RuntimeEvent::from_json(text).map_err(|e| unreadable(format!("{e} ({})", e.code())))?;
        if event.seq != seq || event.runtime_event_id != id || event.session_id != session_id {
            return Err(unreadable("the event JSON disagrees with its key columns".into()));
        }
        Ok(event)
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
