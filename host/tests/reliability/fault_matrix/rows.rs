//! The provider rows of the failure table on a fresh store (manual compaction): each scripted
//! HTTP failure with the exact outcome, reason, ordered diagnostics and request counts it must
//! produce. Request counts follow the core's bounded retries: one stricter repair after a
//! rejected summary (2), one smaller retry after an overflow (2), one text fallback after a
//! rejected or unusable native reply (native 1 + text 1 or 2); every other failure (auth,
//! billing, rate limit, 5xx, timeout, bad body) is dispatched once and never retried, and a
//! native failure of those classes never falls back (chat 0, even with a reply scripted).

use contextfold_core::compaction::OutcomeKind;
use serde_json::{Value, json};

use super::providers::fixtures::*;
use super::providers::server::{Reply, StreamEnd};
use super::{Row, failed, failed_open, recorded};

fn openai_error(status: u16, message: &str, kind: &str, code: Value) -> Reply {
    Reply::status(
        status,
        json!({"error": {"message": message, "type": kind, "param": null, "code": code}}),
    )
}

/// The provider says the request exceeds its context (the core retries once with tool
/// results omitted, then gives up).
pub(crate) fn overflow() -> Reply {
    openai_error(
        400,
        "maximum context length is 128000 tokens",
        "invalid_request_error",
        json!("context_length_exceeded"),
    )
}

pub(crate) fn chat_ok(text: &str, finish: &str) -> Reply {
    Reply::ok(chat_completion(text, finish))
}

/// A 500 with a JSON body: `provider_unavailable`, dispatched once.
pub(crate) fn server_error() -> Reply {
    Reply::status(500, json!({"error": "boom"}))
}

fn cut_stream(items: &[Value]) -> Reply {
    let events = responses_stream(items);
    Reply::sse(&events[..events.len() / 2], StreamEnd::Abort)
}

/// `valid_summary` with a required section renamed: `malformed_summary_missing_section`.
pub(crate) fn malformed_summary() -> String {
    valid_summary().replace("## Next Steps", "## Later")
}

/// `valid_summary` with `lines` more lines of critical context (a fold over 10,000 tokens
/// needs a summary of at least 200 tokens, or it is `malformed_summary_too_small`).
pub(crate) fn padded_summary(lines: usize) -> String {
    let padding = "- src/lib.rs: a case handled, its test rerun and green.\n".repeat(lines);
    valid_summary().replace("## Critical Context\n", &format!("## Critical Context\n{padding}"))
}

pub(crate) fn rows() -> Vec<Row> {
    let good = valid_summary();
    let malformed = malformed_summary();
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
    let fenced = format!("{good}\n```rust\nfn cut(");
    let error_text = "Error: rate limit exceeded, please retry";
    let malformed_twice = ["malformed_summary_missing_section"; 2];
    vec![
        text(
            "baseline_text_summary",
            vec![chat_ok(&good, "stop")],
            recorded(2, &["checkpoint_recorded"], 1, 0),
        ),
        text(
            "http_400_rejected",
            vec![openai_error(400, "Unsupported parameter", "invalid_request_error", Value::Null)],
            failed_open("provider_rejected", &["provider_rejected"], 1),
        ),
        text(
            "http_400_context_overflow",
            vec![overflow(), overflow()],
            failed_open(
                "provider_overflow",
                &["provider_overflow", "tool_results_omitted", "provider_overflow"],
                2,
            ),
        ),
        text(
            "http_401_auth",
            vec![openai_error(
                401,
                "Incorrect API key provided",
                "invalid_request_error",
                json!("invalid_api_key"),
            )],
            failed_open("provider_auth", &["provider_auth"], 1),
        ),
        text(
            "http_429_billing",
            vec![openai_error(
                429,
                "You exceeded your current quota",
                "insufficient_quota",
                json!("insufficient_quota"),
            )],
            failed_open("provider_billing", &["provider_billing"], 1),
        ),
        text(
            "http_429_rate_limited",
            vec![openai_error(429, "Rate limit reached", "requests", json!("rate_limit_exceeded"))],
            failed_open("provider_rate_limited", &["provider_rate_limited"], 1),
        ),
        text(
            "http_500_unavailable",
            vec![server_error(), chat_ok(&good, "stop")],
            failed_open("provider_unavailable", &["provider_unavailable"], 1),
        ),
        text(
            "http_503_unavailable",
            vec![
                Reply::Raw {
                    status: 503,
                    content_type: "text/html",
                    body: "<html>down</html>".into(),
                },
                chat_ok(&good, "stop"),
            ],
            failed_open("provider_unavailable", &["provider_unavailable"], 1),
        ),
        Row {
            name: "timeout",
            native: false,
            chat: vec![chat_ok(&good, "stop").delayed(SLOW), chat_ok(&good, "stop")],
            codex: vec![],
            timeout: Some(SHORT_TIMEOUT),
            expect: failed_open("provider_unavailable", &["provider_unavailable"], 1),
        },
        text(
            "body_not_json",
            vec![Reply::Raw {
                status: 200,
                content_type: "application/json",
                body: "{\"choices\": [".into(),
            }],
            failed_open("provider_unavailable", &["provider_unavailable"], 1),
        ),
        text(
            "body_cut_mid_way",
            vec![Reply::CutJson { body: chat_completion(&good, "stop"), sent: 80 }],
            failed_open("provider_unavailable", &["provider_unavailable"], 1),
        ),
        text(
            "malformed_then_repaired",
            vec![chat_ok(&malformed, "stop"), chat_ok(&good, "stop")],
            recorded(2, &["malformed_summary_missing_section", "checkpoint_recorded"], 2, 0),
        ),
        text(
            "malformed_twice",
            vec![chat_ok(&malformed, "stop"), chat_ok(&malformed, "stop"), chat_ok(&good, "stop")],
            failed_open("malformed_summary_missing_section", &malformed_twice, 2),
        ),
        text(
            "truncated_open_fence",
            vec![chat_ok(&fenced, "stop"), chat_ok(&fenced, "stop")],
            failed_open("malformed_summary_open_fence", &["malformed_summary_open_fence"; 2], 2),
        ),
        text(
            "length_finished",
            vec![chat_ok(&good, "length"), chat_ok(&good, "length")],
            failed_open(
                "malformed_summary_length_finish",
                &["malformed_summary_length_finish"; 2],
                2,
            ),
        ),
        text(
            "empty_summary",
            vec![chat_ok("", "stop"), chat_ok("", "stop")],
            failed_open("empty_summary", &["empty_summary"; 2], 2),
        ),
        text(
            "error_text_summary",
            vec![chat_ok(error_text, "stop"), chat_ok(error_text, "stop")],
            failed_open("malformed_summary_error_text", &["malformed_summary_error_text"; 2], 2),
        ),
        native(
            "native_baseline",
            vec![Reply::sse(&responses_stream(std::slice::from_ref(&item)), StreamEnd::Clean)],
            vec![chat_ok(&good, "stop")],
            recorded(3, &["checkpoint_recorded"], 0, 1),
        ),
        native(
            "native_zero_items",
            vec![Reply::sse(&responses_stream(&[]), StreamEnd::Clean)],
            vec![chat_ok(&good, "stop")],
            recorded(2, &["native_no_unique_item", "checkpoint_recorded"], 1, 1),
        ),
        native(
            "native_two_items",
            vec![Reply::sse(
                &responses_stream(&[item.clone(), compaction_item("cmp_2", "gAAAAB-second")]),
                StreamEnd::Clean,
            )],
            vec![chat_ok(&good, "stop")],
            recorded(2, &["native_no_unique_item", "checkpoint_recorded"], 1, 1),
        ),
        native(
            "native_stream_cut",
            vec![cut_stream(std::slice::from_ref(&item))],
            vec![chat_ok(&good, "stop")],
            failed(
                OutcomeKind::FailedOpen,
                "provider_unavailable",
                &["provider_unavailable", "context_compaction_failed_open"],
                0,
                1,
            ),
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
            failed(
                OutcomeKind::FailedOpen,
                "empty_summary",
                &[
                    "provider_rejected",
                    "empty_summary",
                    "empty_summary",
                    "context_compaction_failed_open",
                ],
                2,
                1,
            ),
        ),
        native(
            "native_rate_limited_no_fallback",
            vec![openai_error(429, "Rate limit reached", "requests", json!("rate_limit_exceeded"))],
            vec![chat_ok(&good, "stop")],
            failed(
                OutcomeKind::FailedOpen,
                "provider_rate_limited",
                &["provider_rate_limited", "context_compaction_failed_open"],
                0,
                1,
            ),
        ),
    ]
}
