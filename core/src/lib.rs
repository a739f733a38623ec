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
//! # The whole loop
//!
//! The host projects each request from the log; when history crosses the budget it runs the
//! compaction transaction, performing the effects the core hands out (here: the offline
//! extractive summarizer and an in-memory ledger), and projects again.
//!
//! ```
//! use contextfold_core::compaction::extractive_summary_for;
//! use contextfold_core::{
//!     CharEstimator, CompactInput, Compaction, Compactor, Effect, FinishReason, LogBuilder,
//!     MalformedInputCircuit, ModelFacts, OutcomeKind, ProjectInput, ProviderIdentity, Step,
//!     SummaryResponse, Trigger, project,
//! };
//!
//! let mut log = LogBuilder::new("session-1");
//! for turn in 0..12 {
//!     log.turn(&format!("t{turn}")).user("run the test suite and fix src/lib.rs");
//!     let call = format!("call-{turn}");
//!     log.tool_call(&call, "shell", serde_json::json!({"cmd": "cargo test"}));
//!     log.tool_result(&call, "shell", serde_json::json!("error: 1 failed\n".repeat(200)));
//! }
//! log.turn("now").user("what is left?");
//! let model = ModelFacts { context_window: Some(8_000), ..Default::default() };
//! let provider = ProviderIdentity {
//!     provider: "offline".into(), connection_slug: "local".into(), model_id: "m".into(),
//! };
//! let request = |checkpoint| ProjectInput {
//!     events: log.events(), current_turn_id: Some("now"), checkpoint,
//!     model: &model, provider: Some(&provider), fail_open: false,
//! };
//! assert!(!project(&request(None), &CharEstimator)?.fits);
//!
//! let mut ledger = Vec::new();
//! let mut tx = Compaction::start(CompactInput {
//!     trigger: Trigger::PreTurn,
//!     events: log.events().into(),
//!     current_turn_id: Some("now".into()),
//!     checkpoint: None,
//!     model: model.clone(),
//!     provider: provider.clone(),
//!     compactor: Compactor::TextSummary,
//!     new_checkpoint_id: "cp-1".into(),
//!     now_ms: 1_700_000_000_000,
//!     provider_options: None,
//!     summarizer_label: Some("extractive".into()),
//!     circuit: MalformedInputCircuit::new(),
//!     prepared: None,
//! })?;
//! let outcome = loop {
//!     match tx.poll()? {
//!         Step::Effect(Effect::Summarize(e)) => {
//!             let text = extractive_summary_for(log.events(), &e);
//!             tx.handle_summary(Ok(SummaryResponse { text, finish_reason: FinishReason::Stop }))?;
//!         }
//!         Step::Effect(Effect::CompactNatively(_)) => unreachable!("text compactor selected"),
//!         Step::Effect(Effect::AppendCheckpoint(checkpoint)) => {
//!             ledger.push(*checkpoint); // durable in a real host, before the result is reported
//!             tx.handle_append(Ok(()))?;
//!         }
//!         Step::Done(outcome) => break *outcome,
//!     }
//! };
//! assert_eq!(outcome.outcome, OutcomeKind::Recorded);
//! let next = project(&request(ledger.last()), &CharEstimator)?;
//! assert!(next.fits && next.checkpoint.is_some());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The types above, the errors and the diagnostics are at the root. The modules group the rest:
//! - [`event`]: the log model, its validation, attachments, the ledger row and [`LogBuilder`].
//! - [`digest`]: canonical serialization and the streaming SHA-256 source digest.
//! - [`checkpoint`]: V2/V3 checkpoints, the coverage proof (full or cached), successor rules,
//!   recovery from a ledger, the safe prefix and the current-policy replay gate.
//! - [`budget`]: capacity from model facts, token estimation and calibration.
//! - [`projection`]: [`project`], provider-neutral messages, wire formats and tool-result pruning.
//! - [`compaction`]: the compaction transaction (sans-IO), its effects, summary prompt and
//!   validation, provider-native requests, the malformed-input circuit and the quality gate.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[doc(hidden)] // helpers for the wasm bindings only; not part of the supported API
pub mod binding;
pub mod budget;
pub mod checkpoint;
pub mod compaction;
pub mod digest;
pub mod event;
pub mod projection;

mod agent_files;
mod attachment;
mod calibration;
mod diagnostics;
mod json_read;
mod json_text;
mod ledger_row;
mod log_builder;
mod prefix_match;
mod prune;
mod quality;
mod recovery;
mod replay;
mod safe_prefix;
mod sort;
mod utf16;
mod verified_prefix;

pub use budget::{CharEstimator, ContextBudget, ModelFacts, TokenEstimator};
pub use checkpoint::{
    Boundary, CheckpointProjection, Coverage, HistoryCompactCheckpoint, ProviderState,
};
pub use compaction::{
    AppendFailure, CompactInput, Compaction, CompactionOutcome, Compactor, DriverError, Effect,
    FinishReason, MalformedInputCircuit, OutcomeKind, ProviderFailure, ProviderFailureKind,
    ProviderIdentity, StartError, Step, SummarizeEffect, SummaryResponse, Trigger,
};
pub use diagnostics::{Diagnostic, ReasonCode, TokenFigures};
pub use event::{EventContent, LogBuilder, LogError, RuntimeEvent};
pub use projection::{Message, ProjectInput, Projection, project};
