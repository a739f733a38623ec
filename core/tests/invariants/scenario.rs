//! Generated sessions and scripted provider behaviour, driven through the core transaction
//! on top of the simulator's world ([`Sim`]: log builder, in-memory AgentRun ledger, model,
//! provider identity, malformed-input circuit). Every compaction and every projection is
//! recorded in a [`Trace`] that the invariant properties inspect.

use contextfold_core::compaction::extractive::{EXTRACTIVE_PRODUCER, extractive_summary};
use contextfold_core::compaction::summary_validation::FinishReason;
use contextfold_core::compaction::{
    AppendFailure, CompactInput, Compaction, CompactionOutcome, Compactor, Effect, OutcomeKind,
    ProviderFailure, ProviderFailureKind, Step, SummaryResponse, Trigger,
};
use contextfold_core::projection::{ProjectInput, Projection, project};
use contextfold_core::recovery::RecordedCheckpointEvent;
use contextfold_core::{CharEstimator, HistoryCompactCheckpoint, RuntimeEvent};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::world::{Sim, SimConfig, provider};

/// One tool call of an agent step: the size of its result, or no result (interrupted).
#[derive(Debug, Clone)]
pub(crate) struct CallPlan {
    pub(crate) result_bytes: usize,
    pub(crate) interrupted: bool,
}

/// One user turn.
#[derive(Debug, Clone)]
pub(crate) struct TurnPlan {
    /// Agent steps, each a batch of parallel tool calls.
    pub(crate) steps: Vec<Vec<CallPlan>>,
    /// Switch the model's context window to this one before the turn.
    pub(crate) window: Option<u64>,
    /// Run a manual compaction between the previous turn and this one.
    pub(crate) manual_before: bool,
    /// Switch to another connection and model (V3 state no longer matches).
    pub(crate) switch_provider: bool,
}

/// How the scripted text summarizer answers.
#[derive(Debug, Clone, Copy)]
pub(crate) enum SummaryScript {
    Good,
    MissingSection,
    LengthFinish,
    OpenFence,
    Empty,
    Refusal,
    Fail(ProviderFailureKind),
    Cancel,
}

/// How the scripted Codex compactor answers.
#[derive(Debug, Clone, Copy)]
pub(crate) enum NativeScript {
    One,
    Zero,
    Two,
    Fail(ProviderFailureKind),
}

/// How the in-memory ledger answers an append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AppendScript {
    Durable,
    Fails,
}

/// A whole generated case: the session and the providers' behaviour (cycled).
#[derive(Debug, Clone)]
pub(crate) struct Scenario {
    pub(crate) native: bool,
    pub(crate) turns: Vec<TurnPlan>,
    pub(crate) summaries: Vec<SummaryScript>,
    pub(crate) natives: Vec<NativeScript>,
    pub(crate) appends: Vec<AppendScript>,
}

/// One compaction as seen from outside the transaction.
#[derive(Debug, Clone)]
pub(crate) struct CompactionRecord {
    pub(crate) trigger: Trigger,
    pub(crate) current_turn: Option<String>,
    pub(crate) log_before: Vec<RuntimeEvent>,
    pub(crate) log_after: Vec<RuntimeEvent>,
    pub(crate) ledger_before: Vec<RecordedCheckpointEvent>,
    pub(crate) ledger_after: Vec<RecordedCheckpointEvent>,
    pub(crate) previous: Option<HistoryCompactCheckpoint>,
    pub(crate) offered: Vec<HistoryCompactCheckpoint>,
    pub(crate) append_results: Vec<AppendScript>,
    pub(crate) outcome: CompactionOutcome,
}

/// One projection of the next request.
#[derive(Debug, Clone)]
pub(crate) struct ProjectionRecord {
    pub(crate) events: Vec<RuntimeEvent>,
    pub(crate) current_turn: Option<String>,
    pub(crate) checkpoint: Option<HistoryCompactCheckpoint>,
    pub(crate) ledger: Vec<RecordedCheckpointEvent>,
    pub(crate) model: contextfold_core::ModelFacts,
    pub(crate) fail_open: bool,
    pub(crate) projection: Projection,
}

/// Everything that happened in one case.
#[derive(Debug, Default)]
pub(crate) struct Trace {
    pub(crate) compactions: Vec<CompactionRecord>,
    pub(crate) projections: Vec<ProjectionRecord>,
    pub(crate) final_log: Vec<RuntimeEvent>,
    pub(crate) final_ledger: Vec<RecordedCheckpointEvent>,
}

fn failure_kind() -> impl Strategy<Value = ProviderFailureKind> {
    prop_oneof![
        Just(ProviderFailureKind::Rejected),
        Just(ProviderFailureKind::Overflow),
        Just(ProviderFailureKind::Auth),
        Just(ProviderFailureKind::Billing),
        Just(ProviderFailureKind::RateLimited),
        Just(ProviderFailureKind::Unavailable),
        Just(ProviderFailureKind::Cancelled),
    ]
}

fn summary_script() -> impl Strategy<Value = SummaryScript> {
    prop_oneof![
        12 => Just(SummaryScript::Good),
        1 => Just(SummaryScript::MissingSection),
        1 => Just(SummaryScript::LengthFinish),
        1 => Just(SummaryScript::OpenFence),
        1 => Just(SummaryScript::Empty),
        1 => Just(SummaryScript::Refusal),
        2 => failure_kind().prop_map(SummaryScript::Fail),
        1 => Just(SummaryScript::Cancel),
    ]
}

fn native_script() -> impl Strategy<Value = NativeScript> {
    prop_oneof![
        6 => Just(NativeScript::One),
        1 => Just(NativeScript::Zero),
        1 => Just(NativeScript::Two),
        2 => failure_kind().prop_map(NativeScript::Fail),
    ]
}

fn call_plan() -> impl Strategy<Value = CallPlan> {
    (prop_oneof![6 => 50usize..400, 3 => 1_000usize..4_000, 1 => 12_000usize..24_000], 0u8..25)
        .prop_map(|(result_bytes, roll)| CallPlan { result_bytes, interrupted: roll == 0 })
}

fn turn_plan() -> impl Strategy<Value = TurnPlan> {
    (
        prop::collection::vec(prop::collection::vec(call_plan(), 1..4), 0..4),
        prop_oneof![
            8 => Just(None),
            1 => prop::sample::select(vec![4_000u64, 6_000, 12_000, 16_000, 32_000, 128_000]).prop_map(Some),
        ],
        0u8..12,
        0u8..20,
    )
        .prop_map(|(steps, window, manual, switch)| TurnPlan {
            steps,
            window,
            manual_before: manual == 0,
            switch_provider: switch == 0,
        })
}

/// Sessions of 3–14 turns with scripted providers.
pub(crate) fn scenario() -> impl Strategy<Value = Scenario> {
    (
        any::<bool>(),
        prop::collection::vec(turn_plan(), 3..14),
        prop::collection::vec(summary_script(), 1..8),
        prop::collection::vec(native_script(), 1..6),
        prop::collection::vec(
            prop_oneof![6 => Just(AppendScript::Durable), 1 => Just(AppendScript::Fails)],
            1..6,
        ),
    )
        .prop_map(|(native, turns, summaries, natives, appends)| Scenario {
            native,
            turns,
            summaries,
            natives,
            appends,
        })
}

/// The number of proptest cases: `CONTEXTFOLD_PROPTEST_CASES`, default 128.
pub(crate) fn cases() -> u32 {
    std::env::var("CONTEXTFOLD_PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(128)
}

/// Drives a scenario and records its trace.
pub(crate) struct Driver {
    pub(crate) sim: Sim,
    scenario: Scenario,
    summary_at: usize,
    native_at: usize,
    append_at: usize,
    pub(crate) trace: Trace,
}

impl Driver {
    pub(crate) fn run(scenario: Scenario) -> Trace {
        let sim = Sim::new(0, SimConfig { native: scenario.native });
        let mut driver = Driver {
            sim,
            scenario,
            summary_at: 0,
            native_at: 0,
            append_at: 0,
            trace: Trace::default(),
        };
        driver.sim.model.context_window = Some(12_000);
        let turns = driver.scenario.turns.clone();
        for (index, turn) in turns.iter().enumerate() {
            driver.turn(index as u64 + 1, turn);
        }
        driver.trace.final_log = driver.sim.events().to_vec();
        driver.trace.final_ledger = driver.sim.ledger.records.clone();
        driver.trace
    }

    fn turn(&mut self, number: u64, plan: &TurnPlan) {
        self.sim.clock_ms += 60_000;
        if let Some(window) = plan.window {
            self.sim.model.context_window = Some(window);
        }
        if plan.switch_provider {
            self.sim.provider = provider("codex-other", "gpt-5-codex-mini");
        }
        if plan.manual_before && number > 1 {
            self.compact(Trigger::Manual, None);
            self.project(None, false);
        }
        let current = format!("t{number}");
        self.sim
            .log
            .turn(&current)
            .user(&format!("turn {number}: continue with the next failing test"));
        if !self.project(Some(&current), false).fits {
            self.compact_and_project(Trigger::PreTurn, &current);
        }
        for (step, calls) in plan.steps.iter().enumerate() {
            let response = format!("resp-{number}-{step}");
            self.sim.log.response(Some(&response)).reasoning("thinking about which file to open");
            for call in 0..calls.len() {
                let id = format!("c{number}-{step}-{call}");
                self.sim.log.tool_call(
                    &id,
                    "shell",
                    json!({"cmd": format!("cat src/mod_{call}.rs")}),
                );
            }
            self.sim.log.response(None);
            for (call, plan) in calls.iter().enumerate() {
                if plan.interrupted {
                    continue;
                }
                let id = format!("c{number}-{step}-{call}");
                let line = "fn main() { println!(\"héllo 世界\"); }\n";
                let body = line.repeat(plan.result_bytes / line.len() + 1);
                self.sim.log.tool_result(&id, "shell", json!(body));
            }
            if !self.project(Some(&current), false).fits {
                self.compact_and_project(Trigger::MidTurn, &current);
            }
        }
        self.sim
            .log
            .response(Some(&format!("resp-{number}-final")))
            .assistant("Done with this step; I decided to keep the parser change.")
            .response(None);
    }

    fn compact_and_project(&mut self, trigger: Trigger, current: &str) {
        let outcome = self.compact(trigger, Some(current));
        let fail_open = matches!(outcome, OutcomeKind::FailedOpen | OutcomeKind::Exhausted);
        self.project(Some(current), fail_open);
    }

    fn project(&mut self, current: Option<&str>, fail_open: bool) -> Projection {
        let checkpoint = self.sim.ledger.latest("sim");
        let projection = project(
            &ProjectInput {
                events: self.sim.events(),
                current_turn_id: current,
                checkpoint: checkpoint.as_ref(),
                model: &self.sim.model,
                provider: Some(&self.sim.provider),
                fail_open,
            },
            &CharEstimator,
        )
        .expect("generated logs are valid");
        self.trace.projections.push(ProjectionRecord {
            events: self.sim.events().to_vec(),
            current_turn: current.map(str::to_owned),
            checkpoint,
            ledger: self.sim.ledger.records.clone(),
            model: self.sim.model.clone(),
            fail_open,
            projection: projection.clone(),
        });
        projection
    }

    fn next_summary(&mut self) -> SummaryScript {
        let s = self.scenario.summaries[self.summary_at % self.scenario.summaries.len()];
        self.summary_at += 1;
        s
    }

    fn next_native(&mut self) -> NativeScript {
        let s = self.scenario.natives[self.native_at % self.scenario.natives.len()];
        self.native_at += 1;
        s
    }

    fn next_append(&mut self) -> AppendScript {
        let s = self.scenario.appends[self.append_at % self.scenario.appends.len()];
        self.append_at += 1;
        s
    }

    fn compact(&mut self, trigger: Trigger, current: Option<&str>) -> OutcomeKind {
        self.sim.stats.compactions += 1;
        let log_before = self.sim.events().to_vec();
        let ledger_before = self.sim.ledger.records.clone();
        let previous = self.sim.ledger.latest("sim");
        let input = CompactInput {
            trigger,
            events: log_before.clone(),
            current_turn_id: current.map(str::to_owned),
            checkpoint: previous.clone(),
            model: self.sim.model.clone(),
            provider: self.sim.provider.clone(),
            compactor: if self.scenario.native {
                Compactor::OpenaiCodexNative
            } else {
                Compactor::TextSummary
            },
            new_checkpoint_id: format!("cp-{}", self.sim.stats.compactions),
            now_ms: self.sim.clock_ms,
            provider_options: None,
            summarizer_label: Some(EXTRACTIVE_PRODUCER.into()),
            circuit: self.sim.circuit.clone(),
        };
        let mut tx = Compaction::start(input).expect("generated logs are valid");
        let mut offered = Vec::new();
        let mut append_results = Vec::new();
        let outcome = loop {
            match tx.poll().expect("driver order") {
                Step::Effect(Effect::Summarize(effect)) => {
                    let script = self.next_summary();
                    if matches!(script, SummaryScript::Cancel) {
                        assert!(tx.cancel(), "cancel before the append must succeed");
                        continue;
                    }
                    let fold = &log_before[effect.fold.start..effect.fold.end];
                    let good = extractive_summary(
                        effect.previous_summary.as_deref(),
                        fold,
                        effect.target_tokens,
                    );
                    tx.handle_summary(scripted_summary(script, good)).expect("awaiting a summary");
                }
                Step::Effect(Effect::CompactNatively(_)) => {
                    let script = self.next_native();
                    let n = self.sim.stats.compactions;
                    tx.handle_native(scripted_native(script, n)).expect("awaiting native output");
                }
                Step::Effect(Effect::AppendCheckpoint(checkpoint)) => {
                    let script = self.next_append();
                    offered.push((*checkpoint).clone());
                    append_results.push(script);
                    if script == AppendScript::Durable {
                        self.sim.ledger.records.push(RecordedCheckpointEvent {
                            event_id: format!("ar-{}", self.sim.ledger.records.len() + 1),
                            session_id: "sim".into(),
                            recorded_at_ms: self.sim.clock_ms,
                            payload: checkpoint.to_value(),
                        });
                        tx.handle_append(Ok(())).expect("awaiting an append");
                    } else {
                        self.sim.stats.append_failures += 1;
                        let failure =
                            AppendFailure { conflict: false, message: "disk full".into() };
                        tx.handle_append(Err(failure)).expect("awaiting an append");
                    }
                }
                Step::Done(outcome) => break *outcome,
            }
        };
        self.sim.circuit = tx.into_circuit();
        let kind = outcome.outcome;
        self.trace.compactions.push(CompactionRecord {
            trigger,
            current_turn: current.map(str::to_owned),
            log_before,
            log_after: self.sim.events().to_vec(),
            ledger_before,
            ledger_after: self.sim.ledger.records.clone(),
            previous,
            offered,
            append_results,
            outcome,
        });
        kind
    }
}

fn scripted_summary(
    script: SummaryScript,
    good: String,
) -> Result<SummaryResponse, ProviderFailure> {
    let ok = |text: String, finish_reason| Ok(SummaryResponse { text, finish_reason });
    match script {
        SummaryScript::Good => ok(good, FinishReason::Stop),
        SummaryScript::MissingSection => {
            ok(good.replace("## Next Steps", "## Later"), FinishReason::Stop)
        }
        SummaryScript::LengthFinish => ok(good, FinishReason::Length),
        SummaryScript::OpenFence => ok(format!("{good}\n```rust\nfn cut_off("), FinishReason::Stop),
        SummaryScript::Empty => ok(String::new(), FinishReason::Stop),
        SummaryScript::Refusal => {
            ok("Error: rate limit exceeded, please retry".into(), FinishReason::Stop)
        }
        SummaryScript::Fail(kind) => {
            Err(ProviderFailure { kind, message: "scripted failure".into() })
        }
        SummaryScript::Cancel => unreachable!("handled by the driver"),
    }
}

/// Encrypted content of the scripted native compaction item `n`.
pub(crate) fn native_secret(n: u64) -> String {
    format!("gAAAA-SECRET-{n:016x}")
}

fn scripted_native(script: NativeScript, n: u64) -> Result<Vec<Value>, ProviderFailure> {
    let item = |n: u64| json!({"type": "compaction", "id": format!("cmp_{n}"), "encrypted_content": native_secret(n)});
    match script {
        NativeScript::One => Ok(vec![json!({"type": "reasoning", "id": "rs_1"}), item(n)]),
        NativeScript::Zero => Ok(vec![]),
        NativeScript::Two => Ok(vec![item(n), item(n + 1_000_000)]),
        NativeScript::Fail(kind) => {
            Err(ProviderFailure { kind, message: "scripted failure".into() })
        }
    }
}
