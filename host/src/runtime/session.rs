//! [`SessionRuntime`]: one session's turns, projections and compactions over a [`Ledger`]
//! (a SQLite file or a PostgreSQL database).

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Mutex as AsyncMutex;

use contextfold_core::budget::{Calibration, TokenEstimator};
use contextfold_core::compaction::{
    Compactor, MalformedInputCircuit, OutcomeKind, ProviderIdentity, Trigger,
};
use contextfold_core::projection::{CalibratedProjection, ProjectInput, Projection};
use contextfold_core::{ModelFacts, RuntimeEvent};
use serde::Serialize;

use super::compactors::{NativeCompactor, Summarizer};
use super::error::RuntimeError;
use super::log_cache::{EstimatorKey, LogCache};
use super::stop::StopSignal;
use super::transaction::{CompactionReport, Request};
use crate::ledger::{IntoLedger, SharedEstimator, SharedLedger};
use crate::storage::{CheckpointLookup, LookupNote};

/// What the runtime needs to know about a session's model and provider.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// The session.
    pub session_id: String,
    /// Facts about the selected model (context window, fixed overhead).
    pub model: ModelFacts,
    /// Provider, connection and model of the session's requests.
    pub provider: ProviderIdentity,
    /// The compactor selected for the provider.
    pub compactor: Compactor,
}

/// The Run currently holding the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ActiveRun {
    /// An ordinary turn.
    Turn(String),
    /// A manual compaction Run.
    Compaction(String),
}

#[derive(Debug, Default)]
pub(crate) struct RuntimeState {
    pub(crate) active: Option<ActiveRun>,
    pub(crate) circuit: MalformedInputCircuit,
    /// The session's calibration, loaded from its usage facts on first use.
    pub(crate) calibration: Option<Calibration>,
    /// Background preparation of the next checkpoint (off unless enabled).
    pub(crate) preparations: super::prepare::Preparations,
}

/// The uncalibrated token estimator a runtime starts from (shared, thread-safe).
pub type BaseEstimator = Arc<dyn TokenEstimator + Send + Sync>;

/// A source of wall-clock time in milliseconds since the Unix epoch.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// The history of the next request, with the lookup that found its checkpoint.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectionReport {
    /// The core's projection.
    #[serde(flatten)]
    pub projection: Projection,
    /// Checkpoint lookup notes (projection damage, recovery).
    pub lookup_notes: Vec<LookupNote>,
    /// The projection's history measured by the uncalibrated estimator: the request's own
    /// estimate that a [`contextfold_core::budget::UsageFact`] records.
    pub uncalibrated_tokens: u64,
    /// The calibration ratio the projection was measured with, in thousandths.
    pub ratio_permille: u32,
    /// Events read from the ledger for this projection: the whole log the first time, then
    /// only the events appended since the runtime's previous read.
    pub ledger_events_read: usize,
    /// Covered events proven from the stored rows (their canonical bytes and derived columns)
    /// without being loaded: the checkpoint's coverage on a cold projection from the rows and
    /// on the steps that follow it under the same checkpoint; 0 when the whole log is held.
    pub proven_from_rows: u64,
}

/// Drives one session: appends events, evaluates capacity before and during turns, recovers
/// from provider overflow, and runs manual compaction as its own Run. Every trigger enters the
/// same core transaction ([`contextfold_core::compaction::Compaction`]).
///
/// Every ledger call is awaited through the [`Ledger`] trait (the SQLite backend runs its calls
/// on tokio's blocking pool). "Active turn" state is per runtime (one process); across
/// processes and machines the ledger's compare-and-swap keeps checkpoint writes serialized.
pub struct SessionRuntime<S, N> {
    pub(crate) ledger: SharedLedger,
    pub(crate) config: SessionConfig,
    pub(crate) summarizer: Arc<S>,
    pub(crate) native: Arc<N>,
    pub(crate) state: Mutex<RuntimeState>,
    pub(crate) clock: Clock,
    pub(crate) base_estimator: BaseEstimator,
    /// The log as last read, with its verified prefix ([`LogCache`]).
    pub(crate) log: AsyncMutex<LogCache>,
}

impl<S, N> std::fmt::Debug for SessionRuntime<S, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionRuntime").field("config", &self.config).finish_non_exhaustive()
    }
}

impl<S: Summarizer, N: NativeCompactor> SessionRuntime<S, N> {
    /// A runtime for `config.session_id` over `ledger` (a [`crate::storage::Store`], either
    /// backend, or a [`SharedLedger`]), using the system clock.
    pub fn new(ledger: impl IntoLedger, config: SessionConfig, summarizer: S, native: N) -> Self {
        let clock: Clock = Arc::new(system_now_ms);
        let base_estimator = super::usage::base_estimator_for(&config.provider);
        Self {
            ledger: ledger.into_ledger(),
            config,
            summarizer: Arc::new(summarizer),
            native: Arc::new(native),
            state: Mutex::default(),
            clock,
            base_estimator,
            log: AsyncMutex::default(),
        }
    }

    /// Replaces the uncalibrated estimator (by default the
    /// [`contextfold_core::budget::PieceEstimator`]; exact counting for OpenAI models:
    /// [`crate::runtime::exact_estimator_for`]).
    pub fn with_estimator(mut self, estimator: BaseEstimator) -> Self {
        self.base_estimator = estimator;
        self
    }

    /// Replaces the clock (deterministic demos and tests).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The session's configuration.
    pub fn config(&self) -> &SessionConfig {
        &self.config
    }

    /// Changes the model facts (e.g. the user switched models).
    pub fn set_model(&mut self, model: ModelFacts) {
        self.config.model = model;
    }

    /// Switches the session to another provider or model (the user picked another model):
    /// later projections and compactions use its facts, its own calibration and its base
    /// estimator (an estimator set with [`SessionRuntime::with_estimator`] is replaced).
    pub fn switch_model(&mut self, provider: ProviderIdentity, model: ModelFacts) {
        self.base_estimator = super::usage::base_estimator_for(&provider);
        self.config.provider = provider;
        self.config.model = model;
    }

    /// The ledger.
    pub fn ledger(&self) -> &SharedLedger {
        &self.ledger
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, RuntimeState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts an ordinary turn. Refused while a manual compaction Run is active.
    pub fn begin_turn(&self, turn_id: &str) -> Result<(), RuntimeError> {
        let mut state = self.state();
        match &state.active {
            Some(ActiveRun::Compaction(run_id)) => {
                Err(RuntimeError::CompactionActive { run_id: run_id.clone() })
            }
            Some(ActiveRun::Turn(active)) => {
                Err(RuntimeError::TurnActive { turn_id: active.clone() })
            }
            None => {
                state.active = Some(ActiveRun::Turn(turn_id.to_owned()));
                Ok(())
            }
        }
    }

    /// Ends the active ordinary turn.
    pub fn end_turn(&self) -> Result<(), RuntimeError> {
        let mut state = self.state();
        match state.active {
            Some(ActiveRun::Turn(_)) => {
                state.active = None;
                Ok(())
            }
            _ => Err(RuntimeError::NoActiveTurn),
        }
    }

    /// The run id of the active Run, if any (a turn's Run or the manual compaction's).
    pub(crate) fn active_run_id(&self) -> Option<String> {
        match &self.state().active {
            Some(ActiveRun::Turn(turn_id)) => Some(run_of(turn_id)),
            Some(ActiveRun::Compaction(run_id)) => Some(run_id.clone()),
            None => None,
        }
    }

    pub(crate) fn active_turn(&self) -> Option<String> {
        match &self.state().active {
            Some(ActiveRun::Turn(turn_id)) => Some(turn_id.clone()),
            _ => None,
        }
    }

    /// Appends canonical events to the session ledger.
    pub async fn append(&self, events: Vec<RuntimeEvent>) -> Result<(), RuntimeError> {
        Ok(self.ledger.append_events(&self.config.session_id, events).await?)
    }

    /// Loads the log and the current checkpoint (projection first, ledger recovery otherwise).
    /// Only the events appended since this runtime last read the ledger are read
    /// (the runtime's log cache, `host/src/runtime/log_cache.rs`).
    pub async fn load(&self) -> Result<(Vec<RuntimeEvent>, CheckpointLookup), RuntimeError> {
        let session = &self.config.session_id;
        let lookup = self.ledger.current_checkpoint(session).await?;
        let mut cache = self.log.lock().await;
        cache.refresh(&*self.ledger, session).await?;
        Ok((cache.events().to_vec(), lookup))
    }

    /// Projects the next request's history (the active turn, if any, is the current turn).
    /// Reads only the events appended since the previous projection and verifies only the
    /// part of the checkpoint's prefix not verified before (the log cache), so an agent step
    /// costs O(new events), also when the calibration ratio changes.
    pub async fn project(&self, fail_open: bool) -> Result<ProjectionReport, RuntimeError> {
        let estimator = self.estimator().await?;
        let key = EstimatorKey::new(&estimator.base);
        let current = self.active_turn();
        let session = &self.config.session_id;
        let measure: SharedEstimator = Arc::new(estimator.clone());
        let lookup = self.ledger.current_checkpoint(session).await?;
        let input = ProjectInput {
            events: &[],
            current_turn_id: current.as_deref(),
            checkpoint: lookup.checkpoint.as_ref(),
            model: &self.config.model,
            provider: Some(&self.config.provider),
            fail_open,
        };
        let mut cache = self.log.lock().await;
        let cached = cache.project(&*self.ledger, session, key, &input, &measure).await?;
        drop(cache);
        let (ledger_events_read, proven_from_rows) = (cached.events_read, cached.proven_from_rows);
        let CalibratedProjection { projection, uncalibrated_tokens, ratio_permille } =
            CalibratedProjection::measured(
                cached.projection?,
                &estimator.base,
                estimator.ratio_permille,
            );
        Ok(ProjectionReport {
            projection,
            lookup_notes: lookup.notes,
            uncalibrated_tokens,
            ratio_permille,
            ledger_events_read,
            proven_from_rows,
        })
    }

    /// The history to send with the next model request: the normal projection, or, when it does
    /// not fit the budget (a compaction failed or could not shrink it enough), the fail-open
    /// projection: the source-matched checkpoint with the newest complete raw turns that fit,
    /// never an invented summary and never a widened coverage claim. The omission is reported
    /// (`previous_checkpoint_reused`, `omitted_events`). Attachments whose bytes the ledger
    /// keeps in the archive come back inline, ready for the wire formats.
    pub async fn project_for_request(&self) -> Result<ProjectionReport, RuntimeError> {
        // A projection that fits is the same in both modes (see `ProjectInput::fail_open`).
        let mut report = self.project(true).await?;
        let messages = std::mem::take(&mut report.projection.messages);
        report.projection.messages =
            self.ledger.hydrate_attachments(&self.config.session_id, messages).await?;
        Ok(report)
    }

    /// Pre-turn evaluation: call after the user's message of the active turn is appended and
    /// before the first model request. Compacts (trigger `pre_turn`) when the projection does
    /// not fit; returns `None` when it fits.
    pub async fn evaluate_pre_turn(&self) -> Result<Option<CompactionReport>, RuntimeError> {
        self.evaluate(Trigger::PreTurn).await
    }

    /// Mid-turn evaluation: call after each agent step of the active turn, before the next
    /// model request. Compacts (trigger `mid_turn`) when the projection does not fit.
    pub async fn evaluate_mid_turn(&self) -> Result<Option<CompactionReport>, RuntimeError> {
        self.evaluate(Trigger::MidTurn).await
    }

    async fn evaluate(&self, trigger: Trigger) -> Result<Option<CompactionReport>, RuntimeError> {
        let turn = self.active_turn().ok_or(RuntimeError::NoActiveTurn)?;
        let projected = self.project(false).await?.projection;
        if projected.fits {
            self.prepare_if_due(projected.estimated_tokens).await?;
            return Ok(None);
        }
        let request =
            Request { trigger, current_turn_id: Some(turn.clone()), run_id: run_of(&turn) };
        let (held, preparation) = self.take_prepared().await;
        let prepared = held.as_ref().map(|held| held.checkpoint.clone());
        let mut report = self.compact(request, None, prepared).await?;
        report.preparation = preparation;
        self.settle(held, &report.outcome).await;
        Ok(Some(report))
    }

    /// Provider-overflow recovery: the provider rejected the active turn's request as over its
    /// context; compacts with trigger `overflow`.
    pub async fn recover_from_overflow(&self) -> Result<CompactionReport, RuntimeError> {
        let turn = self.active_turn().ok_or(RuntimeError::NoActiveTurn)?;
        let request = Request {
            trigger: Trigger::Overflow,
            current_turn_id: Some(turn.clone()),
            run_id: run_of(&turn),
        };
        // The estimate was wrong: whatever was prepared against it is not used.
        self.supersede().await;
        self.compact(request, None, None).await
    }

    /// Manual compaction as its own Run (trigger `manual`). Refused while an ordinary turn is
    /// active ([`RuntimeError::TurnActive`]) and before anything is written when the ledgers
    /// cannot be read; while it runs, [`SessionRuntime::begin_turn`] is refused. It writes no
    /// user message: the AgentRun ledger gets `run_started`, the checkpoint (if any),
    /// `compaction_outcome_recorded`, then `run_completed` or `run_cancelled`; a failed outcome
    /// adds the core's failure note as one `runtime_note` event. Raising `stop` cancels the
    /// transaction before its durable append (the provider call is dropped), persists nothing
    /// but the Run's lifecycle, and leaves the session ready for the next turn.
    pub async fn compact_manually(
        &self,
        stop: &StopSignal,
    ) -> Result<CompactionReport, RuntimeError> {
        super::manual::run_manual(self, stop).await
    }

    pub(crate) fn now_ms(&self) -> u64 {
        (self.clock)()
    }

    pub(crate) fn outcome_is_failure(kind: OutcomeKind) -> bool {
        matches!(kind, OutcomeKind::FailedOpen | OutcomeKind::Exhausted)
    }
}

/// A tag unique to this process and call. Run, AgentRun event and checkpoint ids built from
/// the ledger's size and the clock alone collide when two processes compact one session in
/// the same millisecond (a UNIQUE violation instead of the typed successor conflict).
pub(crate) fn unique_tag() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let next = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{:x}.{next}", std::process::id())
}

/// Run id of an ordinary turn's events when the runtime writes on its behalf.
fn run_of(turn_id: &str) -> String {
    format!("run-{turn_id}")
}

fn system_now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
