//! The two sessions of rows b-d and the driver that plays them through the real runtime: a
//! `SessionRuntime` over a SQLite file, `project_for_request` before every model request, the
//! request sent to the in-process simulator (OpenAI Chat shape), `record_usage` after it,
//! `recover_from_overflow` on a refusal, the extractive summarizer (its requests billed).

use std::error::Error;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use contextfold_conformance::long_turn::{LongTurnSpec, long_turn_session};
use contextfold_core::budget::{CharEstimator, ContextBudget, UsageReport};
use contextfold_core::compaction::{
    Compactor, ProviderFailure, ProviderIdentity, SummarizeEffect, SummaryRequest, SummaryResponse,
};
use contextfold_core::projection::Message;
use contextfold_core::{EventContent, ModelFacts, ReasonCode, RuntimeEvent};
use contextfold_host::runtime::{
    ExtractiveSummarizer, NoNativeCompactor, SessionConfig, SessionRuntime, Summarizer,
};
use contextfold_host::simulator::{SimulatedProvider, SimulatorConfig, WireShape};
use contextfold_host::storage::Store;
use serde_json::Value;

use crate::wire::{chat_body, send};

pub(crate) type BenchResult<T> = Result<T, Box<dyn Error + Send + Sync>>;

/// One turn: the user's message, then one group of events per model response (a model
/// request precedes each group).
pub(crate) struct Turn {
    pub(crate) id: String,
    pub(crate) user: RuntimeEvent,
    pub(crate) steps: Vec<Vec<RuntimeEvent>>,
}

/// A session to play: its turns and the model's context window.
pub(crate) struct BenchSession {
    pub(crate) name: &'static str,
    pub(crate) session_id: String,
    pub(crate) window: u64,
    pub(crate) turns: Vec<Turn>,
}

impl BenchSession {
    /// Every event in append order.
    pub(crate) fn events(&self) -> Vec<RuntimeEvent> {
        let mut out = Vec::new();
        for turn in &self.turns {
            out.push(turn.user.clone());
            out.extend(turn.steps.iter().flatten().cloned());
        }
        out
    }
}

/// The `contextfold demo` session (40 turns, 16k window), built as the demo builds it.
pub(crate) fn demo_session() -> BenchSession {
    let session_id = "demo".to_owned();
    let mut seq = 0;
    let mut event = |turn: usize, response: Option<String>, content: EventContent| {
        seq += 1;
        RuntimeEvent {
            created_at_ms: Some(1_800_000_000_000 + seq * 1_000),
            response_id: response,
            ..RuntimeEvent::new(
                session_id.clone(),
                format!("run-t{turn}"),
                format!("t{turn}"),
                format!("e{seq}"),
                seq,
                content,
            )
        }
    };
    let text = |v: &Value, key: &str| v[key].as_str().unwrap_or_default().to_owned();
    let mut turns = Vec::new();
    let json = contextfold_host::cli::demo_session_turns();
    for (index, turn) in json.as_array().into_iter().flatten().enumerate() {
        let user = event(index, None, EventContent::user_text(text(turn, "request")));
        let mut steps = Vec::new();
        for (step_index, step) in turn["steps"].as_array().into_iter().flatten().enumerate() {
            let response = Some(format!("resp-{index}-{step_index}"));
            let reasoning =
                EventContent::Reasoning { text: text(step, "reasoning"), provider_data: None };
            let mut group = vec![event(index, response.clone(), reasoning)];
            let calls = step["calls"].as_array().cloned().unwrap_or_default();
            for call in &calls {
                let content = EventContent::ToolCall {
                    call_id: text(call, "callId"),
                    tool_name: text(call, "tool"),
                    input: call["input"].clone(),
                };
                group.push(event(index, response.clone(), content));
            }
            for call in &calls {
                let content = EventContent::ToolResult {
                    call_id: text(call, "callId"),
                    tool_name: text(call, "tool"),
                    output: call["output"].clone(),
                    is_error: call["isError"].as_bool().unwrap_or(false),
                    attachments: Vec::new(),
                };
                group.push(event(index, None, content));
            }
            steps.push(group);
        }
        let answer = EventContent::AssistantText { text: text(turn, "answer") };
        steps.push(vec![event(index, Some(format!("resp-{index}-final")), answer)]);
        turns.push(Turn { id: format!("t{index}"), user, steps });
    }
    BenchSession { name: "demo (40 turns)", session_id, window: 16_000, turns }
}

/// One seeded long turn (`contextfold_conformance::long_turn`): a task and `steps` steps.
pub(crate) fn long_turn(steps: u32, window: u64) -> BenchSession {
    let spec = LongTurnSpec::new(11, steps);
    let mut turns: Vec<Turn> = Vec::new();
    let mut response: Option<String> = None;
    for event in long_turn_session(&spec) {
        let new_turn = turns.last().is_none_or(|t| t.id != event.turn_id);
        if new_turn {
            response = None;
            turns.push(Turn { id: event.turn_id.clone(), user: event, steps: Vec::new() });
            continue;
        }
        let Some(turn) = turns.last_mut() else { continue };
        if event.response_id.is_some() && event.response_id != response {
            response = event.response_id.clone();
            turn.steps.push(Vec::new());
        }
        if let Some(group) = turn.steps.last_mut() {
            group.push(event);
        }
    }
    let name = if steps >= 150 { "long turn (150+ steps)" } else { "long turn (short)" };
    BenchSession { name, session_id: spec.session_id, window, turns }
}

/// One model request that was answered: what was sent and where in the log it was sent.
pub(crate) struct SentRequest {
    /// Events in the log when it was sent.
    pub(crate) log_len: usize,
    /// The turn it was sent in.
    pub(crate) turn: String,
    pub(crate) messages: Vec<Message>,
    /// The replayed checkpoint's id (`None`: no checkpoint).
    pub(crate) checkpoint: Option<String>,
    /// Details of the pruning diagnostics (stale tool results, attachments): an epoch changes
    /// them.
    pub(crate) pruning: Vec<String>,
}

/// What one run of a session did.
pub(crate) struct RunLog {
    pub(crate) sent: Vec<SentRequest>,
    pub(crate) attempts: u64,
    pub(crate) overflows: u64,
    pub(crate) compactions: u64,
    /// Input tokens of the summarizer's requests (the simulator's count).
    pub(crate) summarizer_input: u64,
}

/// The extractive summarizer, with each request it is given sent to a simulator first (so
/// its input is counted and billed as an LLM summarizer's would be).
struct BilledSummarizer {
    provider: Arc<SimulatedProvider>,
}

impl Summarizer for BilledSummarizer {
    fn label(&self) -> Option<String> {
        ExtractiveSummarizer.label()
    }

    async fn summarize(
        &self,
        request: &SummaryRequest,
        effect: &SummarizeEffect,
        events: &[RuntimeEvent],
    ) -> Result<SummaryResponse, ProviderFailure> {
        if let Ok(body) = chat_body(&request.messages, "bench-summarizer") {
            self.provider.answer(WireShape::OpenAiChat, body.as_bytes());
        }
        ExtractiveSummarizer.summarize(request, effect, events).await
    }
}

/// Model requests one step may send: the first and one after each overflow recovery.
const MAX_ATTEMPTS: usize = 3;

/// The uncalibrated estimate a run starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Base {
    /// The native runtime's default, `PieceEstimator`.
    Pieces,
    /// `CharEstimator`: the npm package's and the component's base, the runtime's before.
    Characters,
}

/// Plays `session` through a `SessionRuntime` on a SQLite file under `dir`, estimating from
/// `base`. With `calibrate` every reported usage (and overflow) is recorded as a fact, as the
/// runtime ships; without, nothing is recorded and every overflow recovers through
/// `recover_from_overflow`.
pub(crate) async fn drive(
    session: &BenchSession,
    base: Base,
    calibrate: bool,
    dir: &Path,
) -> BenchResult<RunLog> {
    let path = dir.join(format!("{}-{base:?}-{calibrate}.sqlite", session.session_id));
    let store = Arc::new(Store::open(&path)?);
    let model = ModelFacts { context_window: Some(session.window), ..Default::default() };
    let reserve = ContextBudget::from_model(&model).reserve;
    let config = SessionConfig {
        session_id: session.session_id.clone(),
        model,
        provider: ProviderIdentity {
            provider: "bench".into(),
            connection_slug: "offline".into(),
            model_id: "bench-model".into(),
        },
        compactor: Compactor::TextSummary,
    };
    let summarizer_sim = Arc::new(SimulatedProvider::new(SimulatorConfig {
        context_window: 10_000_000,
        ..SimulatorConfig::default()
    }));
    let summarizer = BilledSummarizer { provider: Arc::clone(&summarizer_sim) };
    let clock_ms = Arc::new(AtomicU64::new(1_800_000_000_000));
    let mut runtime = SessionRuntime::new(store, config, summarizer, NoNativeCompactor)
        .with_clock(Arc::new(move || clock_ms.fetch_add(1_000, Ordering::Relaxed)));
    if base == Base::Characters {
        runtime = runtime.with_estimator(Arc::new(CharEstimator));
    }
    let provider = SimulatedProvider::new(SimulatorConfig {
        context_window: session.window,
        reply_text: "Working on it.".into(),
        ..SimulatorConfig::default()
    });
    let mut log =
        RunLog { sent: Vec::new(), attempts: 0, overflows: 0, compactions: 0, summarizer_input: 0 };
    let mut log_len = 0;
    for turn in &session.turns {
        runtime.begin_turn(&turn.id)?;
        runtime.append(vec![turn.user.clone()]).await?;
        log_len += 1;
        log.compactions += u64::from(runtime.evaluate_pre_turn().await?.is_some());
        for step in &turn.steps {
            let mut answered = false;
            for _ in 0..MAX_ATTEMPTS {
                log.attempts += 1;
                let report = runtime.project_for_request().await?;
                let messages = &report.projection.messages;
                let body = chat_body(messages, "bench-model")?;
                match send(&provider, WireShape::OpenAiChat, &body, reserve)? {
                    UsageReport::Overflow { counted_tokens, limit_tokens } => {
                        log.overflows += 1;
                        if calibrate {
                            eprintln!(
                                "provider_budget: {}: overflow at request {}: estimated {} tokens \
                                 (ratio {}), provider counted {counted_tokens:?}, limit {limit_tokens:?}",
                                session.name,
                                log.attempts,
                                report.projection.estimated_tokens,
                                report.ratio_permille,
                            );
                            let usage = UsageReport::Overflow { counted_tokens, limit_tokens };
                            runtime.record_usage(runtime.usage_fact(&report, usage)).await?;
                        }
                        runtime.recover_from_overflow().await?;
                        log.compactions += 1;
                    }
                    usage => {
                        if calibrate {
                            runtime.record_usage(runtime.usage_fact(&report, usage)).await?;
                        }
                        log.sent.push(sent_request(log_len, &turn.id, report.projection));
                        answered = true;
                        break;
                    }
                }
            }
            if !answered {
                return Err(
                    format!("{}: a request overflowed {MAX_ATTEMPTS} times", session.name).into()
                );
            }
            runtime.append(step.clone()).await?;
            log_len += step.len();
            log.compactions += u64::from(runtime.evaluate_mid_turn().await?.is_some());
        }
        runtime.end_turn()?;
    }
    log.summarizer_input = summarizer_sim.records().iter().map(|r| r.input_tokens).sum();
    Ok(log)
}

fn sent_request(
    log_len: usize,
    turn: &str,
    projection: contextfold_core::projection::Projection,
) -> SentRequest {
    let pruning = projection
        .diagnostics
        .iter()
        .filter(|d| {
            matches!(
                d.code,
                ReasonCode::StaleToolResultsPruned | ReasonCode::StaleAttachmentsPruned
            )
        })
        .map(|d| format!("{}: {}", d.code.as_str(), d.detail))
        .collect();
    SentRequest {
        log_len,
        turn: turn.to_owned(),
        checkpoint: projection.checkpoint.as_ref().map(|c| c.checkpoint_id.clone()),
        messages: projection.messages,
        pruning,
    }
}
