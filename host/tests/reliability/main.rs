//! The reliability tests (docs/reliability.md): the failure-table fault matrix, storage and
//! file faults, large events, provider timeouts under faults, fuzzed imports and provider
//! streams, the power-loss replay, the SIGKILL crash loop, multi-process concurrency and the
//! secrets grep. `scripts/reliability.sh` runs them by module filter (`crash_loop::`, ...);
//! the knobs (`CONTEXTFOLD_CRASH_KILLS`, ...) are read by the tests themselves.

#[path = "../../../core/tests/fuzz_support/mod.rs"]
mod fuzz_support;
#[path = "../providers/mod.rs"]
mod providers;
#[path = "../reliability_support/mod.rs"]
mod reliability_support;

mod concurrency;
mod crash_loop;
mod fault_files;
mod fault_fuzz_imports;
mod fault_fuzz_providers;
mod fault_matrix;
mod fault_storage;
mod large_events;
mod power_loss;
mod providers_timeouts;
mod secrets;

/// The entry point of the child processes the crash loop, the concurrency and the power-loss
/// tests spawn (this binary re-executed with `CONTEXTFOLD_RELIABILITY_ROLE` set, running only
/// this test); does nothing in an ordinary test run.
#[test]
fn child_process_entry() {
    if !power_loss::run_worker() {
        reliability_support::worker::run_role();
    }
}
