//! The ledger trait: what the session runtime needs from its store, named once, with two
//! backends, the SQLite store ([`SqliteLedger`], one file on one machine) and PostgreSQL
//! ([`postgres::PgLedger`], one database shared by many workers). `docs/storage.md` states the
//! guarantees both keep; `host/tests/ledger/` checks them on both.
//!
//! The operations are those the runtime calls today (`host/src/runtime/*.rs`): append and read
//! the RuntimeEvent ledger (whole, after a `seq`, one id at a `seq`), the current checkpoint
//! and the checkpoint compare-and-swap with its projection row, the AgentRun facts (Run
//! lifecycle, compaction outcomes with the malformed-input circuit, usage facts and the
//! calibration they teach), the content-addressed archive and attachment hydration; plus the
//! stored rows themselves ([`StoredRow`]), from which a cold projection proves a checkpoint's
//! coverage on either backend.
//!
//! **Why the trait is async, and how SQLite fits.** The runtime is tokio-based and PostgreSQL's
//! client is natively async: an async trait lets a PostgreSQL call wait on the network without
//! holding a thread. The SQLite store is synchronous (it blocks on its mutex, on other
//! processes' write locks and on `fsync`), so [`SqliteLedger`] runs every call on tokio's
//! blocking pool (`spawn_blocking`), exactly where the runtime runs it today; a caller of the
//! trait never blocks a runtime worker and never has to know which backend it holds. The trait
//! is object-safe (`async-trait`), so `--db` can choose a backend at run time as
//! `Arc<dyn Ledger>`; one boxed future per call is nothing beside a database round trip.
//! Arguments the SQLite backend must move to another thread are taken by value.
//!
//! Errors stay those of the storage boundary: [`StoreError`] (a PostgreSQL failure is
//! [`StoreError::Postgres`], with its own reason codes), [`CheckpointAppendError`] (whose
//! `Conflict` is the lost compare-and-swap on both backends) and [`ArchiveReadError`].

pub mod postgres;
mod sqlite;

use async_trait::async_trait;
use contextfold_core::budget::{Calibration, TokenEstimator, UsageFact};
use contextfold_core::checkpoint::RecordedCheckpointEvent;
use contextfold_core::compaction::MalformedInputCircuit;
use contextfold_core::projection::{ArchiveAddress, Message};
use contextfold_core::{HistoryCompactCheckpoint, RuntimeEvent};

pub use sqlite::SqliteLedger;

use crate::storage::retraction::CheckpointRecords;
use crate::storage::{
    AgentRunRecord, ArchiveReadError, CheckpointAppendError, CheckpointLookup, CheckpointSweep,
    CoveredLog, RowCheck, Store, StoreError, agent_run_kind,
};

/// A token estimator a ledger may measure with on another thread.
pub type SharedEstimator = std::sync::Arc<dyn TokenEstimator + Send + Sync>;

/// A ledger shared by the tasks of a process, whichever backend it is.
pub type SharedLedger = std::sync::Arc<dyn Ledger>;

/// What a session runtime can be built over: a [`SharedLedger`], either backend by value, or
/// the SQLite [`Store`] itself.
pub trait IntoLedger {
    /// The ledger, shared.
    fn into_ledger(self) -> SharedLedger;
}

impl IntoLedger for SharedLedger {
    fn into_ledger(self) -> SharedLedger {
        self
    }
}

impl IntoLedger for std::sync::Arc<Store> {
    fn into_ledger(self) -> SharedLedger {
        std::sync::Arc::new(SqliteLedger::new(self))
    }
}

impl IntoLedger for Store {
    fn into_ledger(self) -> SharedLedger {
        std::sync::Arc::new(SqliteLedger::new(std::sync::Arc::new(self)))
    }
}

impl IntoLedger for SqliteLedger {
    fn into_ledger(self) -> SharedLedger {
        std::sync::Arc::new(self)
    }
}

impl IntoLedger for postgres::PgLedger {
    fn into_ledger(self) -> SharedLedger {
        std::sync::Arc::new(self)
    }
}

/// Which backend a ledger is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Backend {
    /// One SQLite file ([`crate::storage::Store`]).
    Sqlite,
    /// A PostgreSQL database ([`postgres::PgLedger`]).
    Postgres,
}

/// One `runtime_events` row exactly as stored: the event's bytes and the derived columns a
/// cold projection proves a checkpoint's coverage from (`storage/derived.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRow {
    /// The event's `seq`.
    pub seq: u64,
    /// The event's `runtimeEventId`.
    pub runtime_event_id: String,
    /// The stored JSON: the canonical bytes when `canonical`, else the serde JSON.
    pub event_json: String,
    /// Whether `event_json` is the canonical form (hashed as stored).
    pub canonical: bool,
    /// The event's turn.
    pub turn_id: String,
    /// The event's Run.
    pub run_id: String,
    /// Whether a split turn replays the event verbatim.
    pub live_head: bool,
    /// The event's estimate by the ledger's token estimator (`None` on hand-written rows).
    pub tokens: Option<u64>,
}

/// A durable store of sessions: the RuntimeEvent ledger, the AgentRun ledger with its
/// checkpoint projection, and the archive (module docs).
#[async_trait]
pub trait Ledger: Send + Sync + std::fmt::Debug {
    /// Which backend this is.
    fn backend(&self) -> Backend;

    /// Appends `events` to `session_id` in one transaction: every event of the session, `seq`
    /// above the ledger's last, a new `runtimeEventId`; otherwise nothing is written.
    async fn append_events(
        &self,
        session_id: &str,
        events: Vec<RuntimeEvent>,
    ) -> Result<(), StoreError>;

    /// The whole ledger of `session_id`, in `seq` order.
    async fn load_events(&self, session_id: &str) -> Result<Vec<RuntimeEvent>, StoreError>;

    /// The events of `session_id` with `seq` above `after`.
    async fn load_events_after(
        &self,
        session_id: &str,
        after: u64,
    ) -> Result<Vec<RuntimeEvent>, StoreError>;

    /// The `runtime_event_id` at `seq`, if any (the log cache's one-row freshness check).
    async fn event_id_at(&self, session_id: &str, seq: u64) -> Result<Option<String>, StoreError>;

    /// The highest `seq` of `session_id`, if it has events.
    async fn last_seq(&self, session_id: &str) -> Result<Option<u64>, StoreError>;

    /// Up to `limit` stored rows after `after` (`None`: from the start), in `seq` order.
    async fn stored_rows(
        &self,
        session_id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<StoredRow>, StoreError>;

    /// Proves `checkpoint`'s coverage of `session_id` from the stored rows in one streamed
    /// pass (`storage/covered.rs`), measuring with `estimator`'s base: the covered events are
    /// hashed, never held. `None` when the rows do not match the checkpoint (the caller
    /// projects the whole log, whose diagnostics are the core's).
    async fn read_covered(
        &self,
        session_id: &str,
        checkpoint: HistoryCompactCheckpoint,
        estimator: SharedEstimator,
    ) -> Result<Option<CoveredLog>, StoreError>;

    /// Checks every one of `checkpoints` against the ledger of `session_id` in one streamed
    /// pass over the stored rows (`storage/sweep.rs`; `contextfold verify`).
    async fn verify_checkpoints(
        &self,
        session_id: &str,
        checkpoints: Vec<HistoryCompactCheckpoint>,
    ) -> Result<CheckpointSweep, StoreError>;

    /// Parses every row and recomputes its canonical bytes and derived columns
    /// (`contextfold verify --deep`).
    async fn check_rows(&self, session_id: &str) -> Result<RowCheck, StoreError>;

    /// The number of events of `session_id`.
    async fn event_count(&self, session_id: &str) -> Result<u64, StoreError>;

    /// Every session with at least one event, with its event count, sorted by id
    /// (`contextfold inspect`).
    async fn session_counts(&self) -> Result<Vec<(String, u64)>, StoreError>;

    /// Rebuilds the projection row from the AgentRun ledger (`contextfold recover`): the
    /// recovered tip, or no row when there is none.
    async fn rebuild_projection(&self, session_id: &str) -> Result<CheckpointLookup, StoreError>;

    /// Recomputes the derived columns of rows written without them (a SQLite ledger from
    /// before schema version 2); returns how many were rebuilt. PostgreSQL writes them with
    /// every row and refuses rewrites, so it has none to rebuild.
    async fn rebuild_derived(&self, session_id: &str) -> Result<u64, StoreError>;

    /// The current checkpoint: the projection row when valid, else recovered from the
    /// AgentRun ledger (and the row repaired best-effort).
    async fn current_checkpoint(&self, session_id: &str) -> Result<CheckpointLookup, StoreError>;

    /// Records `checkpoint` as AgentRun event `event_id` with its projection row, in one
    /// transaction, if it is a valid successor of the tip (compare-and-swap); a lost race is
    /// [`CheckpointAppendError::Conflict`] and writes nothing.
    async fn append_checkpoint(
        &self,
        event_id: &str,
        run_id: &str,
        recorded_at_ms: u64,
        checkpoint: HistoryCompactCheckpoint,
    ) -> Result<(), CheckpointAppendError>;

    /// Takes `checkpoint_id` back, with every checkpoint built on it: appends a
    /// `checkpoint_retracted` AgentRun event `event_id` and moves the projection row to what
    /// recovery then selects, in one transaction. Returns the new current checkpoint. Never
    /// touches the RuntimeEvent log. `checkpoint_not_found` / `checkpoint_already_retracted`
    /// write nothing.
    async fn retract_checkpoint(
        &self,
        session_id: &str,
        event_id: &str,
        recorded_at_ms: u64,
        checkpoint_id: &str,
        reason: &str,
    ) -> Result<CheckpointLookup, StoreError>;

    /// Appends one AgentRun event (not a checkpoint: `reserved_agent_run_kind`).
    async fn append_agent_run_event(&self, record: AgentRunRecord) -> Result<(), StoreError>;

    /// Every AgentRun event of `session_id`, in record order.
    async fn agent_run_events(&self, session_id: &str) -> Result<Vec<AgentRunRecord>, StoreError>;

    /// The session's recorded checkpoints and retractions, as the core's recovery reads them.
    async fn checkpoint_records(&self, session_id: &str) -> Result<CheckpointRecords, StoreError> {
        CheckpointRecords::from_records(self.agent_run_events(session_id).await?)
    }

    /// Every `history_compact_checkpoint_recorded` event of `session_id`, in record order.
    async fn recorded_checkpoints(
        &self,
        session_id: &str,
    ) -> Result<Vec<RecordedCheckpointEvent>, StoreError> {
        let records = self.agent_run_events(session_id).await?;
        Ok(records
            .into_iter()
            .filter(|record| record.kind == agent_run_kind::CHECKPOINT_RECORDED)
            .map(|record| RecordedCheckpointEvent {
                event_id: record.event_id,
                session_id: record.session_id,
                recorded_at_ms: record.recorded_at_ms,
                payload: record.payload,
            })
            .collect())
    }

    /// The malformed-input circuit the latest compaction outcome of `session_id` left.
    async fn latest_circuit(
        &self,
        session_id: &str,
    ) -> Result<Option<MalformedInputCircuit>, StoreError>;

    /// Appends one usage fact as a `model_usage_recorded` AgentRun event.
    async fn append_usage_fact(
        &self,
        session_id: &str,
        run_id: &str,
        event_id: &str,
        recorded_at_ms: u64,
        fact: UsageFact,
    ) -> Result<(), StoreError> {
        let payload = serde_json::to_value(&fact).map_err(|e| StoreError::LedgerUnreadable {
            session_id: session_id.to_owned(),
            detail: format!("a usage fact does not serialize: {e}"),
        })?;
        self.append_agent_run_event(AgentRunRecord {
            event_id: event_id.to_owned(),
            session_id: session_id.to_owned(),
            run_id: run_id.to_owned(),
            kind: agent_run_kind::USAGE_RECORDED.to_owned(),
            recorded_at_ms,
            payload,
        })
        .await
    }

    /// Every usage fact of `session_id`, in record order; one that does not parse is
    /// `ledger_unreadable`.
    async fn usage_facts(&self, session_id: &str) -> Result<Vec<UsageFact>, StoreError> {
        crate::storage::usage::usage_facts_of(session_id, self.agent_run_events(session_id).await?)
    }

    /// The calibration the session's usage facts teach, in ledger order.
    async fn calibration(&self, session_id: &str) -> Result<Calibration, StoreError> {
        Ok(Calibration::from_facts(&self.usage_facts(session_id).await?))
    }

    /// Archives `body` content-addressed (SHA-256 and size) and returns its address; the same
    /// bytes again are a no-op.
    async fn archive_put(
        &self,
        session_id: &str,
        body: Vec<u8>,
    ) -> Result<ArchiveAddress, ArchiveReadError>;

    /// The archived body with this hash and size, if the session's archive holds it.
    async fn archive_body(
        &self,
        session_id: &str,
        sha256: &str,
        byte_size: u64,
    ) -> Result<Option<Vec<u8>>, StoreError>;

    /// `messages` with archived attachment bytes put back inline.
    async fn hydrate_attachments(
        &self,
        session_id: &str,
        messages: Vec<Message>,
    ) -> Result<Vec<Message>, StoreError>;
}

#[async_trait]
impl Ledger for postgres::PgLedger {
    fn backend(&self) -> Backend {
        Backend::Postgres
    }
    async fn append_events(
        &self,
        session_id: &str,
        events: Vec<RuntimeEvent>,
    ) -> Result<(), StoreError> {
        postgres::PgLedger::append_events(self, session_id, &events).await
    }
    async fn load_events(&self, session_id: &str) -> Result<Vec<RuntimeEvent>, StoreError> {
        postgres::PgLedger::load_events(self, session_id).await
    }
    async fn load_events_after(
        &self,
        session_id: &str,
        after: u64,
    ) -> Result<Vec<RuntimeEvent>, StoreError> {
        postgres::PgLedger::load_events_after(self, session_id, after).await
    }
    async fn event_id_at(&self, session_id: &str, seq: u64) -> Result<Option<String>, StoreError> {
        postgres::PgLedger::event_id_at(self, session_id, seq).await
    }
    async fn last_seq(&self, session_id: &str) -> Result<Option<u64>, StoreError> {
        postgres::PgLedger::last_seq(self, session_id).await
    }
    async fn stored_rows(
        &self,
        session_id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<StoredRow>, StoreError> {
        postgres::PgLedger::stored_rows(self, session_id, after, limit).await
    }
    async fn read_covered(
        &self,
        session_id: &str,
        checkpoint: HistoryCompactCheckpoint,
        estimator: SharedEstimator,
    ) -> Result<Option<CoveredLog>, StoreError> {
        postgres::PgLedger::read_covered(self, session_id, &checkpoint, &*estimator).await
    }
    async fn verify_checkpoints(
        &self,
        session_id: &str,
        checkpoints: Vec<HistoryCompactCheckpoint>,
    ) -> Result<CheckpointSweep, StoreError> {
        postgres::PgLedger::verify_checkpoints(self, session_id, &checkpoints).await
    }
    async fn check_rows(&self, session_id: &str) -> Result<RowCheck, StoreError> {
        postgres::PgLedger::check_rows(self, session_id).await
    }
    async fn event_count(&self, session_id: &str) -> Result<u64, StoreError> {
        postgres::PgLedger::event_count(self, session_id).await
    }
    async fn session_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        postgres::PgLedger::session_counts(self).await
    }
    async fn rebuild_projection(&self, session_id: &str) -> Result<CheckpointLookup, StoreError> {
        postgres::PgLedger::rebuild_projection(self, session_id).await
    }
    async fn rebuild_derived(&self, _session_id: &str) -> Result<u64, StoreError> {
        Ok(0)
    }
    async fn current_checkpoint(&self, session_id: &str) -> Result<CheckpointLookup, StoreError> {
        postgres::PgLedger::current_checkpoint(self, session_id).await
    }
    async fn append_checkpoint(
        &self,
        event_id: &str,
        run_id: &str,
        recorded_at_ms: u64,
        checkpoint: HistoryCompactCheckpoint,
    ) -> Result<(), CheckpointAppendError> {
        postgres::PgLedger::append_checkpoint(self, event_id, run_id, recorded_at_ms, &checkpoint)
            .await
    }
    async fn retract_checkpoint(
        &self,
        session_id: &str,
        event_id: &str,
        recorded_at_ms: u64,
        checkpoint_id: &str,
        reason: &str,
    ) -> Result<CheckpointLookup, StoreError> {
        postgres::PgLedger::retract_checkpoint(
            self,
            session_id,
            event_id,
            recorded_at_ms,
            checkpoint_id,
            reason,
        )
        .await
    }
    async fn append_agent_run_event(&self, record: AgentRunRecord) -> Result<(), StoreError> {
        postgres::PgLedger::append_agent_run_event(self, &record).await
    }
    async fn agent_run_events(&self, session_id: &str) -> Result<Vec<AgentRunRecord>, StoreError> {
        postgres::PgLedger::agent_run_events(self, session_id).await
    }
    async fn latest_circuit(
        &self,
        session_id: &str,
    ) -> Result<Option<MalformedInputCircuit>, StoreError> {
        postgres::PgLedger::latest_circuit(self, session_id).await
    }
    async fn archive_put(
        &self,
        session_id: &str,
        body: Vec<u8>,
    ) -> Result<ArchiveAddress, ArchiveReadError> {
        postgres::PgLedger::archive_put(self, session_id, &body).await
    }
    async fn archive_body(
        &self,
        session_id: &str,
        sha256: &str,
        byte_size: u64,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        postgres::PgLedger::archive_body(self, session_id, sha256, byte_size).await
    }
    async fn hydrate_attachments(
        &self,
        session_id: &str,
        mut messages: Vec<Message>,
    ) -> Result<Vec<Message>, StoreError> {
        postgres::PgLedger::hydrate_attachments(self, session_id, &mut messages).await?;
        Ok(messages)
    }
}
