//! Every failure class over real HTTP, for each client: a scripted loopback reply in, the
//! classified `ProviderFailure` out, and no key in any message.

use crate::providers;

use contextfold_core::compaction::{ProviderFailure, ProviderFailureKind};
use providers::fixtures::*;
use providers::server::{LoopbackServer, Reply, StreamEnd};
use serde_json::{Value, json};

use ProviderFailureKind::*;

/// The three clients, reduced to "send the fixture request, report the failure".
#[derive(Debug, Clone, Copy)]
enum Client {
    Chat,
    Anthropic,
    Codex,
}

const CLIENTS: [Client; 3] = [Client::Chat, Client::Anthropic, Client::Codex];

async fn failure_of(client: Client, server: &LoopbackServer) -> ProviderFailure {
    failure_within(client, server, SHORT_TIMEOUT).await
}

async fn failure_within(
    client: Client,
    server: &LoopbackServer,
    timeout: std::time::Duration,
) -> ProviderFailure {
    let result = match client {
        Client::Chat => chat_client(server)
            .with_timeout(timeout)
            .summarize(&summary_request())
            .await
            .map(|ok| format!("{ok:?}")),
        Client::Anthropic => anthropic_client(server)
            .with_timeout(timeout)
            .summarize(&summary_request())
            .await
            .map(|ok| format!("{ok:?}")),
        Client::Codex => codex_client(server)
            .with_timeout(timeout)
            .compact(&native_request())
            .await
            .map(|ok| format!("{ok:?}")),
    };
    result.expect_err("the scripted reply is a failure")
}

fn openai_error(message: &str, kind: &str, code: Value) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

fn anthropic_error(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// (label, reply, expected kind, expected code prefix of the message)
fn http_cases() -> Vec<(&'static str, Reply, ProviderFailureKind, &'static str)> {
    vec![
        (
            "400 plain",
            Reply::status(
                400,
                openai_error("Unsupported parameter: 'foo'", "invalid_request_error", Value::Null),
            ),
            Rejected,
            "http_status",
        ),
        (
            "404 model",
            Reply::status(
                404,
                openai_error(
                    "The model does not exist",
                    "invalid_request_error",
                    json!("model_not_found"),
                ),
            ),
            Rejected,
            "http_status",
        ),
        ("422", Reply::status(422, json!({"detail": "unprocessable"})), Rejected, "http_status"),
        (
            "400 openai overflow",
            Reply::status(
                400,
                openai_error(
                    "This model's maximum context length is 128000 tokens.",
                    "invalid_request_error",
                    json!("context_length_exceeded"),
                ),
            ),
            Overflow,
            "http_status",
        ),
        (
            "400 anthropic overflow",
            Reply::status(
                400,
                anthropic_error(
                    "invalid_request_error",
                    "prompt is too long: 210000 tokens > 200000 maximum",
                ),
            ),
            Overflow,
            "http_status",
        ),
        (
            "413",
            Reply::status(
                413,
                anthropic_error(
                    "request_too_large",
                    "Request exceeds the maximum allowed number of bytes.",
                ),
            ),
            Overflow,
            "http_status",
        ),
        (
            "401 echoing the keys",
            Reply::status(
                401,
                openai_error(
                    &format!("Incorrect API key provided: {OPENAI_KEY} / {ANTHROPIC_KEY}"),
                    "invalid_request_error",
                    json!("invalid_api_key"),
                ),
            ),
            Auth,
            "http_status",
        ),
        (
            "403",
            Reply::status(
                403,
                anthropic_error("permission_error", "Your API key does not have permission"),
            ),
            Auth,
            "http_status",
        ),
        (
            "402",
            Reply::status(402, anthropic_error("billing_error", "payment required")),
            Billing,
            "http_status",
        ),
        (
            "429 insufficient_quota",
            Reply::status(
                429,
                openai_error(
                    "You exceeded your current quota",
                    "insufficient_quota",
                    json!("insufficient_quota"),
                ),
            ),
            Billing,
            "http_status",
        ),
        (
            "400 credit balance",
            Reply::status(
                400,
                anthropic_error(
                    "invalid_request_error",
                    "Your credit balance is too low to access the Anthropic API.",
                ),
            ),
            Billing,
            "http_status",
        ),
        (
            "429",
            Reply::status(
                429,
                openai_error("Rate limit reached", "requests", json!("rate_limit_exceeded")),
            ),
            RateLimited,
            "http_status",
        ),
        (
            "500",
            Reply::status(
                500,
                openai_error("The server had an error", "server_error", Value::Null),
            ),
            Unavailable,
            "http_status",
        ),
        (
            "502 html",
            Reply::Raw {
                status: 502,
                content_type: "text/html",
                body: "<html>Bad Gateway</html>".into(),
            },
            Unavailable,
            "http_status",
        ),
        ("503", Reply::status(503, json!({"error": "unavailable"})), Unavailable, "http_status"),
        (
            "529 overloaded",
            Reply::status(529, anthropic_error("overloaded_error", "Overloaded")),
            Unavailable,
            "http_status",
        ),
        ("slow", Reply::status(500, json!({})).delayed(SLOW), Unavailable, "timeout"),
    ]
}

#[tokio::test]
async fn every_http_status_class_is_classified_for_every_client() {
    for client in CLIENTS {
        for (label, reply, kind, code) in http_cases() {
            let server = LoopbackServer::start().await;
            server.script(reply);
            let started = std::time::Instant::now();
            let failure = failure_of(client, &server).await;
            assert_eq!(failure.kind, kind, "{client:?} {label}: {failure:?}");
            assert!(failure.message.starts_with(code), "{client:?} {label}: {}", failure.message);
            let own_key = match client {
                Client::Anthropic => ANTHROPIC_KEY,
                Client::Chat | Client::Codex => OPENAI_KEY,
            };
            for secret in [own_key, PREVIOUS_STATE] {
                assert!(
                    !failure.message.contains(secret),
                    "{client:?} {label}: {}",
                    failure.message
                );
            }
            assert!(started.elapsed() < SLOW / 2, "{client:?} {label} waited for the slow reply");
            assert_eq!(server.received().len(), 1, "{client:?} {label}: exactly one request");
        }
    }
}

#[tokio::test]
async fn error_details_reach_the_failure_message() {
    let server = LoopbackServer::start().await;
    server.script(Reply::status(
        400,
        openai_error(
            "This model's maximum context length is 8192 tokens.",
            "invalid_request_error",
            json!("context_length_exceeded"),
        ),
    ));
    let failure = failure_of(Client::Chat, &server).await;
    assert_eq!(
        failure.message,
        "http_status: HTTP 400: invalid_request_error/context_length_exceeded: This model's maximum context length is 8192 tokens."
    );
}

#[tokio::test]
async fn malformed_and_cut_bodies_are_unavailable_for_the_json_clients() {
    for client in [Client::Chat, Client::Anthropic] {
        let server = LoopbackServer::start().await;
        server.script(Reply::Raw {
            status: 200,
            content_type: "application/json",
            body: "{\"choices\": [".into(),
        });
        let failure = failure_of(client, &server).await;
        assert_eq!(failure.kind, Unavailable, "{client:?}");
        assert!(
            failure.message.starts_with("malformed_response"),
            "{client:?}: {}",
            failure.message
        );

        let server = LoopbackServer::start().await;
        server.script(Reply::ok(json!({"id": "x", "object": "unexpected"})));
        let failure = failure_of(client, &server).await;
        assert_eq!(failure.kind, Unavailable, "{client:?} wrong shape");
        assert!(
            failure.message.starts_with("malformed_response"),
            "{client:?}: {}",
            failure.message
        );

        let server = LoopbackServer::start().await;
        let body = match client {
            Client::Anthropic => anthropic_message(&valid_summary(), "end_turn"),
            _ => chat_completion(&valid_summary(), "stop"),
        };
        server.script(Reply::CutJson { body, sent: 60 });
        let failure = failure_of(client, &server).await;
        assert_eq!(failure.kind, Unavailable, "{client:?} cut body");
        assert!(failure.message.starts_with("transport_failed"), "{client:?}: {}", failure.message);
    }
}

#[tokio::test]
async fn bodies_over_the_16_mib_cap_are_refused_or_cut_for_every_client() {
    use contextfold_host::providers::MAX_RESPONSE_BYTES;
    let huge = "x".repeat(MAX_RESPONSE_BYTES + 1024);
    // Moving 16 MiB through a debug build takes longer than the short timeout of the others.
    let timeout = std::time::Duration::from_secs(30);
    for client in CLIENTS {
        // A success body (or stream) over the cap is refused, never buffered whole.
        let server = LoopbackServer::start().await;
        let (content_type, body) = match client {
            Client::Codex => ("text/event-stream", format!("data: {{\"pad\":\"{huge}\"}}\n\n")),
            _ => ("application/json", format!("{{\"pad\":\"{huge}\"}}")),
        };
        server.script(Reply::Raw { status: 200, content_type, body });
        let failure = failure_within(client, &server, timeout).await;
        assert_eq!(failure.kind, Unavailable, "{client:?}");
        assert!(
            failure.message.starts_with("response_too_large"),
            "{client:?}: {:.200}",
            failure.message
        );
        // An error body over the cap is cut to the cap and still classified, its detail bounded.
        let server = LoopbackServer::start().await;
        let body = format!("{{\"error\":{{\"message\":\"{huge}\"}}}}");
        server.script(Reply::Raw { status: 503, content_type: "application/json", body });
        let failure = failure_within(client, &server, timeout).await;
        assert_eq!(failure.kind, Unavailable, "{client:?} error body");
        assert!(failure.message.chars().count() < 2_000, "{client:?}: {:.200}", failure.message);
    }
}

/// A 200 that carries no answer never becomes a summary: `choices: []` (chat) and a stream
/// that ends without its `response.completed` terminator (Codex) are typed failures; a null
/// content (chat), an empty `content` list or a null text (Anthropic) read as an empty text,
/// which the core's validation refuses (`empty_summary`) before anything is recorded.
#[tokio::test]
async fn a_success_without_an_answer_never_becomes_a_summary() {
    use contextfold_core::compaction::validate_summary;
    let mut null_content = chat_completion("x", "stop");
    null_content["choices"][0]["message"]["content"] = Value::Null;
    let mut null_text = anthropic_message("x", "end_turn");
    null_text["content"][0]["text"] = Value::Null;
    let mut empty_content = anthropic_message("x", "end_turn");
    empty_content["content"] = json!([]);
    let no_choices =
        json!({"id": "c", "object": "chat.completion", "model": CHAT_MODEL, "choices": []});
    let mut unterminated = responses_stream(&[compaction_item("cmp_1", "gAAAA")]);
    unterminated.pop(); // `response.completed`
    let failures = [
        (Client::Chat, Reply::ok(no_choices), "malformed_response"),
        (Client::Codex, Reply::sse(&unterminated, StreamEnd::Clean), "stream_truncated"),
    ];
    for (client, reply, code) in failures {
        let server = LoopbackServer::start().await;
        server.script(reply);
        let failure = failure_of(client, &server).await;
        assert!(failure.message.starts_with(code), "{client:?}: {}", failure.message);
        assert_eq!(failure.kind, Unavailable, "{client:?}: {}", failure.message);
    }
    let empties = [
        (Client::Chat, Reply::ok(null_content)),
        (Client::Anthropic, Reply::ok(empty_content)),
        (Client::Anthropic, Reply::ok(null_text)),
    ];
    for (client, reply) in empties {
        let server = LoopbackServer::start().await;
        server.script(reply);
        let answer = match client {
            Client::Chat => chat_client(&server).summarize(&summary_request()).await,
            _ => anthropic_client(&server).summarize(&summary_request()).await,
        }
        .expect("an empty answer");
        assert_eq!(answer.text, "", "{client:?}");
        let refused = validate_summary(
            &answer.text,
            answer.finish_reason,
            0,
            &contextfold_core::CharEstimator,
        )
        .expect_err("empty");
        assert_eq!(refused.code().as_str(), "empty_summary", "{client:?}");
    }
}

#[tokio::test]
async fn a_refused_connection_is_unavailable() {
    // Bind a port, then free it: nothing listens there any more.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("address"));
    drop(listener);
    let client =
        contextfold_host::providers::OpenAiChatSummarizer::new(&url, CHAT_MODEL, OPENAI_KEY)
            .expect("valid config")
            .with_http_client(direct_http());
    let failure = client.summarize(&summary_request()).await.expect_err("nothing listens");
    assert_eq!(failure.kind, Unavailable);
    assert!(failure.message.starts_with("connect_failed"), "{}", failure.message);
}
