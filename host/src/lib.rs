//! # contextfold-host
//!
//! The native host of contextfold. The pure core (`contextfold-core`) decides everything about
//! history; this crate performs the effects it asks for:
//!
//! - [`storage`]: the SQLite ledgers (canonical RuntimeEvents, AgentRun checkpoint events, the
//!   bounded checkpoint projection) and the tool-result archive;
//! - [`ledger`]: the [`ledger::Ledger`] trait over the SQLite store and the PostgreSQL ledger;
//! - [`providers`]: OpenAI Chat Completions, OpenAI Responses (Codex remote compaction v2) and
//!   Anthropic Messages clients, plus the offline extractive summarizer;
//! - [`runtime`]: the session runtime that turns the four triggers into one Compact command;
//! - [`tokenizer`]: exact OpenAI token counts (tiktoken) as a core `TokenEstimator`;
//! - [`simulator`]: a loopback provider simulator that counts, caches and overflows like the
//!   real APIs;
//! - [`hashing`]: a SHA-256 engine for the core's digest that hashes on a second thread;
//! - [`component`]: the wasmtime runner for the core built as a WebAssembly component;
//! - [`preparation`]: what background preparation cost, counted alike by every runtime;
//! - [`cli`]: the `contextfold` command line.

pub mod cli;
pub mod component;
pub mod hashing;
pub mod ledger;
pub mod preparation;
pub mod providers;
pub mod runtime;
pub mod simulator;
pub mod storage;
pub mod tokenizer;
