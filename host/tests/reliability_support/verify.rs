//! An independent verifier: reads the SQLite file through its own connection (never through
//! the store under test) and checks the durable state.

use std::path::Path;

use contextfold_core::checkpoint::match_checkpoint_prefix;
use contextfold_core::{HistoryCompactCheckpoint, RuntimeEvent};
use rusqlite::{Connection, OpenFlags};

/// The canonical rows of a session: `(seq, runtime_event_id, event_json)`.
pub type CanonicalRows = Vec<(i64, String, String)>;

fn open(path: &Path) -> Connection {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("open the database read-only");
    conn.busy_timeout(std::time::Duration::from_secs(10)).expect("busy timeout");
    conn
}

/// The canonical RuntimeEvent rows of `session`, byte for byte.
pub fn canonical_rows(path: &Path, session: &str) -> CanonicalRows {
    let conn = open(path);
    let mut stmt = conn
        .prepare("SELECT seq, runtime_event_id, event_json FROM runtime_events WHERE session_id = ?1 ORDER BY seq")
        .expect("prepare");
    stmt.query_map([session], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

/// Every recorded checkpoint event `(event_id, payload_json)` of `session`, in order.
pub fn recorded_checkpoints(path: &Path, session: &str) -> Vec<(String, String)> {
    let conn = open(path);
    let mut stmt = conn
        .prepare(
            "SELECT event_id, payload_json FROM agent_run_events \
             WHERE session_id = ?1 AND kind = 'history_compact_checkpoint_recorded' ORDER BY ordinal",
        )
        .expect("prepare");
    stmt.query_map([session], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

/// What [`consistency`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Consistency {
    /// Canonical events.
    pub events: usize,
    /// Recorded checkpoint events.
    pub checkpoints: usize,
    /// Every inconsistency, in words (empty when consistent).
    pub problems: Vec<String>,
}

/// Checks the durable state of `session`: the ledger parses; every recorded checkpoint parses
/// and covers a real prefix of the canonical log (digest and boundary); the projection row,
/// if any, names an AgentRun event that exists and holds the same checkpoint; the recorded
/// chain's coverage never decreases.
pub fn consistency(path: &Path, session: &str) -> Consistency {
    let mut found = Consistency::default();
    let rows = canonical_rows(path, session);
    found.events = rows.len();
    let mut events: Vec<RuntimeEvent> = Vec::new();
    for (seq, id, json) in &rows {
        match RuntimeEvent::from_json(json) {
            Ok(event) if event.seq as i64 == *seq && &event.runtime_event_id == id => {
                events.push(event)
            }
            Ok(_) => found.problems.push(format!("event row {seq} disagrees with its columns")),
            Err(error) => found.problems.push(format!("event row {seq} does not parse: {error}")),
        }
    }
    let recorded = recorded_checkpoints(path, session);
    found.checkpoints = recorded.len();
    let mut high = 0;
    for (event_id, payload) in &recorded {
        match HistoryCompactCheckpoint::from_json(payload) {
            Ok(cp) => {
                if let Err(error) = match_checkpoint_prefix(&cp, &events) {
                    found.problems.push(format!("{event_id}: false coverage: {error}"));
                }
                if cp.coverage.event_count < high {
                    found.problems.push(format!("{event_id}: coverage went back"));
                }
                high = high.max(cp.coverage.event_count);
            }
            Err(error) => {
                found.problems.push(format!("{event_id}: checkpoint does not parse: {error}"))
            }
        }
    }
    let conn = open(path);
    let row: Option<(String, String)> = conn
        .query_row(
            "SELECT agent_run_event_id, checkpoint_json FROM checkpoint_projection WHERE session_id = ?1",
            [session],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .ok();
    if let Some((event_id, json)) = row {
        match recorded.iter().find(|(id, _)| *id == event_id) {
            None => found
                .problems
                .push(format!("projection row names {event_id}, absent from the ledger")),
            Some((_, payload)) => {
                let a = HistoryCompactCheckpoint::from_json(payload).ok();
                let b = HistoryCompactCheckpoint::from_json(&json).ok();
                if a.is_none() || a != b {
                    found
                        .problems
                        .push(format!("projection row disagrees with ledger event {event_id}"));
                }
            }
        }
    }
    found
}

/// Asserts [`consistency`] found nothing and that the canonical rows equal `before` as a
/// prefix (compaction may be followed by new turns, never by changed events).
pub fn assert_intact(path: &Path, session: &str, before: &CanonicalRows) -> Consistency {
    let after = canonical_rows(path, session);
    assert!(after.len() >= before.len(), "canonical events disappeared");
    assert_eq!(&after[..before.len()], &before[..], "a canonical event changed");
    let found = consistency(path, session);
    assert!(found.problems.is_empty(), "inconsistent durable state: {:?}", found.problems);
    found
}
