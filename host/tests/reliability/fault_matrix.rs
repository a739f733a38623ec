//! The design's failure table, provider rows, driven through the native host: a real SQLite
//! file, the session runtime and the real provider clients over loopback HTTP against scripted
//! servers. Every row states, and this test asserts by equality:
//!
//! - the outcome kind and its exact reason code;
//! - the exact ordered list of diagnostic codes (the core pushes diagnostics in the order its
//!   state machine takes its steps, a `Vec`, so the order is defined and part of the contract);
//! - the exact number of HTTP requests each scripted server received (the clients have no HTTP
//!   retry of their own, see `host/src/providers/transport.rs`: every extra request is a core
//!   decision: one stricter repair, one smaller overflow retry, one native-to-text fallback);
//! - an independent check that no canonical event changed and no checkpoint claims coverage it
//!   does not have.
//!
//! `rows.rs` holds the provider rows on a fresh store (manual compaction); `states.rs` the rows
//! that need durable state first (a previous checkpoint, the persisted circuit) or an automatic
//! trigger. Every injected fault prints a `FAULT-INJECTED` line.

use crate::providers;
use crate::reliability_support;
mod rows;
mod states;

use std::time::Duration;

use contextfold_core::compaction::{CompactionOutcome, OutcomeKind};
use contextfold_host::runtime::{CompactionReport, StopSignal};
use contextfold_host::storage::agent_run_kind;
use providers::fixtures::*;
use providers::server::{LoopbackServer, Reply};
use reliability_support::verify::{assert_intact, canonical_rows, recorded_checkpoints};
use reliability_support::*;

/// What a row must end in, exactly.
#[derive(Debug, Clone)]
pub(crate) struct Expect {
    pub(crate) outcome: OutcomeKind,
    /// Schema of the recorded checkpoint (`Some` exactly when a checkpoint is recorded).
    pub(crate) schema: Option<u32>,
    pub(crate) reason: &'static str,
    /// Every diagnostic code, in order.
    pub(crate) diagnostics: Vec<&'static str>,
    /// Requests the Chat Completions server must receive.
    pub(crate) chat_requests: usize,
    /// Requests the Codex (Responses) server must receive.
    pub(crate) codex_requests: usize,
}

/// A recorded checkpoint of `schema`.
pub(crate) fn recorded(
    schema: u32,
    diagnostics: &[&'static str],
    chat: usize,
    codex: usize,
) -> Expect {
    Expect {
        outcome: OutcomeKind::Recorded,
        schema: Some(schema),
        reason: "checkpoint_recorded",
        diagnostics: diagnostics.to_vec(),
        chat_requests: chat,
        codex_requests: codex,
    }
}

/// No checkpoint: `outcome` with `reason`.
pub(crate) fn failed(
    outcome: OutcomeKind,
    reason: &'static str,
    diagnostics: &[&'static str],
    chat: usize,
    codex: usize,
) -> Expect {
    Expect {
        outcome,
        schema: None,
        reason,
        diagnostics: diagnostics.to_vec(),
        chat_requests: chat,
        codex_requests: codex,
    }
}

/// A manual compaction that failed open with `reason`: its diagnostics end with the note.
pub(crate) fn failed_open(
    reason: &'static str,
    diagnostics: &[&'static str],
    chat: usize,
) -> Expect {
    let mut all = diagnostics.to_vec();
    all.push("context_compaction_failed_open");
    failed(OutcomeKind::FailedOpen, reason, &all, chat, 0)
}

/// The two scripted servers of a row.
pub(crate) struct Servers {
    pub(crate) chat: LoopbackServer,
    pub(crate) codex: LoopbackServer,
}

impl Servers {
    pub(crate) async fn start(chat: Vec<Reply>, codex: Vec<Reply>) -> Self {
        let servers =
            Self { chat: LoopbackServer::start().await, codex: LoopbackServer::start().await };
        for reply in chat {
            servers.chat.script(reply);
        }
        for reply in codex {
            servers.codex.script(reply);
        }
        servers
    }

    /// The real clients pointed at the servers.
    pub(crate) fn clients(&self, timeout: Option<Duration>) -> (ChatSummarizer, CodexCompactor) {
        let (mut chat, mut codex) = (chat_client(&self.chat), codex_client(&self.codex));
        if let Some(timeout) = timeout {
            chat = chat.with_timeout(timeout);
            codex = codex.with_timeout(timeout);
        }
        (ChatSummarizer(chat), CodexCompactor(codex))
    }
}

/// [`assert_expected`], then the `FAULT-INJECTED` line of the row.
pub(crate) fn check(row: &str, outcome: &CompactionOutcome, expect: &Expect, servers: &Servers) {
    let (codes, seen) = assert_expected(row, outcome, expect, servers);
    report_fault(
        row,
        &format!("{:?}", outcome.outcome),
        &format!(
            "reason={} diagnostics={codes:?} requests=chat:{}/codex:{}",
            outcome.reason.as_str(),
            seen.0,
            seen.1
        ),
    );
}

/// Asserts `outcome` is exactly `expect` (kind, reason, ordered diagnostics, request counts,
/// schema), printing expected and found on a mismatch. Returns the codes and the counts.
pub(crate) fn assert_expected<'a>(
    row: &str,
    outcome: &'a CompactionOutcome,
    expect: &Expect,
    servers: &Servers,
) -> (Vec<&'a str>, (usize, usize)) {
    // The quality gate's scores follow every accepted summary; they measure, they do not
    // decide, so the rows compare the decisions.
    let codes: Vec<&str> = outcome
        .diagnostics
        .iter()
        .map(|d| d.code.as_str())
        .filter(|code| *code != "summary_retention")
        .collect();
    let reason = outcome.reason.as_str();
    assert_eq!(
        (outcome.outcome, reason),
        (expect.outcome, expect.reason),
        "{row}: outcome/reason: expected {:?}/{}, got {:?}/{reason}; diagnostics {codes:?}",
        expect.outcome,
        expect.reason,
        outcome.outcome,
    );
    assert_eq!(
        codes, expect.diagnostics,
        "{row}: diagnostics: expected {:?}, got {codes:?}",
        expect.diagnostics
    );
    let seen = (servers.chat.requests(), servers.codex.requests());
    assert_eq!(
        seen,
        (expect.chat_requests, expect.codex_requests),
        "{row}: (chat, codex) requests: expected ({}, {}), got {seen:?}",
        expect.chat_requests,
        expect.codex_requests,
    );
    let schema = outcome.checkpoint.as_ref().map(|c| c.schema_version());
    assert_eq!(schema, expect.schema, "{row}: checkpoint schema");
    (codes, seen)
}

/// One provider row on a fresh store: manual compaction.
pub(crate) struct Row {
    pub(crate) name: &'static str,
    pub(crate) native: bool,
    pub(crate) chat: Vec<Reply>,
    pub(crate) codex: Vec<Reply>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) expect: Expect,
}

async fn run_row(row: Row) -> CompactionReport {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("fault.sqlite");
    let store = seeded_store(&path, 6);
    let before = canonical_rows(&path, SESSION);
    let recorded_before = recorded_checkpoints(&path, SESSION).len();
    let servers = Servers::start(row.chat, row.codex).await;
    let (chat, codex) = servers.clients(row.timeout);
    let runtime = runtime(&store, 16_000, row.native, chat, codex);
    let report =
        runtime.compact_manually(&StopSignal::new()).await.expect("the runtime returns an outcome");
    let outcome = &report.outcome;
    check(row.name, outcome, &row.expect, &servers);
    let found = assert_intact(&path, SESSION, &before);
    let after = canonical_rows(&path, SESSION);
    if outcome.outcome == OutcomeKind::Recorded {
        assert_eq!(found.checkpoints, recorded_before + 1, "{}", row.name);
        assert_eq!(after.len(), before.len(), "{}: a recorded compaction wrote events", row.name);
    } else {
        assert!(outcome.checkpoint.is_none());
        assert_eq!(
            found.checkpoints, recorded_before,
            "{}: a failed compaction wrote a checkpoint",
            row.name
        );
        // The manual Run's visible failure note is the only new canonical event.
        assert_eq!(after.len(), before.len() + 1, "{}", row.name);
        assert!(after.last().expect("note").2.contains("context_compaction_failed_open"));
    }
    let facts = store.agent_run_events(SESSION).expect("agent run events");
    assert!(
        facts.iter().any(|f| f.kind == agent_run_kind::COMPACTION_OUTCOME),
        "{}: outcome not recorded",
        row.name
    );
    if row.name == "http_400_context_overflow" {
        // The one retry is the smaller request (tool results omitted), not a resend.
        let sent = servers.chat.received();
        let size = |i: usize| sent[i].body.to_string().len();
        assert!(size(1) < size(0), "overflow retry not smaller: {} >= {}", size(1), size(0));
    }
    drop(dir);
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_provider_row_of_the_failure_table() {
    let rows = rows::rows();
    let count = rows.len();
    for row in rows {
        run_row(row).await;
    }
    eprintln!("provider fault rows: {count}");
}
