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
//! A cold cache with a text checkpoint (V2) does not load the ledger: the store proves the
//! checkpoint's coverage from the stored rows (`storage/covered.rs`), and the cache holds only
//! the live head and the tail after it, so `contextfold project` and the first step of an agent
//! resumed on a long session take time close to hashing the ledger and memory independent of its
//! size. It stays in that mode while the same checkpoint is current and the same base estimator
//! measures; anything else (a new checkpoint, a [`LogCache::refresh`] for the whole log, a
//! projection the core would not replay over head and tail) goes to the whole-log mode above.
//!
//! The verified prefix also holds the covered events' token estimate in the base estimator's
//! units (the core scales it by the calibration ratio in use, so a new ratio keeps it valid):
//! when the base estimator itself changes (`with_estimator`, `switch_model`) the verification
//! starts over from the events in memory, without reading the ledger again.

use std::sync::Arc;

use contextfold_core::RuntimeEvent;
use contextfold_core::budget::TokenEstimator;
use contextfold_core::checkpoint::VerifiedPrefix;
use contextfold_core::event::LogError;
use contextfold_core::projection::{ProjectInput, Projection, project_with};

use crate::hashing::PipelinedSha256;
use crate::storage::{CoveredPrefix, Store, StoreError, project_covered};

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
    /// The whole log, or (with `covered`) the live head and the tail after the coverage.
    events: Vec<RuntimeEvent>,
    verifier: VerifiedPrefix<PipelinedSha256>,
    key: Option<EstimatorKey>,
    /// The coverage proven from the rows, and how many of `events` are its live head.
    covered: Option<(CoveredPrefix, usize)>,
}

impl Default for LogCache {
    fn default() -> Self {
        Self {
            events: Vec::new(),
            verifier: VerifiedPrefix::with_engine(),
            key: None,
            covered: None,
        }
    }
}

/// A projection by [`LogCache::project`], and what it read.
#[derive(Debug)]
pub(crate) struct CachedProjection {
    /// The core's answer.
    pub(crate) projection: Result<Projection, LogError>,
    /// Events read from the ledger.
    pub(crate) events_read: usize,
    /// Covered events proven from the stored rows without being loaded (0 in whole-log mode).
    pub(crate) proven_from_rows: u64,
}

impl LogCache {
    /// Projects the session's next request: `input` gives every field but the events, and its
    /// checkpoint; `estimator` measures (its base must be `key`'s).
    pub(crate) fn project(
        &mut self,
        store: &Store,
        session_id: &str,
        key: EstimatorKey,
        input: &ProjectInput<'_>,
        estimator: &dyn TokenEstimator,
    ) -> Result<CachedProjection, StoreError> {
        // Taken out while the store is read: an error leaves an empty (cold) cache, never a
        // head and tail taken for the whole log.
        if let Some((prefix, head)) = self.covered.take() {
            let mut events = std::mem::take(&mut self.events);
            let same =
                input.checkpoint.is_some_and(|cp| prefix.proves(cp)) && self.key == Some(key);
            let last = match events.get(head..).and_then(<[RuntimeEvent]>::last) {
                Some(event) => (event.seq, event.runtime_event_id.clone()),
                None => prefix.last.clone(),
            };
            if same && store.event_id_at(session_id, last.0)?.as_deref() == Some(last.1.as_str()) {
                let new = store.load_events_after(session_id, last.0)?;
                let events_read = new.len();
                events.extend(new);
                if let Some(projection) =
                    project_covered(&prefix, head, &with_events(input, &events), estimator)
                {
                    let proven_from_rows = prefix.covered;
                    self.events = events;
                    self.covered = Some((prefix, head));
                    return Ok(CachedProjection {
                        projection: Ok(projection),
                        events_read,
                        proven_from_rows,
                    });
                }
            }
            *self = Self::default();
        }
        if self.events.is_empty()
            && let Some(checkpoint) = input.checkpoint
            && checkpoint.provider_state().is_none()
            && let Some(log) = store.read_covered(session_id, checkpoint, estimator)?
        {
            let head = log.head.len();
            let mut events = log.head;
            events.extend(log.tail);
            if let Some(projection) =
                project_covered(&log.prefix, head, &with_events(input, &events), estimator)
            {
                let proven_from_rows = log.prefix.covered;
                let events_read = (events.len() - head)
                    .saturating_add(usize::try_from(proven_from_rows).unwrap_or(usize::MAX));
                *self = Self {
                    events,
                    key: Some(key),
                    covered: Some((log.prefix, head)),
                    ..Self::default()
                };
                return Ok(CachedProjection {
                    projection: Ok(projection),
                    events_read,
                    proven_from_rows,
                });
            }
        }
        let events_read = self.refresh(store, session_id)?;
        let (events, verifier) = self.view(key);
        let projection = project_with(&with_events(input, events), estimator, verifier);
        Ok(CachedProjection { projection, events_read, proven_from_rows: 0 })
    }

    /// Brings the cached events up to date with the whole ledger of `session_id`: only rows
    /// after the last cached one are read (after a projection from the rows, the whole ledger).
    /// Returns how many events were read.
    pub(crate) fn refresh(&mut self, store: &Store, session_id: &str) -> Result<usize, StoreError> {
        if self.covered.is_some() {
            *self = Self::default();
        }
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

/// `input` over `events`.
fn with_events<'a>(input: &ProjectInput<'a>, events: &'a [RuntimeEvent]) -> ProjectInput<'a> {
    ProjectInput { events, ..*input }
}
