//! Damaged database files (issue 18): a database file truncated after it was closed (mid-page,
//! to half, to one page, to the 100-byte header) gives a typed `StoreError` with a stable code
//! on open or on the first read, never a panic and never fewer events without an error; a
//! `-wal` lost after a crash rolls the file back to its last WAL checkpoint, whole and
//! consistent (SQLite loses the committed but uncheckpointed transactions, and contextfold
//! cannot tell from the file alone); a checkpoint that survived while the events it covers
//! were lost is reported by the verifier and never replayed; a `-wal` unlinked under an open
//! store loses nothing the open store wrote (SQLite keeps writing the unlinked inode and
//! checkpoints it into the main file when the last connection closes). A file truncated to
//! zero bytes is indistinguishable from a new database (see the last test). Every injected
//! fault prints a `FAULT-INJECTED` line.

use crate::reliability_support;

use std::path::Path;
use std::sync::Arc;

use contextfold_core::compaction::OutcomeKind;
use contextfold_core::{HistoryCompactCheckpoint, RuntimeEvent};
use contextfold_host::runtime::{ExtractiveSummarizer, NoNativeCompactor, StopSignal};
use contextfold_host::storage::{Store, StoreError};
use reliability_support::verify::consistency;
use reliability_support::*;

/// Appends turns `from..to` to the session in `store`.
fn append_turns(store: &Store, from: usize, to: usize) {
    let mut builder = history(from);
    let before = builder.events().len();
    for turn in from..to {
        extend(&mut builder, turn);
    }
    store.append_events(SESSION, &builder.events()[before..]).expect("append turns");
}

/// Compacts the session and returns the recorded checkpoint.
async fn compact(store: &Arc<Store>) -> HistoryCompactCheckpoint {
    let rt = runtime(store, 16_000, false, ExtractiveSummarizer, NoNativeCompactor);
    let report = rt.compact_manually(&StopSignal::new()).await.expect("compaction");
    assert_eq!(report.outcome.outcome, OutcomeKind::Recorded, "{:?}", report.outcome);
    report.outcome.checkpoint.expect("a recorded checkpoint")
}

/// What a fresh store over `path` reads: the events, the current checkpoint, the ledger size.
fn read_all(path: &Path) -> Result<(Vec<RuntimeEvent>, Option<String>, usize), StoreError> {
    let store = Store::open(path)?;
    let events = store.load_events(SESSION)?;
    let current = store.current_checkpoint(SESSION)?.checkpoint.map(|c| c.checkpoint_id);
    let recorded = store.recorded_checkpoints(SESSION)?.len();
    Ok((events, current, recorded))
}

#[tokio::test]
async fn a_truncated_database_file_is_a_typed_error_never_fewer_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("whole.sqlite");
    let store = seeded_store(&path, 16);
    compact(&store).await;
    drop(store); // closed: the WAL is checkpointed into the main file and removed
    assert!(!dir.path().join("whole.sqlite-wal").exists(), "the WAL outlived the close");
    let (accepted, _, _) = read_all(&path).expect("the whole file reads");
    let whole = std::fs::read(&path).expect("the file");
    let page = 4096;
    assert!(whole.len() >= 8 * page, "too small a file to cut: {}", whole.len());
    let cuts = [
        ("db_truncated_mid_last_page", whole.len() - page / 2),
        ("db_truncated_mid_page", whole.len() - 3 * page - 1000),
        ("db_truncated_to_half", whole.len() / 2),
        ("db_truncated_to_one_page", page),
        ("db_truncated_to_header", 100),
    ];
    for (row, size) in cuts {
        let cut = dir.path().join(format!("{row}.sqlite"));
        std::fs::write(&cut, &whole[..size]).expect("write the cut file");
        let result = std::panic::catch_unwind(|| read_all(&cut));
        let result = result.unwrap_or_else(|_| panic!("{row}: reading a truncated file panicked"));
        let (outcome, detail) = match result {
            Err(error) => {
                let code = error.code();
                assert!(
                    ["storage_sqlite", "ledger_unreadable"].contains(&code),
                    "{row}: unexpected code {code}: {error}"
                );
                ("typed_error", format!("code={code} message={error}"))
            }
            Ok((events, current, recorded)) => {
                // Readable only if the cut lost nothing the session needs.
                assert_eq!(events, accepted, "{row}: fewer or other events, and no error");
                assert!(current.is_some() && recorded == 1, "{row}: the checkpoint went");
                ("all_events", format!("events={}", events.len()))
            }
        };
        report_fault(row, outcome, &format!("size={size}/{} {detail}", whole.len()));
    }
}

/// A closed file with `first` turns and one checkpoint, then `second` more turns and a second
/// checkpoint written to the WAL of a still open store. Returns the store and both checkpoints.
async fn wal_pending(
    path: &Path,
    first: usize,
    second: usize,
) -> (Arc<Store>, HistoryCompactCheckpoint, HistoryCompactCheckpoint) {
    let store = seeded_store(path, first);
    let c1 = compact(&store).await;
    drop(store);
    let store = Arc::new(Store::open(path).expect("reopen"));
    append_turns(&store, first, first + second);
    let c2 = compact(&store).await;
    (store, c1, c2)
}

#[tokio::test]
async fn a_wal_lost_after_a_crash_rolls_back_whole_and_consistent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("live.sqlite");
    let (store, c1, c2) = wal_pending(&path, 6, 4).await;
    let accepted = store.load_events(SESSION).expect("load").len();
    // The crash: only the main file survives (what a lost or deleted -wal leaves).
    let crashed = dir.path().join("crashed.sqlite");
    std::fs::copy(&path, &crashed).expect("copy the main file alone");
    let (events, current, recorded) = read_all(&crashed).expect("the main file opens");
    // SQLite's behaviour: every transaction since the last WAL checkpoint is gone, together.
    assert_eq!(events.len() as u64, c1.coverage.event_count, "rolled back to the first close");
    assert!(events.len() < accepted);
    assert_eq!(current.as_deref(), Some(c1.checkpoint_id.as_str()), "the tip rolled back too");
    assert_eq!(recorded, 1, "the second checkpoint went with its events");
    let found = consistency(&crashed, SESSION);
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    // What a runtime over the rolled-back file replays is the surviving checkpoint, valid.
    let reopened = Arc::new(Store::open(&crashed).expect("open"));
    let rt = runtime(&reopened, 16_000, false, ExtractiveSummarizer, NoNativeCompactor);
    let report = rt.project(false).await.expect("projection");
    let replayed = report.projection.checkpoint.map(|c| c.checkpoint_id);
    assert_eq!(replayed.as_deref(), Some(c1.checkpoint_id.as_str()));
    report_fault(
        "wal_deleted_after_crash",
        "rolled_back_consistent",
        &format!(
            "events {accepted}->{} checkpoints 2->{recorded} lost_checkpoint={} replayed={replayed:?}",
            events.len(),
            c2.checkpoint_id
        ),
    );
    drop(store);
}

#[tokio::test]
async fn a_checkpoint_that_outlived_its_events_is_reported_and_never_replayed() {
    // A torn recovery of a lost -wal: the pages holding the second checkpoint (its ledger
    // event and the projection row) reached the main file, the pages of the events it covers
    // did not. Built from the rolled-back file plus those two rows of the complete file.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("live.sqlite");
    let (store, c1, c2) = wal_pending(&path, 6, 4).await;
    let crashed = dir.path().join("torn.sqlite");
    std::fs::copy(&path, &crashed).expect("copy the main file alone");
    drop(store); // the complete file, checkpointed
    let conn = rusqlite::Connection::open(&crashed).expect("raw");
    conn.execute(&format!("ATTACH '{}' AS whole", path.display()), []).expect("attach");
    conn.execute_batch(
        "INSERT INTO agent_run_events SELECT * FROM whole.agent_run_events
           WHERE event_id NOT IN (SELECT event_id FROM main.agent_run_events)
             AND kind = 'history_compact_checkpoint_recorded';
         DELETE FROM checkpoint_projection;
         INSERT INTO checkpoint_projection SELECT * FROM whole.checkpoint_projection;",
    )
    .expect("graft the surviving checkpoint pages");
    drop(conn);
    let found = consistency(&crashed, SESSION);
    assert!(
        found.problems.iter().any(|p| p.contains("false coverage")),
        "the verifier misses a checkpoint over lost events: {:?}",
        found.problems
    );
    let reopened = Arc::new(Store::open(&crashed).expect("open"));
    let events = reopened.load_events(SESSION).expect("load").len() as u64;
    assert!(events < c2.coverage.event_count, "the events must be gone: {events}");
    // The store's lookup trusts the projection row (it names a real ledger event); the
    // replay is where the coverage is checked against the canonical log.
    let lookup = reopened.current_checkpoint(SESSION).expect("lookup");
    let looked_up = lookup.checkpoint.map(|c| c.checkpoint_id);
    let rt = runtime(&reopened, 16_000, false, ExtractiveSummarizer, NoNativeCompactor);
    let report = rt.project(false).await.expect("projection");
    let codes: Vec<&str> = report.projection.diagnostics.iter().map(|d| d.code.as_str()).collect();
    let replayed = report.projection.checkpoint.as_ref().map(|c| c.checkpoint_id.clone());
    assert_ne!(replayed.as_deref(), Some(c2.checkpoint_id.as_str()), "replayed: {codes:?}");
    assert!(!codes.is_empty(), "the rejection is not reported");
    report_fault(
        "wal_deleted_checkpoint_outlived_events",
        "rejected",
        &format!(
            "events={events} covered={} lookup={looked_up:?} diagnostics={codes:?} \
             replayed={replayed:?} first={}",
            c2.coverage.event_count, c1.checkpoint_id
        ),
    );
}

#[tokio::test]
async fn a_wal_unlinked_under_an_open_store_loses_nothing_it_wrote() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("live.sqlite");
    let (store, _, c2) = wal_pending(&path, 6, 4).await;
    let accepted = store.load_events(SESSION).expect("load");
    let wal = dir.path().join("live.sqlite-wal");
    std::fs::remove_file(&wal).expect("another handle deletes the -wal");
    // The open store still holds the unlinked WAL: it reads and writes on.
    assert_eq!(store.load_events(SESSION).expect("load after the unlink"), accepted);
    append_turns(&store, 10, 11);
    let accepted = store.load_events(SESSION).expect("load").len();
    drop(store); // the last connection closes: the unlinked WAL is checkpointed into the file
    let (events, current, recorded) = read_all(&path).expect("reopen");
    assert_eq!(events.len(), accepted, "events written through the unlinked WAL were lost");
    assert_eq!(current.as_deref(), Some(c2.checkpoint_id.as_str()));
    assert_eq!(recorded, 2);
    let found = consistency(&path, SESSION);
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    report_fault(
        "wal_deleted_under_open_store",
        "nothing_lost",
        &format!("events={} checkpoints={recorded}", events.len()),
    );
}

#[test]
fn a_database_truncated_to_zero_bytes_reads_as_a_new_empty_store() {
    // A documented limit, not a detection: SQLite treats an empty file as a new database,
    // so nothing in the file can tell that events were ever accepted.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("zero.sqlite");
    drop(seeded_store(&path, 3));
    std::fs::write(&path, b"").expect("truncate to zero");
    let (events, current, recorded) = read_all(&path).expect("an empty file opens");
    assert!(events.is_empty() && current.is_none() && recorded == 0);
}
