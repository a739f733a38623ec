//! The design's failure table, provider rows, driven through the native host: a real SQLite
//! file, the session runtime (manual compaction as its own Run) and the real provider clients
//! over loopback HTTP against scripted servers. For each row: the outcome and reason, the
//! diagnostics, and an independent check that no canonical event changed and no checkpoint
//! claims coverage it does not have. Every injected fault prints a `FAULT-INJECTED` line.

mod providers;
mod reliability_support;

use std::time::Duration;

use contextfold_core::compaction::OutcomeKind;
use contextfold_host::runtime::{CompactionReport, StopSignal};
use contextfold_host::storage::agent_run_kind;
use providers::fixtures::*;
use providers::server::{LoopbackServer, Reply, StreamEnd};
use reliability_support::verify::{assert_intact, canonical_rows, recorded_checkpoints};
use reliability_support::*;
use serde_json::{Value, json};

/// What a row must end in.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// A checkpoint of this schema is recorded.
    Recorded(u32),
    /// No checkpoint; the outcome's reason is one of these.
    NoCheckpoint(&'static [&'static str]),
}

struct Row {
    name: &'static str,
    native: bool,
    chat: Vec<Reply>,
    codex: Vec<Reply>,
    timeout: Option<Duration>,
    expect: Expect,
}

fn openai_error(status: u16, message: &str, kind: &str, code: Value) -> Reply {
    Reply::status(
        status,
        json!({"error": {"message": message, "type": kind, "param": null, "code": code}}),
    )
}

/// The provider says the request exceeds its context (the core retries once with tool
/// results omitted, then gives up).
fn overflow() -> Reply {
    openai_error(
        400,
        "maximum context length is 128000 tokens",
        "invalid_request_error",
        json!("context_length_exceeded"),
    )
}

fn chat_ok(text: &str, finish: &str) -> Reply {
    Reply::ok(chat_completion(text, finish))
}

fn cut_stream(items: &[Value]) -> Reply {
    let events = responses_stream(items);
    Reply::sse(&events[..events.len() / 2], StreamEnd::Abort)
}

fn rows() -> Vec<Row> {
    let good = valid_summary();
    let malformed = good.replace("## Next Steps", "## Later");
    let item = compaction_item("cmp_1", NEW_STATE);
    let text = |name, chat: Vec<Reply>, expect| Row {
        name,
        native: false,
        chat,
        codex: vec![],
        timeout: None,
        expect,
    };
    let native = |name, codex: Vec<Reply>, chat: Vec<Reply>, expect| Row {
        name,
        native: true,
        chat,
        codex,
        timeout: None,
        expect,
    };
    vec![
        text("baseline_text_summary", vec![chat_ok(&good, "stop")], Expect::Recorded(2)),
        text(
            "http_400_rejected",
            vec![openai_error(400, "Unsupported parameter", "invalid_request_error", Value::Null)],
            Expect::NoCheckpoint(&["provider_rejected"]),
        ),
        text(
            "http_400_context_overflow",
            vec![overflow(), overflow()],
            Expect::NoCheckpoint(&["provider_overflow"]),
        ),
        text(
            "http_401_auth",
            vec![openai_error(
                401,
                "Incorrect API key provided",
                "invalid_request_error",
                json!("invalid_api_key"),
            )],
            Expect::NoCheckpoint(&["provider_auth"]),
        ),
        text(
            "http_429_billing",
            vec![openai_error(
                429,
                "You exceeded your current quota",
                "insufficient_quota",
                json!("insufficient_quota"),
            )],
            Expect::NoCheckpoint(&["provider_billing"]),
        ),
        text(
            "http_429_rate_limited",
            vec![openai_error(429, "Rate limit reached", "requests", json!("rate_limit_exceeded"))],
            Expect::NoCheckpoint(&["provider_rate_limited"]),
        ),
        text(
            "http_500_unavailable",
            vec![Reply::status(500, json!({"error": "boom"}))],
            Expect::NoCheckpoint(&["provider_unavailable"]),
        ),
        text(
            "http_503_unavailable",
            vec![Reply::Raw {
                status: 503,
                content_type: "text/html",
                body: "<html>down</html>".into(),
            }],
            Expect::NoCheckpoint(&["provider_unavailable"]),
        ),
        Row {
            name: "timeout",
            native: false,
            chat: vec![chat_ok(&good, "stop").delayed(SLOW)],
            codex: vec![],
            timeout: Some(SHORT_TIMEOUT),
            expect: Expect::NoCheckpoint(&["provider_unavailable"]),
        },
        text(
            "body_not_json",
            vec![Reply::Raw {
                status: 200,
                content_type: "application/json",
                body: "{\"choices\": [".into(),
            }],
            Expect::NoCheckpoint(&["provider_unavailable", "provider_rejected"]),
        ),
        text(
            "body_cut_mid_way",
            vec![Reply::CutJson { body: chat_completion(&good, "stop"), sent: 80 }],
            Expect::NoCheckpoint(&["provider_unavailable"]),
        ),
        text(
            "malformed_then_repaired",
            vec![chat_ok(&malformed, "stop"), chat_ok(&good, "stop")],
            Expect::Recorded(2),
        ),
        text(
            "malformed_twice",
            vec![chat_ok(&malformed, "stop"), chat_ok(&malformed, "stop")],
            Expect::NoCheckpoint(&["malformed_summary_missing_section"]),
        ),
        text(
            "truncated_open_fence",
            vec![
                chat_ok(&format!("{good}\n```rust\nfn cut("), "stop"),
                chat_ok(&format!("{good}\n```rust\nfn cut("), "stop"),
            ],
            Expect::NoCheckpoint(&["malformed_summary_open_fence", "malformed_summary_truncated"]),
        ),
        text(
            "length_finished",
            vec![chat_ok(&good, "length"), chat_ok(&good, "length")],
            Expect::NoCheckpoint(&["malformed_summary_length_finish"]),
        ),
        text(
            "empty_summary",
            vec![chat_ok("", "stop"), chat_ok("", "stop")],
            Expect::NoCheckpoint(&["empty_summary"]),
        ),
        text(
            "error_text_summary",
            vec![
                chat_ok("Error: rate limit exceeded, please retry", "stop"),
                chat_ok("Error: rate limit exceeded, please retry", "stop"),
            ],
            Expect::NoCheckpoint(&[
                "malformed_summary_error_text",
                "malformed_summary_missing_section",
                "malformed_summary_too_small",
            ]),
        ),
        native(
            "native_baseline",
            vec![Reply::sse(&responses_stream(std::slice::from_ref(&item)), StreamEnd::Clean)],
            vec![],
            Expect::Recorded(3),
        ),
        native(
            "native_zero_items",
            vec![Reply::sse(&responses_stream(&[]), StreamEnd::Clean)],
            vec![chat_ok(&good, "stop")],
            Expect::Recorded(2),
        ),
        native(
            "native_two_items",
            vec![Reply::sse(
                &responses_stream(&[item.clone(), compaction_item("cmp_2", "gAAAAB-second")]),
                StreamEnd::Clean,
            )],
            vec![chat_ok(&good, "stop")],
            Expect::Recorded(2),
        ),
        native(
            "native_stream_cut",
            vec![cut_stream(std::slice::from_ref(&item))],
            vec![chat_ok(&good, "stop")],
            Expect::NoCheckpoint(&["provider_unavailable"]),
        ),
        native(
            "native_rejected_then_text_fails",
            vec![openai_error(
                400,
                "compaction_trigger unsupported",
                "invalid_request_error",
                Value::Null,
            )],
            vec![chat_ok("", "stop"), chat_ok("", "stop")],
            Expect::NoCheckpoint(&["empty_summary", "provider_rejected"]),
        ),
        native(
            "native_rate_limited_no_fallback",
            vec![openai_error(429, "Rate limit reached", "requests", json!("rate_limit_exceeded"))],
            vec![],
            Expect::NoCheckpoint(&["provider_rate_limited"]),
        ),
    ]
}

async fn run_row(row: Row) -> (String, CompactionReport) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("fault.sqlite");
    let store = seeded_store(&path, 6);
    let before = canonical_rows(&path, SESSION);
    let recorded_before = recorded_checkpoints(&path, SESSION).len();
    let chat_server = LoopbackServer::start().await;
    let codex_server = LoopbackServer::start().await;
    for reply in row.chat {
        chat_server.script(reply);
    }
    for reply in row.codex {
        codex_server.script(reply);
    }
    let mut chat = chat_client(&chat_server);
    let mut codex = codex_client(&codex_server);
    if let Some(timeout) = row.timeout {
        chat = chat.with_timeout(timeout);
        codex = codex.with_timeout(timeout);
    }
    let runtime = runtime(&store, 16_000, row.native, ChatSummarizer(chat), CodexCompactor(codex));
    let report =
        runtime.compact_manually(&StopSignal::new()).await.expect("the runtime returns an outcome");
    let outcome = &report.outcome;
    let reason = outcome.reason.as_str().to_owned();
    assert!(
        outcome.diagnostics.iter().any(|d| d.code == outcome.reason),
        "{}: reason without diagnostic",
        row.name
    );
    let found = assert_intact(&path, SESSION, &before);
    match row.expect {
        Expect::Recorded(schema) => {
            assert_eq!(outcome.outcome, OutcomeKind::Recorded, "{}: {outcome:?}", row.name);
            let cp = outcome.checkpoint.as_ref().expect("recorded");
            assert_eq!(cp.schema_version(), schema, "{}", row.name);
            assert_eq!(found.checkpoints, recorded_before + 1);
        }
        Expect::NoCheckpoint(reasons) => {
            assert_eq!(outcome.outcome, OutcomeKind::FailedOpen, "{}: {outcome:?}", row.name);
            assert!(outcome.checkpoint.is_none());
            assert!(
                reasons.contains(&reason.as_str())
                    || outcome.diagnostics.iter().any(|d| reasons.contains(&d.code.as_str())),
                "{}: reason {reason}, diagnostics {:?}",
                row.name,
                outcome.diagnostics
            );
            assert_eq!(
                found.checkpoints, recorded_before,
                "{}: a failed compaction wrote a checkpoint",
                row.name
            );
            // The manual Run's visible failure note is the only new canonical event.
            let after = canonical_rows(&path, SESSION);
            assert_eq!(after.len(), before.len() + 1, "{}", row.name);
            assert!(after.last().expect("note").2.contains("context_compaction_failed_open"));
        }
    }
    let facts = store.agent_run_events(SESSION).expect("agent run events");
    assert!(
        facts.iter().any(|f| f.kind == agent_run_kind::COMPACTION_OUTCOME),
        "{}: outcome not recorded",
        row.name
    );
    let codes: Vec<&str> = outcome.diagnostics.iter().map(|d| d.code.as_str()).collect();
    report_fault(
        row.name,
        &format!("{:?}", outcome.outcome),
        &format!("reason={reason} diagnostics={codes:?}"),
    );
    drop(dir);
    (row.name.to_owned(), report)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_provider_row_of_the_failure_table() {
    let rows = rows();
    let count = rows.len();
    for row in rows {
        run_row(row).await;
    }
    eprintln!("provider fault rows: {count}");
}
