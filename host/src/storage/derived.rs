//! What the ledger keeps beside each event so that a covered prefix is checked without parsing
//! it: the event's canonical bytes and the per-event facts a projection needs.
//!
//! From schema version 2 a `runtime_events` row holds, besides its key columns:
//!
//! - `event_json`: the event's canonical JSON ([`canonical_event_json`], RFC 8785 over the
//!   event's serde form; itself valid JSON that parses back to the same event), so the prefix
//!   digest is SHA-256 over the stored bytes. An event whose canonical form would not parse back
//!   to exactly the same event (object keys not in sorted order, as in most tool-call
//!   arguments; a number JCS writes as a double, such as `1.0` or an integer above 2^53) keeps
//!   its serde JSON instead, and its row says so;
//! - `canonical`: 1 when `event_json` is the canonical form and the derived columns below hold
//!   the event's facts; 0 when a reader must parse `event_json` (such a row is exactly as exact,
//!   only slower);
//! - `turn_id`, `run_id`: copies of the event's fields (a checkpoint's through-boundary and turn
//!   count are checked from them);
//! - `live_head`: 1 for the kinds a split turn replays verbatim
//!   ([`contextfold_core::projection::live_head::is_live_head_kind`]);
//! - `tokens`: the event's estimate by [`PieceEstimator`] (the estimator named
//!   [`PIECE_ESTIMATOR_NAME`], recorded in `ledger_meta`), the base units of the native
//!   runtime's token tally.
//!
//! The append path and the schema migration compute them with [`derive`]; `contextfold verify
//! --deep` recomputes them for every row and reports any that disagree, and `contextfold recover`
//! rebuilds them ([`super::Store::rebuild_derived`]).

use contextfold_core::RuntimeEvent;
use contextfold_core::budget::{PIECE_ESTIMATOR_NAME, PieceEstimator, estimate_event};
use contextfold_core::digest::canonical_event_json;
use contextfold_core::projection::live_head::is_live_head_kind;
use rusqlite::{Connection, params};

/// The `ledger_meta` key naming the estimator of the `tokens` column.
pub(crate) const TOKENS_ESTIMATOR_KEY: &str = "tokens_estimator";

/// The estimator whose estimates the `tokens` column holds.
pub(crate) const TOKENS_ESTIMATOR: &str = PIECE_ESTIMATOR_NAME;

/// One event's stored form and derived columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DerivedRow {
    /// What `event_json` holds.
    pub(crate) json: String,
    /// Whether `json` is the canonical form (the `canonical` column).
    pub(crate) canonical: bool,
    /// The `live_head` column.
    pub(crate) live_head: bool,
    /// The `tokens` column.
    pub(crate) tokens: u64,
}

/// The stored form of `event` and its derived columns.
///
/// The canonical form is kept only when it parses back to an event whose serde JSON is the same
/// bytes as `event`'s: equal values are not enough, since JCS sorts object keys and a tool
/// call's arguments must reach the provider in the order the model wrote them.
pub(crate) fn derive(event: &RuntimeEvent) -> Result<DerivedRow, serde_json::Error> {
    let serde = serde_json::to_string(event)?;
    let canonical = canonical_event_json(event);
    let round_trips = RuntimeEvent::from_json(&canonical)
        .ok()
        .and_then(|back| serde_json::to_string(&back).ok())
        .is_some_and(|back| back == serde);
    Ok(DerivedRow {
        json: if round_trips { canonical } else { serde },
        canonical: round_trips,
        live_head: is_live_head_kind(&event.content),
        tokens: estimate_event(&PieceEstimator, event),
    })
}

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
            let Ok(derived) = derive(&event) else { continue };
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

/// Whether the row's derived columns are what [`derive`] gives for the event its `event_json`
/// parses to (`contextfold verify --deep`).
pub(crate) fn matches_derived(
    event: &RuntimeEvent,
    stored: &StoredFacts<'_>,
) -> Result<bool, serde_json::Error> {
    let expected = derive(event)?;
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

#[cfg(test)]
mod tests {
    use contextfold_core::{EventContent, LogBuilder};
    use serde_json::json;

    use super::*;

    /// An ordinary event is stored in its canonical form; one whose canonical form loses a
    /// number keeps its serde JSON, says so, and still parses back to itself.
    #[test]
    fn canonical_bytes_are_stored_only_when_they_parse_back_to_the_event() {
        let mut log = LogBuilder::new("s");
        log.turn("t").user("fix it");
        log.tool_call("c1", "shell", json!({"cmd": "ls", "timeout": 30}));
        log.tool_call("c3", "shell", json!({"timeout": 30, "cmd": "ls"}));
        log.tool_call("c2", "shell", json!({"ratio": 1.0, "big": 9_007_199_254_740_993u64}));
        let events = log.build();
        let plain = derive(&events[1]).expect("derives");
        assert!(plain.canonical && !plain.live_head);
        assert_eq!(plain.json, canonical_event_json(&events[1]));
        for lossy in &events[2..] {
            let derived = derive(lossy).expect("derives");
            assert!(!derived.canonical, "{}", derived.json);
            let back = RuntimeEvent::from_json(&derived.json).expect("parses");
            assert_eq!(serde_json::to_string(&back).ok(), serde_json::to_string(lossy).ok());
        }
        let user = derive(&events[0]).expect("derives");
        assert!(user.live_head && matches!(events[0].content, EventContent::UserText { .. }));
        assert_eq!(user.tokens, estimate_event(&PieceEstimator, &events[0]));
    }
}
