//! Support for the CLI tests: run the built `contextfold` binary with `--json` in a clean
//! environment (no provider keys, no proxies unless given), and read a database's raw rows.
#![allow(dead_code, unreachable_pub)] // each test binary uses a different part; items are test-local

use std::path::{Path, PathBuf};
use std::process::Command;

use contextfold_core::LogBuilder;
use serde_json::{Value, json};

/// Environment variables a run never inherits (keys, proxies).
const SCRUBBED_ENV: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];

/// One finished run.
pub struct Run {
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    /// The JSON document printed on stdout.
    pub json: Value,
    /// Everything printed on stderr.
    pub stderr: String,
}

/// Runs `contextfold <args> --json` with `env` set (and nothing else of [`SCRUBBED_ENV`]).
pub fn contextfold_with_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_contextfold"));
    command.args(args).arg("--json");
    for var in SCRUBBED_ENV {
        command.env_remove(var);
    }
    command.envs(env.iter().copied());
    let output = command.output().expect("run");
    let stdout = String::from_utf8_lossy(&output.stdout);
    Run {
        code: output.status.code().unwrap_or(-1),
        json: serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {stdout}")),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs `contextfold <args> --json` without keys.
pub fn contextfold(args: &[&str]) -> Run {
    contextfold_with_env(args, &[])
}

/// Runs a command that must succeed; returns its JSON.
pub fn ok(args: &[&str]) -> Value {
    let run = contextfold(args);
    assert_eq!(run.code, 0, "{args:?}: {}\n{}", run.json, run.stderr);
    run.json
}

/// Runs a command that must fail with the error `code`.
pub fn fails(args: &[&str], code: &str) -> Run {
    fails_with_env(args, &[], code)
}

/// Runs a command (with `env`) that must fail with the error `code`.
pub fn fails_with_env(args: &[&str], env: &[(&str, &str)], code: &str) -> Run {
    let run = contextfold_with_env(args, env);
    assert_ne!(run.code, 0, "{args:?} should fail: {}", run.json);
    assert_eq!(run.json["error"]["code"], json!(code), "{args:?}: {}\n{}", run.json, run.stderr);
    run
}

/// `import --db DB --session SESSION --format FORMAT FILE`.
pub fn import_args<'a>(
    db: &'a str,
    session: &'a str,
    format: &'a str,
    file: &'a str,
) -> [&'a str; 8] {
    ["import", "--db", db, "--session", session, "--format", format, file]
}

/// `project --db DB --session SESSION --context-window WINDOW --format FORMAT`.
pub fn project_args<'a>(
    db: &'a str,
    session: &'a str,
    window: &'a str,
    format: &'a str,
) -> [&'a str; 9] {
    ["project", "--db", db, "--session", session, "--context-window", window, "--format", format]
}

/// Writes `text` to `dir/name`.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path
}

/// Session `s`: 8 turns, each a user request, a shell call with a large failing-test log and
/// an answer (32 events).
pub fn session_jsonl() -> String {
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

/// A temporary database holding session `s` ([`session_jsonl`]), imported through the CLI.
pub struct SessionDb {
    /// Keeps the directory alive.
    pub dir: tempfile::TempDir,
    /// The SQLite file.
    pub path: PathBuf,
}

impl SessionDb {
    /// Creates `name` in a new temporary directory and imports session `s`.
    pub fn new(name: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(name);
        let db = Self { dir, path };
        let file = write(db.dir.path(), "s.jsonl", &session_jsonl());
        let file = file.to_str().expect("utf8");
        let imported = ok(&import_args(db.db(), "s", "events-jsonl", file));
        assert_eq!(imported["imported"], json!(32));
        db
    }

    /// The path as a CLI argument.
    pub fn db(&self) -> &str {
        self.path.to_str().expect("utf8")
    }

    /// A raw connection to the file.
    pub fn raw(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(&self.path).expect("raw")
    }

    /// Every canonical row of `session` as `(seq, runtime_event_id, event_json)`.
    pub fn ledger_rows(&self, session: &str) -> Vec<(i64, String, String)> {
        let conn = self.raw();
        let mut statement = conn
            .prepare(
                "SELECT seq, runtime_event_id, event_json FROM runtime_events \
                 WHERE session_id = ?1 ORDER BY seq",
            )
            .expect("prepare");
        statement
            .query_map([session], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows")
    }

    /// Number of rows in `table` (a trusted test constant).
    pub fn count(&self, table: &str) -> i64 {
        self.raw()
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .expect("count")
    }

    /// Number of canonical events of `session`.
    pub fn event_count(&self, session: &str) -> i64 {
        self.raw()
            .query_row(
                "SELECT count(*) FROM runtime_events WHERE session_id = ?1",
                [session],
                |r| r.get(0),
            )
            .expect("count")
    }

    /// Every AgentRun event kind of `session`, in order.
    pub fn agent_run_kinds(&self, session: &str) -> Vec<String> {
        let conn = self.raw();
        let mut statement = conn
            .prepare("SELECT kind FROM agent_run_events WHERE session_id = ?1 ORDER BY ordinal")
            .expect("prepare");
        statement
            .query_map([session], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows")
    }
}
