//! The wasmtime component runner: conformance vectors, calibration, blocking compaction,
//! forgery, the event log, the ledger imports over SQLite and PostgreSQL, hostile-plugin
//! limits, background preparation and the component benchmark. Most tests are `#[ignore]`d
//! because they need the built components: `scripts/test-component.sh` builds them and runs
//! this binary with `--ignored --skip component_bench`; `bench/component.sh` runs the
//! benchmark. The only test binary that drives wasmtime.

#[path = "../component_support/mod.rs"]
mod component_support;
/// The SQLite and PostgreSQL test ledgers of `host/tests/ledger/`, for `component_ledger_imports`.
#[path = "../ledger/support.rs"]
#[allow(dead_code)]
mod ledger_support;

mod component_bench;
mod component_calibration;
mod component_compaction;
mod component_conformance;
mod component_event_log;
mod component_forgery;
mod component_ledger_imports;
mod component_limits;
mod component_prepare;
mod component_prepare_counts;
