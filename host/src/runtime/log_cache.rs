//! The session's log as this process last read it, with its verified prefix, so the projection
//! before each agent step reads and verifies only the events appended since.
//!
//! On the first projection the cache loads the whole ledger and the core verifies the
//! checkpoint's prefix from scratch; afterwards it asks the store only for rows after the last
//! one it holds (`seq > last`), after checking that that last row is still in the ledger with
//! the same id (a replaced or truncated file starts the cache over), and the core's
//! [`VerifiedPrefix`] hashes only the events it has not seen. The store's ledger is append-only
//! (SQL triggers refuse every UPDATE and DELETE of its rows), so rows before the last one cannot
//! change under a live cache except by a writer that bypasses SQLite's rules; such a change is
//! caught by the next process that opens the file, and by `contextfold verify`.
//!
//! The verified prefix also holds the covered events' token estimate in the base estimator's
//! units (the core scales it by the calibration ratio in use, so a new ratio keeps it valid):
//! when the base estimator itself changes (`with_estimator`, `switch_model`) the verification
//! starts over from the events in memory, without reading the ledger again.

use std::sync::Arc;

use contextfold_core::RuntimeEvent;
use contextfold_core::verified_prefix::VerifiedPrefix;

use crate::hashing::PipelinedSha256;
use crate::storage::{Store, StoreError};

use super::session::BaseEstimator;

/// Which base estimator measured the verified prefix (its address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EstimatorKey {
    base: usize,
}

impl EstimatorKey {
    /// The key of `base`.
    pub(crate) fn new(base: &BaseEstimator) -> Self {
        Self { base: Arc::as_ptr(base).cast::<()>() as usize }
    }
}

/// One session's events as last read, and the verified prefix over them.
#[derive(Debug)]
pub(crate) struct LogCache {
    events: Vec<RuntimeEvent>,
    verifier: VerifiedPrefix<PipelinedSha256>,
    key: Option<EstimatorKey>,
}

impl Default for LogCache {
    fn default() -> Self {
        Self { events: Vec::new(), verifier: VerifiedPrefix::with_engine(), key: None }
    }
}

impl LogCache {
    /// Brings the cached events up to date with the ledger of `session_id`: only rows after the
    /// last cached one are read. Returns how many events were read.
    pub(crate) fn refresh(&mut self, store: &Store, session_id: &str) -> Result<usize, StoreError> {
        let last = self.events.last().map(|e| (e.seq, e.runtime_event_id.as_str()));
        match last {
            Some((seq, id)) if store.event_id_at(session_id, seq)?.as_deref() == Some(id) => {
                let new = store.load_events_after(session_id, seq)?;
                let read = new.len();
                self.events.extend(new);
                Ok(read)
            }
            _ => {
                *self = Self::default();
                self.events = store.load_events(session_id)?;
                Ok(self.events.len())
            }
        }
    }

    /// The cached events and the verified prefix over them, measured with `key`'s estimator
    /// (a different estimator starts the verification over).
    pub(crate) fn view(
        &mut self,
        key: EstimatorKey,
    ) -> (&[RuntimeEvent], &mut VerifiedPrefix<PipelinedSha256>) {
        if self.key != Some(key) {
            self.verifier = VerifiedPrefix::with_engine();
            self.key = Some(key);
        }
        (&self.events, &mut self.verifier)
    }

    /// The cached events.
    pub(crate) fn events(&self) -> &[RuntimeEvent] {
        &self.events
    }
}
