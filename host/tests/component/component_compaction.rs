//! The blocking `compaction.compact` export of the real component, driven through the host's
//! in-memory ledger and the extractive provider: it records, rolls forward, recovers from a
//! damaged projection, fails open without writing, and matches the native core byte for byte.
//! Needs the built component: run `scripts/test-component.sh`.

use crate::component_support;

use component_support::{compactor_plugin, ledger_with};
use contextfold_core::compaction::{
    CompactInput, Compaction, Compactor, EXTRACTIVE_PRODUCER, Effect, FinishReason,
    MalformedInputCircuit, ProviderIdentity as CoreIdentity, Step, SummaryResponse,
    Trigger as CoreTrigger, extractive_summary_for,
};
use contextfold_core::{LogBuilder, ModelFacts as CoreFacts, RuntimeEvent};
use contextfold_host::component::ComponentError;
use contextfold_host::component::bindings::contextfold::compaction::types::{
    CompactorKind, ModelFacts, OutcomeKind, ProviderIdentity, Trigger,
};
use contextfold_host::component::bindings::exports::contextfold::compaction::compaction::CompactRequest;
use serde_json::{Value, json};

const SESSION: &str = "blocking";

fn log(turns: u64) -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new(SESSION);
    for turn in 1..=turns {
        log.turn(&format!("t{turn}")).user(&format!("turn {turn}: fix src/mod_{turn}.rs"));
        log.response(Some(&format!("r{turn}")));
        log.tool_call(
            &format!("c{turn}"),
            "shell",
            json!({"cmd": format!("cargo test mod_{turn}")}),
        );
        log.response(None);
        log.tool_result(
            &format!("c{turn}"),
            "shell",
            json!("error[E0308]: mismatched types\n".repeat(40)),
        );
        log.response(Some(&format!("f{turn}"))).assistant("Fixed; moving on.").response(None);
    }
    log.build()
}

fn request(checkpoint_id: &str, window: u64) -> CompactRequest {
    CompactRequest {
        session_id: SESSION.into(),
        trigger: Trigger::Manual,
        current_turn: None,
        model: ModelFacts {
            context_window: Some(window),
            fixed_overhead_tokens: 0,
            prepare_at_percent: None,
        },
        provider: ProviderIdentity {
            provider: "openai".into(),
            connection_slug: "main".into(),
            model_id: "gpt".into(),
        },
        compactor: CompactorKind::TextSummary,
        checkpoint_id: checkpoint_id.into(),
        now_ms: 1_800_000_000_000,
        summarizer_label: Some(EXTRACTIVE_PRODUCER.into()),
        circuit_json: None,
        calibration_json: None,
        prepared: None,
    }
}

/// The same compaction on the native core, for comparison.
fn native_outcome(events: Vec<RuntimeEvent>, checkpoint_id: &str, window: u64) -> Value {
    let mut tx = Compaction::start(CompactInput {
        trigger: CoreTrigger::Manual,
        events: events.as_slice().into(),
        current_turn_id: None,
        checkpoint: None,
        model: CoreFacts { context_window: Some(window), ..CoreFacts::default() },
        provider: CoreIdentity {
            provider: "openai".into(),
            connection_slug: "main".into(),
            model_id: "gpt".into(),
        },
        compactor: Compactor::TextSummary,
        new_checkpoint_id: checkpoint_id.into(),
        now_ms: 1_800_000_000_000,
        provider_options: None,
        summarizer_label: Some(EXTRACTIVE_PRODUCER.into()),
        circuit: MalformedInputCircuit::new(),
        prepared: None,
    })
    .expect("valid log");
    loop {
        match tx.poll().expect("order") {
            Step::Effect(Effect::Summarize(e)) => {
                let text = extractive_summary_for(&events, &e);
                let answer = SummaryResponse { text, finish_reason: FinishReason::Stop };
                tx.handle_summary(Ok(answer)).expect("order");
            }
            Step::Effect(Effect::AppendCheckpoint(_)) => tx.handle_append(Ok(())).expect("order"),
            Step::Effect(Effect::CompactNatively(_)) => unreachable!("text summary only"),
            Step::Done(outcome) => return serde_json::to_value(*outcome).expect("serializes"),
        }
    }
}

#[test]
#[ignore = "needs the built component: scripts/test-component.sh runs it"]
fn records_rolls_forward_and_matches_the_native_core() {
    let ledger = ledger_with(SESSION, log(6));
    let mut plugin = compactor_plugin(ledger.clone());
    let first = plugin.compact(&request("cp-1", 3_000)).expect("compacts");
    assert_eq!(
        (first.outcome, first.reason.as_str()),
        (OutcomeKind::Recorded, "checkpoint_recorded")
    );
    let outcome: Value = serde_json::from_str(&first.outcome_json).expect("outcome JSON");
    assert_eq!(outcome, native_outcome(log(6), "cp-1", 3_000), "component and native differ");
    let recorded = ledger.latest(SESSION).expect("the checkpoint was appended");
    assert_eq!(outcome["checkpoint"], recorded.to_value());
    assert_eq!(ledger.records().len(), 1);

    ledger.set_events(SESSION, log(12));
    let second = plugin.compact(&request("cp-2", 3_000)).expect("compacts again");
    assert_eq!(second.outcome, OutcomeKind::Recorded, "{}", second.outcome_json);
    let rolled = ledger.latest(SESSION).expect("rolled");
    assert_eq!(rolled.previous_checkpoint_id.as_deref(), Some("cp-1"));
    assert!(rolled.coverage.event_count > recorded.coverage.event_count);
    assert_eq!(plugin.traps(), 0);
}

#[test]
#[ignore = "needs the built component: scripts/test-component.sh runs it"]
fn a_damaged_projection_is_recovered_from_the_recorded_events() {
    let ledger = ledger_with(SESSION, log(6));
    let mut plugin = compactor_plugin(ledger.clone());
    plugin.compact(&request("cp-1", 3_000)).expect("compacts");
    ledger.damage_projection(SESSION);
    ledger.set_events(SESSION, log(12));
    let rolled = plugin.compact(&request("cp-2", 3_000)).expect("compacts after recovery");
    assert_eq!(rolled.outcome, OutcomeKind::Recorded, "{}", rolled.outcome_json);
    let latest = ledger.latest(SESSION).expect("recorded");
    assert_eq!(latest.previous_checkpoint_id.as_deref(), Some("cp-1"), "recovery found cp-1");
}

#[test]
#[ignore = "needs the built component: scripts/test-component.sh runs it"]
fn a_failed_append_fails_open_and_writes_nothing() {
    let ledger = ledger_with(SESSION, log(6));
    ledger.fail_next_appends(1);
    let mut plugin = compactor_plugin(ledger.clone());
    let result = plugin.compact(&request("cp-1", 3_000)).expect("the call itself succeeds");
    assert_eq!(result.outcome, OutcomeKind::FailedOpen, "{}", result.outcome_json);
    assert_eq!(result.reason, "append_failed");
    assert!(ledger.records().is_empty());
    assert!(ledger.latest(SESSION).is_none());
    // A capacity trigger (unlike a manual one) compacts only over budget.
    let mut roomy = request("cp-1", 200_000);
    roomy.trigger = Trigger::PreTurn;
    let below = plugin.compact(&roomy).expect("compacts");
    assert_eq!((below.outcome, below.reason.as_str()), (OutcomeKind::Skipped, "below_high_water"));
}

#[test]
#[ignore = "needs the built component: scripts/test-component.sh runs it"]
fn bad_input_is_a_typed_guest_error() {
    let ledger = ledger_with(SESSION, log(2));
    let mut plugin = compactor_plugin(ledger);
    let mut unknown = request("cp", 3_000);
    unknown.session_id = "nobody".into();
    match plugin.compact(&unknown) {
        Err(ComponentError::Guest(error)) => {
            assert_eq!((error.kind, error.code.as_str()), ("ledger", "ledger_unknown_session"));
        }
        other => panic!("expected a ledger error, got {other:?}"),
    }
    let error = plugin.digest_prefix("[{\"nope\": 1}]").expect_err("not an event");
    assert!(matches!(&error, ComponentError::Guest(g) if g.kind == "invalid_events"), "{error:?}");
    let mut bad_circuit = request("cp", 3_000);
    bad_circuit.circuit_json = Some("{\"fingerprints\": 3}".into());
    let error = plugin.compact(&bad_circuit).expect_err("bad circuit");
    assert!(matches!(&error, ComponentError::Guest(g) if g.code == "circuit_invalid"), "{error:?}");
    assert_eq!(plugin.traps(), 0, "typed errors are not traps");
}

#[test]
#[ignore = "needs the built component: scripts/test-component.sh runs it"]
fn after_a_failed_compaction_the_request_projection_fails_open() {
    use contextfold_host::component::bindings::exports::contextfold::compaction::projection::ProjectRequest;
    let ledger = ledger_with(SESSION, log(6));
    let mut plugin = compactor_plugin(ledger.clone());
    plugin.compact(&request("cp-1", 3_000)).expect("compacts");
    ledger.set_events(SESSION, log(12));
    ledger.fail_next_appends(1);
    let failed = plugin.compact(&request("cp-2", 3_000)).expect("the call itself succeeds");
    assert_eq!(failed.outcome, OutcomeKind::FailedOpen, "{}", failed.outcome_json);

    let checkpoint = ledger.latest(SESSION).expect("cp-1").to_value().to_string();
    let project = ProjectRequest {
        events: serde_json::to_string(&log(12)).expect("events"),
        current_turn: None,
        checkpoint: Some(checkpoint),
        model: ModelFacts {
            context_window: Some(3_000),
            fixed_overhead_tokens: 0,
            prepare_at_percent: None,
        },
        provider: None,
        fail_open: false,
        calibration_json: None,
    };
    let normal: Value =
        serde_json::from_str(&plugin.project(&project).expect("projects")).expect("json");
    assert_eq!(normal["fits"], false, "cp-1 plus six raw turns is over the budget");
    let sent: Value =
        serde_json::from_str(&plugin.project_for_request(&project).expect("projects"))
            .expect("json");
    assert_eq!(sent["fits"], true, "{sent}");
    assert_eq!(sent["checkpoint"]["checkpointId"], "cp-1");
    assert!(sent["omittedEvents"].as_u64().expect("count") > 0);
    let codes: Vec<&str> = sent["diagnostics"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert!(codes.contains(&"previous_checkpoint_reused"), "{codes:?}");
}
