//! Session logs, model facts, provider identities, summaries and inputs shared by the tests.

use contextfold_core::checkpoint::{HighWater, coverage_of};
use contextfold_core::compaction::{
    CompactInput, CompactionOutcome, Compactor, MalformedInputCircuit, OPENAI_CODEX_PROVIDER,
    ProviderIdentity, Trigger,
};
use contextfold_core::{
    CheckpointProjection, HistoryCompactCheckpoint, LogBuilder, ModelFacts, ProviderState,
    ReasonCode, RuntimeEvent,
};
use serde_json::json;

/// Session id of every test log.
pub(crate) const SESSION: &str = "s1";
/// Connection slug of the default provider.
pub(crate) const CONNECTION: &str = "codex-main";
/// Model id of the default provider.
pub(crate) const MODEL: &str = "gpt-5-codex";

/// The provider every test uses unless it switches models on purpose.
pub(crate) fn provider() -> ProviderIdentity {
    provider_on(CONNECTION, MODEL)
}

/// An OpenAI Codex provider on `connection` with `model`.
pub(crate) fn provider_on(connection: &str, model: &str) -> ProviderIdentity {
    ProviderIdentity {
        provider: OPENAI_CODEX_PROVIDER.into(),
        connection_slug: connection.into(),
        model_id: model.into(),
    }
}

/// Model facts with a known window.
pub(crate) fn window(tokens: u64) -> ModelFacts {
    ModelFacts { context_window: Some(tokens), ..Default::default() }
}

/// Appends completed turn `t<n>`: a request, one tool call with a result of `result_chars`
/// ASCII characters, and a final answer.
pub(crate) fn add_turn(log: &mut LogBuilder, n: usize, result_chars: usize) {
    let body: String = "let x = compute(y);\n".repeat(result_chars / 20 + 1)[..result_chars].into();
    log.turn(&format!("t{n}"))
        .user(&format!("turn {n}: please look at src/mod_{n}.rs and fix the failing test"))
        .response(Some(&format!("resp-{n}-a")))
        .tool_call(&format!("c{n}"), "shell", json!({"cmd": format!("cat src/mod_{n}.rs")}))
        .response(None)
        .tool_result(&format!("c{n}"), "shell", json!(body))
        .response(Some(&format!("resp-{n}-b")))
        .assistant(&format!("Fixed src/mod_{n}.rs; the test passes now."))
        .response(None);
}

/// A log of `turns` completed turns `t1..=t<turns>`.
pub(crate) fn session(turns: usize, result_chars: usize) -> LogBuilder {
    let mut log = LogBuilder::new(SESSION);
    for n in 1..=turns {
        add_turn(&mut log, n, result_chars);
    }
    log
}

/// Starts current turn `t<n>` with one user request of `chars` characters.
pub(crate) fn start_current_turn(log: &mut LogBuilder, n: usize, chars: usize) -> String {
    let id = format!("t{n}");
    let text: String =
        "continue with the next failing test. ".repeat(chars / 37 + 1)[..chars].into();
    log.turn(&id).user(&text);
    id
}

/// A summary that passes every validation rule; `tag` makes it distinct.
pub(crate) fn good_summary(tag: &str) -> String {
    format!(
        "## Goal\nFix the failing tests in src/ ({tag}).\n\n## Done and In Progress\n- Fixed \
         src/mod_1.rs; `cargo test` passes for it.\n\n## Key Decisions\nNone.\n\n## Next Steps\n\
         - Run `cargo test` again and fix the next failure.\n\n## Critical Context\n- Command: \
         `cat src/mod_1.rs`; function `compute`.\n"
    )
}

/// A valid summary of at least `min_chars` characters (pads the Critical Context section).
pub(crate) fn long_summary(tag: &str, min_chars: usize) -> String {
    let mut text = good_summary(tag);
    let mut n = 0;
    while text.len() < min_chars {
        n += 1;
        text.push_str(&format!("- Path src/mod_{n}.rs holds `compute_{n}`; its test passed.\n"));
    }
    text
}

/// A compaction input with the default provider, the text compactor and an empty circuit.
pub(crate) fn input(
    trigger: Trigger,
    events: &[RuntimeEvent],
    current_turn_id: Option<&str>,
    checkpoint: Option<&HistoryCompactCheckpoint>,
    model: ModelFacts,
) -> CompactInput<'static> {
    CompactInput {
        trigger,
        events: events.to_vec().into(),
        current_turn_id: current_turn_id.map(str::to_owned),
        checkpoint: checkpoint.cloned(),
        model,
        provider: provider(),
        compactor: Compactor::TextSummary,
        new_checkpoint_id: "cp-new".into(),
        now_ms: 1_800_000_000_000,
        provider_options: None,
        summarizer_label: None,
        circuit: MalformedInputCircuit::new(),
        prepared: None,
    }
}

/// A V2 checkpoint over `events[..end]`, built directly (as a ledger would hold it).
pub(crate) fn v2_checkpoint(
    id: &str,
    events: &[RuntimeEvent],
    end: usize,
    summary: &str,
) -> HistoryCompactCheckpoint {
    checkpoint_with(id, events, end, CheckpointProjection::Summary(summary.into()))
}

/// A V3 checkpoint over `events[..end]` bound to `connection` and `model`.
pub(crate) fn v3_checkpoint(
    id: &str,
    events: &[RuntimeEvent],
    end: usize,
    connection: &str,
    model: &str,
    encrypted_content: &str,
) -> HistoryCompactCheckpoint {
    let state = ProviderState::OpenaiCodexRemoteV2 {
        connection_slug: connection.into(),
        model_id: model.into(),
        item_id: "cmp_1".into(),
        encrypted_content: encrypted_content.into(),
    };
    checkpoint_with(id, events, end, CheckpointProjection::ProviderState(state))
}

fn checkpoint_with(
    id: &str,
    events: &[RuntimeEvent],
    end: usize,
    projection: CheckpointProjection,
) -> HistoryCompactCheckpoint {
    HistoryCompactCheckpoint {
        checkpoint_id: id.into(),
        session_id: SESSION.into(),
        created_at_ms: 1_700_000_000_000,
        high_water: HighWater { name: "manual".into(), seq: events[end - 1].seq },
        coverage: coverage_of(&events[..end]).expect("non-empty prefix"),
        projection,
        limitations: Vec::new(),
        estimated_tokens: 100,
        previous_checkpoint_id: None,
        produced_by: Some("test".into()),
        manifest: None,
    }
}

/// The diagnostic codes of an outcome, in order.
pub(crate) fn codes(outcome: &CompactionOutcome) -> Vec<ReasonCode> {
    outcome.diagnostics.iter().map(|d| d.code).collect()
}

/// How often `code` appears in the outcome's diagnostics.
pub(crate) fn count(outcome: &CompactionOutcome, code: ReasonCode) -> usize {
    outcome.diagnostics.iter().filter(|d| d.code == code).count()
}

/// Index one past the last event of turn `t<n>`.
pub(crate) fn end_of_turn(events: &[RuntimeEvent], n: usize) -> usize {
    let id = format!("t{n}");
    events.iter().rposition(|e| e.turn_id == id).expect("turn exists") + 1
}
