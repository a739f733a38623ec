//! Writes (and checks) `tests/fixtures/compaction.json`: compaction inputs with the outcome the
//! native core produces for them, driven by the offline extractive summarizer and an in-memory
//! ledger. The npm package's tests replay the same inputs through `compact()` in Node and must
//! produce equal outcomes.
//!
//! Regenerate with `CONTEXTFOLD_REGENERATE=1 cargo test -p contextfold-conformance --test native_compaction`.

use std::path::PathBuf;

use contextfold_core::compaction::{
    CompactInput, Compaction, CompactionOutcome, Compactor, EXTRACTIVE_PRODUCER, Effect,
    FinishReason, ProviderIdentity, Step, SummaryResponse, Trigger, extractive_summary_for,
};
use contextfold_core::{HistoryCompactCheckpoint, LogBuilder, ModelFacts, RuntimeEvent};
use serde_json::{Value, json};

/// How the scripted summarizer answers.
#[derive(Clone, Copy)]
enum Summarizer {
    /// The extractive summary of the fold, `stop`.
    Extractive,
    /// A completion cut off by the length limit.
    Truncated,
}

/// A long coding session: `turns` turns of request, tool call, large result and answer.
fn session(turns: usize) -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new("sess-npm");
    for turn in 0..turns {
        log.turn(&format!("t{turn}"));
        log.user(&format!("Turn {turn}: fix the failing test in src/module_{turn}.rs"));
        log.response(Some(&format!("resp-{turn}")));
        log.tool_call(
            &format!("call-{turn}"),
            "shell",
            json!({ "command": ["cargo", "test", format!("module_{turn}")] }),
        );
        log.response(None);
        let output = format!(
            "test module_{turn}::works ... FAILED\n{}",
            "assertion failed: left == right\n".repeat(20)
        );
        log.tool_result(&format!("call-{turn}"), "shell", Value::String(output));
        log.response(Some(&format!("resp-{turn}-b")));
        log.assistant(&format!("Fixed the off-by-one in src/module_{turn}.rs; tests pass."));
        log.response(None);
    }
    log.build()
}

fn drive(input: CompactInput<'_>, summarizer: Summarizer) -> CompactionOutcome {
    let events = input.events.clone();
    let mut tx = Compaction::start(input).expect("valid log");
    for _ in 0..64 {
        match tx.poll().expect("driver order") {
            Step::Effect(Effect::Summarize(effect)) => {
                let response = match summarizer {
                    Summarizer::Extractive => SummaryResponse {
                        text: extractive_summary_for(&events, &effect),
                        finish_reason: FinishReason::Stop,
                    },
                    Summarizer::Truncated => SummaryResponse {
                        text: "## Goal\n- fix the tests".into(),
                        finish_reason: FinishReason::Length,
                    },
                };
                tx.handle_summary(Ok(response)).expect("summary awaited");
            }
            Step::Effect(Effect::AppendCheckpoint(_)) => {
                tx.handle_append(Ok(())).expect("append awaited")
            }
            Step::Effect(Effect::CompactNatively(_)) => {
                panic!("text-summary compactor never asks natively")
            }
            Step::Done(outcome) => return *outcome,
        }
    }
    panic!("compaction did not finish")
}

fn case(
    name: &str,
    trigger: Trigger,
    events: Vec<RuntimeEvent>,
    checkpoint: Option<HistoryCompactCheckpoint>,
    summarizer: Summarizer,
    current_turn_id: Option<&str>,
) -> (Value, CompactionOutcome) {
    let model = ModelFacts {
        context_window: Some(6_000),
        fixed_overhead_tokens: 0,
        ..ModelFacts::default()
    };
    let provider = ProviderIdentity {
        provider: "openai-compatible".into(),
        connection_slug: "loopback".into(),
        model_id: "mock-model".into(),
    };
    let checkpoint_id = format!("cp-{name}");
    let now_ms = 1_760_000_000_000;
    let input = CompactInput {
        trigger,
        events: events.as_slice().into(),
        current_turn_id: current_turn_id.map(str::to_owned),
        checkpoint: checkpoint.clone(),
        model: model.clone(),
        provider: provider.clone(),
        compactor: Compactor::TextSummary,
        new_checkpoint_id: checkpoint_id.clone(),
        now_ms,
        provider_options: None,
        summarizer_label: Some(EXTRACTIVE_PRODUCER.into()),
        circuit: Default::default(),
        prepared: None,
    };
    let outcome = drive(input, summarizer);
    let js_input = json!({
        "events": events,
        "checkpoint": checkpoint.map(|c| c.to_value()),
        "model": model,
        "trigger": trigger,
        "provider": provider,
        "currentTurnId": current_turn_id,
        "checkpointId": checkpoint_id,
        "nowMs": now_ms,
        "summarizerLabel": EXTRACTIVE_PRODUCER,
    });
    let summarizer = match summarizer {
        Summarizer::Extractive => "extractive",
        Summarizer::Truncated => "truncated",
    };
    (
        json!({ "name": name, "summarizer": summarizer, "input": js_input, "expected": outcome }),
        outcome,
    )
}

fn fixture() -> Value {
    let first = session(12);
    let (initial, outcome) =
        case("initial_manual", Trigger::Manual, first, None, Summarizer::Extractive, None);
    let recorded = outcome.checkpoint.expect("the initial compaction records a checkpoint");
    let longer = session(48);
    let (rolling, _) = case(
        "rolling_pre_turn",
        Trigger::PreTurn,
        longer.clone(),
        Some(recorded),
        Summarizer::Extractive,
        None,
    );
    let (truncated, _) =
        case("truncated_summary", Trigger::Manual, session(12), None, Summarizer::Truncated, None);
    let (small, _) =
        case("nothing_to_do", Trigger::PreTurn, session(2), None, Summarizer::Extractive, None);
    let (mid, _) =
        case("mid_turn", Trigger::MidTurn, longer, None, Summarizer::Extractive, Some("t47"));
    json!({
        "generator": "tests/tests/native_compaction.rs",
        "cases": [initial, rolling, truncated, small, mid],
    })
}

#[test]
fn fixture_matches_the_native_core() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/compaction.json");
    let text = serde_json::to_string_pretty(&fixture()).expect("fixture serializes") + "\n";
    if std::env::var_os("CONTEXTFOLD_REGENERATE").is_some() {
        std::fs::write(&path, &text).expect("fixture written");
    }
    let committed =
        std::fs::read_to_string(&path).expect("run with CONTEXTFOLD_REGENERATE=1 first");
    assert_eq!(committed, text, "fixture drifted: regenerate it");
    let cases = fixture();
    let outcomes: Vec<&str> = cases["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| c["expected"]["outcome"].as_str().expect("outcome"))
        .collect();
    assert_eq!(outcomes[0], "recorded");
    assert_eq!(outcomes[1], "recorded");
    assert_ne!(outcomes[2], "recorded");
}
