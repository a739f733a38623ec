//! The simulated world: session generator, scripted providers with faults, in-memory ledger.

use std::fmt;

use contextfold_core::checkpoint::{RecordedCheckpointEvent, select_recovered_checkpoint};
use contextfold_core::compaction::{
    AppendFailure, CompactInput, Compaction, CompactionOutcome, Compactor, EXTRACTIVE_PRODUCER,
    Effect, FinishReason, MalformedInputCircuit, OPENAI_CODEX_PROVIDER, OutcomeKind,
    ProviderFailure, ProviderFailureKind, ProviderIdentity, Step, SummaryResponse, Trigger,
    extractive_summary,
};
use contextfold_core::{HistoryCompactCheckpoint, LogBuilder, ModelFacts, RuntimeEvent};
use serde_json::json;

use crate::invariants;

/// SplitMix64: small, seeded, reproducible.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub(crate) fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct SimConfig {
    pub(crate) native: bool,
}

#[derive(Debug, Default, Clone)]
pub(crate) struct Stats {
    pub(crate) steps: u64,
    pub(crate) compactions: u64,
    pub(crate) recorded: u64,
    pub(crate) recorded_v3: u64,
    pub(crate) rolling: u64,
    pub(crate) skipped: u64,
    pub(crate) failed_open: u64,
    pub(crate) exhausted: u64,
    pub(crate) cancelled: u64,
    pub(crate) native_fallbacks: u64,
    pub(crate) append_failures: u64,
    pub(crate) reasons: std::collections::BTreeMap<String, u64>,
}

impl Stats {
    pub(crate) fn add(&mut self, other: &Stats) {
        self.steps += other.steps;
        self.compactions += other.compactions;
        self.recorded += other.recorded;
        self.recorded_v3 += other.recorded_v3;
        self.rolling += other.rolling;
        self.skipped += other.skipped;
        self.failed_open += other.failed_open;
        self.exhausted += other.exhausted;
        self.cancelled += other.cancelled;
        self.native_fallbacks += other.native_fallbacks;
        self.append_failures += other.append_failures;
        for (reason, n) in &other.reasons {
            *self.reasons.entry(reason.clone()).or_default() += n;
        }
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} steps, {} compactions: {} recorded ({} V3, {} rolling), {} skipped, {} failed open, \
             {} exhausted, {} cancelled, {} native fallbacks, {} append failures",
            self.steps,
            self.compactions,
            self.recorded,
            self.recorded_v3,
            self.rolling,
            self.skipped,
            self.failed_open,
            self.exhausted,
            self.cancelled,
            self.native_fallbacks,
            self.append_failures
        )?;
        write!(f, "\n  outcome reasons: {:?}", self.reasons)
    }
}

/// The in-memory AgentRun ledger of `history_compact_checkpoint_recorded` events.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    pub(crate) records: Vec<RecordedCheckpointEvent>,
}

impl Ledger {
    pub(crate) fn latest(&self, session: &str) -> Option<HistoryCompactCheckpoint> {
        select_recovered_checkpoint(session, &self.records).selected
    }
}

pub(crate) struct Sim {
    pub(crate) seed: u64,
    pub(crate) rng: Rng,
    pub(crate) log: LogBuilder,
    pub(crate) ledger: Ledger,
    pub(crate) model: ModelFacts,
    pub(crate) provider: ProviderIdentity,
    pub(crate) config: SimConfig,
    pub(crate) circuit: MalformedInputCircuit,
    pub(crate) stats: Stats,
    pub(crate) turn: u64,
    pub(crate) clock_ms: u64,
}

impl Sim {
    pub(crate) fn new(seed: u64, config: SimConfig) -> Self {
        Self {
            seed,
            rng: Rng(seed),
            log: LogBuilder::new("sim"),
            ledger: Ledger::default(),
            model: ModelFacts { context_window: Some(16_000), ..Default::default() },
            provider: provider("codex-main", "gpt-5-codex"),
            config,
            circuit: MalformedInputCircuit::new(),
            stats: Stats::default(),
            turn: 0,
            clock_ms: 1_800_000_000_000,
        }
    }

    pub(crate) fn events(&self) -> &[RuntimeEvent] {
        self.log.events()
    }

    pub(crate) fn run(&mut self, steps: usize) {
        for _ in 0..steps {
            self.step();
        }
    }

    /// One turn: the user's request (pre-turn check), then agent steps with tool calls and
    /// results (mid-turn check after each), then the final answer.
    fn step(&mut self) {
        self.stats.steps += 1;
        self.clock_ms += 60_000;
        if self.rng.chance(8) {
            let windows = [6_000, 12_000, 16_000, 32_000, 128_000];
            self.model.context_window = Some(windows[self.rng.below(5) as usize]);
        }
        if self.config.native && self.rng.chance(5) {
            self.provider = provider("codex-other", "gpt-5-codex-mini");
        }
        self.turn += 1;
        let current = format!("t{}", self.turn);
        let request = format!("turn {}: continue with the next failing test", self.turn);
        self.log.turn(&current).user(&request);

        let projection = invariants::check_projection(self, Some(&current), false);
        let trigger = if !projection.fits {
            Some(if self.rng.chance(20) { Trigger::Overflow } else { Trigger::PreTurn })
        } else if self.rng.chance(6) {
            Some(Trigger::Manual)
        } else {
            None
        };
        if let Some(trigger) = trigger {
            self.compact(trigger, &current);
        }
        for agent_step in 0..self.rng.below(4) {
            self.append_agent_step(agent_step);
            let projection = invariants::check_projection(self, Some(&current), false);
            if !projection.fits {
                self.compact(Trigger::MidTurn, &current);
            }
        }
        self.log
            .response(Some(&format!("resp-{}-final", self.turn)))
            .assistant("Done with this step; I decided to keep the parser change.")
            .response(None);
    }

    /// One model response with reasoning and parallel tool calls, then their results.
    fn append_agent_step(&mut self, step: u64) {
        let response = format!("resp-{}-{step}", self.turn);
        self.log.response(Some(&response)).reasoning("thinking about which file to open");
        let parallel = 1 + self.rng.below(3);
        for call in 0..parallel {
            let id = format!("c{}-{step}-{call}", self.turn);
            self.log.tool_call(&id, "shell", json!({"cmd": format!("cat src/mod_{call}.rs")}));
        }
        self.log.response(None);
        for call in 0..parallel {
            let id = format!("c{}-{step}-{call}", self.turn);
            if self.rng.chance(4) {
                continue; // interrupted: no result recorded
            }
            let size = match self.rng.below(10) {
                0 => 20_000,
                1..=3 => 3_000,
                _ => 200,
            };
            let body: String = "fn main() { println!(\"héllo 世界\"); }\n".repeat(size / 40 + 1);
            self.log.tool_result(&id, "shell", json!(body));
        }
    }

    pub(crate) fn compact(&mut self, trigger: Trigger, current: &str) {
        self.stats.compactions += 1;
        let before_log = self.events().to_vec();
        let before_ledger = self.ledger.records.len();
        let previous = self.ledger.latest("sim");
        let input = CompactInput {
            trigger,
            events: before_log.as_slice().into(),
            current_turn_id: Some(current.to_owned()),
            checkpoint: previous.clone(),
            model: self.model.clone(),
            provider: self.provider.clone(),
            compactor: if self.config.native {
                Compactor::OpenaiCodexNative
            } else {
                Compactor::TextSummary
            },
            new_checkpoint_id: format!("cp-{}-{}", self.seed, self.stats.compactions),
            now_ms: self.clock_ms,
            provider_options: None,
            summarizer_label: Some(EXTRACTIVE_PRODUCER.into()),
            circuit: self.circuit.clone(),
            prepared: None,
        };
        let mut tx = Compaction::start(input).expect("valid log");
        let mut durable: Vec<HistoryCompactCheckpoint> = Vec::new();
        let outcome = loop {
            match tx.poll().expect("driver order") {
                Step::Effect(Effect::Summarize(effect)) => {
                    if self.rng.chance(3) {
                        assert!(tx.cancel(), "cancel before the append must succeed");
                        continue;
                    }
                    let fold = &before_log[effect.fold.start..effect.fold.end];
                    let good = extractive_summary(
                        effect.previous_summary.as_deref(),
                        fold,
                        effect.target_tokens,
                    );
                    let answer = self.scripted_summary(good);
                    tx.handle_summary(answer).expect("expected summary");
                }
                Step::Effect(Effect::CompactNatively(_request)) => {
                    let answer = self.scripted_native();
                    tx.handle_native(answer).expect("expected native");
                }
                Step::Effect(Effect::AppendCheckpoint(checkpoint)) => {
                    if self.rng.chance(5) {
                        self.stats.append_failures += 1;
                        let failure =
                            AppendFailure { conflict: false, message: "disk full".into() };
                        tx.handle_append(Err(failure)).expect("expected append");
                    } else {
                        self.ledger.records.push(RecordedCheckpointEvent {
                            event_id: format!("ar-{}", self.ledger.records.len() + 1),
                            session_id: "sim".into(),
                            recorded_at_ms: self.clock_ms,
                            payload: checkpoint.to_value(),
                        });
                        durable.push((*checkpoint).clone());
                        tx.handle_append(Ok(())).expect("expected append");
                    }
                }
                Step::Done(outcome) => break *outcome,
            }
        };
        self.circuit = tx.into_circuit();
        self.count(&outcome, previous.as_ref());
        invariants::check_compaction(
            self,
            &before_log,
            before_ledger,
            previous.as_ref(),
            &outcome,
            &durable,
            trigger,
            Some(current),
        );
        let fail_open = matches!(outcome.outcome, OutcomeKind::FailedOpen | OutcomeKind::Exhausted);
        invariants::check_projection(self, Some(current), fail_open);
    }

    fn count(&mut self, outcome: &CompactionOutcome, previous: Option<&HistoryCompactCheckpoint>) {
        let key = format!("{:?}:{}", outcome.outcome, outcome.reason);
        if std::env::var("CONTEXTFOLD_SIM_TRACE").is_ok()
            && outcome.outcome == OutcomeKind::Exhausted
        {
            eprintln!(
                "seed {} exhausted: {:?} window {:?}",
                self.seed,
                outcome
                    .diagnostics
                    .iter()
                    .map(|d| format!("{}: {} {:?}", d.code, d.detail, d.tokens))
                    .collect::<Vec<_>>(),
                self.model.context_window
            );
        }
        *self.stats.reasons.entry(key).or_default() += 1;
        match outcome.outcome {
            OutcomeKind::Recorded | OutcomeKind::Exhausted if outcome.checkpoint.is_some() => {
                self.stats.recorded += 1;
                let cp = outcome.checkpoint.as_ref().expect("checked");
                if cp.schema_version() == 3 {
                    self.stats.recorded_v3 += 1;
                }
                if previous.is_some() {
                    self.stats.rolling += 1;
                }
                if outcome.outcome == OutcomeKind::Exhausted {
                    self.stats.exhausted += 1;
                }
            }
            OutcomeKind::Skipped => self.stats.skipped += 1,
            OutcomeKind::FailedOpen => self.stats.failed_open += 1,
            OutcomeKind::Exhausted => self.stats.exhausted += 1,
            OutcomeKind::Cancelled => self.stats.cancelled += 1,
            OutcomeKind::Recorded => unreachable!("recorded without checkpoint"),
            OutcomeKind::Prepared => unreachable!("the simulator's triggers never prepare"),
        }
        if outcome.attempts.len() > 1 {
            self.stats.native_fallbacks += 1;
        }
    }

    fn scripted_summary(&mut self, good: String) -> Result<SummaryResponse, ProviderFailure> {
        let ok = |text: String, finish| Ok(SummaryResponse { text, finish_reason: finish });
        let fail = |kind| Err(ProviderFailure { kind, message: "scripted failure".into() });
        match self.rng.below(100) {
            0..=69 => ok(good, FinishReason::Stop),
            70..=77 => ok(good.replace("## Next Steps", "## Later"), FinishReason::Stop),
            78..=81 => ok(good, FinishReason::Length),
            82..=85 => fail(ProviderFailureKind::Overflow),
            86..=89 => fail(ProviderFailureKind::Unavailable),
            90..=93 => ok(String::new(), FinishReason::Stop),
            94..=96 => ok("Error: rate limit exceeded, please retry".into(), FinishReason::Stop),
            _ => ok(format!("{good}\n```rust\nfn cut_off("), FinishReason::Stop),
        }
    }

    fn scripted_native(&mut self) -> Result<Vec<serde_json::Value>, ProviderFailure> {
        let item = |n: u64| json!({"type": "compaction", "id": format!("cmp_{n}"), "encrypted_content": format!("gAAAA{n:016x}")});
        let n = self.rng.next();
        match self.rng.below(100) {
            0..=69 => Ok(vec![json!({"type": "reasoning", "id": "rs_1"}), item(n)]),
            70..=79 => Ok(vec![]),
            80..=84 => Ok(vec![item(n), item(n + 1)]),
            85..=94 => {
                Err(ProviderFailure { kind: ProviderFailureKind::Rejected, message: "400".into() })
            }
            _ => Err(ProviderFailure {
                kind: ProviderFailureKind::RateLimited,
                message: "429".into(),
            }),
        }
    }
}

pub(crate) fn provider(connection: &str, model: &str) -> ProviderIdentity {
    ProviderIdentity {
        provider: OPENAI_CODEX_PROVIDER.into(),
        connection_slug: connection.into(),
        model_id: model.into(),
    }
}
