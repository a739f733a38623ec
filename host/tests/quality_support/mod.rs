//! Support for the continuation-quality benchmark: retention tallies, the `QUALITY` report line,
//! model steps of a log, the two baselines (truncation and observation masking) and the two
//! scenarios (compact-then-project and the agent loop) driven through the native runtime.
#![allow(dead_code, unreachable_pub)] // each test uses a different part; items are test-local

pub mod baselines;
pub mod scenarios;

use std::ops::Range;

use contextfold_core::compaction::{ArtifactClass, ClassRetention, Retention};
use contextfold_core::{EventContent, RuntimeEvent};

/// Strategy names, in report order. `ceiling` is no strategy: the most of the folded artifacts
/// any summary the size of contextfold's checkpoint message could carry verbatim (see
/// [`scenarios::ceiling_text`]).
pub const STRATEGIES: [&str; 6] =
    ["contextfold", "truncation", "masking", "truncation@own", "masking@own", "ceiling"];

/// What one strategy kept, pooled over every measured request of a run.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Kept / total per class, in [`ArtifactClass::ALL`] order, summed over requests.
    pub classes: [ClassRetention; 6],
    /// Requests measured.
    pub measured: usize,
    /// Sum of each measured request's overall share (for the mean over steps).
    pub share_sum: f64,
    /// Largest estimated request, in tokens.
    pub max_request: u64,
    /// Measured requests over their budget (a baseline whose system notes and task alone are
    /// over it; contextfold's typed `minimum_context_exceeds_budget`).
    pub over_budget: usize,
    /// Estimated tokens of the checkpoint message, summed over measured requests (contextfold).
    pub checkpoint_tokens: u64,
    /// Estimated tokens of the folded source events the checkpoint stands for, summed alike.
    pub folded_tokens: u64,
}

impl Tally {
    /// Adds one request's retention and size (built for `budget` tokens).
    pub fn add(&mut self, retention: &Retention, request_tokens: u64, budget: u64) {
        for (sum, class) in self.classes.iter_mut().zip(retention.classes) {
            sum.kept += class.kept;
            sum.total += class.total;
        }
        self.measured += 1;
        self.share_sum += retention.overall().share();
        self.max_request = self.max_request.max(request_tokens);
        self.over_budget += usize::from(request_tokens > budget);
    }

    /// Records a request size without scoring it (a step without a checkpoint).
    pub fn size(&mut self, request_tokens: u64) {
        self.max_request = self.max_request.max(request_tokens);
    }

    /// Records what one replayed checkpoint costs against the source it replaces.
    pub fn compression(&mut self, checkpoint_tokens: u64, folded_tokens: u64) {
        self.checkpoint_tokens += checkpoint_tokens;
        self.folded_tokens += folded_tokens;
    }

    /// All classes pooled.
    pub fn overall(&self) -> ClassRetention {
        self.classes.iter().fold(ClassRetention::default(), |sum, c| ClassRetention {
            kept: sum.kept + c.kept,
            total: sum.total + c.total,
        })
    }

    /// One class, pooled.
    pub fn class(&self, class: ArtifactClass) -> ClassRetention {
        let at = ArtifactClass::ALL.iter().position(|c| *c == class).unwrap_or(0);
        self.classes[at]
    }

    /// Mean of the per-request overall shares (0 when nothing was measured).
    pub fn mean_share(&self) -> f64 {
        if self.measured == 0 { 0.0 } else { self.share_sum / self.measured as f64 }
    }
}

/// One (source, window, scenario) run: every strategy's tally and the run's figures.
#[derive(Debug, Clone, Default)]
pub struct RunReport {
    /// `compact` or `loop`.
    pub scenario: &'static str,
    /// History budget of the window.
    pub budget: u64,
    /// Model steps driven (loop) or events in the log (compact).
    pub steps: usize,
    /// Compaction transactions run.
    pub compactions: usize,
    /// Events the (last) checkpoint in use covered; 0 when nothing was folded.
    pub folded: u64,
    /// Per strategy, in [`STRATEGIES`] order.
    pub tallies: Vec<(&'static str, Tally)>,
    /// With background preparation: what the preparations did, and the summarizer tokens of
    /// the compactions that ran in the foreground.
    pub preparation: Option<(contextfold_host::runtime::PreparationStats, u64)>,
}

impl RunReport {
    /// The tally of `strategy`.
    pub fn tally(&self, strategy: &str) -> Option<&Tally> {
        self.tallies.iter().find(|(name, _)| *name == strategy).map(|(_, tally)| tally)
    }

    /// Prints one `QUALITY` line per strategy.
    pub fn print(&self, source: &str, window: u64) {
        for (strategy, tally) in &self.tallies {
            println!("{}", quality_line(source, window, self, strategy, tally));
        }
        if let Some((p, foreground)) = &self.preparation {
            println!(
                "PREPARATION source={source} window={window} steps={} started={} prepared={} used={} superseded={} wasted={} failed={} tokens={} wasted_tokens={} foreground_tokens={foreground}",
                self.steps,
                p.started,
                p.prepared,
                p.used,
                p.superseded,
                p.wasted + p.held,
                p.failed,
                p.tokens,
                p.wasted_tokens + p.held_tokens,
            );
        }
    }
}

/// The `QUALITY` line of one strategy of one run.
pub fn quality_line(
    source: &str,
    window: u64,
    run: &RunReport,
    strategy: &str,
    tally: &Tally,
) -> String {
    let mut line = format!(
        "QUALITY source={source} window={window} scenario={} strategy={strategy}",
        run.scenario
    );
    for class in ArtifactClass::ALL {
        let c = tally.class(class);
        line.push_str(&format!(" {}={}/{}", class.name(), c.kept, c.total));
    }
    let overall = tally.overall();
    line.push_str(&format!(
        " overall={}/{} request_tokens={} budget={} steps={} compactions={} folded={} measured={} over_budget={} mean={:.4} checkpoint_tokens={} folded_tokens={}",
        overall.kept,
        overall.total,
        tally.max_request,
        run.budget,
        run.steps,
        run.compactions,
        run.folded,
        tally.measured,
        tally.over_budget,
        tally.mean_share(),
        tally.checkpoint_tokens,
        tally.folded_tokens
    ));
    line
}

/// The model steps of `events` as index ranges: consecutive events of one response, with the
/// results of its calls; a user text or note is a step of its own.
pub fn step_ranges(events: &[RuntimeEvent]) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    for (index, event) in events.iter().enumerate() {
        let joins = index > 0
            && !out.is_empty()
            && (event.content.result_call_id().is_some()
                || (event.response_id.is_some()
                    && events[index - 1].response_id == event.response_id
                    && !is_turn_text(&events[index - 1].content)));
        match out.last_mut() {
            Some(last) if joins => last.end = index + 1,
            _ => out.push(index..index + 1),
        }
    }
    out
}

fn is_turn_text(content: &EventContent) -> bool {
    matches!(
        content,
        EventContent::UserText { .. }
            | EventContent::SystemNote { .. }
            | EventContent::RuntimeNote { .. }
    )
}

/// Index of the task: the first user text of `turn`.
pub fn task_index(events: &[RuntimeEvent], turn: &str) -> usize {
    events
        .iter()
        .position(|e| e.turn_id == turn && matches!(e.content, EventContent::UserText { .. }))
        .expect("a user task")
}

/// The turn of the first user text (the task of a trajectory).
pub fn first_task_turn(events: &[RuntimeEvent]) -> String {
    let index = events
        .iter()
        .position(|e| matches!(e.content, EventContent::UserText { .. }))
        .expect("a user task");
    events[index].turn_id.clone()
}

/// `agent/file` of a trajectory path (`swe-agent/pydicom-1458`).
pub fn source_name(path: &std::path::Path) -> String {
    let file = path.file_stem().and_then(|s| s.to_str()).unwrap_or("?");
    let agent = path.parent().and_then(|p| p.file_name()).and_then(|s| s.to_str()).unwrap_or("?");
    format!("{agent}/{file}")
}
