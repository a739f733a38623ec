//! The `compaction` export: the whole transaction in one call, performing each effect through
//! the `ledger` and `provider` imports.

use contextfold_core::HistoryCompactCheckpoint;
use contextfold_core::checkpoint::{RecordedCheckpointEvent, select_recovered_checkpoint};
use contextfold_core::compaction::{Effect, Step};
use serde_json::Value;

use crate::contextfold::compaction::types::{CompactResult, CompactionError, LedgerError};
use crate::contextfold::compaction::{ledger, provider};
use crate::driver::{self, TransactionParams};
use crate::exports::contextfold::compaction::compaction::{CompactRequest, Guest};
use crate::{Component, convert};

impl Guest for Component {
    fn compact(request: CompactRequest) -> Result<CompactResult, CompactionError> {
        let session = request.session_id.as_str();
        let events_json = ledger::load_events(session).map_err(CompactionError::Ledger)?;
        let events = convert::parse_events(&events_json)?;
        let checkpoint = latest_checkpoint(session)?;
        let params = TransactionParams {
            trigger: request.trigger,
            current_turn: request.current_turn,
            model: &request.model,
            provider: &request.provider,
            compactor: request.compactor,
            checkpoint_id: request.checkpoint_id,
            now_ms: request.now_ms,
            summarizer_label: request.summarizer_label,
            circuit_json: request.circuit_json,
            calibration_json: request.calibration_json,
            prepared: request.prepared,
        };
        let mut tx = driver::start(params, events.clone(), checkpoint)?;
        let outcome = loop {
            match tx.poll().map_err(|e| convert::driver_error(&e))? {
                Step::Effect(Effect::Summarize(effect)) => {
                    let answer = provider::summarize(&driver::summarize_request(&effect, &events));
                    tx.handle_summary(driver::summary_result(answer))
                }
                Step::Effect(Effect::CompactNatively(native)) => {
                    let request_json = serde_json::to_string(&native).unwrap_or_default();
                    let answer = provider::compact_natively(&request_json)
                        .map_err(convert::provider_failure)
                        .and_then(convert::native_items);
                    tx.handle_native(answer)
                }
                Step::Effect(Effect::AppendCheckpoint(checkpoint)) => {
                    let answer = ledger::append_checkpoint(session, &checkpoint.to_json());
                    tx.handle_append(driver::append_result(answer))
                }
                Step::Done(outcome) => break outcome,
            }
            .map_err(|e| convert::driver_error(&e))?;
        };
        Ok(driver::compact_result(&outcome, &tx.into_circuit()))
    }
}

/// The latest checkpoint: from the bounded projection, or, when the ledger reports it damaged
/// (or it does not parse), recovered from the recorded checkpoint events.
fn latest_checkpoint(session: &str) -> Result<Option<HistoryCompactCheckpoint>, CompactionError> {
    match ledger::load_latest_checkpoint(session) {
        Ok(None) => Ok(None),
        Ok(Some(json)) => match HistoryCompactCheckpoint::from_json(&json) {
            Ok(checkpoint) => Ok(Some(checkpoint)),
            Err(_) => recover(session),
        },
        Err(LedgerError::ProjectionDamaged(_)) => recover(session),
        Err(other) => Err(CompactionError::Ledger(other)),
    }
}

fn recover(session: &str) -> Result<Option<HistoryCompactCheckpoint>, CompactionError> {
    let recorded = ledger::scan_checkpoint_events(session).map_err(CompactionError::Ledger)?;
    let records: Vec<RecordedCheckpointEvent> = recorded
        .into_iter()
        .map(|record| RecordedCheckpointEvent {
            event_id: record.event_id,
            session_id: record.session_id,
            recorded_at_ms: record.recorded_at_ms,
            payload: serde_json::from_str(&record.payload).unwrap_or(Value::Null),
        })
        .collect();
    Ok(select_recovered_checkpoint(session, &records).selected)
}
