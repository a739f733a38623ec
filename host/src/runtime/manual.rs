//! Manual compaction as its own Run.
//!
//! - A session whose ledgers cannot be read is refused before the Run writes anything.
//! - Refused while an ordinary turn is active ([`RuntimeError::TurnActive`]); while it runs, a
//!   new turn is refused ([`RuntimeError::CompactionActive`]).
//! - Writes no user message. Its Run is recorded in the AgentRun ledger: `run_started`, the
//!   checkpoint (if any), `compaction_outcome_recorded` (outcome + diagnostics), then one
//!   terminal event: `run_completed` or `run_cancelled` (`run_failed` when the transaction
//!   errs, or when its failure note cannot be appended).
//! - A failed outcome (`failed_open` / `exhausted`) appends the core's `failure_note` as one
//!   visible `runtime_note` RuntimeEvent in the Run's own turn.
//! - Stoppable: a raised [`StopSignal`] cancels the transaction before its durable append;
//!   nothing but the Run's lifecycle events is persisted, and the next turn starts normally.

use contextfold_core::RuntimeEvent;
use contextfold_core::compaction::{OutcomeKind, Trigger};
use serde_json::json;

use super::compactors::{NativeCompactor, Summarizer};
use super::error::RuntimeError;
use super::session::{ActiveRun, SessionRuntime, unique_tag};
use super::stop::StopSignal;
use super::transaction::{CompactionReport, Request};
use crate::storage::{AgentRunRecord, agent_run_kind};

pub(crate) async fn run_manual<S: Summarizer, N: NativeCompactor>(
    runtime: &SessionRuntime<S, N>,
    stop: &StopSignal,
) -> Result<CompactionReport, RuntimeError> {
    // An unreadable ledger stops here, before the Run writes anything.
    runtime.load().await?;
    let session = runtime.config.session_id.clone();
    let count = runtime.ledger.agent_run_events(&session).await?.len();
    let run_id = format!("run-compact-{:05}-{}-{}", count + 1, runtime.now_ms(), unique_tag());
    {
        let mut state = runtime.state();
        match &state.active {
            Some(ActiveRun::Turn(turn_id)) => {
                return Err(RuntimeError::TurnActive { turn_id: turn_id.clone() });
            }
            Some(ActiveRun::Compaction(active)) => {
                return Err(RuntimeError::CompactionActive { run_id: active.clone() });
            }
            None => state.active = Some(ActiveRun::Compaction(run_id.clone())),
        }
    }
    let result = run_owned(runtime, &run_id, stop).await;
    runtime.state().active = None;
    result
}

async fn run_owned<S: Summarizer, N: NativeCompactor>(
    runtime: &SessionRuntime<S, N>,
    run_id: &str,
    stop: &StopSignal,
) -> Result<CompactionReport, RuntimeError> {
    lifecycle(runtime, run_id, agent_run_kind::RUN_STARTED, json!({"trigger": "manual"})).await?;
    let request =
        Request { trigger: Trigger::Manual, current_turn_id: None, run_id: run_id.to_owned() };
    runtime.supersede().await;
    let report = match runtime.compact(request, Some(stop), None).await {
        Ok(report) => report,
        Err(error) => {
            let detail = json!({"code": error.code(), "message": error.to_string()});
            lifecycle(runtime, run_id, agent_run_kind::RUN_FAILED, detail).await?;
            return Err(error);
        }
    };
    if SessionRuntime::<S, N>::outcome_is_failure(report.outcome.outcome)
        && let Some(note) = report.outcome.failure_note.clone()
        && let Err(error) = append_note(runtime, run_id, note).await
    {
        // The Run still ends with a terminal event when its note cannot be written.
        let detail = json!({"code": error.code(), "message": error.to_string(),
                            "stage": "failure_note", "outcome": report.outcome.outcome});
        lifecycle(runtime, run_id, agent_run_kind::RUN_FAILED, detail).await?;
        return Err(error);
    }
    let (kind, payload) = match report.outcome.outcome {
        OutcomeKind::Cancelled => (agent_run_kind::RUN_CANCELLED, json!({"reason": "cancelled"})),
        other => (
            agent_run_kind::RUN_COMPLETED,
            json!({"outcome": other, "reason": report.outcome.reason}),
        ),
    };
    lifecycle(runtime, run_id, kind, payload).await?;
    Ok(report)
}

async fn append_note<S: Summarizer, N: NativeCompactor>(
    runtime: &SessionRuntime<S, N>,
    run_id: &str,
    content: contextfold_core::EventContent,
) -> Result<(), RuntimeError> {
    let (events, _) = runtime.load().await?;
    let seq = events.last().map_or(1, |e| e.seq + 1);
    let note = RuntimeEvent {
        created_at_ms: Some(runtime.now_ms()),
        ..RuntimeEvent::new(
            runtime.config.session_id.clone(),
            run_id.to_owned(),
            run_id.replacen("run-", "turn-", 1),
            format!("{run_id}-note"),
            seq,
            content,
        )
    };
    runtime.append(vec![note]).await
}

async fn lifecycle<S: Summarizer, N: NativeCompactor>(
    runtime: &SessionRuntime<S, N>,
    run_id: &str,
    kind: &str,
    payload: serde_json::Value,
) -> Result<(), RuntimeError> {
    let record = AgentRunRecord {
        event_id: format!("{run_id}-{kind}"),
        session_id: runtime.config.session_id.clone(),
        run_id: run_id.to_owned(),
        kind: kind.to_owned(),
        recorded_at_ms: runtime.now_ms(),
        payload,
    };
    Ok(runtime.ledger.append_agent_run_event(record).await?)
}
