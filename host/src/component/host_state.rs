//! The store data of one plugin instance: the host's ledger and provider behind the generated
//! import traits, and the resource limiter.

use contextfold_core::budget::CalibratedEstimator;
use contextfold_core::compaction::{
    FinishReason as CoreFinish, NativeRequest, ProviderFailure as CoreFailure, ProviderFailureKind,
};
use contextfold_core::{CharEstimator, RuntimeEvent, TokenEstimator};
use wasmtime::{ResourceLimiter, StoreLimits};

use crate::component::bindings::contextfold::compaction::types::{
    AppendError, FinishReason, LedgerError, ProviderFailure, SummarizeRequest, SummaryResponse,
};
use crate::component::bindings::contextfold::compaction::{ledger, provider, types};
use crate::component::checkpoint_guard::{CheckpointRejection, verify_candidate};
use crate::component::traits::{Ledger, LedgerReadError, Provider, SummarizeCall};

/// What the host answers a plugin that asks to append during a preparation.
pub(crate) const APPEND_REFUSED_WHILE_PREPARING: &str =
    "a preparation records nothing: the host refused the append";

/// `StoreLimits` that remembers whether it refused a memory growth, so a trap caused by the
/// cap is reported as [`crate::component::ComponentError::MemoryLimit`].
#[derive(Debug)]
pub(crate) struct PluginLimiter {
    limits: StoreLimits,
    pub(crate) memory_denied: bool,
}

impl PluginLimiter {
    pub(crate) fn new(limits: StoreLimits) -> Self {
        Self { limits, memory_denied: false }
    }
}

impl ResourceLimiter for PluginLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let answer = self.limits.memory_growing(current, desired, maximum);
        if !matches!(answer, Ok(true)) {
            self.memory_denied = true;
        }
        answer
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

/// The summarizer tokens the provider spent since the meter was reset: each request's
/// estimated input and its answer (measured as the request's calibrated estimate measures),
/// as the native runtime counts them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SummarizerMeter {
    /// Measures an answer.
    pub(crate) estimator: CalibratedEstimator<CharEstimator>,
    /// Tokens spent so far.
    pub(crate) spent: u64,
}

impl Default for SummarizerMeter {
    fn default() -> Self {
        Self { estimator: CalibratedEstimator::unit(CharEstimator), spent: 0 }
    }
}

/// What one plugin's store holds: the host's imports and the limiter.
pub struct HostState {
    pub(crate) ledger: Box<dyn Ledger>,
    pub(crate) provider: Box<dyn Provider>,
    pub(crate) limiter: PluginLimiter,
    /// Checkpoints the host refused to append, oldest first (kept across traps).
    pub(crate) rejections: Vec<CheckpointRejection>,
    /// A preparation is running: every append is refused (it records nothing).
    pub(crate) preparing: bool,
    /// What the provider's answers cost since the current call began.
    pub(crate) meter: SummarizerMeter,
}

impl std::fmt::Debug for HostState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostState").field("limiter", &self.limiter).finish_non_exhaustive()
    }
}

/// The WIT form of a ledger read error.
pub(crate) fn ledger_error(error: LedgerReadError) -> LedgerError {
    match error {
        LedgerReadError::ProjectionDamaged(m) => LedgerError::ProjectionDamaged(m),
        LedgerReadError::UnknownSession(m) => LedgerError::UnknownSession(m),
        LedgerReadError::Unavailable(m) => LedgerError::Unavailable(m),
    }
}

fn failure(failure: CoreFailure) -> ProviderFailure {
    let m = failure.message;
    match failure.kind {
        ProviderFailureKind::Rejected => ProviderFailure::Rejected(m),
        ProviderFailureKind::Overflow => ProviderFailure::Overflow(m),
        ProviderFailureKind::Auth => ProviderFailure::Auth(m),
        ProviderFailureKind::Billing => ProviderFailure::Billing(m),
        ProviderFailureKind::RateLimited => ProviderFailure::RateLimited(m),
        ProviderFailureKind::Cancelled => ProviderFailure::Cancelled(m),
        _ => ProviderFailure::Unavailable(m),
    }
}

/// The WIT form of a core finish reason.
pub fn finish_to_wit(finish: CoreFinish) -> FinishReason {
    match finish {
        CoreFinish::Stop => FinishReason::Stop,
        CoreFinish::Length => FinishReason::Length,
        CoreFinish::ContentFilter => FinishReason::ContentFilter,
        CoreFinish::ToolCalls => FinishReason::ToolCalls,
        CoreFinish::Other(value) => FinishReason::Other(value),
        CoreFinish::Unknown => FinishReason::Unknown,
    }
}

/// The WIT form of a core provider failure.
pub fn failure_to_wit(value: CoreFailure) -> ProviderFailure {
    failure(value)
}

/// Events the guest sent as a JSON array.
fn guest_events(json: &str, what: &str) -> Result<Vec<RuntimeEvent>, ProviderFailure> {
    match RuntimeEvent::array_from_text(json) {
        Some(events) => Ok(events),
        None => serde_json::from_str(json).map_err(|e| guest_input_error(what, e)),
    }
}

fn guest_input_error(what: &str, error: impl std::fmt::Display) -> ProviderFailure {
    ProviderFailure::Rejected(format!("the plugin sent an invalid {what}: {error}"))
}

impl types::Host for HostState {}

impl ledger::Host for HostState {
    fn load_events(&mut self, session_id: String) -> Result<String, LedgerError> {
        let events = self.ledger.load_events(&session_id).map_err(ledger_error)?;
        Ok(serde_json::to_string(&events).unwrap_or_else(|_| "[]".into()))
    }

    fn load_latest_checkpoint(
        &mut self,
        session_id: String,
    ) -> Result<Option<String>, LedgerError> {
        let checkpoint = self.ledger.load_latest_checkpoint(&session_id).map_err(ledger_error)?;
        Ok(checkpoint.map(|cp| cp.to_json()))
    }

    fn scan_checkpoint_events(
        &mut self,
        session_id: String,
    ) -> Result<Vec<ledger::RecordedCheckpoint>, LedgerError> {
        let records = self.ledger.scan_checkpoint_events(&session_id).map_err(ledger_error)?;
        Ok(records
            .into_iter()
            .map(|record| ledger::RecordedCheckpoint {
                event_id: record.event_id,
                session_id: record.session_id,
                recorded_at_ms: record.recorded_at_ms,
                payload: record.payload.to_string(),
            })
            .collect())
    }

    fn append_checkpoint(
        &mut self,
        session_id: String,
        checkpoint: String,
    ) -> Result<(), AppendError> {
        if self.preparing {
            return Err(AppendError::Failed(APPEND_REFUSED_WHILE_PREPARING.to_owned()));
        }
        let parsed = match verify_candidate(self.ledger.as_mut(), &session_id, &checkpoint) {
            Ok(parsed) => parsed,
            Err(rejection) => {
                let message =
                    format!("the host refused the checkpoint ({}): {rejection}", rejection.code());
                self.rejections.push(rejection);
                return Err(AppendError::Failed(message));
            }
        };
        self.ledger.append_checkpoint(&session_id, &parsed).map_err(|failure| {
            if failure.conflict {
                AppendError::Conflict(failure.message)
            } else {
                AppendError::Failed(failure.message)
            }
        })
    }
}

impl provider::Host for HostState {
    fn summarize(&mut self, request: SummarizeRequest) -> Result<SummaryResponse, ProviderFailure> {
        let summary_request = serde_json::from_str(&request.request_json)
            .map_err(|e| guest_input_error("summary request", e))?;
        // Read straight from the text; anything else through serde, for its message.
        let call = SummarizeCall {
            request: summary_request,
            previous_summary: request.previous_summary,
            fold_events: guest_events(&request.fold_events, "fold")?,
            carried_events: guest_events(&request.carried_events, "carried")?,
            replayed_events: guest_events(&request.replayed_events, "replayed")?,
            target_tokens: request.target_tokens,
        };
        self.meter.spent += call.request.estimated_input_tokens;
        let answer = self.provider.summarize(&call).map_err(failure)?;
        self.meter.spent += self.meter.estimator.estimate_text(&answer.text);
        Ok(SummaryResponse { text: answer.text, finish: finish_to_wit(answer.finish_reason) })
    }

    fn compact_natively(&mut self, request_json: String) -> Result<Vec<String>, ProviderFailure> {
        let request: NativeRequest = serde_json::from_str(&request_json)
            .map_err(|e| guest_input_error("native request", e))?;
        self.meter.spent += request.estimated_input_tokens;
        let items = self.provider.compact_natively(&request).map_err(failure)?;
        Ok(items.iter().map(|item| item.to_string()).collect())
    }
}
