//! Shared support of the reliability tests (fault matrix, crash loop, concurrency, secrets):
//! runtime adapters for the real provider clients, a session generator, and an independent
//! verifier that reads the SQLite file through its own connection.
#![allow(dead_code, unreachable_pub)] // each test binary uses a different part

pub mod verify;
pub mod worker;

use std::sync::Arc;

use contextfold_core::compaction::{
    Compactor, NativeRequest, ProviderFailure, ProviderIdentity, SummarizeEffect, SummaryRequest,
    SummaryResponse,
};
use contextfold_core::{LogBuilder, ModelFacts, RuntimeEvent};
use contextfold_host::providers::{CodexNativeCompactor, OpenAiChatSummarizer};
use contextfold_host::runtime::{NativeCompactor, SessionConfig, SessionRuntime, Summarizer};
use contextfold_host::storage::Store;
use serde_json::{Value, json};

/// The runtime's [`Summarizer`] backed by the real Chat Completions client.
#[derive(Clone)]
pub struct ChatSummarizer(pub OpenAiChatSummarizer);

impl Summarizer for ChatSummarizer {
    async fn summarize(
        &self,
        request: &SummaryRequest,
        _effect: &SummarizeEffect,
        _events: &[RuntimeEvent],
    ) -> Result<SummaryResponse, ProviderFailure> {
        self.0.summarize(request).await
    }
}

/// The runtime's [`NativeCompactor`] backed by the real Codex client.
#[derive(Clone)]
pub struct CodexCompactor(pub CodexNativeCompactor);

impl NativeCompactor for CodexCompactor {
    async fn compact(&self, request: &NativeRequest) -> Result<Vec<Value>, ProviderFailure> {
        self.0.compact(request).await
    }
}

/// The session id every reliability test uses.
pub const SESSION: &str = "s-rel";

/// A session config for the text summarizer or the Codex compactor.
pub fn config(window: u64, native: bool) -> SessionConfig {
    SessionConfig {
        session_id: SESSION.into(),
        model: ModelFacts { context_window: Some(window), ..Default::default() },
        provider: ProviderIdentity {
            provider: if native { "openai-codex".into() } else { "openai-chat".into() },
            connection_slug: "loopback".into(),
            model_id: if native { "gpt-5-codex".into() } else { "gpt-4.1-mini".into() },
        },
        compactor: if native { Compactor::OpenaiCodexNative } else { Compactor::TextSummary },
    }
}

/// `turns` completed turns, each with a large tool result (about 1,500 tokens).
pub fn history(turns: usize) -> LogBuilder {
    let mut builder = LogBuilder::new(SESSION);
    for turn in 0..turns {
        extend(&mut builder, turn);
    }
    builder
}

/// Appends completed turn number `turn` to `builder`.
pub fn extend(builder: &mut LogBuilder, turn: usize) {
    builder
        .turn(&format!("t{turn}"))
        .user(&format!("fix the failing test number {turn} in src/lib.rs"));
    builder.response(Some(&format!("r{turn}"))).tool_call(
        &format!("c{turn}"),
        "shell",
        json!({"cmd": format!("cargo test case_{turn}")}),
    );
    builder.response(None);
    builder.tool_result(
        &format!("c{turn}"),
        "shell",
        json!("test lib::case ... FAILED\n".repeat(194)),
    );
    builder.assistant(&format!("turn {turn}: fixed src/lib.rs"));
}

/// A new store at `path` holding a session of `turns` completed turns.
pub fn seeded_store(path: &std::path::Path, turns: usize) -> Arc<Store> {
    let store = Arc::new(Store::open(path).expect("open store"));
    store.append_events(SESSION, &history(turns).build()).expect("append history");
    store
}

/// A runtime over `store`.
pub fn runtime<S: Summarizer, N: NativeCompactor>(
    store: &Arc<Store>,
    window: u64,
    native: bool,
    summarizer: S,
    compactor: N,
) -> SessionRuntime<S, N> {
    SessionRuntime::new(Arc::clone(store), config(window, native), summarizer, compactor)
}

/// Prints one injected fault as a machine-countable line.
pub fn report_fault(row: &str, outcome: &str, detail: &str) {
    eprintln!("FAULT-INJECTED row={row} outcome={outcome} detail={detail}");
}
