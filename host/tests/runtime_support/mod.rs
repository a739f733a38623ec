//! Support for the session-runtime tests: a session configuration, a history with large tool
//! results, a runtime over a fresh SQLite file, and turn helpers.
#![allow(dead_code, unreachable_pub)] // each test binary uses a different part; items are test-local

use std::sync::Arc;

use contextfold_core::compaction::{Compactor, ProviderIdentity};
use contextfold_core::{LogBuilder, ModelFacts, RuntimeEvent};
use contextfold_host::runtime::{NativeCompactor, SessionConfig, SessionRuntime, Summarizer};
use contextfold_host::storage::{Store, agent_run_kind};
use serde_json::json;

/// Context window of the tests' model.
pub const WINDOW: u64 = 8_000;

/// Session `s` on `provider` with `compactor`.
pub fn config_for(provider: ProviderIdentity, compactor: Compactor) -> SessionConfig {
    SessionConfig {
        session_id: "s".into(),
        model: ModelFacts { context_window: Some(WINDOW), ..Default::default() },
        provider,
        compactor,
    }
}

/// Session `s` on a local provider with the text summary.
pub fn config() -> SessionConfig {
    let provider = ProviderIdentity {
        provider: "local".into(),
        connection_slug: "c".into(),
        model_id: "m".into(),
    };
    config_for(provider, Compactor::TextSummary)
}

/// `turns` completed turns, each with a large tool result (about 1,500 tokens).
pub fn history(turns: usize) -> LogBuilder {
    let mut builder = LogBuilder::new("s");
    for turn in 0..turns {
        builder
            .turn(&format!("t{turn}"))
            .user(&format!("fix the failing test number {turn} in src/lib.rs"));
        builder.response(Some(&format!("r{turn}"))).tool_call(
            &format!("c{turn}"),
            "shell",
            json!({"cmd": "cargo test"}),
        );
        builder.response(None);
        builder.tool_result(
            &format!("c{turn}"),
            "shell",
            json!("test lib::case ... FAILED\n".repeat(240)),
        );
        builder.assistant(&format!("turn {turn}: fixed src/lib.rs"));
    }
    builder
}

/// A runtime for `config` over a new SQLite file (the directory lives as long as the guard).
pub fn runtime_with<S: Summarizer, N: NativeCompactor>(
    config: SessionConfig,
    summarizer: S,
    native: N,
) -> (tempfile::TempDir, Arc<Store>, SessionRuntime<S, N>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(Store::open(dir.path().join("rt.sqlite")).expect("open"));
    let runtime = SessionRuntime::new(Arc::clone(&store), config, summarizer, native);
    (dir, store, runtime)
}

/// Begins `turn` and appends its user message.
pub async fn start_turn<S: Summarizer, N: NativeCompactor>(
    runtime: &SessionRuntime<S, N>,
    builder: &mut LogBuilder,
    turn: &str,
) {
    runtime.begin_turn(turn).expect("begin");
    let before = builder.events().len();
    builder.turn(turn).user("continue with the next failure");
    runtime.append(builder.events()[before..].to_vec()).await.expect("append");
}

/// Appends one agent step of the active turn: a tool call with a `size`-byte result.
pub async fn append_step<S: Summarizer, N: NativeCompactor>(
    runtime: &SessionRuntime<S, N>,
    store: &Store,
    size: usize,
) {
    let events: Vec<RuntimeEvent> = store.load_events("s").expect("load");
    let mut step = LogBuilder::extend(events.clone());
    step.response(Some("r-now")).tool_call("c-now", "shell", json!({"cmd": "cat big.log"}));
    step.response(None).tool_result("c-now", "shell", json!("y".repeat(size)));
    runtime.append(step.events()[events.len()..].to_vec()).await.expect("append step");
}

/// The AgentRun event kinds of `run_id`, in order.
pub fn run_kinds(store: &Store, run_id: &str) -> Vec<String> {
    store
        .agent_run_events("s")
        .expect("ledger")
        .into_iter()
        .filter(|r| r.run_id == run_id)
        .map(|r| r.kind)
        .collect()
}

/// The AgentRun events of a manual compaction Run that recorded a checkpoint.
pub const RECORDED_RUN: [&str; 4] = [
    agent_run_kind::RUN_STARTED,
    agent_run_kind::CHECKPOINT_RECORDED,
    agent_run_kind::COMPACTION_OUTCOME,
    agent_run_kind::RUN_COMPLETED,
];
