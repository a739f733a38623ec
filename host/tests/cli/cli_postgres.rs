//! The `contextfold` binary with `--db postgres://...`: the same session imported, projected,
//! compacted, listed, verified, recovered and exported on a PostgreSQL server as on a SQLite
//! file gives the same answers; credentials are never printed. Needs `CONTEXTFOLD_PG_URL` (`bash scripts/with-postgres.sh cargo test -p
//! contextfold-host --test cli cli_postgres`); without it the test says it skipped.

use crate::cli_support;

use std::io::Write as _;

use cli_support::{
    SessionDb, contextfold_with_env, fails, import_args, ok, project_args, session_jsonl, write,
};
use serde_json::{Value, json};

/// The server's URL, or `None` (said on stderr).
pub(crate) fn server() -> Option<String> {
    let url = std::env::var("CONTEXTFOLD_PG_URL").ok();
    if url.is_none() {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED cli_postgres: CONTEXTFOLD_PG_URL is not set (run under scripts/with-postgres.sh)"
        );
    }
    url
}

/// A new database on the server named by `url`, for this test alone; its URL.
pub(crate) fn fresh_database(url: &str, test: &str) -> String {
    let dbname = format!("cf_cli_{test}_{}", std::process::id());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
    runtime.block_on(async {
        let (client, connection) =
            tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("connect");
        tokio::spawn(connection);
        for sql in
            [format!("DROP DATABASE IF EXISTS {dbname}"), format!("CREATE DATABASE {dbname}")]
        {
            client.batch_execute(&sql).await.expect("create the test database");
        }
    });
    let base = url.rsplit_once('/').map_or(url, |(base, _)| base);
    format!("{base}/{dbname}")
}

fn compact_args<'a>(db: &'a str, session: &'a str) -> [&'a str; 9] {
    [
        "compact",
        "--db",
        db,
        "--session",
        session,
        "--context-window",
        "8000",
        "--summarizer",
        "extractive",
    ]
}

/// What two runs of one projection share: everything but what names the run (checkpoint ids
/// carry the process and the clock, so a few tokens may differ with their length).
fn comparable(projection: &Value) -> Value {
    let mut checkpoint = projection["checkpoint"].clone();
    if let Some(checkpoint) = checkpoint.as_object_mut() {
        checkpoint.remove("checkpointId");
    }
    json!({
        "messages": regex_free_ids(&projection["messages"].to_string()),
        "checkpoint": checkpoint,
        "fits": projection["fits"],
        "historyBudget": projection["historyBudget"],
        "omittedEvents": projection["omittedEvents"],
    })
}

/// `text` with every `cp-...` checkpoint id replaced by `cp-*`.
fn regex_free_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("cp-") {
        out.push_str(&rest[..at]);
        out.push_str("cp-*");
        let tail = &rest[at + 3..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '.'))
            .unwrap_or(tail.len());
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[test]
fn a_session_on_postgres_answers_as_on_sqlite() {
    let Some(server) = server() else { return };
    let url = fresh_database(&server, "same");
    let sqlite = SessionDb::new("cli.sqlite");
    let session = "s".to_owned();
    let file = write(sqlite.dir.path(), "s.jsonl", &session_jsonl());
    let file = file.to_str().expect("utf8");
    let imported = ok(&import_args(&url, &session, "events-jsonl", file));
    assert_eq!(imported["imported"], json!(32));

    let before_sqlite = ok(&project_args(sqlite.db(), "s", "8000", "openai-chat"));
    let before_pg = ok(&project_args(&url, &session, "8000", "openai-chat"));
    assert_eq!(before_pg, before_sqlite, "the uncompacted projection");
    assert_eq!(before_pg["fits"], json!(false));

    let on_sqlite = ok(&compact_args(sqlite.db(), "s"));
    let on_pg = ok(&compact_args(&url, &session));
    assert_eq!(on_pg["outcome"], json!("recorded"), "{on_pg}");
    assert_eq!(on_pg["checkpoint"]["coverage"], on_sqlite["checkpoint"]["coverage"]);

    for format in ["neutral", "anthropic"] {
        let sqlite_projection = ok(&project_args(sqlite.db(), "s", "8000", format));
        let pg_projection = ok(&project_args(&url, &session, "8000", format));
        assert_eq!(pg_projection["fits"], json!(true), "{format}: {pg_projection}");
        assert_eq!(
            pg_projection["checkpoint"]["checkpointId"], on_pg["checkpoint"]["checkpointId"],
            "{format}: the recorded checkpoint is the current one"
        );
        assert_eq!(comparable(&pg_projection), comparable(&sqlite_projection), "{format}");
        let tokens = |p: &Value| p["estimatedTokens"].as_u64().unwrap_or_default();
        assert!(tokens(&pg_projection).abs_diff(tokens(&sqlite_projection)) <= 2, "{format}");
    }
    let exported_pg = ok(&["export", "--db", &url, "--session", &session]);
    let exported_sqlite = ok(&["export", "--db", sqlite.db(), "--session", "s"]);
    let events = |export: &Value| {
        export["events"].as_array().map(|events| {
            events
                .iter()
                .map(|e| (e["seq"].clone(), e["runtimeEventId"].clone()))
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(events(&exported_pg), events(&exported_sqlite));

    // A session the server does not hold, and the commands that read a file directly.
    fails(&project_args(&url, "no-such-session", "8000", "neutral"), "unknown_session");

    // The inspection commands answer alike: the checkpoints, a deep verify, a recover.
    let listed_pg = ok(&["checkpoints", "--db", &url, "--session", &session]);
    let listed_sqlite = ok(&["checkpoints", "--db", sqlite.db(), "--session", "s"]);
    assert_eq!(listed_pg["current"], on_pg["checkpoint"]["checkpointId"]);
    assert_eq!(
        listed_pg["checkpoints"].as_array().map(Vec::len),
        listed_sqlite["checkpoints"].as_array().map(Vec::len)
    );
    for db in [url.as_str(), sqlite.db()] {
        let session = if db == url { session.as_str() } else { "s" };
        let verified = ok(&["verify", "--deep", "--db", db, "--session", session]);
        assert_eq!(verified["ok"], json!(true), "{db}: {verified}");
        assert_eq!(verified["verified"], json!(1), "{db}");
        assert_eq!(verified["rows"]["checked"], json!(32), "{db}");
        let recovered = ok(&["recover", "--db", db, "--session", session]);
        assert!(recovered["checkpointId"].is_string(), "{db}: {recovered}");
    }
}

#[test]
fn a_password_is_never_printed() {
    // A refused connection (nothing listens on port 1) with the password in the URL and in
    // PGPASSWORD: the error is typed and neither secret appears anywhere.
    let url = "postgres://ann:url-secret@127.0.0.1:1/ledger";
    let run = contextfold_with_env(
        &project_args(url, "s", "8000", "neutral"),
        &[("PGPASSWORD", "env-secret"), ("PGCONNECT_TIMEOUT", "2")],
    );
    assert_ne!(run.code, 0);
    let code = run.json["error"]["code"].as_str().unwrap_or_default().to_owned();
    assert!(code.starts_with("storage_"), "{}", run.json);
    let printed = format!("{} {}", run.json, run.stderr);
    assert!(!printed.contains("secret"), "{printed}");
}
