//! # contextfold-core
//!
//! LLM context compaction as a **projection of an append-only event log**.
//!
//! The log of [`RuntimeEvent`]s is the only truth and is never changed. A
//! [`HistoryCompactCheckpoint`] (a text summary, schema V2, or provider-native state, schema V3)
//! covers an ordered prefix of the log, proven by counts, a through-boundary and a SHA-256
//! digest. Each request is `checkpoint + uncovered raw tail + current turn`, checked against the
//! current budget again. Failure fails open to source-derived context, never to an invented
//! summary.
//!
//! This crate is pure: no I/O, no clock, no randomness. Times and ids are inputs; storage and
//! provider calls are effects that a host performs and reports back.
//!
//! Module map:
//! - [`event`]: the log model; [`log_builder`]: a helper to write well-formed logs.
//! - [`digest`]: canonical serialization and the streaming SHA-256 source digest.
//! - [`checkpoint`]: V2/V3 checkpoints; [`prefix_match`]: coverage proof and successor rules.
//! - [`budget`]: capacity from model facts and token estimation.
//! - [`safe_prefix`]: which prefix may be covered; [`replay`]: the current-policy fit gate.
//! - [`projection`]: materialization into provider-neutral messages and wire formats.
//! - [`compaction`]: the compaction transaction (sans-IO) and its parts.
//! - [`recovery`]: choosing a checkpoint from a ledger; [`prune`]: tool-result pruning.
//! - [`diagnostics`]: stable reason codes.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod budget;
pub mod checkpoint;
pub mod compaction;
pub mod diagnostics;
pub mod digest;
pub mod event;
pub mod log_builder;
pub mod prefix_match;
pub mod projection;
pub mod prune;
pub mod recovery;
pub mod replay;
pub mod safe_prefix;

pub use budget::{CharEstimator, ContextBudget, ModelFacts, TokenEstimator};
pub use checkpoint::{
    Boundary, CheckpointProjection, Coverage, HistoryCompactCheckpoint, ProviderState,
};
pub use diagnostics::{Diagnostic, ReasonCode};
pub use event::{EventContent, RuntimeEvent};
pub use log_builder::LogBuilder;
