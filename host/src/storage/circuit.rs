//! The malformed-input circuit of a session, remembered across processes.
//!
//! The circuit a compaction leaves (the fingerprints of summarizer inputs that produced
//! malformed summaries twice) is written into that compaction's `compaction_outcome_recorded`
//! AgentRun event, under `circuit`: one row, so it is durable in the same transaction as the
//! outcome. The next compaction of the session, in this process or in any later one (a new CLI
//! run, a restarted host), starts from the circuit of the latest such event, so it never
//! dispatches an unchanged failed input again. A changed source or configuration has another
//! fingerprint and is eligible again. Outcomes recorded before the circuit was written carry
//! none: the circuit then starts empty.

use contextfold_core::compaction::MalformedInputCircuit;
use rusqlite::{OptionalExtension, params};
use serde_json::Value;

use super::Store;
use super::error::StoreError;
use super::events::agent_run_kind;

/// The key of the circuit in a `compaction_outcome_recorded` payload.
pub const CIRCUIT_KEY: &str = "circuit";

impl Store {
    /// The circuit the latest compaction outcome of `session_id` left; `None` when no outcome
    /// recorded one. A recorded circuit that does not parse is a typed error
    /// ([`StoreError::LedgerUnreadable`]), never silently an empty circuit.
    pub fn latest_circuit(
        &self,
        session_id: &str,
    ) -> Result<Option<MalformedInputCircuit>, StoreError> {
        let unreadable = |detail: String| StoreError::LedgerUnreadable {
            session_id: session_id.to_owned(),
            detail,
        };
        let payload: Option<String> = self
            .lock()
            .query_row(
                "SELECT payload_json FROM agent_run_events WHERE session_id = ?1 AND kind = ?2 \
                 ORDER BY ordinal DESC LIMIT 1",
                params![session_id, agent_run_kind::COMPACTION_OUTCOME],
                |row| row.get(0),
            )
            .optional()
            .map_err(StoreError::sqlite("reading the latest compaction outcome"))?;
        let Some(payload) = payload else { return Ok(None) };
        let value: Value = serde_json::from_str(&payload)
            .map_err(|e| unreadable(format!("a compaction outcome is not JSON: {e}")))?;
        match value.get(CIRCUIT_KEY) {
            None | Some(Value::Null) => Ok(None),
            Some(circuit) => serde_json::from_value(circuit.clone())
                .map(Some)
                .map_err(|e| unreadable(format!("the recorded malformed-input circuit: {e}"))),
        }
    }
}
