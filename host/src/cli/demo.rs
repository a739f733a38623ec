//! `contextfold demo`: plays the bundled session through a small context window, offline, so
//! that every trigger fires (pre-turn, mid-turn, provider overflow, manual), then verifies every
//! checkpoint against the ledger and prints a short report.
//!
//! Every model request goes to the loopback provider simulator (in-process, OpenAI Chat
//! Completions wire shape), which counts it with a real tokenizer (`o200k_base`), reports usage
//! with cached tokens, and refuses a request over the window with OpenAI's context-length error.
//! The runtime records each reported usage as a fact and calibrates its estimate from them; an
//! overflow is a fact too, and the runtime recovers (trigger `overflow`) and sends again.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use contextfold_core::budget::ContextBudget;
use contextfold_core::compaction::{Compactor, ProviderIdentity};
use contextfold_core::{EventContent, ModelFacts, RuntimeEvent};

use super::compact::outcome_name;
use super::demo_provider::{DemoAnswer, DemoModel};
use super::demo_session::{DemoTurn, demo_turns};
use super::{CliError, Output};
use crate::runtime::{
    CompactionReport, NoNativeCompactor, PreparationState, SessionConfig, SessionRuntime,
    StopSignal,
};
use crate::simulator::{LatentSummarizer, WireShape};
use crate::storage::{Store, StoreError};

/// Session id of the demo.
pub(crate) const DEMO_SESSION: &str = "demo";
/// Context window of the demo model.
pub(crate) const DEMO_CONTEXT_WINDOW: u64 = 16_000;
/// Turns after which the user asks for a manual compaction.
const MANUAL_AFTER_TURNS: &[usize] = &[9, 27];
/// Model requests one agent step may send: the first, and one after each overflow recovery.
const MAX_ATTEMPTS: usize = 3;
/// From this turn on, the user switches models at the first turn that starts with the context
/// at least [`SWITCH_AT_PERCENT`] full.
const SWITCH_FROM_TURN: usize = 24;
/// How full (percent of the history budget) the context is when the user switches models: so
/// full that the second model's larger count puts its first request over the window (the
/// provider-overflow trigger): 85% of the estimate, counted 1.07 x 1.2 times, is over it.
const SWITCH_AT_PERCENT: u64 = 85;
/// The second model's provider counts this many thousandths of `o200k_base` (its own
/// tokenizer counts a fifth more for the same text).
const SECOND_MODEL_COUNT_SCALE_PERMILLE: u32 = 1_200;

type DemoRuntime = SessionRuntime<LatentSummarizer, NoNativeCompactor>;

/// How `contextfold demo` plays its session (its flags).
#[derive(Debug, Clone, Default)]
pub(crate) struct DemoOptions {
    /// The SQLite file (default: a new file under the system temp dir).
    pub(crate) db: Option<PathBuf>,
    /// Milliseconds each summary takes (a remote model writing it; 0: the offline summarizer).
    pub(crate) summarizer_latency_ms: u64,
    /// Milliseconds each agent model request takes (the model writing its step).
    pub(crate) model_latency_ms: u64,
    /// Prepare the next checkpoint in the background (issue 39).
    pub(crate) background_preparation: bool,
}

pub(crate) struct Player {
    pub(crate) runtime: DemoRuntime,
    pub(crate) model: DemoModel,
    next_seq: u64,
    model_latency_ms: u64,
    pub(crate) reports: Vec<CompactionReport>,
    pub(crate) requests: u64,
    pub(crate) overflows: u64,
    /// What the models the user switched away from were sent.
    pub(crate) retired: Vec<crate::simulator::RequestRecord>,
    /// Milliseconds compaction added to each agent step that needed it (the evaluation or
    /// overflow recovery that compacted, from call to return).
    pub(crate) step_latency_ms: Vec<(f64, PreparationState)>,
    pub(crate) background_preparation: bool,
}

/// `demo`.
pub(crate) async fn demo(options: DemoOptions) -> Result<Output, CliError> {
    let path = options.db.clone().unwrap_or_else(default_path);
    let store = Arc::new(Store::open(&path)?);
    if store.event_count(DEMO_SESSION)? > 0 {
        return Err(StoreError::SessionExists { session_id: DEMO_SESSION.into() }.into());
    }
    eprintln!("demo: database {}", path.display());
    let clock_ms = Arc::new(AtomicU64::new(1_800_000_000_000));
    let config = SessionConfig {
        session_id: DEMO_SESSION.into(),
        model: ModelFacts { context_window: Some(DEMO_CONTEXT_WINDOW), ..Default::default() },
        provider: ProviderIdentity {
            provider: "demo".into(),
            connection_slug: "offline".into(),
            model_id: "demo-model".into(),
        },
        compactor: Compactor::TextSummary,
    };
    let summarizer = LatentSummarizer::new(options.summarizer_latency_ms);
    let mut runtime =
        SessionRuntime::new(Arc::clone(&store), config, summarizer, NoNativeCompactor)
            .with_clock(Arc::new(move || clock_ms.fetch_add(1_000, Ordering::Relaxed)));
    if options.background_preparation {
        runtime = runtime.with_background_preparation();
    }
    let reserve = ContextBudget::from_model(&runtime.config().model).reserve;
    let model = DemoModel::new(
        WireShape::OpenAiChat,
        "demo-model",
        DEMO_CONTEXT_WINDOW,
        reserve,
        1_000,
        options.model_latency_ms,
    );
    let mut player = Player {
        runtime,
        model,
        next_seq: 1,
        model_latency_ms: options.model_latency_ms,
        reports: Vec::new(),
        requests: 0,
        overflows: 0,
        retired: Vec::new(),
        step_latency_ms: Vec::new(),
        background_preparation: options.background_preparation,
    };
    let turns = demo_turns();
    for (index, turn) in turns.iter().enumerate() {
        if index >= SWITCH_FROM_TURN && player.model.shape == WireShape::OpenAiChat {
            player.maybe_switch_model().await?;
        }
        player.play_turn(index, turn).await?;
        if MANUAL_AFTER_TURNS.contains(&(index + 1)) {
            eprintln!("demo: user asks for /compact after turn {}", index + 1);
            let report = player.runtime.compact_manually(&StopSignal::new()).await?;
            player.note(report);
            player.next_seq = store.load_events(DEMO_SESSION)?.last().map_or(1, |e| e.seq + 1);
        }
    }
    player.runtime.await_preparation().await;
    super::demo_report::report(&store, &player, &path)
}

fn default_path() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::env::temp_dir().join(format!("contextfold-demo-{}-{nanos}.sqlite", std::process::id()))
}

impl Player {
    fn event(
        &mut self,
        turn: usize,
        response: Option<String>,
        content: EventContent,
    ) -> RuntimeEvent {
        let seq = self.next_seq;
        self.next_seq += 1;
        RuntimeEvent {
            created_at_ms: Some(1_800_000_000_000 + seq * 1_000),
            response_id: response,
            ..RuntimeEvent::new(
                DEMO_SESSION.into(),
                format!("run-t{turn}"),
                format!("t{turn}"),
                format!("e{seq}"),
                seq,
                content,
            )
        }
    }

    /// The user switches to a model on another provider (Anthropic wire shape, a tokenizer
    /// that counts more) when the context is nearly full. Nothing is known of the new model's
    /// count yet: its first request may overflow, once, before its first usage report.
    async fn maybe_switch_model(&mut self) -> Result<(), CliError> {
        let report = self.runtime.project(false).await?;
        let budget = report.projection.history_budget;
        if report.projection.estimated_tokens * 100 < budget * SWITCH_AT_PERCENT {
            return Ok(());
        }
        eprintln!(
            "demo: user switches to demo-model-2 (Anthropic Messages) at {} of {budget} tokens",
            report.projection.estimated_tokens
        );
        let model = self.runtime.config().model.clone();
        let provider = ProviderIdentity {
            provider: "demo-anthropic".into(),
            connection_slug: "offline".into(),
            model_id: "demo-model-2".into(),
        };
        self.runtime.switch_model(provider, model);
        self.retired.extend(self.model.provider().records());
        let reserve = ContextBudget::from_model(&self.runtime.config().model).reserve;
        self.model = DemoModel::new(
            WireShape::AnthropicMessages,
            "demo-model-2",
            DEMO_CONTEXT_WINDOW,
            reserve,
            SECOND_MODEL_COUNT_SCALE_PERMILLE,
            self.model_latency_ms,
        );
        Ok(())
    }

    fn note(&mut self, report: CompactionReport) {
        let o = &report.outcome;
        eprintln!(
            "demo:   {} compaction -> {} ({}), history {} -> {} tokens",
            report.trigger.as_str(),
            outcome_name(o.outcome),
            o.reason,
            o.tokens.before,
            o.tokens.after
        );
        self.reports.push(report);
    }

    /// Notes a compaction an agent step needed, and how long the step waited for it.
    fn note_step(&mut self, started: Instant, report: CompactionReport) {
        let waited = started.elapsed().as_secs_f64() * 1_000.0;
        self.step_latency_ms.push((waited, report.preparation));
        if waited >= 1.0 {
            eprintln!("demo:   the step waited {waited:.0} ms for it");
        }
        self.note(report);
    }

    async fn play_turn(&mut self, index: usize, turn: &DemoTurn) -> Result<(), CliError> {
        let first_line = turn.request.lines().next().unwrap_or_default();
        let more = match turn.request.lines().count() {
            0 | 1 => String::new(),
            n => format!(" (+{} pasted lines)", n - 1),
        };
        let total = super::demo_session::DEMO_TURNS;
        eprintln!("demo: turn {}/{total}: {first_line}{more}", index + 1);
        let turn_id = format!("t{index}");
        self.runtime.begin_turn(&turn_id)?;
        let user = self.event(index, None, EventContent::user_text(turn.request.clone()));
        self.runtime.append(vec![user]).await?;
        let started = Instant::now();
        if let Some(report) = self.runtime.evaluate_pre_turn().await? {
            self.note_step(started, report);
        }
        for (step_index, step) in turn.steps.iter().enumerate() {
            self.model_request().await?;
            let response = Some(format!("resp-{index}-{step_index}"));
            let mut events = vec![self.event(
                index,
                response.clone(),
                EventContent::Reasoning { text: step.reasoning.clone(), provider_data: None },
            )];
            for call in &step.calls {
                let content = EventContent::ToolCall {
                    call_id: call.call_id.clone(),
                    tool_name: call.tool.into(),
                    input: call.input.clone(),
                };
                events.push(self.event(index, response.clone(), content));
            }
            for call in &step.calls {
                let content = EventContent::ToolResult {
                    call_id: call.call_id.clone(),
                    tool_name: call.tool.into(),
                    output: call.output.clone(),
                    is_error: call.is_error,
                    attachments: Vec::new(),
                };
                events.push(self.event(index, None, content));
            }
            self.runtime.append(events).await?;
            let started = Instant::now();
            if let Some(report) = self.runtime.evaluate_mid_turn().await? {
                self.note_step(started, report);
            }
        }
        self.model_request().await?;
        let answer = self.event(
            index,
            Some(format!("resp-{index}-final")),
            EventContent::AssistantText { text: turn.answer.clone() },
        );
        self.runtime.append(vec![answer]).await?;
        Ok(self.runtime.end_turn()?)
    }

    /// One agent step's model request to the simulated provider. Its reported usage becomes
    /// a fact; a context overflow becomes a fact too, the runtime recovers, and the request is
    /// sent again.
    async fn model_request(&mut self) -> Result<(), CliError> {
        for _ in 0..MAX_ATTEMPTS {
            self.requests += 1;
            let report = self.runtime.project_for_request().await?;
            match self.model.request(&report.projection.messages).await? {
                DemoAnswer::Usage(usage) => {
                    self.runtime.record_usage(self.runtime.usage_fact(&report, usage)).await?;
                    return Ok(());
                }
                DemoAnswer::Overflow(overflow) => {
                    self.overflows += 1;
                    eprintln!(
                        "demo:   provider overflow: estimated {} tokens (x{:.3}), {overflow:?}",
                        report.projection.estimated_tokens,
                        f64::from(report.ratio_permille) / 1000.0,
                    );
                    self.runtime.record_usage(self.runtime.usage_fact(&report, overflow)).await?;
                    let started = Instant::now();
                    let recovery = self.runtime.recover_from_overflow().await?;
                    self.note_step(started, recovery);
                }
            }
        }
        Err(CliError::Demo {
            detail: format!("the request still overflowed after {MAX_ATTEMPTS} attempts"),
        })
    }
}
