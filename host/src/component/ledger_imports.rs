//! [`LedgerImports`]: the component's ledger imports (the synchronous component [`Ledger`])
//! over the host's async [`crate::ledger::Ledger`], so a plugin records into a SQLite file or
//! a PostgreSQL database exactly as the native runtime does, not only into a
//! [`crate::component::MemoryLedger`].
//!
//! **Where the plugin must run.** wasmtime calls the imports synchronously, on the thread that
//! drives the plugin; each call waits for one ledger future with
//! [`tokio::runtime::Handle::block_on`] on the handle given to [`LedgerImports::new`]. Drive
//! the plugin from a blocking context: a `tokio::task::spawn_blocking` closure or a plain
//! thread (or inside `block_in_place`), never from a runtime worker polling a task, where
//! blocking would stall the runtime the ledger itself needs (a deadlock on a current-thread
//! runtime). A call made there is refused with
//! [`LedgerImportsError::OnRuntimeWorker`]: the guest sees `ledger_unavailable` (a failed
//! append, for `append-checkpoint`) whose message starts with that code, nothing is written,
//! and the host does not panic. tokio exposes no question "may this thread block?", so the
//! refusal is detected from tokio's own `block_on` guard, which panics before it polls
//! anything; that one panic is caught (the default hook still prints it), every other panic
//! propagates.
//!
//! **Mapping.** An empty event log is [`LedgerReadError::UnknownSession`] (the store keeps no
//! session apart from its events); a current checkpoint found by recovery rather than in the
//! projection row is [`LedgerReadError::ProjectionDamaged`] with the lookup's note, so the
//! guest scans the recorded checkpoint events as it does on any ledger; every storage failure
//! is [`LedgerReadError::Unavailable`] with the [`StoreError`]'s code (the backends' messages
//! never carry a password). A lost compare-and-swap is `AppendFailure { conflict: true }`,
//! every other append failure `conflict: false`.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;

use contextfold_core::checkpoint::{RecordedCheckpointEvent, SkipReason};
use contextfold_core::compaction::AppendFailure;
use contextfold_core::{HistoryCompactCheckpoint, RuntimeEvent};
use tokio::runtime::Handle;

use crate::component::traits::{Ledger, LedgerReadError};
use crate::ledger::SharedLedger;
use crate::storage::{CheckpointLookup, LookupSource, StoreError};

/// Milliseconds since the Unix epoch, as [`LedgerImports`] stamps a recorded checkpoint.
pub type ClockMs = Arc<dyn Fn() -> u64 + Send + Sync>;

/// The lookup notes that say the projection row was not usable.
const DAMAGE_CODES: [&str; 3] =
    ["projection_uninitialized", "projection_invalid", "projection_unreadable"];

/// Why a ledger import could not reach the host's ledger at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerImportsError {
    /// The plugin was driven from a runtime worker (a thread polling async tasks), where the
    /// imports may not block: drive it from `spawn_blocking` or a plain thread.
    #[error(
        "the ledger imports were called on an async runtime worker; drive the plugin from \
         tokio::task::spawn_blocking or a plain thread"
    )]
    OnRuntimeWorker,
}

impl LedgerImportsError {
    /// Stable snake_case code.
    pub fn code(&self) -> &'static str {
        match self {
            LedgerImportsError::OnRuntimeWorker => "ledger_imports_on_runtime_worker",
        }
    }

    fn message(&self) -> String {
        format!("{}: {self}", self.code())
    }
}

/// The component [`Ledger`] over a [`SharedLedger`] (either backend), bridged to async with a
/// runtime handle; see the module docs for the thread it must be called on.
#[derive(Clone)]
pub struct LedgerImports {
    ledger: SharedLedger,
    handle: Handle,
    clock: ClockMs,
}

impl std::fmt::Debug for LedgerImports {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LedgerImports")
            .field("backend", &self.ledger.backend())
            .finish_non_exhaustive()
    }
}

/// The wall clock, for [`LedgerImports::new`] outside tests.
pub fn wall_clock_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl LedgerImports {
    /// The imports of `ledger`, whose futures run on `handle`'s runtime; a recorded checkpoint
    /// is stamped with `clock` ([`wall_clock_ms`], or a fixed clock in tests).
    pub fn new(
        ledger: SharedLedger,
        handle: Handle,
        clock: impl Fn() -> u64 + Send + Sync + 'static,
    ) -> Self {
        Self { ledger, handle, clock: Arc::new(clock) }
    }

    /// The ledger these imports read and write.
    pub fn ledger(&self) -> &SharedLedger {
        &self.ledger
    }

    /// The AgentRun event id a checkpoint is recorded under: derived from the session and the
    /// checkpoint id alone (event ids are unique across a database, checkpoint ids per
    /// session), so a repeated append of one checkpoint can never record it twice.
    pub fn checkpoint_event_id(session_id: &str, checkpoint_id: &str) -> String {
        format!("ar-component-{}:{session_id}:{checkpoint_id}-checkpoint", session_id.len())
    }

    /// The AgentRun run id a checkpoint is recorded under (derived like the event id).
    pub fn checkpoint_run_id(session_id: &str, checkpoint_id: &str) -> String {
        format!("run-component-{}:{session_id}:{checkpoint_id}", session_id.len())
    }

    /// Waits for `future` on the runtime, or refuses on a runtime worker (module docs).
    fn block_on<F: Future>(&self, future: F) -> Result<F::Output, LedgerImportsError> {
        if Handle::try_current().is_err() {
            // No runtime context on this thread: a plain thread may always block.
            return Ok(self.handle.block_on(future));
        }
        match catch_unwind(AssertUnwindSafe(|| self.handle.block_on(future))) {
            Ok(output) => Ok(output),
            Err(payload) if is_nested_block_on(payload.as_ref()) => {
                Err(LedgerImportsError::OnRuntimeWorker)
            }
            Err(payload) => resume_unwind(payload),
        }
    }

    /// Runs one read, mapping both failure layers onto the WIT `ledger-error`.
    fn read<T, F>(&self, future: F) -> Result<T, LedgerReadError>
    where
        F: Future<Output = Result<T, StoreError>>,
    {
        self.block_on(future)
            .map_err(|error| LedgerReadError::Unavailable(error.message()))?
            .map_err(read_error)
    }
}

/// Whether a caught panic is tokio's refusal to block inside a runtime.
fn is_nested_block_on(payload: &(dyn std::any::Any + Send)) -> bool {
    let text = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or_default();
    text.contains("Cannot start a runtime from within a runtime")
}

/// A storage failure as the guest sees it.
fn read_error(error: StoreError) -> LedgerReadError {
    match error {
        StoreError::UnknownSession { session_id } => LedgerReadError::UnknownSession(session_id),
        other => LedgerReadError::Unavailable(format!("{}: {other}", other.code())),
    }
}

/// The latest checkpoint a lookup gives the guest: the projection row's, nothing when the
/// session never recorded one, otherwise `ProjectionDamaged` (the guest recovers by scan).
fn latest_of(
    session_id: &str,
    lookup: CheckpointLookup,
) -> Result<Option<HistoryCompactCheckpoint>, LedgerReadError> {
    if lookup.source == LookupSource::Projection {
        return Ok(lookup.checkpoint);
    }
    let damage = lookup.notes.iter().find(|note| DAMAGE_CODES.contains(&note.code.as_str()));
    match damage {
        Some(note) if lookup.source == LookupSource::None && note.code == DAMAGE_CODES[0] => {
            Ok(None)
        }
        Some(note) => Err(LedgerReadError::ProjectionDamaged(format!(
            "{} ({session_id}): {}",
            note.code, note.detail
        ))),
        None => Ok(lookup.checkpoint),
    }
}

impl Ledger for LedgerImports {
    fn load_events(&mut self, session_id: &str) -> Result<Vec<RuntimeEvent>, LedgerReadError> {
        let events = self.read(self.ledger.load_events(session_id))?;
        if events.is_empty() {
            return Err(LedgerReadError::UnknownSession(session_id.to_owned()));
        }
        Ok(events)
    }

    fn load_latest_checkpoint(
        &mut self,
        session_id: &str,
    ) -> Result<Option<HistoryCompactCheckpoint>, LedgerReadError> {
        latest_of(session_id, self.read(self.ledger.current_checkpoint(session_id))?)
    }

    /// The recorded checkpoint events, without the retracted ones (and those built on them):
    /// the guest's recovery reads checkpoint events only (the WIT carries no retractions), so
    /// the host leaves out what a retraction took back and the guest selects as the ledger does.
    fn scan_checkpoint_events(
        &mut self,
        session_id: &str,
    ) -> Result<Vec<RecordedCheckpointEvent>, LedgerReadError> {
        let records = self.read(self.ledger.checkpoint_records(session_id))?;
        let retracted: std::collections::HashSet<String> = records
            .recover(session_id)
            .skipped
            .into_iter()
            .filter(|skip| skip.reason == SkipReason::Retracted)
            .map(|skip| skip.event_id)
            .collect();
        Ok(records.recorded.into_iter().filter(|r| !retracted.contains(&r.event_id)).collect())
    }

    fn append_checkpoint(
        &mut self,
        session_id: &str,
        checkpoint: &HistoryCompactCheckpoint,
    ) -> Result<(), AppendFailure> {
        let failed = |message: String| AppendFailure { conflict: false, message };
        if checkpoint.session_id != session_id {
            return Err(failed(format!(
                "session_mismatch: checkpoint `{}` belongs to session `{}`, not `{session_id}`",
                checkpoint.checkpoint_id, checkpoint.session_id
            )));
        }
        let event_id = Self::checkpoint_event_id(session_id, &checkpoint.checkpoint_id);
        let run_id = Self::checkpoint_run_id(session_id, &checkpoint.checkpoint_id);
        let recorded_at_ms = (self.clock)();
        let append =
            self.ledger.append_checkpoint(&event_id, &run_id, recorded_at_ms, checkpoint.clone());
        match self.block_on(append).map_err(|error| failed(error.message()))? {
            Ok(()) => Ok(()),
            Err(error) => Err(AppendFailure {
                conflict: error.is_conflict(),
                message: format!("{}: {error}", error.code()),
            }),
        }
    }
}
