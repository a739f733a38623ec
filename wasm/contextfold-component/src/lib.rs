//! # contextfold-component
//!
//! `contextfold-core` built as a WebAssembly component of the `contextfold:compaction@0.1.0`
//! WIT package (`wit/`), world `compactor`. This crate is a thin binding: it converts WIT
//! values to core types and back and maps errors to the WIT `compaction-error` variant; every
//! decision is the core's.
//!
//! Build: `cargo build -p contextfold-component --target wasm32-unknown-unknown --release`,
//! then `wasm-tools component new` on the module (see `scripts/test-component.sh`). The module
//! needs no WASI: the component imports only the world's `ledger` and `provider`.
//!
//! Exports:
//! - `projection` ([`projection_export`]): pure functions over a log, and the `event-log`
//!   resource ([`event_log`]) for hosts that append as they go;
//! - `compaction` ([`blocking`]): the whole transaction in one call, through the imports;
//! - `compaction-steps` ([`steps`]): the same transaction as a resource driven step by step.

// The code wit-bindgen generates (canonical-ABI glue) is `unsafe`; this crate's own code has none.
#![allow(unsafe_code)]
// Generated bindings carry the WIT `///` docs but leave some modules undocumented.
#![allow(missing_docs)]

mod blocking;
mod convert;
mod driver;
mod event_log;
mod projection_export;
mod steps;

wit_bindgen::generate!({
    world: "compactor",
    path: "../../wit",
});

/// The component's implementation of every exported interface.
#[derive(Debug)]
pub struct Component;

export!(Component);
