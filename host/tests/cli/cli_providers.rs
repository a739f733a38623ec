//! `contextfold compact` with each real provider: the built binary on a real SQLite file,
//! talking HTTP to the loopback server that speaks the provider's wire protocol.

use crate::cli_support;
use crate::providers;

use cli_support::{Run, SessionDb, contextfold_with_env, ok};
use providers::fixtures::{
    ANTHROPIC_KEY, ANTHROPIC_MODEL, CHAT_MODEL, CODEX_MODEL, NEW_STATE, OPENAI_KEY,
    anthropic_message, chat_completion, compaction_item, responses_stream,
};
use providers::server::{LoopbackServer, Reply, StreamEnd};
use serde_json::{Value, json};

/// A summary with every section, large enough for a fold above 10,000 estimated tokens.
fn summary() -> String {
    let mut text = String::from(
        "## Goal\nFix the failing parser tests in src/parser.rs, one per turn.\n\n\
         ## Done and In Progress\nRan `cargo test` eight times; every run reported \
         parser::case FAILED; each turn ended with a fix.\n\n\
         ## Key Decisions\nFix the parser, never the tests.\n\n\
         ## Next Steps\nRerun `cargo test` and fix whatever case still fails.\n\n\
         ## Critical Context\n",
    );
    for turn in 0..8 {
        text.push_str(&format!(
            "- turn t{turn}: `cargo test` (call c{turn}) printed 200 lines of \
             `parser::case ... FAILED`; the user asked to fix test {turn} in src/parser.rs.\n"
        ));
    }
    text
}

/// `compact` of session `s` with `summarizer` against `base_url`, with `env`.
fn compact(
    db: &SessionDb,
    summarizer: &str,
    base_url: &str,
    model: &str,
    env: &[(&str, &str)],
) -> Run {
    let args = [
        "compact",
        "--db",
        db.db(),
        "--session",
        "s",
        "--context-window",
        "8000",
        "--summarizer",
        summarizer,
        "--base-url",
        base_url,
        "--model",
        model,
    ];
    let run = contextfold_with_env(&args, env);
    let printed = format!("{}{}", run.json, run.stderr);
    for key in [OPENAI_KEY, ANTHROPIC_KEY] {
        assert!(!printed.contains(key), "a key was printed: {printed}");
    }
    run
}

/// One `compact` of session `s` against a fresh loopback server scripted with `replies`.
struct Scenario {
    server: LoopbackServer,
    db: SessionDb,
    /// The canonical rows before the compaction.
    rows: Vec<(i64, String, String)>,
    run: Run,
}

async fn scenario(summarizer: &str, replies: Vec<Reply>) -> Scenario {
    let server = LoopbackServer::start().await;
    for reply in replies {
        server.script(reply);
    }
    let db = SessionDb::new(&format!("{summarizer}.sqlite"));
    let rows = db.ledger_rows("s");
    let (base, model, var, key) = match summarizer {
        "anthropic" => (server.url(""), ANTHROPIC_MODEL, "ANTHROPIC_API_KEY", ANTHROPIC_KEY),
        "openai-codex" => (server.url("/v1"), CODEX_MODEL, "OPENAI_API_KEY", OPENAI_KEY),
        _ => (server.url("/v1"), CHAT_MODEL, "OPENAI_API_KEY", OPENAI_KEY),
    };
    let run = compact(&db, summarizer, &base, model, &[(var, key)]);
    Scenario { server, db, rows, run }
}

/// `(kind, result)` of every attempt.
fn attempts(json: &Value) -> Vec<(String, String)> {
    json["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| {
            (
                a["kind"].as_str().unwrap_or_default().to_owned(),
                a["result"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn assert_recorded(run: &Run, schema: u64) -> String {
    assert_eq!(run.code, 0, "{}\n{}", run.json, run.stderr);
    assert_eq!(run.json["outcome"], json!("recorded"), "{}", run.json);
    assert_eq!(run.json["reason"], json!("checkpoint_recorded"));
    assert_eq!(run.json["checkpoint"]["schemaVersion"], json!(schema), "{}", run.json);
    run.json["checkpoint"]["checkpointId"].as_str().expect("checkpoint id").to_owned()
}

/// After a recorded compaction: the ledger is untouched, `verify` passes, `checkpoints` lists
/// the new checkpoint as current.
fn assert_durable(db: &SessionDb, rows: &[(i64, String, String)], checkpoint_id: &str) {
    assert_eq!(db.ledger_rows("s"), rows, "canonical events changed");
    let verified = ok(&["verify", "--db", db.db(), "--session", "s"]);
    assert_eq!((verified["ok"].clone(), verified["verified"].clone()), (json!(true), json!(1)));
    let listed = ok(&["checkpoints", "--db", db.db(), "--session", "s"]);
    assert_eq!(listed["current"], json!(checkpoint_id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_chat_records_a_text_checkpoint() {
    let reply = Reply::ok(chat_completion(&summary(), "stop"));
    let Scenario { server, db, rows, run } = scenario("openai-chat", vec![reply]).await;
    let id = assert_recorded(&run, 2);
    assert_eq!(run.json["checkpoint"]["summary"], json!(summary()));
    assert_eq!(attempts(&run.json), [("text_summary".into(), "checkpoint_recorded".into())]);
    let received = server.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].path, "/v1/chat/completions");
    assert_eq!(received[0].headers["authorization"], format!("Bearer {OPENAI_KEY}"));
    assert_eq!(received[0].body["model"], json!(CHAT_MODEL));
    assert_durable(&db, &rows, &id);
    let projected = ok(&["project", "--db", db.db(), "--session", "s", "--context-window", "8000"]);
    assert_eq!(projected["checkpoint"]["checkpointId"], json!(id));
    assert_eq!(projected["fits"], json!(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_records_a_text_checkpoint() {
    let reply = Reply::ok(anthropic_message(&summary(), "end_turn"));
    let Scenario { server, db, rows, run } = scenario("anthropic", vec![reply]).await;
    let id = assert_recorded(&run, 2);
    let received = server.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].path, "/v1/messages");
    assert_eq!(received[0].headers["x-api-key"], ANTHROPIC_KEY);
    assert_eq!(received[0].headers["anthropic-version"], "2023-06-01");
    assert!(received[0].body["system"].as_str().is_some_and(|s| !s.is_empty()));
    assert_durable(&db, &rows, &id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_codex_records_the_native_item_as_v3() {
    let items = [
        json!({"type": "reasoning", "id": "rs_1", "summary": []}),
        compaction_item("cmp_cli", NEW_STATE),
    ];
    let reply = Reply::sse(&responses_stream(&items), StreamEnd::Clean);
    let Scenario { server, db, rows, run } = scenario("openai-codex", vec![reply]).await;
    let id = assert_recorded(&run, 3);
    let state = &run.json["checkpoint"]["providerState"];
    assert_eq!(state["itemId"], json!("cmp_cli"), "{}", run.json);
    assert_eq!(state["modelId"], json!(CODEX_MODEL));
    assert_eq!(attempts(&run.json), [("provider_native".into(), "checkpoint_recorded".into())]);
    let received = server.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].path, "/v1/responses");
    assert_eq!(received[0].headers["accept"], "text/event-stream");
    let body = &received[0].body;
    assert_eq!((body["store"].clone(), body["stream"].clone()), (json!(false), json!(true)));
    assert!(body.get("tools").is_none() && body.get("instructions").is_none());
    assert_eq!(
        body["input"].as_array().and_then(|i| i.last()),
        Some(&json!({"type": "compaction_trigger"}))
    );
    assert_durable(&db, &rows, &id);
    // The state replays only on its own provider, connection and model.
    let project = |model: &str| {
        ok(&[
            "project",
            "--db",
            db.db(),
            "--session",
            "s",
            "--context-window",
            "8000",
            "--format",
            "openai-responses",
            "--provider",
            "openai-codex",
            "--model",
            model,
        ])
    };
    let same = project(CODEX_MODEL);
    assert_eq!(same["checkpoint"]["checkpointId"], json!(id), "{same}");
    assert!(same["messages"].to_string().contains(NEW_STATE));
    let other = project("gpt-other");
    assert!(other["checkpoint"].is_null(), "{other}");
    assert!(!other["messages"].to_string().contains(NEW_STATE));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_codex_falls_back_to_one_text_summary_on_a_protocol_rejection() {
    let rejection = Reply::status(
        400,
        json!({"error": {"message": "Unsupported input item type: compaction_trigger", "type": "invalid_request_error", "code": "unsupported_value"}}),
    );
    let message = json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": summary(), "annotations": []}]});
    let text = Reply::sse(&responses_stream(&[message]), StreamEnd::Clean);
    let Scenario { server, db, rows, run } = scenario("openai-codex", vec![rejection, text]).await;
    let id = assert_recorded(&run, 2);
    assert_eq!(run.json["checkpoint"]["summary"], json!(summary()));
    assert_eq!(
        attempts(&run.json),
        [
            ("provider_native".into(), "provider_rejected".into()),
            ("text_summary".into(), "checkpoint_recorded".into())
        ]
    );
    let received = server.received();
    assert_eq!(received.len(), 2);
    assert!(received.iter().all(|r| r.path == "/v1/responses"));
    let fallback = &received[1].body;
    assert!(!fallback.to_string().contains("compaction_trigger"), "an ordinary request");
    assert!(fallback["instructions"].as_str().is_some_and(|s| !s.is_empty()));
    assert_eq!(fallback["input"][0]["role"], json!("user"));
    assert_durable(&db, &rows, &id);
}

/// One scripted failure: which summarizer, the replies, the expected reason and request count.
struct FailureCase {
    name: &'static str,
    summarizer: &'static str,
    replies: Vec<Reply>,
    reason: &'static str,
    requests: usize,
}

fn failure_cases() -> Vec<FailureCase> {
    let openai_error = |message: &str, kind: &str, code: &str| json!({"error": {"message": message, "type": kind, "code": code}});
    let truncated = {
        let mut events = responses_stream(&[compaction_item("cmp_cut", NEW_STATE)]);
        events.pop(); // no response.completed
        Reply::sse(&events, StreamEnd::Abort)
    };
    let output_limited = Reply::sse(
        &[
            json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "status": "in_progress", "output": []}}),
            json!({"type": "response.incomplete", "sequence_number": 1, "response": {"id": "resp_1", "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": []}}),
        ],
        StreamEnd::Clean,
    );
    vec![
        FailureCase {
            name: "auth",
            summarizer: "openai-chat",
            replies: vec![Reply::status(
                401,
                openai_error(
                    "Incorrect API key provided",
                    "invalid_request_error",
                    "invalid_api_key",
                ),
            )],
            reason: "provider_auth",
            requests: 1,
        },
        FailureCase {
            name: "rate limit",
            summarizer: "anthropic",
            replies: vec![Reply::status(
                429,
                json!({"type": "error", "error": {"type": "rate_limit_error", "message": "Number of requests has exceeded your rate limit"}}),
            )],
            reason: "provider_rate_limited",
            requests: 1,
        },
        FailureCase {
            name: "billing",
            summarizer: "anthropic",
            replies: vec![Reply::status(
                400,
                json!({"type": "error", "error": {"type": "invalid_request_error", "message": "Your credit balance is too low to access the Anthropic API."}}),
            )],
            reason: "provider_billing",
            requests: 1,
        },
        FailureCase {
            name: "unavailable",
            summarizer: "openai-chat",
            replies: vec![Reply::status(
                503,
                openai_error("overloaded", "server_error", "server_error"),
            )],
            reason: "provider_unavailable",
            requests: 1,
        },
        FailureCase {
            name: "malformed body",
            summarizer: "openai-chat",
            replies: vec![Reply::Raw {
                status: 200,
                content_type: "application/json",
                body: "{\"choices\": [{\"message\": ".into(),
            }],
            reason: "provider_unavailable",
            requests: 1,
        },
        FailureCase {
            name: "truncated codex stream (no fallback)",
            summarizer: "openai-codex",
            replies: vec![truncated],
            reason: "provider_unavailable",
            requests: 1,
        },
        FailureCase {
            name: "codex rate limit (no fallback)",
            summarizer: "openai-codex",
            replies: vec![Reply::status(
                429,
                openai_error("Rate limit reached", "requests", "rate_limit_exceeded"),
            )],
            reason: "provider_rate_limited",
            requests: 1,
        },
        FailureCase {
            name: "codex text fallback stopped at its output limit, then its one repair",
            summarizer: "openai-codex",
            replies: vec![
                Reply::status(
                    400,
                    openai_error(
                        "Unsupported input item type: compaction_trigger",
                        "invalid_request_error",
                        "unsupported_value",
                    ),
                ),
                output_limited.clone(),
                output_limited,
            ],
            reason: "malformed_summary_length_finish",
            requests: 3,
        },
        FailureCase {
            name: "length-finished summary, then its one repair",
            summarizer: "openai-chat",
            replies: vec![
                Reply::ok(chat_completion(&summary(), "length")),
                Reply::ok(chat_completion(&summary(), "length")),
            ],
            reason: "malformed_summary_length_finish",
            requests: 2,
        },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_failure_class_fails_open_without_a_checkpoint() {
    for case in failure_cases() {
        let Scenario { server, db, rows, run } = scenario(case.summarizer, case.replies).await;
        let name = case.name;
        assert_eq!(run.code, 3, "{name}: {}\n{}", run.json, run.stderr);
        assert_eq!(run.json["outcome"], json!("failed_open"), "{name}: {}", run.json);
        assert_eq!(run.json["reason"], json!(case.reason), "{name}: {}", run.json);
        assert!(run.json["checkpoint"].is_null(), "{name}");
        assert_eq!(server.received().len(), case.requests, "{name}: requests sent");
        assert_eq!(server.unused_replies(), 0, "{name}");
        // Nothing recorded as a checkpoint; the canonical events are unchanged and the only
        // addition is the one visible failure note of a manual compaction.
        let kinds = db.agent_run_kinds("s");
        assert!(!kinds.iter().any(|k| k == "history_compact_checkpoint_recorded"), "{name}");
        assert_eq!(
            kinds,
            ["run_started", "compaction_outcome_recorded", "run_completed"],
            "{name}"
        );
        let after = db.ledger_rows("s");
        assert_eq!(after[..rows.len()], rows[..], "{name}: canonical events changed");
        assert_eq!(after.len(), rows.len() + 1, "{name}");
        let note: Value = serde_json::from_str(&after[rows.len()].2).expect("note json");
        assert_eq!(note["content"]["code"], json!("context_compaction_failed_open"), "{name}");
        let listed = ok(&["checkpoints", "--db", db.db(), "--session", "s"]);
        assert!(listed["current"].is_null(), "{name}");
        assert_eq!(db.count("checkpoint_projection"), 0, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_cli_run_never_dispatches_the_same_malformed_input_again() {
    let malformed = || Reply::ok(chat_completion("## Goal\nfix it\n## Later\nstuff", "stop"));
    let Scenario { server, db, run, .. } =
        scenario("openai-chat", vec![malformed(), malformed()]).await;
    assert_eq!(run.json["outcome"], json!("failed_open"), "{}", run.json);
    assert_eq!(run.json["reason"], json!("malformed_summary_missing_section"), "{}", run.json);
    assert_eq!(server.received().len(), 2, "the request and its one repair");
    // A new process on the unchanged session: the circuit comes back from the ledger.
    let again = compact(
        &db,
        "openai-chat",
        &server.url("/v1"),
        CHAT_MODEL,
        &[("OPENAI_API_KEY", OPENAI_KEY)],
    );
    assert_eq!(again.json["reason"], json!("malformed_summary_circuit_open"), "{}", again.json);
    assert_eq!(server.received().len(), 2, "nothing dispatched again");
}
