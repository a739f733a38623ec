//! The real component compacting a session stored in SQLite (and in PostgreSQL when
//! `CONTEXTFOLD_PG_URL` is set, run under `scripts/with-postgres.sh`) through
//! [`LedgerImports`]: the checkpoint it records is the ledger's current checkpoint and covers
//! an exact prefix of the log; a compaction that loses the race to another writer gets the
//! compare-and-swap conflict and writes nothing; a damaged projection is reported and
//! recovered; a plugin driven from a runtime worker gets a typed error, not a deadlock.
//! The tests that run the component need it built (`scripts/test-component.sh`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use contextfold_core::checkpoint::match_checkpoint_prefix;
use contextfold_core::compaction::SummaryResponse as CoreResponse;
use contextfold_core::compaction::{EXTRACTIVE_PRODUCER, NativeRequest, ProviderFailure};
use contextfold_core::{HistoryCompactCheckpoint, LogBuilder, RuntimeEvent};
use contextfold_host::component::bindings::contextfold::compaction::types::{
    CompactResult, CompactorKind, ModelFacts, OutcomeKind, ProviderIdentity, Trigger,
};
use contextfold_host::component::bindings::exports::contextfold::compaction::compaction::CompactRequest;
use contextfold_host::component::{
    ComponentError, ExtractiveProvider, Ledger as _, LedgerImports, LedgerReadError, Plugin,
    Provider, RunnerLimits, SummarizeCall,
};
use contextfold_host::ledger::SharedLedger;
use contextfold_host::storage::{LookupSource, agent_run_kind};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

use crate::component_support::runner;
use crate::ledger_support::{TestLedger, backends};

const SESSION: &str = "imports";
/// The first time the test clock gives; each read advances it by one.
const CLOCK_START_MS: u64 = 1_900_000_000_000;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

fn log(turns: u64) -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new(SESSION);
    for turn in 1..=turns {
        log.turn(&format!("t{turn}")).user(&format!("turn {turn}: fix src/mod_{turn}.rs"));
        log.response(Some(&format!("r{turn}")));
        log.tool_call(&format!("c{turn}"), "shell", json!({"cmd": format!("cargo test {turn}")}));
        log.response(None);
        log.tool_result(&format!("c{turn}"), "shell", json!("error[E0308]: mismatch\n".repeat(40)));
        log.response(Some(&format!("f{turn}"))).assistant("Fixed; moving on.").response(None);
    }
    log.build()
}

fn request(checkpoint_id: &str) -> CompactRequest {
    CompactRequest {
        session_id: SESSION.into(),
        trigger: Trigger::Manual,
        current_turn: None,
        model: ModelFacts {
            context_window: Some(3_000),
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

/// Imports over `ledger` on `rt`, stamped by a counting clock starting at [`CLOCK_START_MS`].
fn imports(rt: &Runtime, ledger: &SharedLedger) -> LedgerImports {
    let clock = Arc::new(AtomicU64::new(CLOCK_START_MS));
    LedgerImports::new(ledger.clone(), rt.handle().clone(), move || {
        clock.fetch_add(1, Ordering::SeqCst)
    })
}

fn plugin(imports: LedgerImports, provider: impl Provider + 'static) -> Plugin {
    runner("contextfold_compactor.wasm", RunnerLimits::default()).plugin(imports, provider)
}

/// The session's checkpoint records: (event id, run id, recorded at, checkpoint id).
fn checkpoint_records(rt: &Runtime, ledger: &SharedLedger) -> Vec<(String, String, u64, String)> {
    let records = rt.block_on(ledger.agent_run_events(SESSION)).expect("AgentRun events");
    records
        .into_iter()
        .filter(|r| r.kind == agent_run_kind::CHECKPOINT_RECORDED)
        .map(|r| {
            let id = r.payload["checkpointId"].as_str().unwrap_or_default().to_owned();
            (r.event_id, r.run_id, r.recorded_at_ms, id)
        })
        .collect()
}

/// The ledger's current checkpoint, which must come from a valid projection row.
fn current(rt: &Runtime, ledger: &SharedLedger) -> HistoryCompactCheckpoint {
    let lookup = rt.block_on(ledger.current_checkpoint(SESSION)).expect("lookup");
    assert_eq!(lookup.source, LookupSource::Projection, "{:?}", lookup.notes);
    lookup.checkpoint.expect("a checkpoint")
}

fn recorded(result: &CompactResult) -> HistoryCompactCheckpoint {
    assert_eq!(result.outcome, OutcomeKind::Recorded, "{}", result.outcome_json);
    let outcome: Value = serde_json::from_str(&result.outcome_json).expect("outcome JSON");
    HistoryCompactCheckpoint::from_value(outcome["checkpoint"].clone()).expect("a checkpoint")
}

/// A provider that lets another writer record `rival` (succeeding `cp-1`) while the plugin
/// waits for its summary: the plugin's tip is stale by the time it appends.
struct RacingProvider {
    rival: Option<Box<dyn FnOnce() + Send>>,
}

impl Provider for RacingProvider {
    fn summarize(&mut self, call: &SummarizeCall) -> Result<CoreResponse, ProviderFailure> {
        if let Some(rival) = self.rival.take() {
            rival();
        }
        ExtractiveProvider.summarize(call)
    }

    fn compact_natively(&mut self, request: &NativeRequest) -> Result<Vec<Value>, ProviderFailure> {
        ExtractiveProvider.compact_natively(request)
    }
}

fn compacts_and_loses_a_stale_race(rt: &Runtime, test: &TestLedger) {
    let ledger = &test.ledger;
    let first_log = log(6);
    rt.block_on(ledger.append_events(SESSION, first_log.clone())).expect("append the log");

    // From spawn_blocking, as a server drives it.
    let mut host = plugin(imports(rt, ledger), ExtractiveProvider);
    let (host_back, first) = rt
        .block_on(rt.spawn_blocking(move || {
            let result = host.compact(&request("cp-1"));
            (host, result)
        }))
        .expect("the blocking task");
    let mut host = host_back;
    let cp1 = recorded(&first.expect("compacts"));
    assert_eq!(current(rt, ledger), cp1, "{}: the recorded checkpoint is current", test.name());
    let events = rt.block_on(ledger.load_events(SESSION)).expect("load");
    match_checkpoint_prefix(&cp1, &events).expect("cp-1 covers a prefix of the stored log");
    let cp1_event = LedgerImports::checkpoint_event_id(SESSION, "cp-1");
    let cp1_run = LedgerImports::checkpoint_run_id(SESSION, "cp-1");
    assert_eq!(
        checkpoint_records(rt, ledger),
        vec![(cp1_event, cp1_run, CLOCK_START_MS, "cp-1".to_owned())]
    );

    // More turns; a second host compacts while a rival records first.
    let more = log(12).split_off(first_log.len());
    rt.block_on(ledger.append_events(SESSION, more)).expect("append more");
    let (rival_ledger, handle) = (ledger.clone(), rt.handle().clone());
    let mut rival = cp1.clone();
    rival.checkpoint_id = "rival".into();
    rival.previous_checkpoint_id = Some("cp-1".into());
    let race = move || {
        handle
            .block_on(rival_ledger.append_checkpoint("ar-rival", "run-rival", 7, rival))
            .expect("the rival records");
    };
    let mut racer = plugin(imports(rt, ledger), RacingProvider { rival: Some(Box::new(race)) });
    let lost = racer.compact(&request("cp-2")).expect("the call itself succeeds");
    assert_eq!(
        (lost.outcome, lost.reason.as_str()),
        (OutcomeKind::FailedOpen, "successor_conflict"),
        "{}: {}",
        test.name(),
        lost.outcome_json
    );
    assert!(racer.rejected_checkpoints().is_empty(), "the ledger, not the guard, refused it");
    assert_eq!(current(rt, ledger).checkpoint_id, "rival");
    let ids: Vec<String> = checkpoint_records(rt, ledger).into_iter().map(|r| r.3).collect();
    assert_eq!(ids, ["cp-1", "rival"], "{}: the lost compaction wrote nothing", test.name());

    // From a plain thread, on the fresh tip: it rolls forward from the rival.
    let cp3 = recorded(&host.compact(&request("cp-3")).expect("compacts"));
    assert_eq!(cp3.previous_checkpoint_id.as_deref(), Some("rival"));
    assert_eq!(current(rt, ledger), cp3);
    let events = rt.block_on(ledger.load_events(SESSION)).expect("load");
    match_checkpoint_prefix(&cp3, &events).expect("cp-3 covers a prefix of the stored log");
    assert_eq!(host.traps() + racer.traps(), 0);
}

#[test]
#[ignore = "needs the built component: scripts/test-component.sh runs it"]
fn the_component_records_through_the_ledger_and_loses_a_stale_race() {
    let rt = runtime();
    for test in rt.block_on(backends("component_imports_race")) {
        compacts_and_loses_a_stale_race(&rt, &test);
    }
}

/// Removes the session's projection row, as a damaged or lost row would leave it.
fn drop_projection(rt: &Runtime, test: &TestLedger) {
    const SQL: &str = "DELETE FROM checkpoint_projection";
    if let Some(pg) = &test.pg {
        rt.block_on(async { pg.client(None).await.batch_execute(SQL).await })
            .expect("delete the row");
    } else if let Some((_, path)) = &test.sqlite {
        rusqlite::Connection::open(path).and_then(|c| c.execute_batch(SQL)).expect("delete");
    }
}

#[test]
#[ignore = "needs the built component: scripts/test-component.sh runs it"]
fn a_lost_projection_row_is_reported_damaged_and_recovered() {
    let rt = runtime();
    for test in rt.block_on(backends("component_imports_damage")) {
        let ledger = &test.ledger;
        rt.block_on(ledger.append_events(SESSION, log(6))).expect("append");
        let mut host = plugin(imports(&rt, ledger), ExtractiveProvider);
        recorded(&host.compact(&request("cp-1")).expect("compacts"));
        drop_projection(&rt, &test);
        let mut probe = imports(&rt, ledger);
        match probe.load_latest_checkpoint(SESSION) {
            Err(LedgerReadError::ProjectionDamaged(m)) => {
                assert!(m.starts_with("projection_uninitialized"), "{m}");
            }
            other => panic!("{}: expected a damaged projection, got {other:?}", test.name()),
        }
        let scanned = probe.scan_checkpoint_events(SESSION).expect("scan");
        assert_eq!(scanned.len(), 1);
        rt.block_on(ledger.append_events(SESSION, log(12).split_off(log(6).len())))
            .expect("append more");
        let cp2 = recorded(&host.compact(&request("cp-2")).expect("compacts after recovery"));
        assert_eq!(cp2.previous_checkpoint_id.as_deref(), Some("cp-1"), "{}", test.name());
        assert_eq!(current(&rt, ledger), cp2);
    }
}

#[tokio::test]
async fn reads_map_onto_the_ledger_errors() {
    let test = crate::ledger_support::sqlite().await;
    let mut imports =
        LedgerImports::new(test.ledger.clone(), tokio::runtime::Handle::current(), || 1);
    // This test's body runs on the runtime's own thread: every call is refused, typed.
    let refused = imports.load_events(SESSION).expect_err("refused on a runtime thread");
    assert!(
        matches!(&refused, LedgerReadError::Unavailable(m)
            if m.starts_with("ledger_imports_on_runtime_worker")),
        "{refused:?}"
    );
    let append = imports.append_checkpoint(SESSION, &{
        let events = log(1);
        crate::ledger_support::checkpoint(&events, events.len(), "cp", None)
    });
    let failure = append.expect_err("refused");
    assert!(!failure.conflict && failure.message.starts_with("ledger_imports_"), "{failure:?}");
    // From spawn_blocking every call reaches the ledger.
    let read = tokio::task::spawn_blocking(move || {
        (imports.load_events("nobody"), imports.load_latest_checkpoint("nobody"))
    });
    let (events, latest) = read.await.expect("the blocking task");
    assert_eq!(events, Err(LedgerReadError::UnknownSession("nobody".into())));
    assert_eq!(latest, Ok(None), "a session that never recorded a checkpoint");
    assert!(test.ledger.agent_run_events(SESSION).await.expect("read").is_empty());
}

#[test]
#[ignore = "needs the built component: scripts/test-component.sh runs it"]
fn a_plugin_driven_from_a_runtime_worker_gets_a_typed_error() {
    let rt = runtime();
    let test = rt.block_on(crate::ledger_support::sqlite());
    rt.block_on(test.ledger.append_events(SESSION, log(6))).expect("append");
    let mut host = plugin(imports(&rt, &test.ledger), ExtractiveProvider);
    let result = rt
        .block_on(rt.spawn(async move { host.compact(&request("cp-1")) }))
        .expect("the task returns");
    match result {
        Err(ComponentError::Guest(error)) => {
            assert_eq!((error.kind, error.code.as_str()), ("ledger", "ledger_unavailable"));
            assert!(error.message.contains("ledger_imports_on_runtime_worker"), "{error}");
        }
        other => panic!("expected the typed ledger error, got {other:?}"),
    }
    assert!(checkpoint_records(&rt, &test.ledger).is_empty(), "nothing was written");
}

#[test]
#[ignore = "needs the built component: scripts/test-component.sh runs it"]
fn a_retracted_checkpoint_is_left_out_and_the_next_compaction_builds_on_the_previous() {
    let rt = runtime();
    for test in rt.block_on(backends("component_imports_retract")) {
        let ledger = &test.ledger;
        rt.block_on(ledger.append_events(SESSION, log(6))).expect("append");
        let mut host = plugin(imports(&rt, ledger), ExtractiveProvider);
        recorded(&host.compact(&request("cp-1")).expect("compacts"));
        rt.block_on(ledger.append_events(SESSION, log(12).split_off(log(6).len())))
            .expect("append more");
        recorded(&host.compact(&request("cp-2")).expect("compacts"));
        let retract =
            ledger.retract_checkpoint(SESSION, "retract-cp-2", 9, "cp-2", "lost the task");
        let lookup = rt.block_on(retract).expect("retract");
        assert_eq!(lookup.checkpoint.map(|c| c.checkpoint_id).as_deref(), Some("cp-1"));
        // With the projection row lost, the guest recovers from what the host hands it.
        drop_projection(&rt, &test);
        let mut probe = imports(&rt, ledger);
        let scanned = probe.scan_checkpoint_events(SESSION).expect("scan");
        let ids: Vec<&str> =
            scanned.iter().filter_map(|r| r.payload["checkpointId"].as_str()).collect();
        assert_eq!(ids, ["cp-1"], "{}: the retracted checkpoint is left out", test.name());
        let cp3 = recorded(&host.compact(&request("cp-3")).expect("compacts after the retraction"));
        assert_eq!(cp3.previous_checkpoint_id.as_deref(), Some("cp-1"), "{}", test.name());
        assert_eq!(current(&rt, ledger), cp3);
    }
}
