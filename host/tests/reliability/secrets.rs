//! Secrets: a distinctive fake API key and distinctive encrypted provider state go through
//! the real provider clients (loopback servers that echo both back in their error bodies),
//! the session runtime and the SQLite store; then every surface a user or operator sees is
//! grepped: request captures, compaction outcomes and diagnostics, error messages and Debug
//! output, the AgentRun facts, the canonical log, a copied session, and the `contextfold`
//! CLI's `export`, `checkpoints`, `verify` and `project` output. The key never appears; the
//! encrypted state appears only in the checkpoint's own durable record (and in a `project`
//! request for the very provider, connection and model it belongs to).

use crate::providers;
use crate::reliability_support;

use std::process::Command;

use contextfold_core::LogBuilder;
use contextfold_host::providers::{CodexNativeCompactor, OpenAiChatSummarizer, RequestCapture};
use contextfold_host::runtime::StopSignal;
use contextfold_host::storage::agent_run_kind;
use providers::fixtures::{compaction_item, direct_http, responses_stream};
use providers::server::{LoopbackServer, Reply, StreamEnd};
use reliability_support::{
    ChatSummarizer, CodexCompactor, SESSION, extend, report_fault, runtime, seeded_store,
};
use serde_json::json;

const KEY: &str = "sk-RELIABILITY-7f3a9c1e-DO-NOT-LEAK";
const STATE: &str = "gAAAAB-RELIABILITY-ENCRYPTED-STATE-4d2b8e";

fn echo_error(status: u16) -> Reply {
    Reply::status(
        status,
        json!({"error": {"message": format!("Incorrect API key provided: {KEY}; state {STATE}"), "type": "invalid_request_error", "code": "invalid_api_key"}}),
    )
}

/// Whether `text` holds the key or its first 12 characters (a key cut short by a length bound
/// still leaks its prefix; later windows of the key are shared with the fake state).
fn leaks_key(text: &str) -> bool {
    text.contains(&KEY[..12])
}

fn cli(args: &[&str]) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_contextfold"));
    command.args(args).env("OPENAI_API_KEY", KEY);
    for proxy in
        ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"]
    {
        command.env_remove(proxy);
    }
    let output = command.output().expect("run the CLI");
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_and_provider_state_never_leak() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("secrets.sqlite");
    let store = seeded_store(&db, 6);
    let server = LoopbackServer::start().await;
    // 1: a native compaction returning the distinctive state; 2: a rolling one (sending the
    // state back) answered with a 401 echoing key and state; 3: a text summary request
    // answered with a 400 echoing the key.
    server.script(Reply::sse(
        &responses_stream(&[compaction_item("cmp_secret", STATE)]),
        StreamEnd::Clean,
    ));
    server.script(echo_error(401));
    server.script(Reply::status(
        400,
        json!({"error": {"message": format!("Incorrect API key provided: {KEY}"), "type": "invalid_request_error", "code": null}}),
    ));
    let capture = RequestCapture::new();
    let codex = CodexNativeCompactor::new(&server.url("/v1"), "gpt-5-codex", KEY)
        .expect("config")
        .with_http_client(direct_http())
        .with_capture(capture.clone());
    let chat = OpenAiChatSummarizer::new(&server.url("/v1"), "gpt-4.1-mini", KEY)
        .expect("config")
        .with_http_client(direct_http())
        .with_capture(capture.clone());
    let mut surfaces: Vec<(&str, String)> = vec![("client debug", format!("{codex:?} {chat:?}"))];
    let rt = runtime(&store, 16_000, true, ChatSummarizer(chat.clone()), CodexCompactor(codex));
    let first = rt.compact_manually(&StopSignal::new()).await.expect("compaction");
    assert_eq!(
        first.outcome.checkpoint.as_ref().map(|c| c.schema_version()),
        Some(3),
        "{:?}",
        first.outcome
    );
    // Compaction reports carry the checkpoint (its state is the durable record, checked
    // apart); everything else in the report is a user-visible surface.
    let mut visible = serde_json::to_value(&first).expect("json");
    visible["outcome"]["checkpoint"] = json!(null);
    surfaces.push(("first report", visible.to_string()));

    let mut builder = LogBuilder::extend(store.load_events(SESSION).expect("load"));
    let before = builder.events().len();
    extend(&mut builder, 50);
    store.append_events(SESSION, &builder.events()[before..]).expect("append");
    let second = rt.compact_manually(&StopSignal::new()).await.expect("an outcome");
    assert!(second.outcome.checkpoint.is_none(), "{:?}", second.outcome);
    surfaces.push(("second report", serde_json::to_string(&second).expect("json")));
    surfaces.push(("second diagnostics", format!("{:?}", second.outcome.diagnostics)));

    let request = contextfold_core::compaction::build_summary_request(
        None,
        &store.load_events(SESSION).expect("load"),
        50_000,
        &contextfold_core::CharEstimator,
    )
    .expect("request");
    let failure = chat.summarize(&request).await.expect_err("400");
    surfaces.push(("provider failure", format!("{} {failure:?}", failure.message)));
    // A key straddling the bound of a failure's detail (500 characters): the part before the
    // cut is redacted too, never left as a prefix of the key.
    let label = "invalid_request_error: ";
    let padding =
        "x".repeat(contextfold_host::providers::classify::MAX_DETAIL_CHARS - label.len() - 10);
    server.script(Reply::status(
        400,
        json!({"error": {"message": format!("{padding}{KEY}"), "type": "invalid_request_error", "code": null}}),
    ));
    let cut = chat.summarize(&request).await.expect_err("400");
    assert!(cut.message.contains("[redacted]…"), "{}", cut.message);
    surfaces.push(("provider failure cut inside the key", format!("{} {cut:?}", cut.message)));
    surfaces.push(("request capture", capture.to_json()));
    assert!(capture.entries().len() >= 3, "the capture recorded the requests");
    assert_eq!(server.received().len(), 4);
    assert!(
        server.received()[1].body.to_string().contains(STATE),
        "the rolling request carried the state to its provider"
    );

    for fact in store.agent_run_events(SESSION).expect("facts") {
        if fact.kind != agent_run_kind::CHECKPOINT_RECORDED {
            surfaces.push(("agent run fact", serde_json::to_string(&fact).expect("json")));
        }
    }
    surfaces.push((
        "canonical log",
        serde_json::to_string(&store.load_events(SESSION).expect("load")).expect("json"),
    ));
    store.copy_session(SESSION, "copy").expect("copy");
    let copied = store.agent_run_events("copy").expect("facts");
    surfaces.push((
        "copied session",
        format!(
            "{}{}",
            serde_json::to_string(&store.load_events("copy").expect("load")).expect("json"),
            serde_json::to_string(&copied).expect("json")
        ),
    ));
    drop(rt);
    drop(store);

    let db_arg = db.to_str().expect("utf8");
    for session in [SESSION, "copy"] {
        surfaces
            .push(("cli export", cli(&["--json", "export", "--db", db_arg, "--session", session])));
        surfaces.push((
            "cli checkpoints",
            cli(&["--json", "checkpoints", "--db", db_arg, "--session", session]),
        ));
        surfaces
            .push(("cli verify", cli(&["--json", "verify", "--db", db_arg, "--session", session])));
        surfaces.push((
            "cli project (another model)",
            cli(&[
                "--json",
                "project",
                "--db",
                db_arg,
                "--session",
                session,
                "--context-window",
                "16000",
                "--provider",
                "openai-codex",
                "--connection",
                "loopback",
                "--model",
                "gpt-5-mini",
            ]),
        ));
    }
    let own = cli(&[
        "--json",
        "project",
        "--db",
        db_arg,
        "--session",
        SESSION,
        "--context-window",
        "16000",
        "--provider",
        "openai-codex",
        "--connection",
        "loopback",
        "--model",
        "gpt-5-codex",
    ]);

    // A provider-calling CLI path: `compact --summarizer openai-chat` against the loopback
    // server, which answers with a 401 echoing the key (this request carries no state).
    server.script(Reply::status(
        401,
        json!({"error": {"message": format!("Incorrect API key provided: {KEY}"), "type": "invalid_request_error", "code": "invalid_api_key"}}),
    ));
    let before = server.received().len();
    surfaces.push((
        "cli compact (provider failure)",
        cli(&[
            "--json",
            "compact",
            "--db",
            db_arg,
            "--session",
            SESSION,
            "--context-window",
            "4000",
            "--summarizer",
            "openai-chat",
            "--base-url",
            &server.url("/v1"),
            "--model",
            "gpt-4.1-mini",
        ]),
    ));
    assert_eq!(server.received().len(), before + 1, "the CLI called the provider");
    // The database files themselves (main file, WAL, shared memory), byte for byte.
    for suffix in ["", "-wal", "-shm"] {
        let path = format!("{db_arg}{suffix}");
        if let Ok(bytes) = std::fs::read(&path) {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            if leaks_key(&text) {
                surfaces.push(("database file", text));
            }
        }
    }

    let mut leaks = Vec::new();
    for (surface, text) in &surfaces {
        if leaks_key(text) {
            leaks.push(format!("{surface}: API key"));
        }
        if text.contains(STATE) {
            leaks.push(format!("{surface}: provider state"));
        }
    }
    if leaks_key(&own) {
        leaks.push("cli project (own model): API key".into());
    }
    assert!(leaks.is_empty(), "secrets leaked: {leaks:#?}");
    report_fault("secrets", "no_leak", &format!("{} surfaces grepped", surfaces.len() + 1));
}
