//! [`Plugin`]: one live instance of the component with its store, serving one host's ledger
//! and provider, replaced by a fresh instance after any trap.

use std::collections::BTreeMap;

use wasmtime::component::ResourceAny;
use wasmtime::{Engine, Store, StoreLimitsBuilder, Trap};

use crate::component::bindings::contextfold::compaction::types::{
    CompactResult, Diagnostic, FinishReason,
};
use crate::component::bindings::exports::contextfold::compaction::compaction::CompactRequest;
use crate::component::bindings::exports::contextfold::compaction::projection::{
    PrefixOptions, ProjectRequest, ReplayDecision, ReplayRequest, SafePrefix, SummaryDefect,
};
use crate::component::bindings::{Compactor, CompactorPre};
use crate::component::checkpoint_guard::CheckpointRejection;
use crate::component::error::{ComponentError, GuestError};
use crate::component::host_state::{HostState, PluginLimiter};
use crate::component::prepare::SessionPreparations;
use crate::component::runner::RunnerLimits;
use crate::component::traits::{Ledger, Provider};

/// A step-driven compaction living in one plugin instance (the WIT `compaction-session`).
/// Drop it with [`Plugin::drop_session`].
#[derive(Debug)]
pub struct StepSession {
    resource: ResourceAny,
    generation: u64,
}

/// One instance of the component serving one host. Every call runs with a fresh fuel budget;
/// a call that traps discards the instance and its store (the ledger and provider are kept),
/// and the next call instantiates again from the shared `InstancePre`.
pub struct Plugin {
    engine: Engine,
    pre: CompactorPre<HostState>,
    limits: RunnerLimits,
    store: Option<Store<HostState>>,
    bindings: Option<Compactor>,
    generation: u64,
    traps: u64,
    /// Background preparation by session: the checkpoint held (prepared by
    /// [`Plugin::prepare`], not yet used or refused) and the counts.
    pub(super) preparations: BTreeMap<String, SessionPreparations>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("limits", &self.limits)
            .field("generation", &self.generation)
            .field("traps", &self.traps)
            .field("preparations", &self.preparations)
            .finish_non_exhaustive()
    }
}

mod steps;

type CallResult<T> = wasmtime::Result<T>;

impl Plugin {
    pub(crate) fn new(
        engine: Engine,
        pre: CompactorPre<HostState>,
        limits: RunnerLimits,
        ledger: Box<dyn Ledger>,
        provider: Box<dyn Provider>,
    ) -> Self {
        let limiter = PluginLimiter::new(
            StoreLimitsBuilder::new()
                .memory_size(limits.memory_bytes)
                .trap_on_grow_failure(true)
                .build(),
        );
        let store = Self::new_store(
            &engine,
            HostState {
                ledger,
                provider,
                limiter,
                rejections: Vec::new(),
                preparing: false,
                meter: Default::default(),
            },
        );
        Self {
            engine,
            pre,
            limits,
            store: Some(store),
            bindings: None,
            generation: 0,
            traps: 0,
            preparations: BTreeMap::new(),
        }
    }

    fn new_store(engine: &Engine, state: HostState) -> Store<HostState> {
        let mut store = Store::new(engine, state);
        store.limiter(|state| &mut state.limiter);
        store
    }

    /// How many calls trapped (and replaced the instance) so far.
    pub fn traps(&self) -> u64 {
        self.traps
    }

    /// Checkpoints the plugin asked to append and the host refused (forged coverage, wrong
    /// session, illegitimate successor), oldest first.
    pub fn rejected_checkpoints(&self) -> &[CheckpointRejection] {
        self.store.as_ref().map_or(&[], |store| &store.data().rejections)
    }

    /// The store data: the host's ledger and provider (kept across traps).
    pub(super) fn state_mut(&mut self) -> Result<&mut HostState, ComponentError> {
        self.store.as_mut().map(|store| store.data_mut()).ok_or(ComponentError::SessionLost)
    }

    /// Runs one exported call under the limits; a trap replaces the instance.
    pub(super) fn call<R>(
        &mut self,
        f: impl FnOnce(&Compactor, &mut Store<HostState>) -> CallResult<R>,
    ) -> Result<R, ComponentError> {
        if self.bindings.is_none() {
            self.instantiate()?;
        }
        let store = self.store.as_mut().ok_or(ComponentError::SessionLost)?;
        store
            .set_fuel(self.limits.fuel_per_call)
            .map_err(|e| ComponentError::Instantiate(format!("{e:#}")))?;
        store.data_mut().limiter.memory_denied = false;
        let bindings = self.bindings.as_ref().ok_or(ComponentError::SessionLost)?;
        match f(bindings, store) {
            Ok(value) => Ok(value),
            Err(error) => {
                let classified = self.classify(&error);
                self.replace_instance();
                Err(classified)
            }
        }
    }

    /// Instantiates the component in the current store. A fresh store holds no fuel, and
    /// instantiation runs guest code (data initialisation, start functions), so it gets its own
    /// full budget first; a failed instantiation replaces the store like a trapped call.
    fn instantiate(&mut self) -> Result<(), ComponentError> {
        let store = self.store.as_mut().ok_or(ComponentError::SessionLost)?;
        store
            .set_fuel(self.limits.fuel_per_call)
            .map_err(|e| ComponentError::Instantiate(format!("{e:#}")))?;
        store.data_mut().limiter.memory_denied = false;
        match self.pre.instantiate(&mut *store) {
            Ok(bindings) => {
                self.bindings = Some(bindings);
                Ok(())
            }
            Err(error) => {
                let classified = match self.classify(&error) {
                    trap @ (ComponentError::FuelExhausted { .. }
                    | ComponentError::MemoryLimit { .. }) => trap,
                    _ => ComponentError::Instantiate(format!("{error:#}")),
                };
                self.replace_instance();
                Err(classified)
            }
        }
    }

    fn classify(&self, error: &wasmtime::Error) -> ComponentError {
        let memory_denied = self.store.as_ref().is_some_and(|s| s.data().limiter.memory_denied);
        if memory_denied {
            return ComponentError::MemoryLimit { limit_bytes: self.limits.memory_bytes };
        }
        match error.downcast_ref::<Trap>() {
            Some(Trap::OutOfFuel) => {
                ComponentError::FuelExhausted { fuel: self.limits.fuel_per_call }
            }
            _ => ComponentError::Trap(format!("{error:#}")),
        }
    }

    /// Throws the instance and its store away, keeping the host's ledger and provider.
    fn replace_instance(&mut self) {
        self.traps += 1;
        self.generation += 1;
        self.bindings = None;
        if let Some(store) = self.store.take() {
            let mut state = store.into_data();
            state.limiter.memory_denied = false;
            self.store = Some(Self::new_store(&self.engine, state));
        }
    }

    pub(super) fn guest<T, E: Into<GuestError>>(result: Result<T, E>) -> Result<T, ComponentError> {
        result.map_err(|e| ComponentError::Guest(e.into()))
    }

    // ----- projection -------------------------------------------------------------------

    /// `projection.project`: the projection JSON.
    pub fn project(&mut self, request: &ProjectRequest) -> Result<String, ComponentError> {
        let r = self.call(|b, s| b.contextfold_compaction_projection().call_project(s, request))?;
        Self::guest(r)
    }

    /// The history to send with the next model request: `projection.project` in fail-open
    /// mode, equal to [`Plugin::project`] whenever that fits; when it does not (a compaction
    /// failed or could not shrink it enough), the source-matched checkpoint with the newest
    /// complete raw turns that fit, the omission reported.
    pub fn project_for_request(
        &mut self,
        request: &ProjectRequest,
    ) -> Result<String, ComponentError> {
        let request = ProjectRequest { fail_open: true, ..request.clone() };
        self.project(&request)
    }

    /// `projection.calibrate`: the calibration JSON after learning from one usage fact.
    pub fn calibrate(
        &mut self,
        calibration_json: Option<&str>,
        fact_json: &str,
    ) -> Result<String, ComponentError> {
        let calibration = calibration_json.map(str::to_owned);
        let r = self.call(|b, s| {
            b.contextfold_compaction_projection().call_calibrate(
                s,
                calibration.as_deref(),
                fact_json,
            )
        })?;
        Self::guest(r)
    }

    /// `projection.digest-prefix`.
    pub fn digest_prefix(&mut self, events_json: &str) -> Result<String, ComponentError> {
        let r = self.call(|b, s| {
            b.contextfold_compaction_projection().call_digest_prefix(s, &events_json.to_owned())
        })?;
        Self::guest(r)
    }

    /// `projection.prefix-digests`.
    pub fn prefix_digests(&mut self, events_json: &str) -> Result<Vec<String>, ComponentError> {
        let r = self.call(|b, s| {
            b.contextfold_compaction_projection().call_prefix_digests(s, &events_json.to_owned())
        })?;
        Self::guest(r)
    }

    /// `projection.select-safe-prefix`.
    pub fn select_safe_prefix(
        &mut self,
        events_json: &str,
        options: &PrefixOptions,
    ) -> Result<Option<SafePrefix>, ComponentError> {
        let r = self.call(|b, s| {
            b.contextfold_compaction_projection().call_select_safe_prefix(
                s,
                &events_json.to_owned(),
                options,
            )
        })?;
        Self::guest(r)
    }

    /// `projection.safe-boundaries`.
    pub fn safe_boundaries(
        &mut self,
        events_json: &str,
        current_turn: Option<&str>,
    ) -> Result<Vec<u64>, ComponentError> {
        let r = self.call(|b, s| {
            b.contextfold_compaction_projection().call_safe_boundaries(
                s,
                &events_json.to_owned(),
                current_turn,
            )
        })?;
        Self::guest(r)
    }

    /// `projection.match-checkpoint`: covered events, or the mismatch diagnostic.
    pub fn match_checkpoint(
        &mut self,
        checkpoint_json: &str,
        events_json: &str,
    ) -> Result<Result<u64, Diagnostic>, ComponentError> {
        let r = self.call(|b, s| {
            b.contextfold_compaction_projection().call_match_checkpoint(
                s,
                &checkpoint_json.to_owned(),
                &events_json.to_owned(),
            )
        })?;
        Self::guest(r)
    }

    /// `projection.evaluate-replay`.
    pub fn evaluate_replay(
        &mut self,
        request: &ReplayRequest,
    ) -> Result<ReplayDecision, ComponentError> {
        let r = self
            .call(|b, s| b.contextfold_compaction_projection().call_evaluate_replay(s, request))?;
        Self::guest(r)
    }

    /// `projection.validate-summary`: estimated tokens, or the defect.
    pub fn validate_summary(
        &mut self,
        text: &str,
        finish: &FinishReason,
        fold_tokens: u64,
    ) -> Result<Result<u64, SummaryDefect>, ComponentError> {
        self.call(|b, s| {
            b.contextfold_compaction_projection().call_validate_summary(
                s,
                text,
                finish,
                fold_tokens,
            )
        })
    }

    // ----- blocking compaction ----------------------------------------------------------

    /// `compaction.compact`: the whole transaction, through this plugin's ledger and provider.
    /// When the request names no `prepared` checkpoint, the one [`Plugin::prepare`] holds for
    /// its session goes in (the core adopts or refuses it; see [`Plugin::prepare`]).
    ///
    /// A `prepare` transaction run this way is counted in [`Plugin::preparations`] as one run
    /// by [`Plugin::prepare`]; so is the fate of a held checkpoint it was given.
    pub fn compact(&mut self, request: &CompactRequest) -> Result<CompactResult, ComponentError> {
        let with_held = self.with_held_prepared(request);
        let handed = with_held.is_some();
        let request = with_held.as_ref().unwrap_or(request);
        self.reset_meter(request)?;
        let r = self.call(|b, s| b.contextfold_compaction_compaction().call_compact(s, request));
        let result = r.and_then(Self::guest);
        self.settle(request, handed, result.as_ref())?;
        result
    }
}
