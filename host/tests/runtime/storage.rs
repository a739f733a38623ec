//! Storage on real SQLite files: append-only triggers, one-transaction checkpoint writes, the
//! compare-and-swap, projection damage and recovery, unreadable ledgers, schema skew, archive.

use contextfold_core::checkpoint::{CheckpointProjection, Coverage, HighWater, coverage_of};
use contextfold_core::{HistoryCompactCheckpoint, LogBuilder, RuntimeEvent};
use contextfold_host::storage::{LookupSource, SCHEMA_VERSION, Store, StoreError};
use rusqlite::Connection;
use serde_json::json;

fn log(session: &str, turns: usize) -> Vec<RuntimeEvent> {
    let mut builder = LogBuilder::new(session);
    for turn in 0..turns {
        builder.turn(&format!("t{turn}")).user(&format!("request {turn}"));
        builder.tool_call(&format!("c{turn}"), "shell", json!({"cmd": "ls"}));
        builder.tool_result(&format!("c{turn}"), "shell", json!("src\ntests"));
        builder.assistant("done");
    }
    builder.build()
}

fn checkpoint(
    events: &[RuntimeEvent],
    covered: usize,
    id: &str,
    previous: Option<&str>,
) -> HistoryCompactCheckpoint {
    let coverage: Coverage = coverage_of(&events[..covered]).expect("non-empty prefix");
    HistoryCompactCheckpoint {
        checkpoint_id: id.into(),
        session_id: events[0].session_id.clone(),
        created_at_ms: 1,
        high_water: HighWater { name: "manual".into(), seq: events[covered - 1].seq },
        coverage,
        projection: CheckpointProjection::Summary(
            "## Goal\nx\n## Progress\nx\n## Next Steps\nx\n## Critical Context\nx".into(),
        ),
        limitations: vec![],
        estimated_tokens: 10,
        previous_checkpoint_id: previous.map(str::to_owned),
        produced_by: Some("test".into()),
        manifest: None,
    }
}

fn store() -> (tempfile::TempDir, std::path::PathBuf, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ledger.sqlite");
    let store = Store::open(&path).expect("open");
    (dir, path, store)
}

#[test]
fn events_round_trip_and_ledgers_are_append_only() {
    let (_dir, path, store) = store();
    let events = log("s", 3);
    store.append_events("s", &events).expect("append");
    assert_eq!(store.load_events("s").expect("load"), events);
    store
        .append_checkpoint("ar-1", "run-1", 5, &checkpoint(&events, 4, "cp-1", None))
        .expect("checkpoint");
    store.archive_put("s", b"body").expect("archive");
    let conn = Connection::open(&path).expect("raw");
    for sql in [
        "UPDATE runtime_events SET event_json = '{}'",
        "DELETE FROM runtime_events",
        "UPDATE agent_run_events SET payload_json = '{}'",
        "DELETE FROM agent_run_events",
        "DELETE FROM tool_result_archive",
    ] {
        let error = conn.execute(sql, []).expect_err(sql);
        assert!(error.to_string().contains("append-only"), "{sql}: {error}");
    }
    assert_eq!(store.load_events("s").expect("load").len(), events.len());
}

#[test]
fn bad_appends_write_nothing() {
    let (_dir, _path, store) = store();
    let events = log("s", 2);
    store.append_events("s", &events[..3]).expect("append");
    let error = store.append_events("s", &events[2..]).expect_err("seq overlap");
    assert_eq!(error.code(), "event_seq_not_increasing");
    let mut foreign = events[3..].to_vec();
    foreign[1].session_id = "other".into();
    assert_eq!(
        store.append_events("s", &foreign).expect_err("session").code(),
        "event_session_mismatch"
    );
    let mut duplicate = events[3..5].to_vec();
    duplicate[1].runtime_event_id = duplicate[0].runtime_event_id.clone();
    assert_eq!(store.append_events("s", &duplicate).expect_err("dup").code(), "event_duplicate_id");
    assert_eq!(store.load_events("s").expect("load").len(), 3, "no partial batch was written");
}

#[test]
fn checkpoint_and_projection_are_one_transaction() {
    let (_dir, path, store) = store();
    let events = log("s", 3);
    store.append_events("s", &events).expect("append");
    let conn = Connection::open(&path).expect("raw");
    conn.execute_batch(
        "CREATE TRIGGER inject_failure BEFORE INSERT ON checkpoint_projection \
         BEGIN SELECT RAISE(ABORT, 'injected projection failure'); END;",
    )
    .expect("inject");
    let error = store
        .append_checkpoint("ar-1", "run-1", 5, &checkpoint(&events, 4, "cp-1", None))
        .expect_err("projection insert aborts");
    assert!(!error.is_conflict());
    assert!(error.to_string().contains("injected"), "{error}");
    let count = |table: &str| -> i64 {
        conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0)).expect("count")
    };
    assert_eq!((count("agent_run_events"), count("checkpoint_projection")), (0, 0));
}

#[test]
fn compare_and_swap_refuses_a_stale_predecessor() {
    let (_dir, _path, store) = store();
    let events = log("s", 4);
    store.append_events("s", &events).expect("append");
    store.append_checkpoint("ar-1", "r", 1, &checkpoint(&events, 4, "cp-1", None)).expect("first");
    // A second writer that planned against "no checkpoint" loses.
    let error = store
        .append_checkpoint("ar-2", "r", 2, &checkpoint(&events, 8, "cp-2", None))
        .expect_err("stale predecessor");
    assert!(error.is_conflict());
    assert_eq!(error.code(), "successor_conflict");
    store
        .append_checkpoint("ar-3", "r", 3, &checkpoint(&events, 8, "cp-3", Some("cp-1")))
        .expect("successor");
    let lookup = store.current_checkpoint("s").expect("lookup");
    assert_eq!(lookup.checkpoint.map(|c| c.checkpoint_id), Some("cp-3".into()));
    assert_eq!(lookup.source, LookupSource::Projection);
    assert_eq!(store.recorded_checkpoints("s").expect("records").len(), 2);
}

#[test]
fn damaged_projection_is_recovered_from_the_ledger_and_repaired() {
    let (_dir, path, store) = store();
    let events = log("s", 4);
    store.append_events("s", &events).expect("append");
    store.append_checkpoint("ar-1", "r", 1, &checkpoint(&events, 4, "cp-1", None)).expect("first");
    store
        .append_checkpoint("ar-2", "r", 2, &checkpoint(&events, 8, "cp-2", Some("cp-1")))
        .expect("second");
    let conn = Connection::open(&path).expect("raw");
    for damage in [
        "UPDATE checkpoint_projection SET checkpoint_json = '{not json'",
        "UPDATE checkpoint_projection SET checkpoint_id = 'cp-1'",
        "UPDATE checkpoint_projection SET event_count = X'00'",
        "DELETE FROM checkpoint_projection",
    ] {
        conn.execute(damage, []).expect(damage);
        let lookup = store.current_checkpoint("s").expect("lookup");
        assert_eq!(lookup.source, LookupSource::Recovered, "{damage}");
        assert_eq!(lookup.checkpoint.map(|c| c.checkpoint_id), Some("cp-2".into()), "{damage}");
        assert!(
            lookup.notes.iter().any(|n| n.code == "projection_repaired"),
            "{damage}: {:?}",
            lookup.notes
        );
        let again = store.current_checkpoint("s").expect("lookup");
        assert_eq!(again.source, LookupSource::Projection, "{damage}: repaired row is used");
    }
}

#[test]
fn unreadable_ledgers_stop_with_a_clear_error() {
    let (_dir, path, store) = store();
    let events = log("s", 1);
    store.append_events("s", &events).expect("append");
    let conn = Connection::open(&path).expect("raw");
    conn.execute(
        "INSERT INTO runtime_events (session_id, seq, runtime_event_id, event_json) VALUES ('s', 99, 'bad', '{\"oops\":')",
        [],
    )
    .expect("corrupt row");
    let error = store.load_events("s").expect_err("unreadable");
    assert_eq!(error.code(), "ledger_unreadable");
    assert!(error.to_string().contains("seq 99"), "{error}");
    conn.execute_batch("DROP TRIGGER agent_run_events_no_delete; DROP TABLE agent_run_events;")
        .expect("drop");
    conn.execute("DELETE FROM checkpoint_projection", []).expect("clear");
    let error = store.current_checkpoint("s").expect_err("AgentRun ledger gone");
    assert!(matches!(error, StoreError::LedgerUnreadable { .. }), "{error}");
}

#[test]
fn newer_schema_is_refused_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("future.sqlite");
    let conn = Connection::open(&path).expect("raw");
    conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1).expect("version");
    conn.execute_batch("CREATE TABLE future (x INTEGER)").expect("table");
    drop(conn);
    let error = Store::open(&path).expect_err("too new");
    assert!(
        matches!(error, StoreError::SchemaTooNew { found, supported } if found == SCHEMA_VERSION + 1 && supported == SCHEMA_VERSION)
    );
    assert_eq!(error.code(), "schema_too_new");
    let conn = Connection::open(&path).expect("raw");
    let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0)).expect("mode");
    assert_eq!(mode, "delete", "the file was not switched to WAL");
    assert_eq!(
        Store::open_existing(dir.path().join("missing.sqlite")).expect_err("missing").code(),
        "database_not_found"
    );
    let fresh = Store::open(dir.path().join("fresh.sqlite")).expect("fresh");
    assert_eq!(fresh.schema_version().expect("version"), SCHEMA_VERSION);
}

#[test]
fn archive_is_content_addressed_and_reads_are_bounded() {
    let (_dir, _path, store) = store();
    let body = "line one\nerror: disk full at src/io.rs:12\nline three\n".repeat(2_000);
    let address = store.archive_put("s", body.as_bytes()).expect("archive");
    assert_eq!(store.archive_put("s", body.as_bytes()).expect("again"), address);
    let slice = store
        .archive_read("s", &json!({"address": address.to_uri(), "mode": "query", "pattern": "disk full", "maxMatches": 3}))
        .expect("query");
    let value = serde_json::to_value(&slice).expect("json");
    assert_eq!(value["matches"].as_array().map(Vec::len), Some(3));
    assert_eq!(value["moreMatches"], json!(true));
    let inspect = store
        .archive_read("s", &json!({"address": address.to_uri(), "mode": "inspect"}))
        .expect("inspect");
    let value = serde_json::to_value(&inspect).expect("json");
    assert!(value["text"].as_str().map_or(0, str::len) <= 16 * 1024);
    let wrong_session =
        store.archive_read("other", &json!({"address": address.to_uri(), "mode": "inspect"}));
    assert_eq!(wrong_session.expect_err("session").code(), "archive_session_mismatch");
    let missing = contextfold_core::projection::ArchiveAddress::for_content("s", b"never stored")
        .expect("address");
    let error = store
        .archive_read("s", &json!({"address": missing.to_uri(), "mode": "inspect"}))
        .expect_err("missing");
    assert_eq!(error.code(), "archive_not_found");
    let error = store.archive_read("s", &json!({"mode": "inspect"})).expect_err("bad input");
    assert_eq!(error.code(), "archive_read_invalid_request");
}

#[test]
fn active_pruning_archives_the_result_before_the_placeholder_is_used() {
    let (_dir, _path, store) = store();
    let events = log("s", 2);
    store.append_events("s", &events).expect("append");
    let result = events
        .iter()
        .find(|e| matches!(e.content, contextfold_core::EventContent::ToolResult { .. }))
        .expect("a tool result");
    let replacement = store.archive_tool_result(result).expect("archive").expect("a result");
    assert_eq!(
        (replacement.seq, &replacement.runtime_event_id),
        (result.seq, &result.runtime_event_id)
    );
    let contextfold_core::EventContent::ToolResult { output, .. } = &replacement.content else {
        panic!("{replacement:?}");
    };
    let placeholder = output.as_str().expect("placeholder text");
    let uri = placeholder
        .split_whitespace()
        .find(|word| word.starts_with("contextfold://archive/"))
        .map(|word| word.trim_end_matches(['.', ',']))
        .expect("address in the placeholder");
    let slice = store.archive_read("s", &json!({"address": uri, "mode": "inspect"})).expect("read");
    let text =
        serde_json::to_value(&slice).expect("json")["text"].as_str().expect("text").to_owned();
    let contextfold_core::EventContent::ToolResult { output: original, .. } = &result.content
    else {
        unreachable!()
    };
    let original = original.as_str().map_or_else(|| original.to_string(), str::to_owned);
    assert!(original.starts_with(&text), "the archived body is the raw result");
    assert_eq!(store.load_events("s").expect("load"), events, "canonical events unchanged");
    let user = events.first().expect("first event");
    assert!(store.archive_tool_result(user).expect("not a result").is_none());
}

#[test]
fn a_stale_placeholder_address_is_served_from_the_log() {
    let (_dir, _path, store) = store();
    let mut builder = LogBuilder::new("s");
    for turn in ["t1", "t2", "t3", "t4"] {
        builder.turn(turn).user("go").tool_call(turn, "cat", json!({}));
        let output = format!("{turn} begins\n{}\nerror: {turn} ends", "x".repeat(40_000));
        builder.tool_result(turn, "cat", json!(output));
    }
    let events = builder.build();
    store.append_events("s", &events).expect("append");
    // t4 is current: t1's 40 KB result is stale and replaced for this request only.
    let request: Vec<&RuntimeEvent> = events.iter().collect();
    let pruned = contextfold_core::projection::prune_request(
        &request,
        0..9,
        &contextfold_core::CharEstimator,
    );
    assert_eq!(pruned.results.len(), 1);
    let contextfold_core::EventContent::ToolResult { output, .. } = &pruned.events[2].content
    else {
        panic!("{:?}", pruned.events[2]);
    };
    let placeholder = output.as_str().expect("placeholder text");
    let uri = placeholder
        .split_whitespace()
        .find(|word| word.starts_with("contextfold://archive/"))
        .map(|word| word.trim_end_matches(['.', ']']))
        .expect("address in the placeholder");
    // Nothing was archived: the store finds the body among the session's results.
    let query = json!({"address": uri, "mode": "query", "pattern": "error: t1 ends"});
    let slice = store.archive_read("s", &query).expect("served from the log");
    let value = serde_json::to_value(&slice).expect("json");
    assert_eq!(value["matches"][0]["text"], json!("error: t1 ends"), "{value}");
    let inspect =
        store.archive_read("s", &json!({"address": uri, "mode": "inspect"})).expect("inspect");
    let text = serde_json::to_value(&inspect).expect("json")["text"].as_str().map(str::to_owned);
    assert!(text.is_some_and(|t| t.starts_with("t1 begins\n")));
    assert_eq!(store.load_events("s").expect("load"), events, "canonical events unchanged");
}

#[test]
fn copying_a_session_copies_raw_events_without_provider_state() {
    let (_dir, _path, store) = store();
    let mut builder = LogBuilder::new("s");
    builder.turn("t0").user("hi");
    builder.push(contextfold_core::EventContent::Reasoning {
        text: "think".into(),
        provider_data: Some(json!({"signature": "sig"})),
    });
    builder.assistant("hello");
    let events = builder.build();
    store.append_events("s", &events).expect("append");
    store.append_checkpoint("ar-1", "r", 1, &checkpoint(&events, 3, "cp-1", None)).expect("cp");
    assert_eq!(store.copy_session("s", "copy").expect("copy"), 3);
    let copied = store.load_events("copy").expect("load");
    assert!(copied.iter().all(|e| e.session_id == "copy"));
    assert!(matches!(
        &copied[1].content,
        contextfold_core::EventContent::Reasoning { provider_data: None, .. }
    ));
    assert!(store.current_checkpoint("copy").expect("lookup").checkpoint.is_none());
    assert_eq!(store.copy_session("s", "copy").expect_err("exists").code(), "session_exists");
}
