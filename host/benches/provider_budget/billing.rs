//! Row d: billed-equivalent input tokens per session, contextfold against peer strategies.
//!
//! Every strategy's requests go to two simulators of its own (10M-token window, so a replay
//! never overflows): OpenAI Chat with a `prompt_cache_key` (uncached x1, cached x0.1) and
//! Anthropic Messages with a `cache_control` breakpoint on the last block of the last message
//! (uncached x1, read x0.1, write x1.25). Summarizer input is added at x1 in both styles:
//! contextfold's is the simulator's count of each `SummarizeEffect` request; a peer's full
//! re-summary bills the whole history it summarizes (per-event `o200k_base` counts plus 4
//! tokens of framing each). The peers build their requests from the same events at the same
//! request points (the contextfold run's answered requests); they check their budget with the
//! exact `o200k_base` count (which favours them) and summarize with the same extractive
//! summarizer (`contextfold_core::compaction::extractive_summary`).

use contextfold_core::budget::{ContextBudget, TokenEstimator};
use contextfold_core::compaction::extractive_summary;
use contextfold_core::projection::{Message, Part, Role, estimate_messages, materialize};
use contextfold_core::{EventContent, ModelFacts, RuntimeEvent};
use contextfold_host::simulator::{SimulatedProvider, SimulatorConfig, WireShape};
use contextfold_host::tokenizer::{OpenAiEncoding, OpenAiTokenizer};
use serde_json::Value;

use crate::session::{BenchResult, BenchSession, RunLog};
use crate::wire::{anthropic_body, billed, chat_body};

/// A strategy whose requests are billed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strategy {
    /// The runtime as shipped (the calibrated run's requests).
    Contextfold,
    /// Raw history every request (window large enough never to overflow).
    NoCompaction,
    /// Summarize the whole history from event 0 whenever the request would not fit.
    FullResummary,
    /// Tool outputs of all but the newest 2 completed turns replaced each request, plus full
    /// re-summary.
    PruneEveryTurn,
    /// All but the newest N tool results replaced each request, plus full re-summary.
    MaskAllBut(usize),
}

impl Strategy {
    pub(crate) const ALL: [Strategy; 6] = [
        Strategy::Contextfold,
        Strategy::NoCompaction,
        Strategy::FullResummary,
        Strategy::PruneEveryTurn,
        Strategy::MaskAllBut(5),
        Strategy::MaskAllBut(10),
    ];

    pub(crate) fn name(self) -> String {
        match self {
            Strategy::Contextfold => "contextfold".into(),
            Strategy::NoCompaction => "no compaction (10M window)".into(),
            Strategy::FullResummary => "full re-summary".into(),
            Strategy::PruneEveryTurn => "pruning every turn".into(),
            Strategy::MaskAllBut(n) => format!("mask all but last {n}"),
        }
    }
}

/// One strategy's bill on one session.
#[derive(Debug, Clone)]
pub(crate) struct Bill {
    pub(crate) strategy: Strategy,
    pub(crate) requests: usize,
    pub(crate) summaries: u64,
    pub(crate) summarizer_input: u64,
    pub(crate) openai: f64,
    pub(crate) anthropic: f64,
}

/// Both billing replays of one strategy.
struct Replay {
    chat: SimulatedProvider,
    anthropic: SimulatedProvider,
}

impl Replay {
    fn new() -> Self {
        let config = SimulatorConfig { context_window: 10_000_000, ..SimulatorConfig::default() };
        Self {
            chat: SimulatedProvider::new(config.clone()),
            anthropic: SimulatedProvider::new(config),
        }
    }

    fn send(&self, messages: &[Message]) -> BenchResult<()> {
        self.chat.answer(WireShape::OpenAiChat, chat_body(messages, "bench-replay")?.as_bytes());
        let body = anthropic_body(messages, "bench-replay")?;
        self.anthropic.answer(WireShape::AnthropicMessages, body.as_bytes());
        Ok(())
    }

    fn bill(&self, strategy: Strategy, requests: usize, summaries: u64, summarizer: u64) -> Bill {
        let summarizer_input = summarizer as f64;
        Bill {
            strategy,
            requests,
            summaries,
            summarizer_input: summarizer,
            openai: billed(&self.chat.records(), WireShape::OpenAiChat) + summarizer_input,
            anthropic: billed(&self.anthropic.records(), WireShape::AnthropicMessages)
                + summarizer_input,
        }
    }
}

/// Bills every strategy on `session`, one thread per strategy.
pub(crate) fn measure(session: &BenchSession, run: &RunLog) -> BenchResult<Vec<Bill>> {
    let events = session.events();
    let tokenizer = OpenAiTokenizer::new(OpenAiEncoding::O200kBase);
    let event_tokens: Vec<u64> =
        events.iter().map(|e| tokenizer.estimate_text(&event_text(e)) + 4).collect();
    let budget = ContextBudget::from_model(&ModelFacts {
        context_window: Some(session.window),
        ..Default::default()
    })
    .history_budget;
    let points: Vec<usize> = run.sent.iter().map(|s| s.log_len).collect();
    std::thread::scope(|scope| {
        let jobs: Vec<_> = Strategy::ALL
            .iter()
            .map(|&strategy| {
                let (events, event_tokens, points) = (&events, &event_tokens, &points);
                scope.spawn(move || -> BenchResult<Bill> {
                    let replay = Replay::new();
                    if strategy == Strategy::Contextfold {
                        for sent in &run.sent {
                            replay.send(&sent.messages)?;
                        }
                        let compactions = run.compactions;
                        return Ok(replay.bill(
                            strategy,
                            run.sent.len(),
                            compactions,
                            run.summarizer_input,
                        ));
                    }
                    let mut peer = Peer {
                        strategy,
                        budget,
                        tokenizer: OpenAiTokenizer::new(OpenAiEncoding::O200kBase),
                        start: 0,
                        summary: None,
                        summaries: 0,
                        summarizer: 0,
                    };
                    for &n in points {
                        let messages = peer.request(events, event_tokens, n);
                        replay.send(&messages)?;
                    }
                    Ok(replay.bill(strategy, points.len(), peer.summaries, peer.summarizer))
                })
            })
            .collect();
        jobs.into_iter().map(|job| job.join().map_err(|_| "a billing thread panicked")?).collect()
    })
}

/// A peer strategy's state as the session grows.
struct Peer {
    strategy: Strategy,
    budget: u64,
    tokenizer: OpenAiTokenizer,
    /// First event after the summary.
    start: usize,
    summary: Option<String>,
    summaries: u64,
    summarizer: u64,
}

impl Peer {
    /// The peer's request when the log holds `events[..n]`.
    fn request(&mut self, events: &[RuntimeEvent], event_tokens: &[u64], n: usize) -> Vec<Message> {
        let messages = self.messages(events, n);
        if self.strategy == Strategy::NoCompaction {
            return messages;
        }
        if estimate_messages(&self.tokenizer, &messages) <= self.budget {
            return messages;
        }
        // Summarize the whole history again, from event 0.
        let target = (self.budget / 4).min(8_192);
        self.summary = Some(extractive_summary(None, &events[..n], target));
        self.summaries += 1;
        self.summarizer += event_tokens[..n].iter().sum::<u64>();
        self.start = n;
        self.messages(events, n)
    }

    fn messages(&self, events: &[RuntimeEvent], n: usize) -> Vec<Message> {
        let current = events[n - 1].turn_id.as_str();
        let mut completed: Vec<&str> = Vec::new();
        for event in &events[..n] {
            if event.turn_id != current && completed.last() != Some(&event.turn_id.as_str()) {
                completed.push(&event.turn_id);
            }
        }
        let protected = &completed[completed.len().saturating_sub(2)..];
        let tail = &events[self.start..n];
        let results: Vec<usize> = tail
            .iter()
            .enumerate()
            .filter(|(_, e)| matches!(e.content, EventContent::ToolResult { .. }))
            .map(|(i, _)| i)
            .collect();
        let shown: Vec<RuntimeEvent> = tail
            .iter()
            .enumerate()
            .map(|(i, event)| {
                let hide = match self.strategy {
                    Strategy::PruneEveryTurn => {
                        event.turn_id != current && !protected.contains(&event.turn_id.as_str())
                    }
                    Strategy::MaskAllBut(keep) => {
                        results.len() > keep && results[..results.len() - keep].contains(&i)
                    }
                    _ => false,
                };
                if hide { with_placeholder(event) } else { event.clone() }
            })
            .collect();
        let mut messages = Vec::new();
        if let Some(summary) = &self.summary {
            let text = format!("Summary of the conversation so far:\n{summary}");
            messages.push(Message { role: Role::System, parts: vec![Part::Text { text }] });
        }
        messages.extend(materialize(None, &shown, &[]).messages);
        messages
    }
}

fn with_placeholder(event: &RuntimeEvent) -> RuntimeEvent {
    let mut event = event.clone();
    if let EventContent::ToolResult { output, tool_name, .. } = &mut event.content {
        let bytes = output.to_string().len();
        *output = Value::String(format!("[tool output of {tool_name} omitted: {bytes} bytes]"));
    }
    event
}

/// The text a summarizer reads of an event.
pub(crate) fn event_text(event: &RuntimeEvent) -> String {
    let value = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match &event.content {
        EventContent::ToolCall { tool_name, input, .. } => format!("{tool_name}({input})"),
        EventContent::ToolResult { output, .. } => value(output),
        other => serde_json::to_value(other).map(|v| value(&v["text"])).unwrap_or_default(),
    }
}
