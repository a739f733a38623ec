//! [`CompactionSession`]: the core's step-by-step compaction transaction, for a JS driver.
//!
//! The async loop lives in JavaScript (`compact()` in the package's wrapper): it calls
//! [`CompactionSession::poll`], performs the effect it returns (`summarize`,
//! `compact-natively`, `append-checkpoint`) with the host's async functions, and reports the
//! result with the matching `handle*` method, until `poll` returns `{ type: "done", outcome }`.
//! This type only converts values; every decision is the core's.

use contextfold_core::budget::CalibratedEstimator;
use contextfold_core::compaction::{
    CompactOptions, Compaction, Effect, FinishReason, Step, SummarizeEffect, SummaryResponse,
    extractive_summary_for,
};
use contextfold_core::projection::{calibrated_estimator, to_model_messages};
use contextfold_core::{HistoryCompactCheckpoint, RuntimeEvent};
use serde_json::{Value, json};
use wasm_bindgen::prelude::*;

use crate::convert::{BindingError, from_js, json_to_js, to_js};
use crate::measure::{BaseEstimator, CounterFailure};
use results::{AppendResult, NativeResult, SummaryResult};

mod results;

/// One compaction transaction driven from JavaScript.
#[wasm_bindgen]
#[derive(Debug)]
pub struct CompactionSession {
    tx: Option<Compaction<'static, CalibratedEstimator<BaseEstimator>>>,
    /// The caller's counter's first failure, if it has one.
    counter: CounterFailure,
    /// The summarize effect last handed out, for [`CompactionSession::extractive_summary`].
    summarizing: Option<Box<SummarizeEffect>>,
}

fn finished() -> BindingError {
    BindingError::core("session_finished", "the compaction session has been finished")
}

#[wasm_bindgen]
impl CompactionSession {
    /// Plans a compaction. `input`: `{ checkpoint?, model?, trigger, provider?,
    /// compactor?, currentTurnId?, checkpointId, nowMs, summarizerLabel?, circuit?,
    /// calibration?, prepared? }` (the core's `CompactOptions`); `events`: JSONL bytes or an
    /// array (see [`crate::events_with_lines`]). `count_tokens`: the caller's counter, which then
    /// measures every text of the transaction (see [`crate::measure`]); a failure of it fails
    /// the call that measured with `count_tokens_failed` and ends the session.
    #[wasm_bindgen(constructor)]
    pub fn new(
        input: JsValue,
        events: JsValue,
        count_tokens: Option<js_sys::Function>,
    ) -> Result<CompactionSession, JsValue> {
        let base = BaseEstimator::of(count_tokens);
        let options = from_js(input, "compaction input")?;
        if events.is_undefined() {
            return Err(BindingError::invalid("compaction input", "missing field `events`").into());
        }
        let events = crate::events_with_lines(events)?;
        Self::start(options, events.events, &events.lines, base)
    }

    /// Plans a compaction over events already in wasm (an [`crate::event_log::EventLog`]'s):
    /// `input` as for [`CompactionSession::new`].
    pub(crate) fn over_events(
        input: JsValue,
        events: Vec<RuntimeEvent>,
        count_tokens: Option<js_sys::Function>,
    ) -> Result<CompactionSession, JsValue> {
        let options = from_js(input, "compaction input")?;
        Self::start(options, events, &[], BaseEstimator::of(count_tokens))
    }

    /// Starts the core's transaction on parsed options and events; `lines[i]`: the JSONL line of event `i`
    /// (empty for an array), to locate a broken log rule.
    fn start(
        input: CompactOptions,
        events: Vec<RuntimeEvent>,
        lines: &[usize],
        base: BaseEstimator,
    ) -> Result<CompactionSession, JsValue> {
        let counter = base.failure();
        let (input, calibration) =
            input.into_input(events.into()).map_err(|e| BindingError::core(e.code(), e))?;
        let estimator = calibrated_estimator(base, calibration.as_ref(), Some(&input.provider));
        let tx = Compaction::start_with_estimator(input, estimator).map_err(|e| match e {
            contextfold_core::compaction::StartError::Log(log) => {
                crate::jsonl::located_log_error(log, |index| lines.get(index).copied())
            }
            #[allow(unreachable_patterns)]
            other => BindingError::core("compaction_start", other),
        })?;
        let mut session = CompactionSession { tx: Some(tx), counter, summarizing: None };
        session.measured()?;
        Ok(session)
    }

    /// Ends the session with `count_tokens_failed` if the caller's counter failed during the
    /// last call (the core then measured with a wrong count, so nothing it decided is used).
    fn measured(&mut self) -> Result<(), BindingError> {
        self.counter.check().inspect_err(|_| self.tx = None)
    }

    /// The next step: `{ type: "summarize", request }`, `{ type: "compact-natively", request }`,
    /// `{ type: "append-checkpoint", checkpoint }` or `{ type: "done", outcome }`.
    pub fn poll(&mut self) -> Result<JsValue, JsValue> {
        let tx = self.tx.as_mut().ok_or_else(finished)?;
        let step = tx.poll().map_err(|e| BindingError::core(e.code(), e))?;
        self.measured()?;
        let value = match step {
            Step::Effect(Effect::Summarize(effect)) => {
                let mut request = json!({
                    "purpose": effect.request.purpose,
                    "messages": to_model_messages(&effect.request.messages),
                    "estimatedInputTokens": effect.request.estimated_input_tokens,
                    "omittedToolResults": effect.request.omitted_tool_results,
                    "repairReserveTokens": effect.request.repair_reserve_tokens,
                    "previousSummary": effect.previous_summary,
                    "fold": { "start": effect.fold.start, "end": effect.fold.end },
                    "replayedHead": effect.replayed_head,
                    "carried": effect.carried,
                    "targetTokens": effect.target_tokens,
                });
                if !effect.request.omitted_payloads.is_empty() {
                    request["omittedPayloads"] = json!(effect.request.omitted_payloads);
                }
                self.summarizing = Some(effect);
                json!({ "type": "summarize", "request": request })
            }
            Step::Effect(Effect::CompactNatively(request)) => {
                json!({ "type": "compact-natively", "request": request })
            }
            Step::Effect(Effect::AppendCheckpoint(checkpoint)) => {
                json!({ "type": "append-checkpoint", "checkpoint": checkpoint.to_value() })
            }
            Step::Done(outcome) => json!({ "type": "done", "outcome": *outcome }),
            #[allow(unreachable_patterns)]
            _ => return Err(BindingError::core("unknown_effect", "unknown effect").into()),
        };
        Ok(json_to_js(value, "step")?)
    }

    /// The offline extractive summary the pending summarize step asks for, read from the
    /// transaction's own log (no event crosses the boundary).
    #[wasm_bindgen(js_name = extractiveSummary)]
    pub fn extractive_summary(&self) -> Result<String, JsValue> {
        let tx = self.tx.as_ref().ok_or_else(finished)?;
        let effect = self.summarizing.as_ref().ok_or_else(|| {
            BindingError::core("no_summary_pending", "no summarize step has been handed out")
        })?;
        Ok(extractive_summary_for(tx.events(), effect))
    }

    /// Reports a summary: `{ text, finishReason }` or `{ error: { kind, message } }`.
    #[wasm_bindgen(js_name = handleSummary)]
    pub fn handle_summary(&mut self, result: JsValue) -> Result<(), JsValue> {
        let result = from_js::<SummaryResult>(result, "summary result")?;
        let result = match (result.error, result.text) {
            (Some(error), _) => Err(error),
            (None, Some(text)) => Ok(SummaryResponse {
                text,
                finish_reason: FinishReason::parse(result.finish_reason.as_deref().unwrap_or("")),
            }),
            (None, None) => {
                return Err(
                    BindingError::invalid("summary result", "needs `text` or `error`").into()
                );
            }
        };
        let tx = self.tx.as_mut().ok_or_else(finished)?;
        tx.handle_summary(result).map_err(|e| BindingError::core(e.code(), e))?;
        Ok(self.measured()?)
    }

    /// Reports native compaction output: `{ items }` or `{ error: { kind, message } }`.
    #[wasm_bindgen(js_name = handleNative)]
    pub fn handle_native(&mut self, result: JsValue) -> Result<(), JsValue> {
        let result = from_js::<NativeResult>(result, "native result")?;
        let result = match (result.error, result.items) {
            (Some(error), _) => Err(error),
            (None, Some(items)) => Ok(items),
            (None, None) => {
                return Err(
                    BindingError::invalid("native result", "needs `items` or `error`").into()
                );
            }
        };
        let tx = self.tx.as_mut().ok_or_else(finished)?;
        tx.handle_native(result).map_err(|e| BindingError::core(e.code(), e))?;
        Ok(self.measured()?)
    }

    /// Reports the append: `{}` once durable, or `{ error: { conflict, message } }`.
    #[wasm_bindgen(js_name = handleAppend)]
    pub fn handle_append(&mut self, result: JsValue) -> Result<(), JsValue> {
        let result = from_js::<AppendResult>(result, "append result")?;
        let tx = self.tx.as_mut().ok_or_else(finished)?;
        let result = match result.error {
            Some(error) => Err(error),
            None => Ok(()),
        };
        tx.handle_append(result).map_err(|e| BindingError::core(e.code(), e))?;
        Ok(self.measured()?)
    }

    /// Cancels; `false` once the append effect is out or the transaction is over.
    pub fn cancel(&mut self) -> bool {
        self.tx.as_mut().is_some_and(Compaction::cancel)
    }

    /// Ends the session and returns the updated malformed-input circuit (to pass to the next
    /// compaction of the same session backend).
    #[wasm_bindgen(js_name = takeCircuit)]
    pub fn take_circuit(&mut self) -> Result<JsValue, JsValue> {
        let tx = self.tx.take().ok_or_else(finished)?;
        Ok(to_js(&tx.into_circuit(), "circuit")?)
    }
}

/// Parses checkpoint JSON (used by the pure functions too).
pub fn checkpoint_from_json(value: Value) -> Result<HistoryCompactCheckpoint, BindingError> {
    HistoryCompactCheckpoint::from_value(value).map_err(|e| BindingError::core(e.code(), e))
}
