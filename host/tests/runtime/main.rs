//! The session runtime and the SQLite store: runs, the log cache, providers through the
//! runtime, covered projections, the piece estimator, pipelined hashing, schema migration,
//! `verify`, long agent turns, the host simulator, and the ledger trait on SQLite and
//! PostgreSQL (`ledger`).

#[path = "../ledger/mod.rs"]
mod ledger;
#[path = "../providers/mod.rs"]
mod providers;
#[path = "../reliability_support/mod.rs"]
mod reliability_support;
#[path = "../runtime_support/mod.rs"]
mod runtime_support;
#[path = "../runtime_usage/mod.rs"]
mod runtime_usage;
#[path = "../simulator_support/mod.rs"]
mod simulator_support;

mod background;
mod covered_projection;
mod long_turns;
mod piece_estimator;
mod pipelined_hash;
mod runtime;
mod runtime_log_cache;
mod runtime_providers;
mod schema_migration;
mod simulator;
mod source_address;
mod storage;
mod verify_sweep;
