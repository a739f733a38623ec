//! [`SqliteLedger`]: the [`Ledger`] trait over the synchronous SQLite [`Store`], by delegation.
//! Every call runs the store's own method on tokio's blocking pool (the module docs of
//! [`crate::ledger`] say why); nothing about the store's behaviour changes.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use contextfold_core::budget::{Calibration, UsageFact};
use contextfold_core::compaction::MalformedInputCircuit;
use contextfold_core::projection::{ArchiveAddress, Message};
use contextfold_core::{HistoryCompactCheckpoint, RuntimeEvent};

use super::{Backend, Ledger, SharedEstimator, StoredRow};
use crate::storage::{
    AgentRunRecord, ArchiveReadError, CheckpointAppendError, CheckpointLookup, CheckpointSweep,
    CoveredLog, RowCheck, Store, StoreError,
};

/// The SQLite store as a [`Ledger`].
#[derive(Debug, Clone)]
pub struct SqliteLedger {
    store: Arc<Store>,
}

impl SqliteLedger {
    /// The ledger over an open store (shared with synchronous callers of the same store).
    pub fn new(store: Arc<Store>) -> Self {
        Self { store }
    }

    /// Opens (or creates) the file and migrates it ([`Store::open`]), on the blocking pool.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_owned();
        let store = run(move || Store::open(path)).await?;
        Ok(Self::new(Arc::new(store)))
    }

    /// The store underneath.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Runs `work` with the store on the blocking pool.
    async fn with<T, E>(
        &self,
        work: impl FnOnce(&Store) -> Result<T, E> + Send + 'static,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        let store = Arc::clone(&self.store);
        run(move || work(&store)).await
    }
}

/// Runs `work` on the blocking pool; a panic inside resumes in the caller.
async fn run<T, E>(work: impl FnOnce() -> Result<T, E> + Send + 'static) -> Result<T, E>
where
    T: Send + 'static,
    E: From<StoreError> + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Err(_) => Err(StoreError::Cancelled.into()),
    }
}

#[async_trait]
impl Ledger for SqliteLedger {
    fn backend(&self) -> Backend {
        Backend::Sqlite
    }
    async fn append_events(
        &self,
        session_id: &str,
        events: Vec<RuntimeEvent>,
    ) -> Result<(), StoreError> {
        let session = session_id.to_owned();
        self.with(move |store| store.append_events(&session, &events)).await
    }
    async fn load_events(&self, session_id: &str) -> Result<Vec<RuntimeEvent>, StoreError> {
        let session = session_id.to_owned();
        self.with(move |store| store.load_events(&session)).await
    }
    async fn load_events_after(
        &self,
        session_id: &str,
        after: u64,
    ) -> Result<Vec<RuntimeEvent>, StoreError> {
        let session = session_id.to_owned();
        self.with(move |store| store.load_events_after(&session, after)).await
    }
    async fn event_id_at(&self, session_id: &str, seq: u64) -> Result<Option<String>, StoreError> {
        let session = session_id.to_owned();
        self.with(move |store| store.event_id_at(&session, seq)).await
    }
    async fn last_seq(&self, session_id: &str) -> Result<Option<u64>, StoreError> {
        let session = session_id.to_owned();
        self.with(move |store| store.last_seq(&session)).await
    }
    async fn stored_rows(
        &self,
        session_id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<StoredRow>, StoreError> {
        let session = session_id.to_owned();
        self.with(move |store| store.stored_rows(&session, after, limit)).await
    }
    async fn read_covered(
        &self,
        session_id: &str,
        checkpoint: HistoryCompactCheckpoint,
        estimator: SharedEstimator,
    ) -> Result<Option<CoveredLog>, StoreError> {
        let session = session_id.to_owned();
        self.with(move |store| store.read_covered(&session, &checkpoint, &*estimator)).await
    }
    async fn verify_checkpoints(
        &self,
        session_id: &str,
        checkpoints: Vec<HistoryCompactCheckpoint>,
    ) -> Result<CheckpointSweep, StoreError> {
        let session = session_id.to_owned();
        self.with(move |store| store.verify_checkpoints(&session, &checkpoints)).await
    }
    async fn check_rows(&self, session_id: &str) -> Result<RowCheck, StoreError> {
        let session = session_id.to_owned();
        self.with(move |store| store.check_rows(&session)).await
    }
    async fn event_count(&self, session_id: &str) -> Result<u64, StoreError> {
        let session = session_id.to_owned();
        self.with(move |store| store.event_count(&session)).await
    }
    async fn session_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        self.with(Store::session_counts).await
    }
    async fn rebuild_projection(&self, session_id: &str) -> Result<CheckpointLookup, StoreError> {
        let session = session_id.to_owned();
        self.with(move |store| store.rebuild_projection(&session)).await
    }
    async fn rebuild_derived(&self, session_id: &str) -> Result<u64, StoreError> {
        let session = session_id.to_owned();
        self.with(move |store| store.rebuild_derived(&session)).await
    }
    async fn current_checkpoint(&self, session_id: &str) -> Result<CheckpointLookup, StoreError> {
        let session = session_id.to_owned();
        self.with(move |store| store.current_checkpoint(&session)).await
    }
    async fn append_checkpoint(
        &self,
        event_id: &str,
        run_id: &str,
        recorded_at_ms: u64,
        checkpoint: HistoryCompactCheckpoint,
    ) -> Result<(), CheckpointAppendError> {
        let (event_id, run_id) = (event_id.to_owned(), run_id.to_owned());
        self.with(move |store| {
            store.append_checkpoint(&event_id, &run_id, recorded_at_ms, &checkpoint)
        })
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
        let owned = [session_id, event_id, checkpoint_id, reason].map(str::to_owned);
        self.with(move |store| {
            let [session, event, checkpoint, reason] = &owned;
            store.retract_checkpoint(session, event, recorded_at_ms, checkpoint, reason)
        })
        .await
    }
    async fn append_agent_run_event(&self, record: AgentRunRecord) -> Result<(), StoreError> {
        self.with(move |store| store.append_agent_run_event(&record)).await
    }
    async fn agent_run_events(&self, session_id: &str) -> Result<Vec<AgentRunRecord>, StoreError> {
        let session = session_id.to_owned();
        self.with(move |store| store.agent_run_events(&session)).await
    }
    async fn latest_circuit(
        &self,
        session_id: &str,
    ) -> Result<Option<MalformedInputCircuit>, StoreError> {
        let session = session_id.to_owned();
        self.with(move |store| store.latest_circuit(&session)).await
    }
    async fn append_usage_fact(
        &self,
        session_id: &str,
        run_id: &str,
        event_id: &str,
        recorded_at_ms: u64,
        fact: UsageFact,
    ) -> Result<(), StoreError> {
        let (session, run_id, event_id) =
            (session_id.to_owned(), run_id.to_owned(), event_id.to_owned());
        self.with(move |store| {
            store.append_usage_fact(&session, &run_id, &event_id, recorded_at_ms, &fact)
        })
        .await
    }
    async fn usage_facts(&self, session_id: &str) -> Result<Vec<UsageFact>, StoreError> {
        let session = session_id.to_owned();
        self.with(move |store| store.usage_facts(&session)).await
    }
    async fn calibration(&self, session_id: &str) -> Result<Calibration, StoreError> {
        let session = session_id.to_owned();
        self.with(move |store| store.calibration(&session)).await
    }
    async fn archive_put(
        &self,
        session_id: &str,
        body: Vec<u8>,
    ) -> Result<ArchiveAddress, ArchiveReadError> {
        let session = session_id.to_owned();
        self.with(move |store| store.archive_put(&session, &body)).await
    }
    async fn archive_body(
        &self,
        session_id: &str,
        sha256: &str,
        byte_size: u64,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let (session, sha256) = (session_id.to_owned(), sha256.to_owned());
        self.with(move |store| store.archive_body(&session, &sha256, byte_size)).await
    }
    async fn hydrate_attachments(
        &self,
        session_id: &str,
        mut messages: Vec<Message>,
    ) -> Result<Vec<Message>, StoreError> {
        let session = session_id.to_owned();
        self.with(move |store| {
            store.hydrate_attachments(&session, &mut messages).map(|()| messages)
        })
        .await
    }
}
