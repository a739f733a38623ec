//! Background preparation through the real component (issue 39): `Plugin::prepare` runs a
//! `prepare` transaction through the step API and records nothing; the session's next
//! compaction adopts the checkpoint it holds without a summarizer call, unless a checkpoint was
//! recorded meanwhile by another writer, and a JavaScript-style host passes it through
//! `session-input.prepared` to the same effect. Needs the built component: run
//! `scripts/test-component.sh`.

use crate::component_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use component_support::{ledger_with, runner};
use contextfold_core::compaction::{
    EXTRACTIVE_PRODUCER, NativeRequest, ProviderFailure, ProviderFailureKind, SummaryResponse,
};
use contextfold_core::{
    CharEstimator, HistoryCompactCheckpoint, LogBuilder, RuntimeEvent, TokenEstimator,
};
use contextfold_host::component::bindings::contextfold::compaction::types::{
    CompactResult, CompactorKind, ModelFacts, OutcomeKind, ProviderIdentity, Trigger,
};
use contextfold_host::component::bindings::exports::contextfold::compaction::compaction::CompactRequest;
use contextfold_host::component::bindings::exports::contextfold::compaction::compaction_steps::{
    Effect, SessionInput, Step,
};
use contextfold_host::component::{
    ExtractiveProvider, MemoryLedger, Plugin, Provider, RunnerLimits, SummarizeCall,
};
use serde_json::{Value, json};

pub(super) const SESSION: &str = "prep";
pub(super) const TURN: &str = "t-now";
const WINDOW: u64 = 8_000;

/// The extractive provider, counting its summarize calls and their tokens as the native
/// runtime counts them (each request's estimated input and its answer); failing every call
/// while `failing` is set. Clones share the counts.
#[derive(Debug, Clone, Default)]
pub(super) struct Counting {
    calls: Arc<AtomicUsize>,
    tokens: Arc<AtomicU64>,
    failing: Arc<AtomicBool>,
}

impl Counting {
    pub(super) fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Summarizer tokens of every call so far.
    pub(super) fn tokens(&self) -> u64 {
        self.tokens.load(Ordering::SeqCst)
    }

    /// Makes every later call fail (`unavailable`) or succeed again.
    pub(super) fn fail(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }
}

impl Provider for Counting {
    fn summarize(&mut self, call: &SummarizeCall) -> Result<SummaryResponse, ProviderFailure> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.tokens.fetch_add(call.request.estimated_input_tokens, Ordering::SeqCst);
        if self.failing.load(Ordering::SeqCst) {
            return Err(ProviderFailure {
                kind: ProviderFailureKind::Unavailable,
                message: "the provider is down".into(),
            });
        }
        let answer = ExtractiveProvider.summarize(call)?;
        self.tokens.fetch_add(CharEstimator.estimate_text(&answer.text), Ordering::SeqCst);
        Ok(answer)
    }

    fn compact_natively(&mut self, request: &NativeRequest) -> Result<Vec<Value>, ProviderFailure> {
        ExtractiveProvider.compact_natively(request)
    }
}

pub(super) fn compactor(ledger: &MemoryLedger, provider: &Counting) -> Plugin {
    runner("contextfold_compactor.wasm", RunnerLimits::default())
        .plugin(ledger.clone(), provider.clone())
}

/// Two completed turns with large tool results, then the active turn's task.
pub(super) fn history() -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new(SESSION);
    for turn in 0..2 {
        log.turn(&format!("t{turn}")).user(&format!("fix the failing test number {turn}"));
        log.response(Some(&format!("r{turn}"))).tool_call(
            &format!("c{turn}"),
            "shell",
            json!({"cmd": "cargo test"}),
        );
        log.response(None);
        log.tool_result(
            &format!("c{turn}"),
            "shell",
            json!("test lib::case ... FAILED\n".repeat(240)),
        );
        log.assistant(&format!("turn {turn}: fixed src/lib.rs"));
    }
    log.turn(TURN).user("continue with the next failure");
    log.build()
}

/// Appends one agent step of the active turn (a call and its `chars`-byte result).
pub(super) fn step(ledger: &MemoryLedger, n: usize, chars: usize) {
    let events = ledger.events(SESSION);
    let mut log = LogBuilder::extend(events);
    log.turn(TURN);
    let call = format!("{TURN}-c{n}");
    log.response(Some(&format!("{TURN}-r{n}"))).tool_call(
        &call,
        "shell",
        json!({"cmd": format!("grep -n case{n} src/lib.rs")}),
    );
    log.response(None).tool_result(
        &call,
        "shell",
        json!(format!("src/lib.rs:{n}: case{n}\n").repeat(chars / 20)),
    );
    ledger.set_events(SESSION, log.build());
}

pub(super) fn request(trigger: Trigger, checkpoint_id: &str) -> CompactRequest {
    CompactRequest {
        session_id: SESSION.into(),
        trigger,
        current_turn: Some(TURN.into()),
        model: ModelFacts {
            context_window: Some(WINDOW),
            fixed_overhead_tokens: 0,
            prepare_at_percent: None,
        },
        provider: ProviderIdentity {
            provider: "local".into(),
            connection_slug: "c".into(),
            model_id: "m".into(),
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

pub(super) fn outcome(result: &CompactResult) -> Value {
    serde_json::from_str(&result.outcome_json).expect("outcome JSON")
}

pub(super) fn codes(result: &CompactResult) -> Vec<String> {
    outcome(result)["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter_map(|d| d["code"].as_str().map(str::to_owned))
        .collect()
}

fn diagnostic(result: &CompactResult, code: &str) -> Option<String> {
    outcome(result)["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .find(|d| d["code"] == code)
        .map(|d| d["detail"].as_str().unwrap_or_default().to_owned())
}

/// Steps the active turn until a preparation builds a checkpoint (each mid-turn evaluation
/// still below the budget); returns the next step's number and the preparation's result.
pub(super) fn until_prepared(plugin: &mut Plugin, ledger: &MemoryLedger) -> (usize, CompactResult) {
    for n in 0..20 {
        step(ledger, n, 1_200);
        let below = plugin.compact(&request(Trigger::MidTurn, "cp-unused")).expect("evaluates");
        assert_eq!(below.reason, "below_high_water", "{}", below.outcome_json);
        let prepared = plugin.prepare(&request(Trigger::Prepare, "cp-prepared")).expect("runs");
        if prepared.outcome == OutcomeKind::Prepared {
            return (n + 1, prepared);
        }
        assert_eq!(
            (prepared.outcome, prepared.reason.as_str()),
            (OutcomeKind::Skipped, "below_soft_threshold"),
            "{}",
            prepared.outcome_json
        );
    }
    panic!("the soft threshold was never reached")
}

/// Steps until a mid-turn compaction is needed; returns its result.
pub(super) fn until_hard_trigger(
    plugin: &mut Plugin,
    ledger: &MemoryLedger,
    from: usize,
) -> CompactResult {
    for n in from..from + 40 {
        step(ledger, n, 1_200);
        let result = plugin.compact(&request(Trigger::MidTurn, "cp-foreground")).expect("runs");
        if result.reason != "below_high_water" {
            return result;
        }
    }
    panic!("the hard trigger never fired")
}

pub(super) fn prepared_checkpoint(result: &CompactResult) -> HistoryCompactCheckpoint {
    HistoryCompactCheckpoint::from_value(outcome(result)["checkpoint"].clone())
        .expect("a prepared outcome carries its checkpoint")
}

#[test]
#[ignore = "needs the built component: scripts/test-component.sh runs it"]
fn a_preparation_returns_its_checkpoint_and_records_nothing() {
    let ledger = ledger_with(SESSION, history());
    let provider = Counting::default();
    let mut plugin = compactor(&ledger, &provider);
    assert_eq!(provider.calls(), 0, "below the soft threshold nothing is summarized");
    let (_, result) = until_prepared(&mut plugin, &ledger);
    assert_eq!(result.reason, "checkpoint_prepared", "{}", result.outcome_json);
    let checkpoint = prepared_checkpoint(&result);
    assert_eq!(checkpoint.checkpoint_id, "cp-prepared");
    assert_eq!(checkpoint.session_id, SESSION);
    assert_eq!(checkpoint.previous_checkpoint_id, None);
    // It proves the prefix it covers, and nothing reached the ledger.
    let events = ledger.events(SESSION);
    contextfold_core::checkpoint::match_checkpoint_prefix(&checkpoint, &events)
        .expect("the prepared checkpoint covers a prefix of the log");
    assert!(ledger.records().is_empty(), "a preparation recorded a checkpoint");
    assert!(ledger.latest(SESSION).is_none());
    assert_eq!(provider.calls(), 1, "one summarizer call built it");
    // The host holds it for the session's next compaction.
    assert_eq!(plugin.prepared_checkpoint(SESSION), Some(&checkpoint));
    assert_eq!(plugin.prepared_checkpoint("another-session"), None);
    assert!(plugin.rejected_checkpoints().is_empty());
    assert_eq!(plugin.traps(), 0);
    // A host may prepare on a second plugin in another thread (docs/component.md).
    fn send<T: Send>(_: &T) {}
    send(&plugin);
}

#[test]
#[ignore = "needs the built component: scripts/test-component.sh runs it"]
fn the_next_compaction_appends_the_prepared_checkpoint_without_a_summarizer_call() {
    let ledger = ledger_with(SESSION, history());
    let provider = Counting::default();
    let mut plugin = compactor(&ledger, &provider);
    let (next, prepared) = until_prepared(&mut plugin, &ledger);
    let checkpoint = prepared_checkpoint(&prepared);
    assert_eq!(provider.calls(), 1);
    let result = until_hard_trigger(&mut plugin, &ledger, next);
    assert_eq!(
        (result.outcome, result.reason.as_str()),
        (OutcomeKind::Recorded, "checkpoint_recorded"),
        "{}",
        result.outcome_json
    );
    assert!(codes(&result).iter().any(|c| c == "prepared_checkpoint_used"), "{:?}", codes(&result));
    assert_eq!(provider.calls(), 1, "the foreground compaction called the summarizer");
    // The prepared checkpoint itself is what the ledger recorded, once.
    assert_eq!(ledger.records().len(), 1);
    assert_eq!(ledger.latest(SESSION).as_ref(), Some(&checkpoint));
    assert_eq!(outcome(&result)["checkpoint"], checkpoint.to_value());
    assert_eq!(plugin.prepared_checkpoint(SESSION), None, "a used checkpoint is not held");
    assert!(plugin.rejected_checkpoints().is_empty());
}

#[test]
#[ignore = "needs the built component: scripts/test-component.sh runs it"]
fn a_checkpoint_recorded_meanwhile_by_another_writer_wins_and_the_foreground_compaction_runs() {
    let ledger = ledger_with(SESSION, history());
    let provider = Counting::default();
    let mut plugin = compactor(&ledger, &provider);
    let (next, prepared) = until_prepared(&mut plugin, &ledger);
    let held = prepared_checkpoint(&prepared);
    // Another writer on the same ledger records a checkpoint first (an overflow recovery).
    let other_provider = Counting::default();
    let mut other = compactor(&ledger, &other_provider);
    let recovered = other.compact(&request(Trigger::Overflow, "cp-other")).expect("compacts");
    assert_eq!(recovered.outcome, OutcomeKind::Recorded, "{}", recovered.outcome_json);
    assert_eq!(ledger.latest(SESSION).map(|cp| cp.checkpoint_id).as_deref(), Some("cp-other"));
    // This plugin's next step is a large one: the hard trigger fires at once.
    step(&ledger, next, 40_000);
    let result = plugin.compact(&request(Trigger::MidTurn, "cp-foreground")).expect("runs");
    let refused = diagnostic(&result, "prepared_checkpoint_rejected")
        .unwrap_or_else(|| panic!("the prepared checkpoint was not judged: {:?}", codes(&result)));
    // Refused because it no longer succeeds the tip the other writer recorded.
    assert!(refused.contains(&held.checkpoint_id) && refused.contains("cp-other"), "{refused}");
    assert!(!codes(&result).iter().any(|c| c == "prepared_checkpoint_used"));
    assert_eq!(result.outcome, OutcomeKind::Recorded, "{}", result.outcome_json);
    assert!(provider.calls() >= 2, "the foreground compaction called the summarizer");
    let recorded = ledger.latest(SESSION).expect("recorded");
    assert_eq!(recorded.checkpoint_id, "cp-foreground");
    assert_eq!(recorded.previous_checkpoint_id.as_deref(), Some("cp-other"));
    assert!(
        ledger.records().iter().all(|r| r.payload["checkpointId"] != held.checkpoint_id.as_str()),
        "the refused checkpoint reached the ledger"
    );
    assert_eq!(plugin.prepared_checkpoint(SESSION), None, "a refused checkpoint is not held");
    assert!(plugin.rejected_checkpoints().is_empty());
}

#[test]
#[ignore = "needs the built component: scripts/test-component.sh runs it"]
fn the_step_api_adopts_a_prepared_checkpoint_passed_in_the_session_input() {
    let ledger = ledger_with(SESSION, history());
    let provider = Counting::default();
    let mut plugin = compactor(&ledger, &provider);
    let (next, prepared) = until_prepared(&mut plugin, &ledger);
    let checkpoint = prepared_checkpoint(&prepared);
    // A JavaScript-style host: each step, a mid-turn compaction through the step API with the
    // prepared checkpoint in its input, until one must fold.
    let input = || {
        let base = request(Trigger::MidTurn, "cp-steps");
        SessionInput {
            trigger: base.trigger,
            events: serde_json::to_string(&ledger.events(SESSION)).expect("events"),
            current_turn: base.current_turn,
            checkpoint: None,
            model: base.model,
            provider: base.provider,
            compactor: base.compactor,
            checkpoint_id: base.checkpoint_id,
            now_ms: base.now_ms,
            summarizer_label: base.summarizer_label,
            circuit_json: None,
            calibration_json: None,
            prepared: Some(checkpoint.to_json()),
        }
    };
    let mut first = None;
    for n in next..next + 40 {
        step(&ledger, n, 1_200);
        let session = plugin.start_session(&input()).expect("starts");
        match plugin.poll(&session).expect("polls") {
            Step::Done(result) if result.reason == "below_high_water" => {
                plugin.drop_session(session).expect("drops");
            }
            step => {
                first = Some((session, step));
                break;
            }
        }
    }
    let (session, step) = first.expect("the hard trigger never fired");
    match step {
        Step::Effect(Effect::AppendCheckpoint(json)) => {
            let appended = HistoryCompactCheckpoint::from_json(&json).expect("checkpoint");
            assert_eq!(appended, checkpoint, "the first effect appends the prepared checkpoint");
        }
        other => panic!("expected the append of the prepared checkpoint first, got {other:?}"),
    }
    plugin.resume_append(&session, &Ok(())).expect("resumes");
    let Step::Done(result) = plugin.poll(&session).expect("polls") else {
        panic!("the transaction should be over after the adopted append")
    };
    plugin.drop_session(session).expect("drops");
    assert_eq!(result.outcome, OutcomeKind::Recorded, "{}", result.outcome_json);
    assert!(codes(&result).iter().any(|c| c == "prepared_checkpoint_used"), "{:?}", codes(&result));
    assert_eq!(provider.calls(), 1, "no summarizer call after the preparation's");
}
