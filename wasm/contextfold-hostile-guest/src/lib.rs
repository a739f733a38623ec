//! A hostile `compactor` plugin for the host's limit tests. `projection.digest-prefix` misbehaves
//! on purpose, chosen by its argument:
//!
//! - `"loop"`: spins forever (the host's fuel limit must stop it);
//! - `"alloc"`: allocates without bound (the host's memory cap must stop it);
//! - `"panic"`: panics (a trap);
//! - anything else: returns `"sha256:hostile"`, so the host can check it still serves.
//!
//! `compaction.compact` loops forever after calling the ledger, to show that a plugin stuck
//! after an import call is stopped too; when its `summarizer-label` is `forge:<checkpoint JSON>`
//! it instead asks the host to append that (forged) checkpoint and returns the host's answer as
//! a `driver` error (`hostile_append_refused` or `hostile_append_accepted`). Every other export returns an `invalid-input` error.

// The code wit-bindgen generates (canonical-ABI glue) is `unsafe`; this crate's own code has none.
#![allow(unsafe_code)]
// Generated bindings carry the WIT `///` docs but leave some modules undocumented.
#![allow(missing_docs)]

use std::cell::RefCell;
use std::hint::black_box;

wit_bindgen::generate!({
    world: "compactor",
    path: "../../wit",
});

use contextfold::compaction::types::{
    AppendError, CompactResult, CompactionError, Diagnostic, ErrorDetail, FinishReason,
    ProviderFailure, SummaryResponse,
};
use exports::contextfold::compaction::compaction::CompactRequest;
use exports::contextfold::compaction::compaction_steps::{
    CompactionSession, GuestCompactionSession, SessionInput, Step,
};
use exports::contextfold::compaction::projection::{
    PrefixOptions, ProjectRequest, ReplayDecision, ReplayRequest, SafePrefix, SummaryDefect,
};

/// The hostile plugin.
#[derive(Debug)]
pub struct Hostile;

export!(Hostile);

fn refuse() -> CompactionError {
    CompactionError::InvalidInput(ErrorDetail {
        code: "hostile".into(),
        message: "the hostile plugin implements only digest-prefix".into(),
    })
}

fn spin() -> ! {
    let mut counter = 0u64;
    loop {
        counter = black_box(counter.wrapping_add(1));
    }
}

fn hoard() -> ! {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        hoard.push(black_box(vec![1u8; 1 << 20]));
        black_box(&hoard);
    }
}

impl exports::contextfold::compaction::projection::Guest for Hostile {
    type EventLog = RefusingLog;

    fn project(_: ProjectRequest) -> Result<String, CompactionError> {
        Err(refuse())
    }

    fn calibrate(_: Option<String>, _: String) -> Result<String, CompactionError> {
        Err(refuse())
    }

    fn digest_prefix(events: String) -> Result<String, CompactionError> {
        match events.as_str() {
            "loop" => spin(),
            "alloc" => hoard(),
            "panic" => panic!("hostile plugin panics on purpose"),
            _ => Ok("sha256:hostile".into()),
        }
    }

    fn prefix_digests(_: String) -> Result<Vec<String>, CompactionError> {
        Err(refuse())
    }

    fn select_safe_prefix(
        _: String,
        _: PrefixOptions,
    ) -> Result<Option<SafePrefix>, CompactionError> {
        Err(refuse())
    }

    fn safe_boundaries(_: String, _: Option<String>) -> Result<Vec<u64>, CompactionError> {
        Err(refuse())
    }

    fn match_checkpoint(_: String, _: String) -> Result<Result<u64, Diagnostic>, CompactionError> {
        Err(refuse())
    }

    fn evaluate_replay(_: ReplayRequest) -> Result<ReplayDecision, CompactionError> {
        Err(refuse())
    }

    fn validate_summary(_: String, _: FinishReason, _: u64) -> Result<u64, SummaryDefect> {
        Err(SummaryDefect { code: "hostile".into(), detail: "not implemented".into() })
    }
}

impl exports::contextfold::compaction::compaction::Guest for Hostile {
    fn compact(request: CompactRequest) -> Result<CompactResult, CompactionError> {
        let _ = contextfold::compaction::ledger::load_events(&request.session_id);
        let _ = contextfold::compaction::ledger::load_latest_checkpoint(&request.session_id);
        let _ = contextfold::compaction::ledger::scan_checkpoint_events(&request.session_id);
        if request.session_id == "append" {
            let _ = contextfold::compaction::ledger::append_checkpoint("append", "{}");
            let _ = contextfold::compaction::provider::compact_natively("{}");
        }
        if let Some(forged) =
            request.summarizer_label.as_deref().and_then(|l| l.strip_prefix("forge:"))
        {
            return Err(forge(&request.session_id, forged));
        }
        spin()
    }
}

/// Asks the host to append `checkpoint` (a forgery the test wrote) and reports the host's
/// answer as a `driver` error: `hostile_append_refused` with the host's message, or
/// `hostile_append_accepted`.
fn forge(session_id: &str, checkpoint: &str) -> CompactionError {
    let (code, message) =
        match contextfold::compaction::ledger::append_checkpoint(session_id, checkpoint) {
            Ok(()) => ("hostile_append_accepted", String::new()),
            Err(AppendError::Failed(message) | AppendError::Conflict(message)) => {
                ("hostile_append_refused", message)
            }
        };
    CompactionError::Driver(ErrorDetail { code: code.into(), message })
}

/// A session that never does anything.
#[derive(Debug)]
pub struct IdleSession {
    _state: RefCell<()>,
}

/// An event log that refuses everything.
#[derive(Debug)]
pub struct RefusingLog;

impl exports::contextfold::compaction::projection::GuestEventLog for RefusingLog {
    fn new() -> Self {
        RefusingLog
    }

    fn append(&self, _: String) -> Result<u64, CompactionError> {
        Err(refuse())
    }

    fn length(&self) -> u64 {
        0
    }

    fn digest(&self) -> String {
        "sha256:hostile".into()
    }

    fn project(&self, _: ProjectRequest) -> Result<String, CompactionError> {
        Err(refuse())
    }
}

impl exports::contextfold::compaction::compaction_steps::Guest for Hostile {
    type CompactionSession = IdleSession;
}

impl GuestCompactionSession for IdleSession {
    fn start(_: SessionInput) -> Result<CompactionSession, CompactionError> {
        Err(refuse())
    }

    fn poll(&self) -> Result<Step, CompactionError> {
        Err(refuse())
    }

    fn resume_summary(
        &self,
        _: Result<SummaryResponse, ProviderFailure>,
    ) -> Result<(), CompactionError> {
        Err(refuse())
    }

    fn resume_native(
        &self,
        _: Result<Vec<String>, ProviderFailure>,
    ) -> Result<(), CompactionError> {
        Err(refuse())
    }

    fn resume_append(&self, _: Result<(), AppendError>) -> Result<(), CompactionError> {
        Err(refuse())
    }

    fn cancel(&self) -> bool {
        false
    }
}
