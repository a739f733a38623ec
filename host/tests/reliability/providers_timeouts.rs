//! Slow servers never hang a provider call: for every client (Chat Completions, Anthropic
//! Messages, Codex native compaction, Codex text summary), a body trickled one byte every
//! 200 ms ends on the whole-call deadline (`with_timeout`, code `timeout`), and a body or event
//! stream that stops sending without closing ends on the idle deadline (`with_idle_timeout`,
//! code `stream_stalled`) or, when that is longer, on the whole-call one. Each failure is
//! `Unavailable` and comes between its deadline and the deadline plus [`SLACK`]: deadlines are
//! short here so the test is fast, the defaults are checked apart. Every injected fault prints
//! a `FAULT-INJECTED` line.

use crate::providers;

use std::time::{Duration, Instant};

use contextfold_core::compaction::{ProviderFailure, ProviderFailureKind};
use contextfold_host::providers::{
    DEFAULT_NATIVE_TIMEOUT, DEFAULT_SUMMARY_TIMEOUT, STREAM_IDLE_TIMEOUT,
};
use providers::fixtures::*;
use providers::server::{LoopbackServer, Reply, sse_frame};
use serde_json::{Value, json};

/// How late a deadline may fire (a loaded debug build); a correctness bound, not a speed one.
const SLACK: Duration = Duration::from_secs(5);
/// The pause between two trickled bytes.
const TRICKLE_EVERY: Duration = Duration::from_millis(200);
/// The whole-call deadline of the rows that end on it.
const TOTAL: Duration = Duration::from_millis(1_500);
/// The idle deadline of the rows that end on it.
const IDLE: Duration = Duration::from_secs(1);
/// A deadline no row reaches.
const NEVER: Duration = Duration::from_secs(20);

/// Every client, reduced to "send the fixture request, report the failure".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    Chat,
    Anthropic,
    CodexCompact,
    CodexSummary,
}

const CLIENTS: [Client; 4] =
    [Client::Chat, Client::Anthropic, Client::CodexCompact, Client::CodexSummary];

impl Client {
    fn name(self) -> &'static str {
        match self {
            Client::Chat => "openai_chat",
            Client::Anthropic => "anthropic",
            Client::CodexCompact => "codex_compact",
            Client::CodexSummary => "codex_summary",
        }
    }

    /// The complete success body this client expects, and its content type.
    fn success_body(self) -> (&'static str, String) {
        match self {
            Client::Chat => {
                ("application/json", chat_completion(&valid_summary(), "stop").to_string())
            }
            Client::Anthropic => {
                ("application/json", anthropic_message(&valid_summary(), "end_turn").to_string())
            }
            Client::CodexCompact => ("text/event-stream", frames(&compaction_stream())),
            Client::CodexSummary => ("text/event-stream", frames(&message_stream())),
        }
    }

    /// A reply that sends the start of a success body, then nothing, leaving it open.
    fn stalling_reply(self) -> Reply {
        match self {
            Client::Chat => Reply::StallJson {
                status: 200,
                body: chat_completion(&valid_summary(), "stop"),
                sent: 40,
            },
            Client::Anthropic => Reply::StallJson {
                status: 200,
                body: anthropic_message(&valid_summary(), "end_turn"),
                sent: 40,
            },
            // The events before the output: `response.created`, `response.in_progress`.
            Client::CodexCompact => Reply::sse_then_stall(&compaction_stream()[..2]),
            Client::CodexSummary => Reply::sse_then_stall(&message_stream()[..3]),
        }
    }

    /// Sends the fixture request with the deadlines `total` and `idle`; the failure and the
    /// time it took.
    async fn fail(
        self,
        server: &LoopbackServer,
        total: Duration,
        idle: Duration,
    ) -> (ProviderFailure, Duration) {
        let started = Instant::now();
        let result = match self {
            Client::Chat => chat_client(server)
                .with_timeout(total)
                .with_idle_timeout(idle)
                .summarize(&summary_request())
                .await
                .map(|ok| format!("{ok:?}")),
            Client::Anthropic => anthropic_client(server)
                .with_timeout(total)
                .with_idle_timeout(idle)
                .summarize(&summary_request())
                .await
                .map(|ok| format!("{ok:?}")),
            Client::CodexCompact => codex_client(server)
                .with_timeout(total)
                .with_idle_timeout(idle)
                .compact(&native_request())
                .await
                .map(|ok| format!("{ok:?}")),
            Client::CodexSummary => codex_client(server)
                .with_timeout(total)
                .with_idle_timeout(idle)
                .summarize(&summary_request())
                .await
                .map(|ok| format!("{ok:?}")),
        };
        let elapsed = started.elapsed();
        let failure = match result {
            Ok(ok) => panic!("{self:?}: a slow server answered {ok}"),
            Err(failure) => failure,
        };
        (failure, elapsed)
    }
}

fn compaction_stream() -> Vec<Value> {
    responses_stream(&[compaction_item("cmp_1", NEW_STATE)])
}

fn message_stream() -> Vec<Value> {
    let message = json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": valid_summary()}]});
    responses_stream(&[message])
}

fn frames(events: &[Value]) -> String {
    events.iter().map(sse_frame).collect()
}

fn report_fault(row: &str, outcome: &str, detail: &str) {
    eprintln!("FAULT-INJECTED row={row} outcome={outcome} detail={detail}");
}

/// Runs `fault` against every client at once (each on its own server) and checks that it
/// failed with `code`, `Unavailable`, within `[deadline, deadline + SLACK]`, where the deadline
/// is `total` for `timeout` and `idle` for `stream_stalled`.
async fn every_client_ends_on(
    row: &str,
    fault: impl Fn(Client) -> Reply,
    total: Duration,
    idle: Duration,
    code: &str,
) {
    let deadline = if code == "timeout" { total } else { idle };
    let runs = CLIENTS.map(|client| {
        let reply = fault(client);
        async move {
            let server = LoopbackServer::start().await;
            server.script(reply);
            let (failure, elapsed) = client.fail(&server, total, idle).await;
            assert_eq!(server.received().len(), 1, "{client:?} {row}: exactly one request");
            (client, failure, elapsed)
        }
    });
    for (client, failure, elapsed) in futures_util::future::join_all(runs).await {
        let row = format!("{}_{row}", client.name());
        assert!(failure.message.starts_with(code), "{row}: {}", failure.message);
        assert_eq!(failure.kind, ProviderFailureKind::Unavailable, "{row}: {}", failure.message);
        assert!(elapsed >= deadline, "{row}: failed after {elapsed:?}, before its {deadline:?}");
        assert!(
            elapsed <= deadline + SLACK,
            "{row}: failed after {elapsed:?}, past {deadline:?} + {SLACK:?}"
        );
        assert!(!failure.message.contains(OPENAI_KEY) && !failure.message.contains(ANTHROPIC_KEY));
        report_fault(
            &row,
            code,
            &format!("elapsed_ms={} deadline_ms={}", elapsed.as_millis(), deadline.as_millis()),
        );
    }
}

#[tokio::test]
async fn a_trickled_body_ends_on_the_whole_call_deadline_for_every_client() {
    let trickle = |client: Client| {
        let (content_type, body) = client.success_body();
        // The whole body would take minutes at this rate.
        assert!(TRICKLE_EVERY * u32::try_from(body.len()).expect("small") > TOTAL + SLACK * 10);
        Reply::trickle(content_type, body, TRICKLE_EVERY)
    };
    // Each byte comes well within the idle deadline: only the whole-call one can end it.
    every_client_ends_on("trickled_body", trickle, TOTAL, IDLE, "timeout").await;
}

#[tokio::test]
async fn a_stalled_body_or_stream_ends_on_the_idle_deadline_for_every_client() {
    every_client_ends_on("stalled_body", Client::stalling_reply, NEVER, IDLE, "stream_stalled")
        .await;
}

#[tokio::test]
async fn a_stall_under_the_default_idle_deadline_ends_on_the_whole_call_one() {
    every_client_ends_on(
        "stalled_body_default_idle",
        Client::stalling_reply,
        TOTAL,
        STREAM_IDLE_TIMEOUT,
        "timeout",
    )
    .await;
}

#[tokio::test]
async fn a_stalled_error_body_ends_on_the_idle_deadline_for_every_client() {
    // A 503 whose error body stops after a few bytes: classifying it must not wait forever.
    let stalled_error = |_| Reply::StallJson {
        status: 503,
        body: json!({"error": {"message": "overloaded", "type": "server_error"}}),
        sent: 12,
    };
    every_client_ends_on("stalled_error_body", stalled_error, NEVER, IDLE, "stream_stalled").await;
}

#[tokio::test]
async fn the_documented_defaults_hold() {
    let server = LoopbackServer::start().await;
    assert_eq!(STREAM_IDLE_TIMEOUT, Duration::from_secs(300));
    assert_eq!(DEFAULT_SUMMARY_TIMEOUT, Duration::from_secs(300));
    assert_eq!(DEFAULT_NATIVE_TIMEOUT, Duration::from_secs(600));
    let chat = chat_client(&server);
    assert_eq!(
        (chat.timeout(), chat.idle_timeout()),
        (DEFAULT_SUMMARY_TIMEOUT, STREAM_IDLE_TIMEOUT)
    );
    let anthropic = anthropic_client(&server);
    assert_eq!(
        (anthropic.timeout(), anthropic.idle_timeout()),
        (DEFAULT_SUMMARY_TIMEOUT, STREAM_IDLE_TIMEOUT)
    );
    let codex = codex_client(&server).with_idle_timeout(IDLE);
    assert_eq!((codex.timeout(), codex.idle_timeout()), (DEFAULT_NATIVE_TIMEOUT, IDLE));
}
