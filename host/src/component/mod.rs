//! The wasmtime runner for the core built as a WebAssembly component
//! (`wasm/contextfold-component`, world `contextfold:compaction/compactor@0.1.0`, WIT in `wit/`).
//!
//! The host supplies the world's imports through two traits it implements, [`Ledger`] (durable
//! storage: [`MemoryLedger`], or [`LedgerImports`] over the host's SQLite or PostgreSQL
//! ledger) and [`Provider`] (model calls), and runs the plugin under limits:
//!
//! - fuel: every exported call gets [`RunnerLimits::fuel_per_call`] units; a plugin that loops
//!   forever stops with [`ComponentError::FuelExhausted`];
//! - memory: a `StoreLimitsBuilder` cap of [`RunnerLimits::memory_bytes`]; a plugin that
//!   allocates without bound stops with [`ComponentError::MemoryLimit`];
//! - no trust in the plugin's output: a checkpoint it asks to append is re-verified with the
//!   core's prefix match and successor rules first; a forged coverage is refused (the guest
//!   sees `append-error.failed`, nothing is written, [`Plugin::rejected_checkpoints`] says why);
//! - a fresh instance after any trap: instances come from one `InstancePre`, and a [`Plugin`]
//!   whose call trapped throws its store away and instantiates again on the next call, so the
//!   host goes on serving.
//!
//! [`Plugin::prepare`] drives a background preparation (trigger `prepare`) through the step API
//! and holds the checkpoint it builds for the session's next [`Plugin::compact`], which the core
//! adopts without a summarizer call or refuses (`prepare.rs`).
//!
//! `bindgen!` is invoked once, here; the generated types live in [`bindings`].
//!
//! ```no_run
//! use contextfold_host::component::{ComponentRunner, ExtractiveProvider, MemoryLedger, RunnerLimits};
//! let runner = ComponentRunner::from_file("target/components/contextfold_compactor.wasm", RunnerLimits::default())?;
//! let mut plugin = runner.plugin(MemoryLedger::default(), ExtractiveProvider);
//! let digest = plugin.digest_prefix("[]")?;
//! assert!(digest.starts_with("sha256:"));
//! # Ok::<(), contextfold_host::component::ComponentError>(())
//! ```

mod checkpoint_guard;
mod error;
mod event_log;
mod host_state;
mod ledger_imports;
mod memory_ledger;
mod plugin;
mod prepare;
mod providers;
mod runner;
mod traits;

/// Bindings generated from `wit/` for the `compactor` world.
#[allow(missing_docs, unreachable_pub, clippy::all)]
pub mod bindings {
    wasmtime::component::bindgen!({
        world: "compactor",
        path: "../wit",
    });
}

pub use checkpoint_guard::CheckpointRejection;
pub use error::{ComponentError, GuestError};
pub use event_log::GuestEventLog;
pub use host_state::{HostState, failure_to_wit, finish_to_wit};
pub use ledger_imports::{ClockMs, LedgerImports, LedgerImportsError, wall_clock_ms};
pub use memory_ledger::MemoryLedger;
pub use plugin::{Plugin, StepSession};
pub use providers::ExtractiveProvider;
pub use runner::{ComponentRunner, RunnerLimits};
pub use traits::{Ledger, LedgerReadError, Provider, SummarizeCall};
