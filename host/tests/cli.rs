//! The built `contextfold` binary, run on real SQLite files with `--json`.

use std::path::{Path, PathBuf};
use std::process::Command;

use contextfold_core::LogBuilder;
use serde_json::{Value, json};

struct Run {
    code: i32,
    json: Value,
    stderr: String,
}

fn contextfold(args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_contextfold"))
        .args(args)
        .arg("--json")
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&output.stdout);
    Run {
        code: output.status.code().unwrap_or(-1),
        json: serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {stdout}")),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn ok(args: &[&str]) -> Value {
    let run = contextfold(args);
    assert_eq!(run.code, 0, "{args:?}: {}\n{}", run.json, run.stderr);
    run.json
}

fn fails(args: &[&str], code: &str) -> Run {
    let run = contextfold(args);
    assert_ne!(run.code, 0, "{args:?} should fail: {}", run.json);
    assert_eq!(run.json["error"]["code"], json!(code), "{args:?}: {}\n{}", run.json, run.stderr);
    run
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path
}

fn session_jsonl() -> String {
    let mut builder = LogBuilder::new("s");
    for turn in 0..8 {
        builder.turn(&format!("t{turn}")).user(&format!("fix test {turn} in src/parser.rs"));
        builder.response(Some(&format!("r{turn}"))).tool_call(
            &format!("c{turn}"),
            "shell",
            json!({"cmd": "cargo test"}),
        );
        builder.response(None).tool_result(
            &format!("c{turn}"),
            "shell",
            json!("parser::case ... FAILED\n".repeat(200)),
        );
        builder.assistant("fixed");
    }
    builder.events().iter().map(|e| serde_json::to_string(e).expect("json") + "\n").collect()
}

fn event_count(db: &Path, session: &str) -> i64 {
    let conn = rusqlite::Connection::open(db).expect("raw");
    conn.query_row("SELECT count(*) FROM runtime_events WHERE session_id = ?1", [session], |r| {
        r.get(0)
    })
    .expect("count")
}

#[test]
fn every_command_round_trips_a_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("cli.sqlite");
    let db = db.to_str().expect("utf8");
    let file = write(dir.path(), "s.jsonl", &session_jsonl());
    let imported = ok(&[
        "import",
        "--db",
        db,
        "--session",
        "s",
        "--format",
        "events-jsonl",
        file.to_str().expect("utf8"),
    ]);
    assert_eq!(imported["imported"], json!(32));

    let projected = ok(&[
        "project",
        "--db",
        db,
        "--session",
        "s",
        "--context-window",
        "8000",
        "--format",
        "openai-chat",
    ]);
    assert_eq!(projected["fits"], json!(false));
    assert!(projected["messages"].as_array().is_some_and(|m| m.len() > 8));
    for key in ["estimatedTokens", "historyBudget", "checkpoint", "diagnostics"] {
        assert!(projected.get(key).is_some(), "missing {key}");
    }

    let compacted = ok(&[
        "compact",
        "--db",
        db,
        "--session",
        "s",
        "--context-window",
        "8000",
        "--summarizer",
        "extractive",
    ]);
    assert_eq!(compacted["outcome"], json!("recorded"), "{compacted}");
    assert_eq!(compacted["reason"], json!("checkpoint_recorded"));
    let checkpoint_id = compacted["checkpoint"]["checkpointId"].clone();
    assert!(checkpoint_id.is_string());

    for format in ["neutral", "openai-chat", "openai-responses", "anthropic", "ai-sdk"] {
        let projected = ok(&[
            "project",
            "--db",
            db,
            "--session",
            "s",
            "--context-window",
            "8000",
            "--format",
            format,
        ]);
        assert_eq!(projected["fits"], json!(true), "{format}: {projected}");
        assert_eq!(projected["checkpoint"]["checkpointId"], checkpoint_id, "{format}");
    }
    let anthropic = ok(&[
        "project",
        "--db",
        db,
        "--session",
        "s",
        "--context-window",
        "8000",
        "--format",
        "anthropic",
    ]);
    assert!(
        anthropic["messages"]["system"].as_str().is_some_and(|s| s.contains("Goal")),
        "{anthropic}"
    );

    let listed = ok(&["checkpoints", "--db", db, "--session", "s"]);
    assert_eq!(listed["current"], checkpoint_id);
    assert_eq!(listed["checkpoints"].as_array().map(Vec::len), Some(1));
    let verified = ok(&["verify", "--db", db, "--session", "s"]);
    assert_eq!((verified["ok"].clone(), verified["verified"].clone()), (json!(true), json!(1)));
    let recovered = ok(&["recover", "--db", db, "--session", "s"]);
    assert_eq!(recovered["checkpointId"], checkpoint_id);
    let exported = ok(&["export", "--db", db, "--session", "s"]);
    assert_eq!(exported["events"].as_array().map(Vec::len), Some(32));
    assert!(exported["agentRunEvents"].as_array().is_some_and(|a| a.len() >= 4));
}

#[test]
fn verify_reports_mismatches_with_reason_codes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db_path = dir.path().join("v.sqlite");
    let db = db_path.to_str().expect("utf8");
    let file = write(dir.path(), "s.jsonl", &session_jsonl());
    ok(&[
        "import",
        "--db",
        db,
        "--session",
        "s",
        "--format",
        "events-jsonl",
        file.to_str().expect("utf8"),
    ]);
    let compacted = ok(&["compact", "--db", db, "--session", "s", "--context-window", "8000"]);
    let mut forged = compacted["checkpoint"].clone();
    forged["checkpointId"] = json!("forged");
    forged["previousCheckpointId"] = compacted["checkpoint"]["checkpointId"].clone();
    forged["coverage"]["sourceDigest"] = json!(format!("sha256:{}", "0".repeat(64)));
    let conn = rusqlite::Connection::open(&db_path).expect("raw");
    conn.execute(
        "INSERT INTO agent_run_events (event_id, session_id, run_id, kind, recorded_at_ms, payload_json) \
         VALUES ('forged', 's', 'r', 'history_compact_checkpoint_recorded', 1, ?1)",
        [forged.to_string()],
    )
    .expect("forge");
    let run = contextfold(&["verify", "--db", db, "--session", "s"]);
    assert_eq!(run.code, 2, "{}", run.json);
    assert_eq!(run.json["error"]["code"], json!("verify_failed"));
    let message = run.json["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("source_hash_mismatch") || message.contains("coverage_miss"),
        "{message}"
    );
}

#[test]
fn projection_damage_is_reported_and_recover_rebuilds_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db_path = dir.path().join("r.sqlite");
    let db = db_path.to_str().expect("utf8");
    let file = write(dir.path(), "s.jsonl", &session_jsonl());
    ok(&[
        "import",
        "--db",
        db,
        "--session",
        "s",
        "--format",
        "events-jsonl",
        file.to_str().expect("utf8"),
    ]);
    let compacted = ok(&["compact", "--db", db, "--session", "s", "--context-window", "8000"]);
    let conn = rusqlite::Connection::open(&db_path).expect("raw");
    conn.execute("UPDATE checkpoint_projection SET checkpoint_json = 'garbage'", [])
        .expect("damage");
    let recovered = ok(&["recover", "--db", db, "--session", "s"]);
    assert_eq!(recovered["checkpointId"], compacted["checkpoint"]["checkpointId"]);
    let stored: String = conn
        .query_row("SELECT checkpoint_json FROM checkpoint_projection", [], |r| r.get(0))
        .expect("row");
    assert!(stored.starts_with('{'), "projection rebuilt");
    assert_eq!(ok(&["verify", "--db", db, "--session", "s"])["ok"], json!(true));
}

#[test]
fn imports_each_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("f.sqlite");
    let db = db.to_str().expect("utf8");
    let chat = json!([
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{\"path\":\"src\"}"}},
            {"id": "b", "type": "function", "function": {"name": "ls", "arguments": "{\"path\":\"tests\"}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "lib.rs"},
        {"role": "tool", "tool_call_id": "b", "content": "cli.rs"},
        {"role": "assistant", "content": "src/lib.rs and tests/cli.rs"}
    ]);
    let anthropic = json!({"system": "be brief", "messages": [
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "ls", "signature": "sig"}, {"type": "tool_use", "id": "a", "name": "ls", "input": {"path": "src"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "lib.rs"}], "is_error": false}]},
        {"role": "assistant", "content": "src/lib.rs"}
    ]});
    let ai_sdk = json!([
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "list files"}]},
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "a", "toolName": "ls", "input": {"path": "src"}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "a", "toolName": "ls", "output": {"type": "error-text", "value": "permission denied"}}]},
        {"role": "assistant", "content": "cannot read src"}
    ]);
    for (session, format, doc, count) in [
        ("chat", "openai-chat", chat, 7),
        ("anth", "anthropic", anthropic, 6),
        ("sdk", "ai-sdk", ai_sdk, 5),
    ] {
        let file = write(dir.path(), &format!("{session}.json"), &doc.to_string());
        let imported = ok(&[
            "import",
            "--db",
            db,
            "--session",
            session,
            "--format",
            format,
            file.to_str().expect("utf8"),
        ]);
        assert_eq!(imported["imported"], json!(count), "{format}: {imported}");
        let exported = ok(&["export", "--db", db, "--session", session]);
        let kinds: Vec<&str> = exported["events"]
            .as_array()
            .expect("events")
            .iter()
            .filter_map(|e| e["content"]["type"].as_str())
            .collect();
        assert!(
            kinds.contains(&"tool_call") && kinds.contains(&"tool_result"),
            "{format}: {kinds:?}"
        );
        let projected = ok(&[
            "project",
            "--db",
            db,
            "--session",
            session,
            "--context-window",
            "100000",
            "--format",
            format,
        ]);
        assert_eq!(projected["fits"], json!(true));
    }
    let exported = ok(&["export", "--db", db, "--session", "sdk"]);
    let result = exported["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["content"]["type"] == "tool_result")
        .cloned();
    assert_eq!(result.map(|e| e["content"]["isError"].clone()), Some(json!(true)));
}

#[test]
fn bad_input_gets_a_clear_error_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db_path = dir.path().join("bad.sqlite");
    let db = db_path.to_str().expect("utf8");
    let good = write(dir.path(), "s.jsonl", &session_jsonl());
    ok(&[
        "import",
        "--db",
        db,
        "--session",
        "s",
        "--format",
        "events-jsonl",
        good.to_str().expect("utf8"),
    ]);
    let before = event_count(&db_path, "s");

    let mut lines = session_jsonl();
    lines.push_str("{\"truncated\": ");
    let truncated = write(dir.path(), "t.jsonl", &lines);
    fails(
        &[
            "import",
            "--db",
            db,
            "--session",
            "s",
            "--format",
            "events-jsonl",
            truncated.to_str().expect("utf8"),
        ],
        "event_syntax",
    );
    let broken = write(dir.path(), "b.json", "[{\"role\": \"user\", \"content\": ");
    fails(
        &[
            "import",
            "--db",
            db,
            "--session",
            "s",
            "--format",
            "openai-chat",
            broken.to_str().expect("utf8"),
        ],
        "input_syntax",
    );
    let image = write(
        dir.path(),
        "i.json",
        &json!({"messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]})
            .to_string(),
    );
    fails(
        &[
            "import",
            "--db",
            db,
            "--session",
            "s",
            "--format",
            "anthropic",
            image.to_str().expect("utf8"),
        ],
        "anthropic_unsupported_block",
    );
    let file_part = write(
        dir.path(),
        "f.json",
        &json!([{"role": "user", "content": [{"type": "file", "data": "x"}]}]).to_string(),
    );
    fails(
        &[
            "import",
            "--db",
            db,
            "--session",
            "s",
            "--format",
            "ai-sdk",
            file_part.to_str().expect("utf8"),
        ],
        "ai_sdk_unsupported_part",
    );
    // The same events again: their seq does not continue the ledger.
    fails(
        &[
            "import",
            "--db",
            db,
            "--session",
            "s",
            "--format",
            "events-jsonl",
            good.to_str().expect("utf8"),
        ],
        "event_seq_not_increasing",
    );
    // Events of session `s` imported into another session.
    fails(
        &[
            "import",
            "--db",
            db,
            "--session",
            "other",
            "--format",
            "events-jsonl",
            good.to_str().expect("utf8"),
        ],
        "event_session_mismatch",
    );
    fails(
        &["import", "--db", db, "--session", "s", "--format", "events-jsonl", "/nonexistent.jsonl"],
        "input_unreadable",
    );
    assert_eq!(event_count(&db_path, "s"), before);
    assert_eq!(event_count(&db_path, "other"), 0);

    let unknown = Command::new(env!("CARGO_BIN_EXE_contextfold"))
        .args([
            "import",
            "--db",
            db,
            "--session",
            "s",
            "--format",
            "yaml",
            good.to_str().expect("utf8"),
        ])
        .output()
        .expect("run");
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("invalid value 'yaml'"));

    fails(
        &["project", "--db", db, "--session", "nope", "--context-window", "8000"],
        "unknown_session",
    );
    fails(
        &[
            "verify",
            "--db",
            dir.path().join("missing.sqlite").to_str().expect("utf8"),
            "--session",
            "s",
        ],
        "database_not_found",
    );
    fails(
        &[
            "compact",
            "--db",
            db,
            "--session",
            "s",
            "--context-window",
            "8000",
            "--summarizer",
            "anthropic",
        ],
        "summarizer_unavailable",
    );

    let conn = rusqlite::Connection::open(&db_path).expect("raw");
    conn.execute(
        "INSERT INTO runtime_events (session_id, seq, runtime_event_id, event_json) VALUES ('s', 1000, 'x', '{\"seq\": 1000}')",
        [],
    )
    .expect("corrupt");
    let checkpoints_before: i64 =
        conn.query_row("SELECT count(*) FROM agent_run_events", [], |r| r.get(0)).expect("count");
    fails(
        &["project", "--db", db, "--session", "s", "--context-window", "8000"],
        "ledger_unreadable",
    );
    fails(
        &["compact", "--db", db, "--session", "s", "--context-window", "8000"],
        "ledger_unreadable",
    );
    let checkpoints_after: i64 =
        conn.query_row("SELECT count(*) FROM agent_run_events", [], |r| r.get(0)).expect("count");
    assert_eq!(checkpoints_before + 2, checkpoints_after, "only the failed Run's lifecycle events");
}

#[test]
fn demo_fires_every_trigger_and_verifies_every_digest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("demo.sqlite");
    let report = ok(&["demo", "--db", db.to_str().expect("utf8")]);
    let triggers = report["triggersFired"].as_array().expect("triggers");
    for trigger in ["manual", "mid_turn", "overflow", "pre_turn"] {
        assert!(triggers.contains(&json!(trigger)), "{trigger} did not fire: {report}");
    }
    assert!(report["checkpoints"].as_u64().is_some_and(|n| n >= 3), "{report}");
    assert_eq!(report["digestsVerified"], report["checkpoints"]);
    assert!(report["tokensAfter"].as_u64() < report["tokensBefore"].as_u64());
    assert_eq!(
        ok(&["verify", "--db", db.to_str().expect("utf8"), "--session", "demo"])["ok"],
        json!(true)
    );
    fails(&["demo", "--db", db.to_str().expect("utf8")], "session_exists");
}
