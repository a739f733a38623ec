//! [`Driver`]: plays a generated [`Scenario`] through the core transaction on top of the
//! simulator's world ([`Sim`]: log builder, in-memory AgentRun ledger, model, provider
//! identity, malformed-input circuit), the way a host does: it offers the tip it holds in
//! memory (the last accepted checkpoint) to every projection and compaction, and applies
//! what an outcome hands back (a failure note becomes a RuntimeEvent), so the properties
//! check the core's outputs, not the driver's own bookkeeping.

use contextfold_core::checkpoint::RecordedCheckpointEvent;
use contextfold_core::compaction::{
    AppendFailure, CompactInput, Compaction, Compactor, EXTRACTIVE_PRODUCER, Effect, FinishReason,
    OutcomeKind, ProviderFailure, Step, SummaryResponse, Trigger, extractive_summary,
};
use contextfold_core::projection::{ProjectInput, Projection, project};
use contextfold_core::{CharEstimator, EventContent, HistoryCompactCheckpoint};
use serde_json::{Value, json};

use crate::scenario::{
    AppendScript, CallPlan, CompactionRecord, NativeScript, NotePlan, ProjectionRecord, Scenario,
    SummaryScript, Trace, TurnPlan,
};
use crate::world::{Sim, SimConfig, provider};

/// Drives a scenario and records its trace.
pub(crate) struct Driver {
    pub(crate) sim: Sim,
    scenario: Scenario,
    summary_at: usize,
    native_at: usize,
    append_at: usize,
    /// The last accepted checkpoint, held in memory as a host does.
    tip: Option<HistoryCompactCheckpoint>,
    /// Results recorded only after the next turn's user message: (call id, output, error).
    late_results: Vec<(String, Value, bool)>,
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
            tip: None,
            late_results: Vec::new(),
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
        if plan.clock_back {
            self.sim.clock_ms -= 90_000;
        } else {
            self.sim.clock_ms += 60_000;
        }
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
        self.sim.log.turn(&current);
        let earlier = self.sim.events().last().and_then(|e| e.created_at_ms);
        let user = self.sim.log.push(EventContent::user_text(format!(
            "turn {number}: continue with the next failing test"
        )));
        user.pinned = plan.pin_user;
        if plan.clock_back {
            user.created_at_ms = earlier.map(|ms| ms - 90_000);
        }
        match plan.note {
            NotePlan::None => {}
            NotePlan::System => {
                self.sim.log.push(EventContent::SystemNote {
                    text: format!("note {number}: the sandbox was restarted"),
                });
            }
            NotePlan::Runtime => {
                self.sim.log.push(EventContent::RuntimeNote {
                    code: "tool_sandbox_restarted".into(),
                    text: format!("note {number}: the tool sandbox restarted"),
                });
            }
        }
        // Results of the previous turn's slow calls arrive now, after the new user message.
        for (id, output, error) in std::mem::take(&mut self.late_results) {
            self.sim.log.push(EventContent::tool_result(id, "shell", output, error));
        }
        if !self.project(Some(&current), false).fits {
            self.compact_and_project(Trigger::PreTurn, &current);
        }
        if plan.abandoned_stream {
            // The first step starts streaming and is evaluated while live; the complete events
            // that follow make it an abandoned partial.
            self.sim.log.response(Some(&format!("resp-{number}-stream")));
            self.sim
                .log
                .push(EventContent::AssistantText { text: "Let me look at".into() })
                .partial = true;
            self.sim.log.response(None);
            if !self.project(Some(&current), false).fits {
                self.compact_and_project(Trigger::MidTurn, &current);
            }
        }
        for (step, calls) in plan.steps.iter().enumerate() {
            self.step(number, step, calls);
            if !self.project(Some(&current), false).fits {
                self.compact_and_project(Trigger::MidTurn, &current);
            } else if plan.overflow_after_step == Some(step) {
                // The estimate fit, the provider counted more and refused.
                self.compact_and_project(Trigger::Overflow, &current);
            }
        }
        self.sim
            .log
            .response(Some(&format!("resp-{number}-final")))
            .assistant("Done with this step; I decided to keep the parser change.")
            .response(None);
    }

    /// One agent step: reasoning and a batch of parallel calls in one response (hosted calls
    /// answered inside it), then the results of the ordinary calls.
    fn step(&mut self, number: u64, step: usize, calls: &[CallPlan]) {
        let response = format!("resp-{number}-{step}");
        self.sim.log.response(Some(&response)).reasoning("thinking about which file to open");
        for (call, plan) in calls.iter().enumerate() {
            let id = format!("c{number}-{step}-{call}");
            let input = json!({"cmd": format!("cat src/mod_{call}.rs")});
            if plan.hosted {
                self.sim.log.push(EventContent::HostedToolCall {
                    call_id: id.clone(),
                    tool_name: "web_search".into(),
                    input,
                });
                self.sim.log.push(EventContent::HostedToolResult {
                    call_id: id,
                    tool_name: "web_search".into(),
                    output: json!(format!("3 results for mod_{call}")),
                    is_error: plan.error,
                });
            } else {
                self.sim.log.tool_call(&id, "shell", input);
            }
        }
        self.sim.log.response(None);
        for (call, plan) in calls.iter().enumerate() {
            if plan.interrupted || plan.hosted {
                continue;
            }
            let id = format!("c{number}-{step}-{call}");
            let line = "fn main() { println!(\"héllo 世界\"); }\n";
            let body = json!(line.repeat(plan.result_bytes / line.len() + 1));
            if plan.late {
                self.late_results.push((id, body, plan.error));
            } else {
                self.sim.log.push(EventContent::tool_result(id, "shell", body, plan.error));
            }
        }
    }

    fn compact_and_project(&mut self, trigger: Trigger, current: &str) {
        let outcome = self.compact(trigger, Some(current));
        let fail_open = matches!(outcome, OutcomeKind::FailedOpen | OutcomeKind::Exhausted);
        self.project(Some(current), fail_open);
    }

    fn project(&mut self, current: Option<&str>, fail_open: bool) -> Projection {
        let checkpoint = self.tip.clone();
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
            provider: self.sim.provider.clone(),
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
        let previous = self.tip.clone();
        let input = CompactInput {
            trigger,
            events: log_before.as_slice().into(),
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
            prepared: None,
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
                        let conflict = script == AppendScript::Conflict;
                        let message =
                            if conflict { "another writer appended first" } else { "disk full" };
                        let failure = AppendFailure { conflict, message: message.into() };
                        tx.handle_append(Err(failure)).expect("awaiting an append");
                    }
                }
                Step::Done(outcome) => break *outcome,
            }
        };
        self.sim.circuit = tx.into_circuit();
        let kind = outcome.outcome;
        // What the outcome hands back, applied as a host applies it.
        if let Some(checkpoint) = &outcome.checkpoint {
            self.tip = Some(checkpoint.clone());
        }
        if let Some(note) = &outcome.failure_note {
            self.sim.log.push(note.clone());
        }
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
