//! [`MemoryLedger`]: an in-memory [`Ledger`] with the same contract as the SQLite one
//! (atomic compare-and-swap append, a bounded projection that can be damaged and recovered).
//! Clones share one ledger, so a test keeps a handle while a plugin owns another.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use contextfold_core::checkpoint::{RecordedCheckpointEvent, select_recovered_checkpoint};
use contextfold_core::compaction::AppendFailure;
use contextfold_core::{HistoryCompactCheckpoint, RuntimeEvent};

use crate::component::traits::{Ledger, LedgerReadError};

#[derive(Debug, Default)]
struct Inner {
    events: BTreeMap<String, Vec<RuntimeEvent>>,
    records: Vec<RecordedCheckpointEvent>,
    /// The bounded projection: `Some(checkpoint)` per session, `None` when damaged.
    projection: BTreeMap<String, Option<HistoryCompactCheckpoint>>,
    fail_appends: u32,
    clock_ms: u64,
}

impl Inner {
    fn latest(&self, session_id: &str) -> Option<HistoryCompactCheckpoint> {
        match self.projection.get(session_id) {
            Some(Some(checkpoint)) => Some(checkpoint.clone()),
            _ => select_recovered_checkpoint(session_id, &self.records).selected,
        }
    }
}

/// An in-memory ledger shared by its clones.
#[derive(Debug, Clone, Default)]
pub struct MemoryLedger {
    inner: Arc<Mutex<Inner>>,
}

impl MemoryLedger {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Replaces a session's RuntimeEvents.
    pub fn set_events(&self, session_id: &str, events: Vec<RuntimeEvent>) {
        self.lock().events.insert(session_id.to_owned(), events);
    }

    /// A session's RuntimeEvents (empty for an unknown session).
    pub fn events(&self, session_id: &str) -> Vec<RuntimeEvent> {
        self.lock().events.get(session_id).cloned().unwrap_or_default()
    }

    /// The latest checkpoint (projection row, or recovered from the records when damaged).
    pub fn latest(&self, session_id: &str) -> Option<HistoryCompactCheckpoint> {
        self.lock().latest(session_id)
    }

    /// The recorded checkpoint events of every session, in recording order.
    pub fn records(&self) -> Vec<RecordedCheckpointEvent> {
        self.lock().records.clone()
    }

    /// Marks a session's projection row damaged (as a corrupt or missing row would be).
    pub fn damage_projection(&self, session_id: &str) {
        self.lock().projection.insert(session_id.to_owned(), None);
    }

    /// Makes the next `count` appends fail with a storage error (nothing written).
    pub fn fail_next_appends(&self, count: u32) {
        self.lock().fail_appends = count;
    }
}

impl Ledger for MemoryLedger {
    fn load_events(&mut self, session_id: &str) -> Result<Vec<RuntimeEvent>, LedgerReadError> {
        self.lock()
            .events
            .get(session_id)
            .cloned()
            .ok_or_else(|| LedgerReadError::UnknownSession(session_id.to_owned()))
    }

    fn load_latest_checkpoint(
        &mut self,
        session_id: &str,
    ) -> Result<Option<HistoryCompactCheckpoint>, LedgerReadError> {
        let inner = self.lock();
        match inner.projection.get(session_id) {
            Some(Some(checkpoint)) => Ok(Some(checkpoint.clone())),
            Some(None) => Err(LedgerReadError::ProjectionDamaged(format!(
                "projection row of `{session_id}` is invalid"
            ))),
            None => Ok(None),
        }
    }

    fn scan_checkpoint_events(
        &mut self,
        session_id: &str,
    ) -> Result<Vec<RecordedCheckpointEvent>, LedgerReadError> {
        Ok(self.lock().records.iter().filter(|r| r.session_id == session_id).cloned().collect())
    }

    fn append_checkpoint(
        &mut self,
        session_id: &str,
        checkpoint: &HistoryCompactCheckpoint,
    ) -> Result<(), AppendFailure> {
        let mut inner = self.lock();
        if inner.fail_appends > 0 {
            inner.fail_appends -= 1;
            return Err(AppendFailure { conflict: false, message: "disk full (scripted)".into() });
        }
        let latest = inner.latest(session_id).map(|cp| cp.checkpoint_id);
        if latest != checkpoint.previous_checkpoint_id {
            return Err(AppendFailure {
                conflict: true,
                message: format!(
                    "latest checkpoint is {latest:?}, the candidate succeeds {:?}",
                    checkpoint.previous_checkpoint_id
                ),
            });
        }
        inner.clock_ms += 1;
        let event_id = format!("ar-{}", inner.records.len() + 1);
        let recorded_at_ms = inner.clock_ms;
        inner.records.push(RecordedCheckpointEvent {
            event_id,
            session_id: session_id.to_owned(),
            recorded_at_ms,
            payload: checkpoint.to_value(),
        });
        inner.projection.insert(session_id.to_owned(), Some(checkpoint.clone()));
        Ok(())
    }
}
