//! The session's log as this process last read it, with its verified prefix, so the projection
//! before each agent step reads and verifies only the events appended since.
//!
//! On the first projection the cache loads the whole ledger and the core verifies the
//! checkpoint's prefix from scratch; afterwards it asks the ledger only for rows after the last
//! one it holds (`seq > last`), after checking that that last row is still in the ledger with
//! the same id (a replaced or truncated ledger starts the cache over), and the core's
//! [`VerifiedPrefix`] hashes only the events it has not seen. Both backends keep the ledger
//! append-only (triggers refuse every UPDATE and DELETE of its rows), so rows before the last
//! one cannot change under a live cache except by a writer that bypasses the database's rules;
//! such a change is caught by the next process that opens the ledger, and by
//! `contextfold verify`.
//!
//! A cold cache with a text checkpoint (V2) does not load the ledger: the ledger proves the
//! checkpoint's coverage from the stored rows in one streamed pass (`storage/covered.rs`, on
//! either backend: [`Ledger::read_covered`]), and the cache holds only
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
use contextfold_core::checkpoint::VerifiedPrefix;
use contextfold_core::event::LogError;
use contextfold_core::projection::{ProjectInput, Projection, project_with};

use crate::hashing::PipelinedSha256;
use crate::ledger::{Ledger, SharedEstimator};
use crate::storage::{CoveredPrefix, StoreError, project_covered};

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
    pub(crate) async fn project(
        &mut self,
        ledger: &dyn Ledger,
        session_id: &str,
        key: EstimatorKey,
        input: &ProjectInput<'_>,
        estimator: &SharedEstimator,
    ) -> Result<CachedProjection, StoreError> {
        // Taken out while the ledger is read: an error leaves an empty (cold) cache, never a
        // head and tail taken for the whole log.
        if let Some((prefix, head)) = self.covered.take() {
            let mut events = std::mem::take(&mut self.events);
            let same =
                input.checkpoint.is_some_and(|cp| prefix.proves(cp)) && self.key == Some(key);
            let last = match events.get(head..).and_then(<[RuntimeEvent]>::last) {
                Some(event) => (event.seq, event.runtime_event_id.clone()),
                None => prefix.last.clone(),
            };
            if same
                && ledger.event_id_at(session_id, last.0).await?.as_deref() == Some(last.1.as_str())
            {
                let new = ledger.load_events_after(session_id, last.0).await?;
                let events_read = new.len();
                events.extend(new);
                if let Some(projection) =
                    project_covered(&prefix, head, &with_events(input, &events), &**estimator)
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
            && let Some(log) =
                ledger.read_covered(session_id, checkpoint.clone(), Arc::clone(estimator)).await?
        {
            let head = log.head.len();
            let mut events = log.head;
            events.extend(log.tail);
            if let Some(projection) =
                project_covered(&log.prefix, head, &with_events(input, &events), &**estimator)
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
        let events_read = self.refresh(ledger, session_id).await?;
        let (events, verifier) = self.view(key);
        let projection = project_with(&with_events(input, events), &**estimator, verifier);
        Ok(CachedProjection { projection, events_read, proven_from_rows: 0 })
    }

    /// Brings the cached events up to date with the whole ledger of `session_id`: only rows
    /// after the last cached one are read (after a projection from the rows, the whole ledger).
    /// Returns how many events were read.
    pub(crate) async fn refresh(
        &mut self,
        ledger: &dyn Ledger,
        session_id: &str,
    ) -> Result<usize, StoreError> {
        if self.covered.is_some() {
            *self = Self::default();
        }
        if let Some((seq, id)) = self.events.last().map(|e| (e.seq, e.runtime_event_id.clone()))
            && ledger.event_id_at(session_id, seq).await?.as_deref() == Some(id.as_str())
        {
            let new = ledger.load_events_after(session_id, seq).await?;
            let read = new.len();
            self.events.extend(new);
            return Ok(read);
        }
        *self = Self::default();
        self.events = ledger.load_events(session_id).await?;
        Ok(self.events.len())
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
