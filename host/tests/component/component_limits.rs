//! A hostile plugin (`wasm/contextfold-hostile-guest`) that loops forever, allocates without
//! bound or panics is stopped with a typed error, and the same plugin goes on serving on a
//! fresh instance. Needs the built components: run `scripts/test-component.sh`.

use crate::component_support;

use component_support::runner;
use contextfold_host::component::bindings::contextfold::compaction::types::{
    CompactorKind, ModelFacts, ProviderIdentity, Trigger,
};
use contextfold_host::component::bindings::exports::contextfold::compaction::compaction::CompactRequest;
use contextfold_host::component::{
    ComponentError, ExtractiveProvider, MemoryLedger, Plugin, RunnerLimits,
};

const LIMITS: RunnerLimits = RunnerLimits { fuel_per_call: 200_000_000, memory_bytes: 32 << 20 };

fn hostile() -> Plugin {
    let ledger = MemoryLedger::default();
    ledger.set_events("s", Vec::new());
    runner("contextfold_hostile.wasm", LIMITS).plugin(ledger, ExtractiveProvider)
}

fn still_serves(plugin: &mut Plugin) {
    assert_eq!(plugin.digest_prefix("fine").expect("a fresh instance serves"), "sha256:hostile");
}

#[test]
#[ignore = "needs the built components: scripts/test-component.sh runs it"]
fn an_endless_loop_is_stopped_by_fuel_and_the_host_goes_on() {
    let mut plugin = hostile();
    still_serves(&mut plugin);
    let started = std::time::Instant::now();
    let error = plugin.digest_prefix("loop").expect_err("the loop must be stopped");
    assert!(matches!(error, ComponentError::FuelExhausted { fuel: 200_000_000 }), "{error:?}");
    assert_eq!(error.code(), "plugin_fuel_exhausted");
    assert!(started.elapsed().as_secs() < 30, "stopped after {:?}", started.elapsed());
    assert_eq!(plugin.traps(), 1);
    still_serves(&mut plugin);
}

#[test]
#[ignore = "needs the built components: scripts/test-component.sh runs it"]
fn unbounded_allocation_is_stopped_by_the_memory_cap() {
    let mut plugin = hostile();
    let error = plugin.digest_prefix("alloc").expect_err("the hoard must be stopped");
    assert!(
        matches!(error, ComponentError::MemoryLimit { limit_bytes } if limit_bytes == 32 << 20),
        "{error:?}"
    );
    assert_eq!(error.code(), "plugin_memory_limit");
    still_serves(&mut plugin);
    let again = plugin.digest_prefix("alloc").expect_err("stopped again on the new instance");
    assert!(matches!(again, ComponentError::MemoryLimit { .. }), "{again:?}");
    assert_eq!(plugin.traps(), 2);
    still_serves(&mut plugin);
}

#[test]
#[ignore = "needs the built components: scripts/test-component.sh runs it"]
fn a_panic_is_a_trap_and_a_loop_after_an_import_call_is_stopped() {
    let mut plugin = hostile();
    let error = plugin.digest_prefix("panic").expect_err("a panic traps");
    assert!(matches!(error, ComponentError::Trap(_)), "{error:?}");
    assert!(error.is_trap());
    still_serves(&mut plugin);
    let request = CompactRequest {
        session_id: "s".into(),
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
        checkpoint_id: "cp".into(),
        now_ms: 1,
        summarizer_label: None,
        circuit_json: None,
        calibration_json: None,
        prepared: None,
    };
    let error = plugin.compact(&request).expect_err("the loop after load-events is stopped");
    assert!(matches!(error, ComponentError::FuelExhausted { .. }), "{error:?}");
    assert_eq!(plugin.traps(), 2);
    still_serves(&mut plugin);
}
