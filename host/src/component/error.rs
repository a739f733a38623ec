//! [`ComponentError`]: every way a call into the plugin can fail, with stable codes.

use crate::component::bindings::contextfold::compaction::types::{CompactionError, LedgerError};

/// A typed error the guest returned (the WIT `compaction-error`): nothing was persisted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} ({code}): {message}")]
pub struct GuestError {
    /// The `compaction-error` case, snake_case (`invalid_events`, `invalid_log`, `ledger`, ...).
    pub kind: &'static str,
    /// The core's stable code (`event_syntax`, `log_seq_not_increasing`, ...).
    pub code: String,
    /// Human-readable message.
    pub message: String,
}

impl From<CompactionError> for GuestError {
    fn from(error: CompactionError) -> Self {
        let (kind, detail) = match error {
            CompactionError::InvalidEvents(d) => ("invalid_events", d),
            CompactionError::InvalidLog(d) => ("invalid_log", d),
            CompactionError::InvalidCheckpoint(d) => ("invalid_checkpoint", d),
            CompactionError::InvalidInput(d) => ("invalid_input", d),
            CompactionError::Driver(d) => ("driver", d),
            CompactionError::Ledger(ledger) => {
                let (code, message) = match ledger {
                    LedgerError::ProjectionDamaged(m) => ("ledger_projection_damaged", m),
                    LedgerError::UnknownSession(m) => ("ledger_unknown_session", m),
                    LedgerError::Unavailable(m) => ("ledger_unavailable", m),
                };
                return GuestError { kind: "ledger", code: code.into(), message };
            }
        };
        GuestError { kind, code: detail.code, message: detail.message }
    }
}

/// Why a call into the plugin failed. After any trap the plugin's instance is discarded and
/// the next call runs on a fresh one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ComponentError {
    /// The component file could not be read or compiled.
    #[error("cannot load the component: {0}")]
    Load(String),
    /// The component does not fit the `compactor` world or could not be instantiated.
    #[error("cannot instantiate the component: {0}")]
    Instantiate(String),
    /// The plugin used up its fuel for one call (e.g. an endless loop) and was stopped.
    #[error("the plugin used all {fuel} units of fuel of one call and was stopped")]
    FuelExhausted {
        /// The per-call fuel budget.
        fuel: u64,
    },
    /// The plugin tried to grow its memory past the cap and was stopped.
    #[error("the plugin exceeded its memory cap of {limit_bytes} bytes and was stopped")]
    MemoryLimit {
        /// The memory cap.
        limit_bytes: usize,
    },
    /// The plugin trapped for another reason (a panic, an invalid memory access).
    #[error("the plugin trapped: {0}")]
    Trap(String),
    /// The guest returned a typed error.
    #[error(transparent)]
    Guest(#[from] GuestError),
    /// A step session (or an event log) belongs to an instance that trapped and was replaced.
    #[error("the step session was lost: its plugin instance trapped and was replaced")]
    SessionLost,
}

impl ComponentError {
    /// Stable snake_case code.
    pub fn code(&self) -> &'static str {
        match self {
            ComponentError::Load(_) => "component_load_failed",
            ComponentError::Instantiate(_) => "component_instantiate_failed",
            ComponentError::FuelExhausted { .. } => "plugin_fuel_exhausted",
            ComponentError::MemoryLimit { .. } => "plugin_memory_limit",
            ComponentError::Trap(_) => "plugin_trap",
            ComponentError::Guest(_) => "plugin_error",
            ComponentError::SessionLost => "plugin_session_lost",
        }
    }

    /// True when the plugin was stopped (fuel, memory or another trap) and replaced.
    pub fn is_trap(&self) -> bool {
        matches!(
            self,
            ComponentError::FuelExhausted { .. }
                | ComponentError::MemoryLimit { .. }
                | ComponentError::Trap(_)
        )
    }
}
