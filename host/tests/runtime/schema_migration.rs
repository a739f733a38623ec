//! Schema version 2 migrates a file written by version 1 in place: every event reads back as
//! it was, rows gain their canonical bytes and derived columns, every checkpoint still
//! verifies, and rows that were never valid stay exactly as they were.
//!
//! The file `fixtures/schema_v1_demo.sqlite` was written by `contextfold demo` at commit
//! d4fb753 (schema version 1: 463 events, 25 checkpoints, 119 usage facts).

use contextfold_core::RuntimeEvent;
use contextfold_core::budget::{PieceEstimator, estimate_event};
use contextfold_core::checkpoint::HistoryCompactCheckpoint;
use contextfold_core::digest::canonical_event_json;
use contextfold_host::storage::{SCHEMA_VERSION, Store};
use rusqlite::Connection;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/schema_v1_demo.sqlite");

/// A row in the V1 serde form whose canonical form would lose a number (`1.0` is written `1`).
const LOSSY: &str = r#"{"runtimeEventId":"lossy","sessionId":"extra","turnId":"t1","runId":"r1","seq":0,"content":{"type":"tool_call","callId":"c1","toolName":"shell","input":{"ratio":1.0}}}"#;

fn v1_copy() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("ledger.sqlite");
    std::fs::copy(FIXTURE, &path).expect("copies the fixture");
    (dir, path)
}

/// `(session, seq, event_json)` of every row, as stored.
fn raw_rows(path: &std::path::Path) -> Vec<(String, i64, String)> {
    let conn = Connection::open(path).expect("opens");
    let mut statement = conn
        .prepare("SELECT session_id, seq, event_json FROM runtime_events ORDER BY session_id, seq")
        .expect("prepares");
    let rows = statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .expect("queries");
    rows.collect::<Result<_, _>>().expect("reads")
}

#[test]
fn a_version_1_file_migrates_in_place_and_keeps_every_event_and_checkpoint() {
    let (_dir, path) = v1_copy();
    {
        let conn = Connection::open(&path).expect("opens the V1 copy");
        let version: u32 =
            conn.pragma_query_value(None, "user_version", |row| row.get(0)).expect("version");
        assert_eq!(version, 1, "the fixture is a version 1 file");
        conn.execute(
            "INSERT INTO runtime_events (session_id, seq, runtime_event_id, event_json) \
             VALUES ('extra', 0, 'lossy', ?1), ('junk', 0, 'bad', '{\"oops\":')",
            [LOSSY],
        )
        .expect("adds a lossy row and a broken one");
    }
    let before = raw_rows(&path);
    let demo_before: Vec<RuntimeEvent> = before
        .iter()
        .filter(|(session, _, _)| session == "demo")
        .map(|(_, _, json)| RuntimeEvent::from_json(json).expect("a V1 event"))
        .collect();
    assert_eq!(demo_before.len(), 463);

    let store = Store::open(&path).expect("opens and migrates");
    assert_eq!(store.schema_version().expect("version"), SCHEMA_VERSION);
    assert_eq!(SCHEMA_VERSION, 2);
    assert_eq!(store.load_events("demo").expect("loads"), demo_before, "every event as it was");
    let lossy = store.load_events("extra").expect("loads the lossy row");
    assert_eq!(lossy, [RuntimeEvent::from_json(LOSSY).expect("parses")]);
    let error = store.load_events("junk").expect_err("the broken row is still broken");
    assert_eq!(error.code(), "ledger_unreadable");

    // Rows now hold the canonical bytes and the derived columns; the others are untouched.
    let conn = Connection::open(&path).expect("opens the migrated file");
    let mut statement = conn
        .prepare(
            "SELECT session_id, event_json, canonical, turn_id, run_id, tokens \
             FROM runtime_events ORDER BY session_id, seq",
        )
        .expect("prepares");
    type Row = (String, String, bool, String, String, Option<i64>);
    let rows: Vec<Row> = statement
        .query_map([], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?))
        })
        .expect("queries")
        .collect::<Result<_, _>>()
        .expect("reads");
    let demo: Vec<&Row> = rows.iter().filter(|row| row.0 == "demo").collect();
    let v1_json: Vec<&String> = before
        .iter()
        .filter(|(session, _, _)| session == "demo")
        .map(|(_, _, json)| json)
        .collect();
    let mut canonical = 0;
    for ((row, event), v1) in demo.iter().zip(&demo_before).zip(&v1_json) {
        if row.2 {
            canonical += 1;
            assert_eq!(row.1, canonical_event_json(event), "a canonical row holds the JCS bytes");
        } else {
            assert_eq!(&row.1, *v1, "a row whose JCS form reorders keys keeps its V1 bytes");
        }
        assert_eq!(
            (row.3.as_str(), row.4.as_str()),
            (event.turn_id.as_str(), event.run_id.as_str())
        );
        assert_eq!(row.5, Some(estimate_event(&PieceEstimator, event) as i64));
    }
    assert!(canonical * 2 > demo.len(), "most demo rows are canonical: {canonical}/{}", demo.len());
    let lossy_row = rows.iter().find(|row| row.0 == "extra").expect("the lossy row");
    assert!(!lossy_row.2 && lossy_row.1 == LOSSY, "a lossy row keeps its serde JSON");
    let junk_row = rows.iter().find(|row| row.0 == "junk").expect("the broken row");
    assert!(!junk_row.2 && junk_row.1 == "{\"oops\":", "a broken row is left as it was");

    // Every checkpoint recorded by version 1 verifies against the migrated rows.
    let checkpoints: Vec<HistoryCompactCheckpoint> = store
        .recorded_checkpoints("demo")
        .expect("the recorded checkpoints")
        .into_iter()
        .map(|entry| HistoryCompactCheckpoint::from_value(entry.payload).expect("a checkpoint"))
        .collect();
    assert_eq!(checkpoints.len(), 25);
    let sweep = store.verify_checkpoints("demo", &checkpoints).expect("verifies");
    assert!(sweep.results.iter().all(Result::is_ok), "{:?}", sweep.results);

    // The event columns stay append-only; derived columns may be rebuilt.
    let refused = conn.execute("UPDATE runtime_events SET event_json = '{}' WHERE seq = 0", []);
    assert!(refused.is_err(), "event_json cannot change");
    let refused = conn.execute("UPDATE runtime_events SET canonical = 0 WHERE seq = 0", []);
    assert!(refused.is_err(), "canonical cannot change");
    conn.execute("UPDATE runtime_events SET tokens = NULL WHERE seq = 0", [])
        .expect("a derived column can be rebuilt");
    assert!(conn.execute("DELETE FROM runtime_events", []).is_err(), "rows cannot be deleted");

    // Opening again is a no-op.
    drop(store);
    let again = Store::open(&path).expect("opens again");
    assert_eq!(again.load_events("demo").expect("loads"), demo_before);
}
