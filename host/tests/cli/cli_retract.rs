//! `checkpoints --retract ID --reason TEXT` (issue 42): a compaction taken back by appending a
//! retraction, never by rewriting. Each step is its own process; the same on a SQLite file and
//! on PostgreSQL.

use serde_json::{Value, json};

use crate::cli_agent_files::artifact_session;
use crate::cli_postgres::{fresh_database, server};
use crate::cli_support::{fails, import_args, ok, write};

fn compact(db: &str, window: &str) -> Value {
    let args = ["compact", "--db", db, "--session", "w", "--context-window", window];
    ok(&[&args[..], &["--summarizer", "extractive"]].concat())
}

fn project(db: &str, window: &str) -> Value {
    ok(&["project", "--db", db, "--session", "w", "--context-window", window])
}

fn retract(db: &str, checkpoint: &str) -> Value {
    ok(&[
        "checkpoints",
        "--db",
        db,
        "--session",
        "w",
        "--retract",
        checkpoint,
        "--reason",
        "lost the task",
    ])
}

fn exported(db: &str) -> Value {
    ok(&["export", "--db", db, "--session", "w"])["events"].clone()
}

/// Two checkpoints over the same events (32k, then recompressed for 8k), then each taken back.
fn retract_round_trip(db: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(dir.path(), "w.jsonl", &artifact_session());
    ok(&import_args(db, "w", "events-jsonl", file.to_str().expect("utf8")));
    let large = compact(db, "32000")["checkpoint"]["checkpointId"].clone();
    let small = compact(db, "8000")["checkpoint"]["checkpointId"].clone();
    let (large, small) = (large.as_str().expect("id"), small.as_str().expect("id"));
    let log = exported(db);

    // Take the 8k checkpoint back: the 32k one is current again, in the next process too.
    let listed = retract(db, small);
    assert_eq!(listed["retracted"], json!(small));
    assert_eq!(listed["current"], json!(large), "{listed}");
    assert_eq!(project(db, "32000")["checkpoint"]["checkpointId"], json!(large));
    let verify = ok(&["verify", "--db", db, "--session", "w"]);
    assert_eq!(verify["ok"], json!(true), "{verify}");
    assert_eq!(verify["projection"]["recoveredTip"], json!(large));
    assert_eq!(verify["retractions"][0]["checkpointId"], json!(small), "{verify}");
    assert_eq!(verify["retractions"][0]["reason"], json!("lost the task"));
    let row = |listing: &Value, id: &str| {
        listing["checkpoints"]
            .as_array()
            .expect("rows")
            .iter()
            .find(|r| r["checkpointId"] == json!(id))
            .cloned()
    };
    let again = ok(&["checkpoints", "--db", db, "--session", "w"]);
    assert!(
        row(&again, small).expect("listed")["retracted"]
            .as_str()
            .is_some_and(|why| why.contains("lost the task"))
    );
    assert_eq!(row(&again, large).expect("listed")["retracted"], Value::Null);

    // Take the 32k one back too: nothing is current; the request is the raw source.
    assert_eq!(retract(db, large)["current"], Value::Null);
    assert_eq!(project(db, "128000")["checkpoint"], Value::Null);
    assert_eq!(ok(&["verify", "--db", db, "--session", "w"])["ok"], json!(true));

    // Nothing in the RuntimeEvent log changed.
    assert_eq!(exported(db), log);
    // Typed errors write nothing.
    let args = |id: &'static str| {
        ["checkpoints", "--db", db, "--session", "w", "--retract", id, "--reason", "x"]
    };
    fails(&args("cp-unknown"), "checkpoint_not_found");
    let twice = ["checkpoints", "--db", db, "--session", "w", "--retract", large, "--reason", "x"];
    fails(&twice, "checkpoint_already_retracted");
    assert_eq!(
        ok(&["verify", "--db", db, "--session", "w"])["retractions"].as_array().map(Vec::len),
        Some(2)
    );

    // The next compaction records a new checkpoint after the retracted ones, and it is current.
    let next = compact(db, "8000");
    assert_eq!(next["reason"], json!("checkpoint_recorded"), "{next}");
    assert_eq!(next["checkpoint"]["previousCheckpointId"], Value::Null);
    let current = ok(&["checkpoints", "--db", db, "--session", "w"])["current"].clone();
    assert_eq!(current, next["checkpoint"]["checkpointId"]);
    assert!(project(db, "8000")["fits"] == json!(true));
}

#[test]
fn a_retraction_takes_a_compaction_back_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("retract.sqlite");
    retract_round_trip(db.to_str().expect("utf8"));
}

#[test]
fn a_retraction_takes_a_compaction_back_on_postgres() {
    let Some(url) = server() else { return };
    retract_round_trip(&fresh_database(&url, "retract"));
}

#[test]
fn a_retraction_needs_its_reason() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_contextfold"))
        .args(["checkpoints", "--db", "x.sqlite", "--session", "w", "--retract", "cp-1"])
        .output()
        .expect("run");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--reason"), "{stderr}");
}
