//! The built `contextfold` binary, run on real SQLite files with `--json`.

use crate::cli_support;

use std::process::Command;

use cli_support::{
    SessionDb, contextfold, fails, fails_with_env, import_args, ok, project_args, write,
};
use serde_json::json;

#[test]
fn every_command_round_trips_a_session() {
    let session = SessionDb::new("cli.sqlite");
    let db = session.db();
    let projected = ok(&project_args(db, "s", "8000", "openai-chat"));
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
        let projected = ok(&project_args(db, "s", "8000", format));
        assert_eq!(projected["fits"], json!(true), "{format}: {projected}");
        assert_eq!(projected["checkpoint"]["checkpointId"], checkpoint_id, "{format}");
    }
    let anthropic = ok(&project_args(db, "s", "8000", "anthropic"));
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
    let session = SessionDb::new("v.sqlite");
    let db = session.db();
    let compacted = ok(&["compact", "--db", db, "--session", "s", "--context-window", "8000"]);
    let mut forged = compacted["checkpoint"].clone();
    forged["checkpointId"] = json!("forged");
    forged["previousCheckpointId"] = compacted["checkpoint"]["checkpointId"].clone();
    forged["coverage"]["sourceDigest"] = json!(format!("sha256:{}", "0".repeat(64)));
    session.raw().execute(
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
    let session = SessionDb::new("r.sqlite");
    let db = session.db();
    let compacted = ok(&["compact", "--db", db, "--session", "s", "--context-window", "8000"]);
    let conn = session.raw();
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
        let imported = ok(&import_args(db, session, format, file.to_str().expect("utf8")));
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
        let projected = ok(&project_args(db, session, "100000", format));
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
    let session = SessionDb::new("bad.sqlite");
    let db = session.db();
    let dir = &session.dir;
    let good = dir.path().join("s.jsonl");
    let before = session.ledger_rows("s");
    let mut lines = cli_support::session_jsonl();
    lines.push_str("{\"truncated\": ");
    let truncated = write(dir.path(), "t.jsonl", &lines);
    fails(&import_args(db, "s", "events-jsonl", truncated.to_str().expect("utf8")), "event_syntax");
    let broken = write(dir.path(), "b.json", "[{\"role\": \"user\", \"content\": ");
    fails(&import_args(db, "s", "openai-chat", broken.to_str().expect("utf8")), "input_syntax");
    let image = write(
        dir.path(),
        "i.json",
        &json!({"messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]})
            .to_string(),
    );
    fails(
        &import_args(db, "s", "anthropic", image.to_str().expect("utf8")),
        "anthropic_import_unsupported_block",
    );
    let file_part = write(
        dir.path(),
        "f.json",
        &json!([{"role": "user", "content": [{"type": "file", "data": "x"}]}]).to_string(),
    );
    fails(
        &import_args(db, "s", "ai-sdk", file_part.to_str().expect("utf8")),
        "attachment_invalid_base64",
    );
    // The same events again: their seq does not continue the ledger.
    fails(
        &import_args(db, "s", "events-jsonl", good.to_str().expect("utf8")),
        "event_seq_not_increasing",
    );
    // Events of session `s` imported into another session.
    fails(
        &import_args(db, "other", "events-jsonl", good.to_str().expect("utf8")),
        "event_session_mismatch",
    );
    fails(&import_args(db, "s", "events-jsonl", "/nonexistent.jsonl"), "input_unreadable");
    assert_eq!(session.ledger_rows("s"), before);
    assert_eq!(session.event_count("other"), 0);

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
    let agent_run_before = session.count("agent_run_events");
    let compact = |summarizer: &str| {
        ["compact", "--db", db, "--session", "s", "--context-window", "8000", "--summarizer"]
            .into_iter()
            .map(str::to_owned)
            .chain([summarizer.to_owned()])
            .collect::<Vec<_>>()
    };
    for summarizer in ["anthropic", "openai-chat", "openai-codex"] {
        let args = compact(summarizer);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = fails(&args, "api_key_missing");
        let var = if summarizer == "anthropic" { "ANTHROPIC_API_KEY" } else { "OPENAI_API_KEY" };
        assert!(run.stderr.contains(var), "{summarizer}: {}", run.stderr);
        fails_with_env(&args, &[(var, "  ")], "api_key_empty");
    }
    let mut bad_url = compact("openai-chat");
    bad_url.extend(["--base-url".to_owned(), "ftp://127.0.0.1/v1".to_owned()]);
    let bad_url: Vec<&str> = bad_url.iter().map(String::as_str).collect();
    let run =
        fails_with_env(&bad_url, &[("OPENAI_API_KEY", "sk-never-printed")], "invalid_base_url");
    assert!(!run.stderr.contains("sk-never-printed") && !run.json.to_string().contains("sk-never"));
    assert_eq!(
        session.count("agent_run_events"),
        agent_run_before,
        "a refused provider writes nothing"
    );

    let conn = session.raw();
    conn.execute(
        "INSERT INTO runtime_events (session_id, seq, runtime_event_id, event_json) VALUES ('s', 1000, 'x', '{\"seq\": 1000}')",
        [],
    )
    .expect("corrupt");
    let rows_before = session.ledger_rows("s");
    let agent_run_before = session.count("agent_run_events");
    fails(
        &["project", "--db", db, "--session", "s", "--context-window", "8000"],
        "ledger_unreadable",
    );
    fails(
        &["compact", "--db", db, "--session", "s", "--context-window", "8000"],
        "ledger_unreadable",
    );
    assert_eq!(session.ledger_rows("s"), rows_before);
    assert_eq!(session.count("agent_run_events"), agent_run_before, "nothing written");
}

#[test]
fn demo_fires_every_trigger_and_verifies_every_digest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("demo.sqlite");
    let report = ok(&["demo", "--db", db.to_str().expect("utf8")]);
    let triggers = report["triggersFired"].as_array().expect("triggers");
    for trigger in ["manual", "mid_turn", "pre_turn", "overflow"] {
        assert!(triggers.contains(&json!(trigger)), "{trigger} did not fire: {report}");
    }
    // The simulated provider counts with o200k_base (and the second model a fifth more):
    // calibrated from each reported usage, the runtime compacts before the provider refuses,
    // so at most the one request before a model's first usage report may overflow.
    let overflows = report["providerOverflows"].as_u64().expect("overflows");
    assert!(overflows <= 1, "{overflows} provider overflows: {report}");
    let requests = report["modelRequests"].as_u64().expect("requests");
    assert_eq!(report["usageFacts"].as_u64(), Some(requests), "every request left a fact");
    let ratio = report["calibratedRatio"].as_f64().expect("ratio");
    assert!(ratio > 1.0, "the provider counts more than the characters estimate: {ratio}");
    let cached = report["providerCachedTokens"].as_u64().expect("cached");
    let input = report["providerInputTokens"].as_u64().expect("input");
    assert!(cached * 2 > input, "most input is read from the prompt cache: {cached} of {input}");
    assert!(report["checkpoints"].as_u64().is_some_and(|n| n >= 3), "{report}");
    assert_eq!(report["digestsVerified"], report["checkpoints"]);
    assert!(report["tokensAfter"].as_u64() < report["tokensBefore"].as_u64());
    assert_eq!(
        ok(&["verify", "--db", db.to_str().expect("utf8"), "--session", "demo"])["ok"],
        json!(true)
    );
    fails(&["demo", "--db", db.to_str().expect("utf8")], "session_exists");
}

#[test]
fn demo_with_background_preparation_reports_what_the_steps_waited() {
    // A summary takes 40 ms, a model step 60 ms: a preparation started at the soft threshold
    // has finished by the next step, so the steps that find one held wait for no summary.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("demo.sqlite");
    let db = db.to_str().expect("utf8");
    let args = ["demo", "--db", db, "--summarizer-latency-ms", "40", "--model-latency-ms", "60"];
    let report = ok(&[&args[..], &["--background-preparation"]].concat());
    assert_eq!(report["backgroundPreparation"], json!(true));
    let preparations = &report["preparations"];
    let count = |key: &str| preparations[key].as_u64().expect(key);
    assert!(count("used") >= 3, "{preparations}");
    // Every finished preparation was used or wasted (refused, superseded or still held).
    assert_eq!(count("prepared"), count("used") + count("wasted"), "{preparations}");
    let latency = &report["stepLatencyMs"];
    let steps = latency["prepared"]["steps"].as_u64().expect("steps");
    assert!(steps >= 3, "{latency}");
    // The steps that waited for a summary waited at least its latency; those that found a
    // finished preparation waited for none.
    assert!(latency["max"].as_f64().expect("max") >= 40.0, "{latency}");
    assert!(latency["prepared"]["p50"].as_f64().expect("p50") < 40.0, "{latency}");
    assert_eq!(report["digestsVerified"], report["checkpoints"]);
    assert_eq!(ok(&["verify", "--db", db, "--session", "demo"])["ok"], json!(true));
    // Off, nothing is prepared.
    let db_off = dir.path().join("off.sqlite");
    let report = ok(&["demo", "--db", db_off.to_str().expect("utf8")]);
    assert_eq!(report["preparations"]["started"], json!(0));
    assert_eq!(report["stepLatencyMs"]["prepared"]["steps"], json!(0));
}

#[test]
fn real_agent_logs_with_reused_call_ids_import_and_project_unique_pairs() {
    // Real public trajectories in their native formats (sources and licences:
    // docs/trajectories.md): SWE-agent reuses call ids after their answers; mini-swe-agent's
    // LiteLLM log carries `provider_specific_fields` and `tool_calls[].index`.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/trajectories");
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("real.sqlite");
    let db = db.to_str().expect("utf8");
    for (session, file, format, count) in [
        (
            "swe",
            "swe-agent/native/marshmallow-1867-function-calling.openai-chat.json",
            "openai-chat",
            35,
        ),
        (
            "mini",
            "mini-swe-agent/native/pvlib-1072-deepseek-chat.openai-chat.json",
            "openai-chat",
            223,
        ),
        ("moat", "moatless/native/django__django-15819.anthropic.json", "anthropic", 55),
    ] {
        let path = root.join(file);
        let imported = ok(&import_args(db, session, format, path.to_str().expect("utf8")));
        assert_eq!(imported["imported"], json!(count), "{file}: {imported}");
        let projected = ok(&project_args(db, session, "1000000", "openai-chat"));
        let mut calls = std::collections::HashSet::new();
        let mut results = Vec::new();
        for message in projected["messages"].as_array().expect("messages") {
            for call in message["tool_calls"].as_array().into_iter().flatten() {
                assert!(
                    calls.insert(call["id"].as_str().expect("id").to_owned()),
                    "{file}: duplicate id"
                );
            }
            if let Some(id) = message["tool_call_id"].as_str() {
                results.push(id.to_owned());
            }
        }
        assert!(calls.len() >= 11, "{file}: {} calls projected", calls.len());
        assert_eq!(results.len(), calls.len(), "{file}: one result per call");
        assert!(results.iter().all(|id| calls.contains(id)), "{file}");
    }
}

/// `verify --deep` parses every row and recomputes its derived columns: a clean ledger passes,
/// a rewritten `tokens` column is reported with its row, the checkpoint check alone (over the
/// stored bytes) does not depend on it, and `recover` rebuilds it.
#[test]
fn verify_deep_recomputes_every_rows_derived_columns() {
    let session = SessionDb::new("deep.sqlite");
    let db = session.db();
    ok(&["compact", "--db", db, "--session", "s", "--context-window", "8000"]);
    let deep = ok(&["verify", "--db", db, "--session", "s", "--deep"]);
    assert_eq!(deep["rows"]["checked"], json!(32), "{deep}");
    assert_eq!(deep["rows"]["canonical"], json!(32), "{deep}");
    session
        .raw()
        .execute("UPDATE runtime_events SET tokens = tokens + 7 WHERE seq = 3", [])
        .expect("a derived column can be rewritten");
    assert_eq!(ok(&["verify", "--db", db, "--session", "s"])["ok"], json!(true));
    let run = contextfold(&["verify", "--db", db, "--session", "s", "--deep"]);
    assert_eq!(run.code, 2, "{}", run.json);
    let message = run.json["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("derived_column_mismatch"), "{message}");
    // `recover` rebuilds the derived columns from the events; the deep check passes again.
    let recovered = ok(&["recover", "--db", db, "--session", "s"]);
    assert_eq!(recovered["derivedRowsRebuilt"], json!(1), "{recovered}");
    let deep = ok(&["verify", "--db", db, "--session", "s", "--deep"]);
    assert_eq!(deep["rows"]["mismatchedSeqs"], json!([]), "{deep}");
}

#[test]
fn a_manual_compaction_that_cannot_help_is_a_no_op_that_never_grows_the_log() {
    // Three short turns fit any window; a summary of them is no smaller than they are.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut builder = contextfold_core::LogBuilder::new("s");
    for turn in 0..3 {
        builder.turn(&format!("t{turn}")).user(&format!("rename x{turn}")).assistant("done");
    }
    let text: String =
        builder.events().iter().map(|e| serde_json::to_string(e).expect("json") + "\n").collect();
    let file = write(dir.path(), "small.jsonl", &text);
    let db = dir.path().join("small.sqlite");
    let db = db.to_str().expect("utf8");
    ok(&import_args(db, "s", "events-jsonl", file.to_str().expect("utf8")));
    for attempt in 0..3 {
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
        assert_eq!(compacted["outcome"], json!("skipped"), "attempt {attempt}: {compacted}");
        assert_eq!(compacted["reason"], json!("replacement_not_smaller"), "{compacted}");
        let exported = ok(&["export", "--db", db, "--session", "s"]);
        assert_eq!(exported["events"].as_array().map(Vec::len), Some(6), "attempt {attempt}");
    }
}
