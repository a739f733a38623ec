//! The two scenarios, driven through the native runtime on a real SQLite file with the offline
//! extractive summarizer:
//!
//! - [`compact_then_project`]: the whole log appended with no current turn, one manual
//!   compaction (what `contextfold compact` runs), then the next request;
//! - [`agent_loop`]: the task as the live head and one mid-turn evaluation after every step (as
//!   `long_turns.rs` drives it); every step whose request replays a checkpoint is scored.
//!
//! The folded events are the prefix the replayed checkpoint covers; their artifacts are looked
//! for in contextfold's request and in each baseline's request built from the same log.

use contextfold_core::budget::{TokenEstimator, source_tokens};
use contextfold_core::compaction::{
    Artifact, Compactor, Retention, extract_artifacts, visible_text,
};
use contextfold_core::projection::{Message, Projection, estimate_messages};
use contextfold_core::{ModelFacts, RuntimeEvent};
use contextfold_host::runtime::{
    ExtractiveSummarizer, NoNativeCompactor, SessionConfig, SessionRuntime, StopSignal,
};

use super::baselines::{Baseline, Baselines};
use super::{RunReport, STRATEGIES, Tally, step_ranges, task_index};
use crate::runtime_support::{config, runtime_with};

type Runtime = SessionRuntime<ExtractiveSummarizer, NoNativeCompactor>;

/// A runtime over a fresh SQLite file for `events`' session at `window` tokens.
fn runtime_for(events: &[RuntimeEvent], window: u64) -> (tempfile::TempDir, Runtime) {
    let session = SessionConfig {
        session_id: events[0].session_id.clone(),
        model: ModelFacts {
            context_window: Some(window),
            // The bench's knob for the soft threshold (bench/background.sh, bench/quality.sh).
            prepare_at_percent: std::env::var("BENCH_PREPARE_AT_PERCENT")
                .ok()
                .and_then(|share| share.parse().ok()),
            ..Default::default()
        },
        provider: config().provider,
        compactor: Compactor::TextSummary,
    };
    let (dir, _store, runtime) = runtime_with(session, ExtractiveSummarizer, NoNativeCompactor);
    (dir, runtime)
}

/// The text a model reads in `messages`.
pub fn text_of(messages: &[Message]) -> String {
    visible_text(&serde_json::to_value(messages).expect("messages as JSON"))
}

/// Scores one request of contextfold and the four baselines built from the same log.
#[derive(Debug, Default)]
pub struct Scorer {
    baselines: Baselines,
    /// Artifacts of the folded prefix, by its length.
    artifacts: Option<(u64, Vec<Artifact>)>,
    /// Per strategy, in [`STRATEGIES`] order.
    pub tallies: [Tally; 6],
}

impl Scorer {
    /// Scores `projection` (contextfold's request for `log`) against the baselines, at its
    /// history budget and at its own size. Returns false (and scores nothing) when it replays no
    /// checkpoint.
    pub fn score(
        &mut self,
        log: &[RuntimeEvent],
        task: usize,
        projection: &Projection,
        estimator: &dyn TokenEstimator,
    ) -> bool {
        self.tallies[0].size(projection.estimated_tokens);
        let covered = projection.checkpoint.as_ref().map_or(0, |c| c.covered_events);
        if covered == 0 {
            return false;
        }
        if self.artifacts.as_ref().is_none_or(|(at, _)| *at != covered) {
            let folded = &log[..usize::try_from(covered).expect("an index").min(log.len())];
            self.artifacts = Some((covered, extract_artifacts(folded)));
        }
        let Some((_, artifacts)) = &self.artifacts else { unreachable!() };
        let contextfold = Retention::measure(artifacts, &text_of(&projection.messages));
        self.tallies[0].add(&contextfold, projection.estimated_tokens, projection.history_budget);
        // The checkpoint's message against the folded prefix it replaces.
        let folded = &log[..usize::try_from(covered).expect("an index").min(log.len())];
        let checkpoint = projection
            .messages
            .iter()
            .position(|m| text_of(std::slice::from_ref(m)).contains("<contextfold_checkpoint"))
            .expect("a replayed checkpoint has its message");
        let checkpoint_tokens =
            estimate_messages(estimator, &projection.messages[checkpoint..=checkpoint]);
        self.tallies[0].compression(checkpoint_tokens, source_tokens(estimator, folded));
        let mut rest = projection.messages.clone();
        rest.remove(checkpoint);
        let ceiling = ceiling_text(artifacts, &text_of(&rest), checkpoint_tokens, estimator);
        let ceiling = Retention::measure(artifacts, &ceiling);
        self.tallies[5].add(&ceiling, projection.estimated_tokens, projection.history_budget);
        let budgets = [projection.history_budget, projection.estimated_tokens];
        let kinds = [Baseline::Truncation, Baseline::Masking];
        for (slot, (budget, kind)) in
            budgets.iter().flat_map(|b| kinds.iter().map(move |k| (*b, *k))).enumerate()
        {
            let request = self.baselines.request(kind, log, task, budget, estimator);
            let retention = Retention::measure(artifacts, &text_of(&request.messages));
            self.tallies[slot + 1].add(&retention, request.tokens, budget);
        }
        true
    }

    /// The report of a run with these tallies.
    pub fn report(self, scenario: &'static str, budget: u64) -> RunReport {
        RunReport {
            scenario,
            budget,
            tallies: STRATEGIES.iter().copied().zip(self.tallies).collect(),
            ..RunReport::default()
        }
    }
}

/// The ceiling of any summary of `size` tokens: the rest of the request (`rest`: live head,
/// raw tail, current turn), then as many of the `artifacts` it does not quote as fit in `size`
/// tokens as `- <text>` lines, cheapest first (which keeps the most of them; a summary with no
/// word of its own, so no real summary reaches it).
pub fn ceiling_text(
    artifacts: &[Artifact],
    rest: &str,
    size: u64,
    estimator: &dyn TokenEstimator,
) -> String {
    let mut lines: Vec<(u64, String)> = artifacts
        .iter()
        .filter(|a| !rest.contains(a.text.as_str()))
        .map(|a| format!("- {}\n", a.text))
        .map(|line| (estimator.estimate_text(&line), line))
        .collect();
    lines.sort();
    let mut text = format!("{rest}\n");
    let mut used = 0;
    for (cost, line) in lines {
        if used + cost > size {
            break;
        }
        used += cost;
        text.push_str(&line);
    }
    text
}

/// Compact-then-project: append `events`, one manual compaction, score the next request.
pub async fn compact_then_project(
    events: &[RuntimeEvent],
    task_turn: &str,
    window: u64,
) -> RunReport {
    let (_dir, runtime) = runtime_for(events, window);
    runtime.append(events.to_vec()).await.expect("append the log");
    let outcome = runtime.compact_manually(&StopSignal::new()).await.expect("manual compaction");
    let projection = runtime.project_for_request().await.expect("project").projection;
    let (log, _) = runtime.load().await.expect("load");
    let estimator = runtime.estimator().await.expect("estimator");
    let mut scorer = Scorer::default();
    scorer.score(&log, task_index(&log, task_turn), &projection, &estimator);
    let mut report = scorer.report("compact", projection.history_budget);
    report.steps = step_ranges(&log).len();
    report.compactions = usize::from(outcome.outcome.checkpoint.is_some());
    report.folded = projection.checkpoint.map_or(0, |c| c.covered_events);
    report
}

/// The agent loop: the task turn driven step by step with mid-turn evaluation; every step
/// whose request replays a checkpoint is scored.
pub async fn agent_loop(events: &[RuntimeEvent], task_turn: &str, window: u64) -> RunReport {
    agent_loop_with(events, task_turn, window, false).await
}

/// [`agent_loop`] with background preparation (issue 39), each preparation given the time to
/// finish before the next step (an agent's model call takes longer than the summary): the
/// contextfold tally only, as strategy `contextfold-prepared`, and one `PREPARATION` line
/// with what the preparations cost.
pub async fn agent_loop_prepared(
    events: &[RuntimeEvent],
    task_turn: &str,
    window: u64,
) -> RunReport {
    agent_loop_with(events, task_turn, window, true).await
}

async fn agent_loop_with(
    events: &[RuntimeEvent],
    task_turn: &str,
    window: u64,
    prepared: bool,
) -> RunReport {
    let (_dir, mut runtime) = runtime_for(events, window);
    if prepared {
        runtime = runtime.with_background_preparation();
    }
    let task = task_index(events, task_turn);
    let turn_start = events.iter().position(|e| e.turn_id == task_turn).expect("the task turn");
    if turn_start > 0 {
        runtime.append(events[..turn_start].to_vec()).await.expect("prior turns");
    }
    runtime.begin_turn(task_turn).expect("begin");
    runtime.append(events[turn_start..=task].to_vec()).await.expect("task");
    let pre = runtime.evaluate_pre_turn().await.expect("pre");
    let mut foreground_tokens = pre.as_ref().map_or(0, |r| r.summarizer_tokens);
    let mut compactions = usize::from(pre.is_some());
    let (mut scorer, mut steps, mut budget, mut folded) = (Scorer::default(), 0, 0, 0);
    let rest = &events[task + 1..];
    for range in step_ranges(rest) {
        steps += 1;
        runtime.append(rest[range].to_vec()).await.expect("step");
        let mid = runtime.evaluate_mid_turn().await.expect("mid");
        foreground_tokens += mid.as_ref().map_or(0, |r| r.summarizer_tokens);
        compactions += usize::from(mid.is_some());
        runtime.await_preparation().await;
        let projection = runtime.project_for_request().await.expect("project").projection;
        budget = projection.history_budget;
        if projection.checkpoint.is_some() {
            let (log, _) = runtime.load().await.expect("load");
            let estimator = runtime.estimator().await.expect("estimator");
            scorer.score(&log, task, &projection, &estimator);
            folded = projection.checkpoint.as_ref().map_or(0, |c| c.covered_events);
        } else {
            scorer.tallies[0].size(projection.estimated_tokens);
        }
    }
    let mut report = scorer.report("loop", budget);
    (report.steps, report.compactions, report.folded) = (steps, compactions, folded);
    if prepared {
        report.tallies.retain(|(name, _)| *name == "contextfold");
        report.tallies[0].0 = "contextfold-prepared";
        report.preparation = Some((runtime.preparations(), foreground_tokens));
    }
    report
}
