//! `contextfold inspect` (issue 42): the page written by `--out` is one self-contained file with
//! the session's data, and the page served by `--listen` answers with the figures of
//! `checkpoints --json` and `verify --json` and retracts exactly as `checkpoints --retract`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use contextfold_core::RuntimeEvent;
use contextfold_core::budget::{CharEstimator, estimate_event};
use serde_json::{Value, json};

use crate::cli_agent_files::artifact_session;
use crate::cli_postgres::{fresh_database, server};
use crate::cli_support::{fails, import_args, ok, write};

/// A SQLite file with session `w` (40 turns) holding two checkpoints over the same events: the
/// 32k one and its recompression for 8k, which names it.
fn two_checkpoints(dir: &std::path::Path) -> (String, String, String) {
    let db = dir.join("inspect.sqlite").to_str().expect("utf8").to_owned();
    two_checkpoints_in(dir, db)
}

/// Session `w` with its two checkpoints in `db` (a file or a PostgreSQL URL).
fn two_checkpoints_in(dir: &std::path::Path, db: String) -> (String, String, String) {
    let file = write(dir, "w.jsonl", &artifact_session());
    ok(&import_args(&db, "w", "events-jsonl", file.to_str().expect("utf8")));
    let compact = |window: &str| {
        let args = ["compact", "--db", &db, "--session", "w", "--context-window", window];
        ok(&[&args[..], &["--summarizer", "extractive"]].concat())["checkpoint"]["checkpointId"]
            .as_str()
            .expect("recorded")
            .to_owned()
    };
    let large = compact("32000");
    let small = compact("8000");
    (db, large, small)
}

/// `checkpoints --json` and `verify --json` of session `w`.
fn cli_figures(db: &str) -> (Value, Value) {
    (
        ok(&["checkpoints", "--db", db, "--session", "w"]),
        ok(&["verify", "--db", db, "--session", "w"]),
    )
}

/// The JSON inside `<script id="{id}" type="application/json">…</script>` of a page.
fn script_data(html: &str, id: &str) -> Value {
    let open = format!("<script id=\"{id}\" type=\"application/json\">");
    let start = html.find(&open).unwrap_or_else(|| panic!("no {id}")) + open.len();
    let end = start + html[start..].find("</script>").expect("closed");
    serde_json::from_str(&html[start..end]).expect("embedded JSON")
}

/// A running `inspect --listen`, killed on drop.
struct Served {
    child: Child,
    /// `127.0.0.1:<port>`.
    host: String,
}

impl Served {
    /// Starts `inspect --db DB` on a free loopback port and reads its URL line.
    fn start(db: &str) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_contextfold"))
            .args(["inspect", "--db", db, "--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn inspect");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("url");
        let host = line.trim().trim_start_matches("http://").trim_end_matches('/').to_owned();
        assert!(host.starts_with("127.0.0.1:"), "{line}");
        Self { child, host }
    }

    /// One HTTP/1.1 request; returns the status and the body.
    fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String) {
        let mut stream = TcpStream::connect(&self.host).expect("connect");
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
            self.host,
            body.len()
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        stream.write_all(format!("{head}\r\n{body}").as_bytes()).expect("send");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("read");
        let status = answer[9..12].parse().expect("status");
        let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
        (status, body)
    }

    /// `GET path` answered 200 with JSON.
    fn json(&self, path: &str) -> Value {
        let (status, body) = self.request("GET", path, &[], "");
        assert_eq!(status, 200, "{path}: {body}");
        serde_json::from_str(&body).expect("JSON")
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn out_writes_one_self_contained_html_file_with_the_session_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, large, small) = two_checkpoints(dir.path());
    let out = dir.path().join("inspect.html");
    let written = ok(&["inspect", "--db", &db, "--out", out.to_str().expect("utf8")]);
    assert_eq!(written["sessions"], json!(["w"]), "{written}");
    let html = std::fs::read_to_string(&out).expect("written");
    for external in ["src=\"http", "href=\"http", "src='http", "href='http", "url(http", "@import"]
    {
        assert!(!html.contains(external), "the page loads `{external}…`");
    }
    assert!(html.contains("<svg") || html.contains("createElementNS"), "the plot is inline SVG");
    let boot = script_data(&html, "cf-boot");
    assert_eq!(boot["mode"], json!("file"));
    let overview = &boot["overviews"]["w"];
    let (checkpoints, verify) = cli_figures(&db);
    assert_eq!(overview["checkpoints"], checkpoints, "the page's checkpoints are the CLI's");
    let mut page_verify = overview["verify"].clone();
    assert_eq!(page_verify["failures"], json!([]));
    page_verify.as_object_mut().expect("object").remove("failures");
    assert_eq!(page_verify, verify, "the page's verification is the CLI's");
    for id in [&large, &small] {
        assert!(html.contains(id.as_str()), "{id} is on the page");
    }
    // Every event, with the core's per-event estimate.
    let events = script_data(&html, "cf-events-0");
    let exported = ok(&["export", "--db", &db, "--session", "w"])["events"].clone();
    let exported = exported.as_array().expect("events");
    assert_eq!(events.as_array().expect("rows").len(), exported.len());
    for (row, event) in events.as_array().expect("rows").iter().zip(exported) {
        let event: RuntimeEvent = serde_json::from_value(event.clone()).expect("event");
        assert_eq!(row["seq"], json!(event.seq));
        assert_eq!(row["tokens"], json!(estimate_event(&CharEstimator, &event)));
    }
    fails(&["inspect", "--db", &db, "--session", "nope", "--out", "x.html"], "unknown_session");
}

/// `inspect --listen` over `db` (session `w` with two checkpoints): the page, the sessions, the
/// figures of `checkpoints --json` and `verify --json`, a page of events, typed errors.
fn serves_the_cli_figures(db: &str, small: &str) {
    let db = db.to_owned();
    let served = Served::start(&db);
    let (status, page) = served.request("GET", "/", &[], "");
    assert_eq!(status, 200);
    assert!(page.contains("contextfold inspector") && page.contains("cf-boot"));
    assert!(!page.contains("src=\"http") && !page.contains("href=\"http"));
    let sessions = served.json("/api/sessions");
    assert_eq!(sessions["sessions"], json!([{"session": "w", "events": 160}]));
    let overview = served.json("/api/overview?session=w");
    let (checkpoints, verify) = cli_figures(&db);
    assert_eq!(overview["checkpoints"], checkpoints);
    let mut page_verify = overview["verify"].clone();
    page_verify.as_object_mut().expect("object").remove("failures");
    assert_eq!(page_verify, verify);
    assert_eq!(overview["checkpoints"]["current"], json!(small));
    // One page of events, after a seq.
    let page = served.json("/api/events?session=w&after=100&limit=25");
    let rows = page["events"].as_array().expect("rows");
    assert_eq!(rows.len(), 25);
    assert_eq!((rows[0]["seq"].clone(), rows[24]["seq"].clone()), (json!(101), json!(125)));
    assert_eq!(page["lastSeq"], json!(160));
    // Typed errors, and no other host.
    let (status, body) = served.request("GET", "/api/overview?session=nope", &[], "");
    assert_eq!(status, 404);
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("json")["error"]["code"],
        json!("unknown_session")
    );
    let mut stream = TcpStream::connect(&served.host).expect("connect");
    stream
        .write_all(b"GET /api/sessions HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
        .expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    fails(&["inspect", "--db", &db, "--listen", "0.0.0.0:0"], "inspector_listen_failed");
}

#[test]
fn listen_serves_the_page_and_the_figures_of_checkpoints_and_verify() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, _, small) = two_checkpoints(dir.path());
    serves_the_cli_figures(&db, &small);
}

#[test]
fn listen_serves_the_same_figures_from_postgres() {
    let Some(url) = server() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, _, small) = two_checkpoints_in(dir.path(), fresh_database(&url, "inspect"));
    serves_the_cli_figures(&db, &small);
}

#[test]
fn retract_over_http_is_the_cli_retraction() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, large, small) = two_checkpoints(dir.path());
    let served = Served::start(&db);
    let (_, page) = served.request("GET", "/", &[], "");
    let token = script_data(&page, "cf-boot")["token"].as_str().expect("token").to_owned();
    let body =
        json!({"session": "w", "checkpointId": small, "reason": "lost the task"}).to_string();
    // Without the page's token (another origin's form): refused, nothing written.
    let (status, _) =
        served.request("POST", "/api/retract", &[("content-type", "application/json")], &body);
    assert_eq!(status, 403);
    assert_eq!(cli_figures(&db).0["current"], json!(small));
    let headers = [("content-type", "application/json"), ("x-contextfold-token", token.as_str())];
    let (status, answer) = served.request("POST", "/api/retract", &headers, &body);
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).expect("json");
    assert_eq!(answer["retracted"], json!(small));
    assert_eq!(answer["current"], json!(large));
    let (checkpoints, verify) = cli_figures(&db);
    let row = checkpoints["checkpoints"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|row| row["checkpointId"] == json!(small))
        .expect("listed")
        .clone();
    assert!(row["retracted"].as_str().is_some_and(|why| why.contains("lost the task")), "{row}");
    assert_eq!(checkpoints["current"], json!(large));
    assert_eq!(verify["retractions"][0]["reason"], json!("lost the task"));
    assert_eq!(served.json("/api/overview?session=w")["checkpoints"], checkpoints);
    // Twice is the CLI's typed error.
    let (status, again) = served.request("POST", "/api/retract", &headers, &body);
    assert_eq!(status, 409);
    assert!(again.contains("checkpoint_already_retracted"), "{again}");
}
