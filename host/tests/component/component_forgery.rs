//! A hostile plugin (`wasm/contextfold-hostile-guest`) that asks the host to append a checkpoint
//! with forged coverage is refused by the core's own validation before anything reaches the
//! ledger; a genuine checkpoint through the same path is accepted (so the refusals are not a
//! blanket "no"). Needs the built components: run `scripts/test-component.sh`.

use crate::component_support;

use component_support::{ledger_with, runner};
use contextfold_core::checkpoint::coverage_of;
use contextfold_core::{LogBuilder, RuntimeEvent};
use contextfold_host::component::bindings::contextfold::compaction::types::{
    CompactorKind, ModelFacts, ProviderIdentity, Trigger,
};
use contextfold_host::component::bindings::exports::contextfold::compaction::compaction::CompactRequest;
use contextfold_host::component::{
    ComponentError, ExtractiveProvider, MemoryLedger, Plugin, RunnerLimits,
};
use serde_json::{Value, json};

const SESSION: &str = "forged";

fn log() -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new(SESSION);
    for turn in 1..=4 {
        log.turn(&format!("t{turn}")).user(&format!("turn {turn}"));
        log.response(Some(&format!("r{turn}"))).assistant("done").response(None);
    }
    log.build()
}

/// A well-formed checkpoint over `events[..count]`, with true coverage.
fn genuine(events: &[RuntimeEvent], id: &str, previous: Option<&str>, count: usize) -> Value {
    let coverage = coverage_of(&events[..count]).expect("non-empty prefix");
    let mut checkpoint = json!({
        "schemaVersion": 2,
        "checkpointId": id,
        "sessionId": SESSION,
        "createdAtMs": 1_800_000_000_000u64,
        "highWater": { "name": "manual", "seq": events[count - 1].seq },
        "coverage": coverage,
        "summary": "The user asked for four turns; each was answered.",
        "limitations": ["exact wording remains in the ledger"],
        "estimatedTokens": 20,
    });
    if let Some(previous) = previous {
        checkpoint["previousCheckpointId"] = json!(previous);
    }
    checkpoint
}

fn hostile(ledger: &MemoryLedger) -> Plugin {
    let limits = RunnerLimits { fuel_per_call: 200_000_000, memory_bytes: 32 << 20 };
    runner("contextfold_hostile.wasm", limits).plugin(ledger.clone(), ExtractiveProvider)
}

/// Has the hostile plugin append `checkpoint`; returns the guest's report of the host's answer.
fn forge(plugin: &mut Plugin, checkpoint: &Value) -> (String, String) {
    let request = CompactRequest {
        session_id: SESSION.into(),
        trigger: Trigger::Manual,
        current_turn: None,
        model: ModelFacts {
            context_window: Some(8_000),
            fixed_overhead_tokens: 0,
            prepare_at_percent: None,
        },
        provider: ProviderIdentity {
            provider: "openai".into(),
            connection_slug: "c".into(),
            model_id: "m".into(),
        },
        compactor: CompactorKind::TextSummary,
        checkpoint_id: "unused".into(),
        now_ms: 1,
        summarizer_label: Some(format!("forge:{checkpoint}")),
        circuit_json: None,
        calibration_json: None,
        prepared: None,
    };
    match plugin.compact(&request) {
        Err(ComponentError::Guest(report)) => (report.code, report.message),
        other => panic!("the hostile guest reports through a driver error, got {other:?}"),
    }
}

fn assert_refused(plugin: &mut Plugin, checkpoint: &Value, code: &str) {
    let before = plugin.rejected_checkpoints().len();
    let (report, message) = forge(plugin, checkpoint);
    assert_eq!(report, "hostile_append_refused", "{message}");
    assert!(message.contains(&format!("({code})")), "expected {code} in: {message}");
    let rejections = plugin.rejected_checkpoints();
    assert_eq!(rejections.len(), before + 1);
    assert_eq!(rejections[before].code(), code, "{}", rejections[before]);
}

#[test]
#[ignore = "needs the built components: scripts/test-component.sh runs it"]
fn forged_coverage_is_refused_and_nothing_is_written() {
    let events = log();
    let ledger = ledger_with(SESSION, events.clone());
    let mut plugin = hostile(&ledger);

    let mut digest = genuine(&events, "cp-1", None, 6);
    digest["coverage"]["sourceDigest"] = json!(format!("sha256:{}", "0".repeat(64)));
    assert_refused(&mut plugin, &digest, "source_hash_mismatch");

    let mut beyond = genuine(&events, "cp-1", None, 6);
    beyond["coverage"]["eventCount"] = json!(events.len() + 3);
    assert_refused(&mut plugin, &beyond, "coverage_miss");

    let mut boundary = genuine(&events, "cp-1", None, 6);
    boundary["coverage"]["through"] = genuine(&events, "x", None, 5)["coverage"]["through"].clone();
    assert_refused(&mut plugin, &boundary, "coverage_miss");

    let mut elsewhere = genuine(&events, "cp-1", None, 6);
    elsewhere["sessionId"] = json!("someone-else");
    assert_refused(&mut plugin, &elsewhere, "session_mismatch");

    assert_refused(&mut plugin, &json!({"schemaVersion": 2}), "checkpoint_invalid");
    assert!(ledger.records().is_empty(), "a refused checkpoint was written");
    assert_eq!(plugin.traps(), 0, "refusals are answers, not traps");
}

#[test]
#[ignore = "needs the built components: scripts/test-component.sh runs it"]
fn a_genuine_checkpoint_is_accepted_and_a_regressing_successor_is_refused() {
    let events = log();
    let ledger = ledger_with(SESSION, events.clone());
    let mut plugin = hostile(&ledger);
    let (report, message) = forge(&mut plugin, &genuine(&events, "cp-1", None, 6));
    assert_eq!(report, "hostile_append_accepted", "{message}");
    assert_eq!(ledger.records().len(), 1);
    assert_eq!(ledger.latest(SESSION).map(|cp| cp.checkpoint_id).as_deref(), Some("cp-1"));

    // High water moves forward only: a true but shorter coverage may not replace cp-1.
    assert_refused(&mut plugin, &genuine(&events, "cp-2", Some("cp-1"), 4), "successor_conflict");
    // A stale writer that names no predecessor loses the ledger's compare-and-swap.
    let (report, message) = forge(&mut plugin, &genuine(&events, "cp-3", None, 8));
    assert_eq!(report, "hostile_append_refused");
    assert!(message.contains("latest checkpoint is"), "{message}");
    // The legitimate successor goes through.
    let (report, message) = forge(&mut plugin, &genuine(&events, "cp-4", Some("cp-1"), 8));
    assert_eq!(report, "hostile_append_accepted", "{message}");
    assert_eq!(ledger.records().len(), 2);
    assert_eq!(plugin.rejected_checkpoints().len(), 1);
}
