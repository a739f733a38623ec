//! What the ledger keeps beside each event so that a covered prefix is checked without parsing
//! it: the event's canonical bytes and the per-event facts a projection needs.
//!
//! From schema version 2 a `runtime_events` row holds, besides its key columns:
//!
//! - `event_json`: [`LedgerRow::json`], the event's canonical JSON when it parses back to exactly
//!   the same event (so the prefix digest is SHA-256 over the stored bytes), else its serde JSON;
//! - `canonical`: [`LedgerRow::canonical`], 1 when `event_json` is the canonical form and the
//!   derived columns below hold the event's facts; 0 when a reader must parse `event_json` (such
//!   a row is exactly as exact, only slower);
//! - `turn_id`, `run_id`: copies of the event's fields (a checkpoint's through-boundary and turn
//!   count are checked from them);
//! - `live_head`: [`LedgerRow::live_head`], 1 for the kinds a split turn replays verbatim;
//! - `tokens`: [`LedgerRow::tokens`], the event's estimate by [`PieceEstimator`] (the estimator
//!   named in `ledger_meta`), the base units of the native runtime's token tally.
//!
//! The append path and the schema migration compute them with the core's [`LedgerRow::of`], the
//! one computation every ledger writer shares (the npm package's `node:sqlite` store calls it
//! through the wasm binding); `contextfold verify --deep` recomputes them for every row and
//! reports any that disagree, and `contextfold recover` rebuilds them
//! ([`super::Store::rebuild_derived`]).

use contextfold_core::RuntimeEvent;
use contextfold_core::budget::{PieceEstimator, estimate_event};
use contextfold_core::event::{LEDGER_TOKENS_ESTIMATOR, LedgerRow, LedgerRowError};
use contextfold_core::projection::is_live_head_kind;
use rusqlite::{Connection, params};

/// The `ledger_meta` key naming the estimator of the `tokens` column.
pub(crate) const TOKENS_ESTIMATOR_KEY: &str = "tokens_estimator";

/// The estimator whose estimates the `tokens` column holds.
pub(crate) const TOKENS_ESTIMATOR: &str = LEDGER_TOKENS_ESTIMATOR;

/// Rows rewritten per statement pass of the migration (memory stays bounded on any ledger).
const FILL_BATCH: i64 = 2048;

/// Schema version 2's pass over the rows: every row whose `event_json` parses to an event that
/// agrees with its key columns gets its derived columns, and its canonical form when that parses
/// back to the same event. A row that does not parse is left as it was (`canonical` 0), so
/// reading it still reports it as [`super::StoreError::LedgerUnreadable`]; nothing is lost.
pub(crate) fn fill_v2(conn: &Connection) -> Result<(), super::StoreError> {
    use super::StoreError;
    conn.execute(
        "INSERT INTO ledger_meta (key, value) VALUES (?1, ?2)",
        [TOKENS_ESTIMATOR_KEY, TOKENS_ESTIMATOR],
    )
    .map_err(StoreError::sqlite("recording the token estimator"))?;
    let mut select = conn
        .prepare(
            "SELECT rowid, session_id, seq, runtime_event_id, event_json FROM runtime_events \
             WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
        )
        .map_err(StoreError::sqlite("reading rows to migrate"))?;
    let mut update = conn
        .prepare(
            "UPDATE runtime_events SET event_json = ?1, canonical = ?2, turn_id = ?3, \
             run_id = ?4, live_head = ?5, tokens = ?6 WHERE rowid = ?7",
        )
        .map_err(StoreError::sqlite("preparing the row migration"))?;
    let mut after = 0i64;
    loop {
        let batch: Vec<(i64, String, i64, String, String)> = select
            .query_map(params![after, FILL_BATCH], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?))
            })
            .and_then(|rows| rows.collect())
            .map_err(StoreError::sqlite("reading rows to migrate"))?;
        let Some(last) = batch.last() else { return Ok(()) };
        after = last.0;
        for (rowid, session_id, seq, id, json) in batch {
            let Ok(event) = RuntimeEvent::from_json(&json) else { continue };
            if event.session_id != session_id
                || event.seq as i64 != seq
                || event.runtime_event_id != id
            {
                continue;
            }
            let Ok(derived) = LedgerRow::of(&event) else { continue };
            let stored = if derived.canonical { derived.json } else { json };
            update
                .execute(params![
                    stored,
                    derived.canonical,
                    event.turn_id,
                    event.run_id,
                    derived.live_head,
                    derived.tokens as i64,
                    rowid
                ])
                .map_err(StoreError::sqlite("migrating a row"))?;
        }
    }
}

impl super::Store {
    /// Recomputes the derived columns (`turn_id`, `run_id`, `live_head`, `tokens`) of every row
    /// of `session_id` from the event its `event_json` parses to, in one IMMEDIATE transaction
    /// (`contextfold recover`). The event columns are never touched. A row that does not parse
    /// stops it with [`super::StoreError::LedgerUnreadable`] and nothing is written. Returns the
    /// number of rows whose derived columns changed.
    pub fn rebuild_derived(&self, session_id: &str) -> Result<u64, super::StoreError> {
        use super::StoreError;
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(StoreError::sqlite("starting a derived-column rebuild"))?;
        let mut changed = 0u64;
        {
            let mut select = tx
                .prepare(
                    "SELECT seq, runtime_event_id, event_json, turn_id, run_id, live_head, tokens \
                     FROM runtime_events WHERE session_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
                )
                .map_err(StoreError::sqlite("reading rows to rebuild"))?;
            let mut update = tx
                .prepare(
                    "UPDATE runtime_events SET turn_id = ?1, run_id = ?2, live_head = ?3, \
                     tokens = ?4 WHERE session_id = ?5 AND seq = ?6",
                )
                .map_err(StoreError::sqlite("preparing the rebuild"))?;
            let mut after = -1i64;
            loop {
                let mut batch = Vec::new();
                let mut rows = select
                    .query(params![session_id, after, FILL_BATCH])
                    .map_err(StoreError::sqlite("reading rows to rebuild"))?;
                while let Some(row) =
                    rows.next().map_err(StoreError::sqlite("reading rows to rebuild"))?
                {
                    let event = super::stream::read_event_row(row, session_id)?;
                    let read =
                        |e| StoreError::Sqlite { operation: "reading rows to rebuild", source: e };
                    let stored: (String, String, bool, Option<i64>) = (
                        row.get(3).map_err(read)?,
                        row.get(4).map_err(read)?,
                        row.get(5).map_err(read)?,
                        row.get(6).map_err(read)?,
                    );
                    batch.push((event, stored));
                }
                drop(rows);
                let Some((last, _)) = batch.last() else { break };
                after = last.seq as i64;
                for (event, stored) in batch {
                    let live_head = is_live_head_kind(&event.content);
                    let tokens = estimate_event(&PieceEstimator, &event) as i64;
                    let fresh =
                        (event.turn_id.clone(), event.run_id.clone(), live_head, Some(tokens));
                    if fresh != stored {
                        changed += 1;
                        update
                            .execute(params![
                                event.turn_id,
                                event.run_id,
                                live_head,
                                tokens,
                                session_id,
                                event.seq as i64
                            ])
                            .map_err(StoreError::sqlite("rebuilding a row"))?;
                    }
                }
            }
        }
        tx.commit().map_err(StoreError::sqlite("committing a derived-column rebuild"))?;
        Ok(changed)
    }
}

/// Whether the row's derived columns are what [`LedgerRow::of`] gives for the event its `event_json`
/// parses to (`contextfold verify --deep`).
pub(crate) fn matches_derived(
    event: &RuntimeEvent,
    stored: &StoredFacts<'_>,
) -> Result<bool, LedgerRowError> {
    let expected = LedgerRow::of(event)?;
    Ok(stored.canonical == expected.canonical
        && (!stored.canonical
            || (stored.json == expected.json.as_bytes()
                && stored.turn_id == event.turn_id
                && stored.run_id == event.run_id
                && stored.live_head == expected.live_head
                && stored.tokens == Some(expected.tokens))))
}

/// The columns of one stored row, borrowed from the row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StoredFacts<'r> {
    pub(crate) json: &'r [u8],
    pub(crate) canonical: bool,
    pub(crate) turn_id: &'r str,
    pub(crate) run_id: &'r str,
    pub(crate) live_head: bool,
    pub(crate) tokens: Option<u64>,
}
