//! `import --format claude-code | codex-rollout | cline | auto` on real session files
//! (`tests/agent-files`, sources and licences in each folder's README), and a session that moves
//! from a 32k to an 8k window (issue 41).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::cli_support::{fails, import_args, ok, write};

/// Every committed fixture of `agent` (`claude-code`, `codex`, `cline`).
fn fixtures(agent: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/agent-files").join(agent);
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("fixture folder")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl" || ext == "json"))
        .collect();
    files.sort();
    files
}

fn path(path: &Path) -> &str {
    path.to_str().expect("utf8")
}

fn project(db: &str, session: &str, window: &str, extra: &[&str]) -> Value {
    let mut args = vec!["project", "--db", db, "--session", session, "--context-window", window];
    args.extend_from_slice(extra);
    ok(&args)
}

#[test]
fn every_session_file_imports_with_auto_and_says_which_format_it_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut imported = 0;
    for (agent, format) in [("claude-code", "claude-code"), ("codex", "codex-rollout")] {
        for (n, file) in fixtures(agent).iter().enumerate() {
            let db = dir.path().join(format!("{agent}-{n}.sqlite"));
            let db = path(&db);
            let out = ok(&import_args(db, "s", "auto", path(file)));
            assert_eq!(out["format"], json!(format), "{}: {out}", file.display());
            let events = out["imported"].as_u64().unwrap_or(0)
                + out["linked"]
                    .as_array()
                    .map_or(0, |l| l.iter().map(|run| run["imported"].as_u64().unwrap_or(0)).sum());
            assert!(events > 0, "{}: {out}", file.display());
            // A subagent file is a linked session `s/<agent id>`; the main session is empty.
            let session = match out["imported"].as_u64() {
                Some(0) => out["linked"][0]["session"].as_str().expect("linked").to_owned(),
                _ => "s".to_owned(),
            };
            assert!(project(db, &session, "128000", &[])["estimatedTokens"].as_u64() > Some(0));
            imported += 1;
        }
    }
    assert!(imported >= 7, "{imported} fixtures");
}

#[test]
fn imported_usage_calibrates_the_estimate_of_its_provider_and_model() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("codex.sqlite");
    let db = path(&db);
    let file = &fixtures("codex")[0];
    assert!(file.ends_with("acidicsoil-rollout-2025-11-17.jsonl"), "{}", file.display());
    let out = ok(&import_args(db, "s", "codex-rollout", path(file)));
    assert_eq!(out["usageFacts"], json!(39), "{out}");
    assert!(out["diagnostics"].as_array().is_some_and(|d| !d.is_empty()), "{out}");
    let plain = project(db, "s", "32000", &[]);
    let codex = project(db, "s", "32000", &["--provider", "openai", "--model", "gpt-5.1-codex"]);
    let (plain, codex) = (&plain["estimatedTokens"], &codex["estimatedTokens"]);
    assert!(codex.as_u64() > plain.as_u64(), "calibrated {codex} against uncalibrated {plain}");
}

#[test]
fn a_file_read_as_the_wrong_format_is_a_typed_error_naming_the_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("wrong.sqlite");
    let db = path(&db);
    let rollout = &fixtures("codex")[0];
    let run =
        fails(&import_args(db, "s", "claude-code", path(rollout)), "session_file_unsupported");
    let message = run.json["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("line 1"), "{message}");
    let text = write(dir.path(), "notes.txt", "just some notes\n");
    fails(&import_args(db, "s", "auto", path(&text)), "session_file_unknown_format");
    let empty = write(dir.path(), "empty.jsonl", "");
    fails(&import_args(db, "s", "auto", path(&empty)), "session_file_unknown_format");
    // Nothing was written by the failed imports.
    fails(&["checkpoints", "--db", db, "--session", "s"], "unknown_session");
}

/// Session `w` of the 32k-to-8k conformance vectors (`contextfold_conformance::window_cases`), as
/// events JSON Lines: its 32k checkpoint does not fit 8k.
pub(crate) fn artifact_session() -> String {
    let log = contextfold_conformance::window_cases::artifact_session("w", 40);
    log.events().iter().map(|e| serde_json::to_string(e).expect("json") + "\n").collect()
}

#[test]
fn a_session_moved_from_a_32k_to_an_8k_window_is_compressed_again_and_fits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(dir.path(), "w.jsonl", &artifact_session());
    let db = dir.path().join("window.sqlite");
    let db = path(&db);
    ok(&import_args(db, "w", "events-jsonl", path(&file)));
    let compact = |window: &str| {
        let args = ["compact", "--db", db, "--session", "w", "--context-window", window];
        ok(&[&args[..], &["--summarizer", "extractive"]].concat())
    };
    assert_eq!(compact("32000")["reason"], json!("checkpoint_recorded"));
    let before = project(db, "w", "8000", &[]);
    assert_eq!(before["fits"], json!(false), "the 32k checkpoint must not fit 8k");
    let at_8k = compact("8000");
    assert_eq!(at_8k["reason"], json!("checkpoint_recorded"), "{at_8k}");
    let codes: Vec<&str> = at_8k["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert!(codes.contains(&"recompress_for_budget"), "{codes:?}");
    let after = project(db, "w", "8000", &[]);
    assert_eq!(after["fits"], json!(true), "{}", after["estimatedTokens"]);
    // Two checkpoints over the same events, the second naming the first; both verify.
    let listed = ok(&["checkpoints", "--db", db, "--session", "w"]);
    let checkpoints = listed["checkpoints"].as_array().expect("list");
    assert_eq!(checkpoints.len(), 2, "{listed}");
    assert_eq!(checkpoints[0]["eventCount"], checkpoints[1]["eventCount"]);
    assert_eq!(checkpoints[1]["previousCheckpointId"], checkpoints[0]["checkpointId"]);
    assert_eq!(listed["current"], checkpoints[1]["checkpointId"]);
    assert_eq!(ok(&["verify", "--db", db, "--session", "w"])["ok"], json!(true));
}
