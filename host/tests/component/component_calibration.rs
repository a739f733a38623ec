//! Calibration through the real component: `projection.calibrate` learns from usage facts,
//! `projection.project` and both compaction exports measure with the calibration they are
//! given, and a bad fact is a typed `invalid-input`. Needs the built component: run
//! `scripts/test-component.sh`.

use crate::component_support;

use component_support::{compactor_plugin, ledger_with};
use contextfold_core::{LogBuilder, RuntimeEvent};
use contextfold_host::component::bindings::contextfold::compaction::types::{
    CompactorKind, ModelFacts, OutcomeKind, ProviderIdentity, Trigger,
};
use contextfold_host::component::bindings::exports::contextfold::compaction::compaction::CompactRequest;
use contextfold_host::component::bindings::exports::contextfold::compaction::projection::ProjectRequest;
use contextfold_host::component::{ComponentError, GuestError, MemoryLedger};
use serde_json::{Value, json};

const SESSION: &str = "calibrated";

fn log(turns: u64) -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new(SESSION);
    for turn in 1..=turns {
        log.turn(&format!("t{turn}")).user(&format!("turn {turn}: fix src/mod_{turn}.rs"));
        log.response(Some(&format!("r{turn}")));
        log.tool_call(&format!("c{turn}"), "shell", json!({"cmd": "cargo test"}));
        log.response(None);
        log.tool_result(&format!("c{turn}"), "shell", json!("error[E0308]\n".repeat(40)));
        log.response(Some(&format!("f{turn}"))).assistant("Fixed.").response(None);
    }
    log.build()
}

fn provider() -> ProviderIdentity {
    ProviderIdentity {
        provider: "openai".into(),
        connection_slug: "main".into(),
        model_id: "gpt".into(),
    }
}

fn project_request(turns: u64, window: u64, calibration_json: Option<String>) -> ProjectRequest {
    ProjectRequest {
        events: serde_json::to_string(&log(turns)).expect("events"),
        current_turn: None,
        checkpoint: None,
        model: ModelFacts {
            context_window: Some(window),
            fixed_overhead_tokens: 0,
            prepare_at_percent: None,
        },
        provider: Some(provider()),
        fail_open: false,
        calibration_json,
    }
}

fn fact(estimated: u64, input: u64) -> String {
    json!({ "provider": "openai", "model": "gpt", "estimatedInputTokens": estimated,
            "kind": "response", "inputTokens": input })
    .to_string()
}

#[test]
#[ignore = "needs the built component: scripts/test-component.sh runs it"]
fn a_learned_calibration_scales_the_projection_and_decides_fits() {
    let mut plugin = compactor_plugin(MemoryLedger::default());
    let plain: Value = serde_json::from_str(
        &plugin.project(&project_request(4, 1_000_000, None)).expect("projects"),
    )
    .expect("json");
    let estimate = plain["estimatedTokens"].as_u64().expect("tokens");
    assert_eq!(plain["ratioPermille"], 1000);
    assert_eq!(plain["uncalibratedTokens"], estimate);

    let calibration = plugin.calibrate(None, &fact(estimate, estimate * 3 / 2)).expect("learns");
    let parsed: Value = serde_json::from_str(&calibration).expect("calibration JSON");
    assert_eq!(parsed["models"][0]["samplesPermille"], json!([1500]));
    let calibrated: Value = serde_json::from_str(
        &plugin
            .project(&project_request(4, 1_000_000, Some(calibration.clone())))
            .expect("projects"),
    )
    .expect("json");
    // The learned ratio plus the core's 2% calibration margin (`CALIBRATION_MARGIN_PERMILLE`).
    assert_eq!(calibrated["ratioPermille"], 1530);
    assert_eq!(calibrated["uncalibratedTokens"], estimate);
    let scaled = calibrated["estimatedTokens"].as_u64().expect("tokens");
    assert!(scaled.abs_diff(estimate * 153 / 100) <= 40, "{scaled} vs 1.53 x {estimate}");

    // A window that holds the estimate but not 1.5 times it.
    let window = (estimate * 13 / 10) * 4 / 3 + 8;
    let mut fits = |calibration: Option<String>| -> bool {
        let out = plugin.project(&project_request(4, window, calibration)).expect("projects");
        serde_json::from_str::<Value>(&out).expect("json")["fits"] == true
    };
    assert!(fits(None));
    assert!(!fits(Some(calibration)));
}

#[test]
#[ignore = "needs the built component: scripts/test-component.sh runs it"]
fn bad_facts_and_calibrations_are_typed_and_compaction_follows_the_calibration() {
    let mut plugin = compactor_plugin(ledger_with(SESSION, log(12)));
    let code = |result: Result<String, ComponentError>| match result {
        Err(ComponentError::Guest(GuestError { kind: "invalid_input", code, .. })) => code,
        other => format!("{other:?}"),
    };
    assert_eq!(code(plugin.calibrate(None, &fact(100, 0))), "invalid_usage_fact");
    assert_eq!(code(plugin.calibrate(None, "{\"kind\":\"guess\"}")), "invalid_usage_fact");
    assert_eq!(
        code(plugin.calibrate(Some("{\"models\":3}"), &fact(100, 90))),
        "invalid_calibration"
    );

    let calibration = plugin.calibrate(None, &fact(1000, 1500)).expect("learns");
    let plain = plugin.project(&project_request(12, 1_000_000, None)).expect("projects");
    let plain: Value = serde_json::from_str(&plain).expect("json");
    let estimate = plain["estimatedTokens"].as_u64().expect("tokens");
    let window = (estimate * 13 / 10) * 4 / 3 + 8;
    let request = |calibration_json: Option<String>, id: &str| CompactRequest {
        session_id: SESSION.into(),
        trigger: Trigger::PreTurn,
        current_turn: None,
        model: ModelFacts {
            context_window: Some(window),
            fixed_overhead_tokens: 0,
            prepare_at_percent: None,
        },
        provider: provider(),
        compactor: CompactorKind::TextSummary,
        checkpoint_id: id.into(),
        now_ms: 1_800_000_000_000,
        summarizer_label: None,
        circuit_json: None,
        calibration_json,
        prepared: None,
    };
    let quiet = plugin.compact(&request(None, "cp-quiet")).expect("compacts");
    assert_eq!(quiet.outcome, OutcomeKind::Skipped, "{}", quiet.outcome_json);
    let folded = plugin.compact(&request(Some(calibration), "cp-1")).expect("compacts");
    assert_eq!(folded.outcome, OutcomeKind::Recorded, "{}", folded.outcome_json);
}
