//! The quality gate against a lossy summarizer (issue 37, point 5): the native runtime with the
//! OpenAI Chat summarizer, over real HTTP, against the loopback provider simulator in its lossy
//! summarizer mode (`SimulatorConfig::lossy_keep_percent`), on a real trajectory of
//! `tests/trajectories/` stored in a real SQLite file. One manual compaction; the simulator's
//! summary keeps a known share of the transcript's exact artifacts, and the tests check what
//! the gate reports and records: the `summary_retention` diagnostic names the loss, the
//! checkpoint's summary is the simulator's text unchanged followed by the exact-artifacts list,
//! and its retention after the gate is above the threshold; with nothing lost nothing is
//! appended.

use crate::runtime_support;

use contextfold_conformance::trajectories;
use contextfold_core::compaction::{
    ArtifactClass, Compactor, EXACT_ARTIFACTS_LINE, OutcomeKind, ProviderIdentity,
    RETENTION_THRESHOLD_PERCENT, Retention, extract_artifacts,
};
use contextfold_core::{HistoryCompactCheckpoint, ModelFacts, RuntimeEvent};
use contextfold_host::providers::OpenAiChatSummarizer;
use contextfold_host::runtime::{NoNativeCompactor, SessionConfig, StopSignal};
use contextfold_host::simulator::lossy::LossySummary;
use contextfold_host::simulator::{Simulator, SimulatorConfig, SimulatorHandle};

use runtime_support::runtime_with;

/// The trajectory: an OpenHands session with constraints, a plan, errors, commands and paths.
const TRAJECTORY: &str = "openhands/ponylang__ponyc-4593.jsonl";

/// A trajectory with more artifacts than an 8k window's summary target can list.
const REPAIR_TRAJECTORY: &str = "mini-swe-agent/astroid-1333-deepseek-chat.jsonl";

/// The session model's window.
const WINDOW: u64 = 32_000;

/// What one manual compaction against the lossy simulator produced.
struct Compacted {
    /// The folded events (the checkpoint's covered prefix; the first fold starts at 0).
    fold: Vec<RuntimeEvent>,
    /// The simulator's first answered summary.
    lossy: LossySummary,
    /// The recorded checkpoint.
    checkpoint: HistoryCompactCheckpoint,
    /// The `summary_retention` diagnostic's detail.
    retention_detail: String,
    /// Every lossy answer, oldest first.
    answers: Vec<LossySummary>,
    /// The outcome's diagnostics.
    diagnostics: Vec<contextfold_core::Diagnostic>,
}

/// Appends the trajectory, compacts manually through the simulator at `keep_percent`.
async fn compact_with(keep_percent: u8) -> Compacted {
    let events = trajectories::load(&trajectories::root().join(TRAJECTORY));
    let (compacted, sim) = compact_events(events, WINDOW, keep_percent).await;
    assert_eq!(compacted.answers.len(), 1, "one summarizer request was answered");
    sim.shutdown().await;
    compacted
}

/// Appends `events`, compacts manually at `window` through the simulator at `keep_percent`.
async fn compact_events(
    events: Vec<RuntimeEvent>,
    window: u64,
    keep_percent: u8,
) -> (Compacted, SimulatorHandle) {
    let config = SimulatorConfig { lossy_keep_percent: Some(keep_percent), ..Default::default() };
    let sim = Simulator::start(config).await.expect("the simulator starts");
    let summarizer = OpenAiChatSummarizer::new(&sim.openai_base_url(), "gpt-4.1", "sk-sim")
        .expect("a Chat client");
    let session = SessionConfig {
        session_id: events[0].session_id.clone(),
        model: ModelFacts { context_window: Some(window), ..Default::default() },
        provider: ProviderIdentity {
            provider: "openai".into(),
            connection_slug: "sim".into(),
            model_id: "gpt-4.1".into(),
        },
        compactor: Compactor::TextSummary,
    };
    let (_dir, _store, runtime) = runtime_with(session, summarizer, NoNativeCompactor);
    runtime.append(events.clone()).await.expect("append the trajectory");
    let report = runtime.compact_manually(&StopSignal::new()).await.expect("manual compaction");
    let outcome = report.outcome;
    assert_eq!(outcome.outcome, OutcomeKind::Recorded, "{:?}", outcome.diagnostics);
    let checkpoint = outcome.checkpoint.clone().expect("a recorded checkpoint");
    let answers = sim.provider().lossy_summaries();
    let diagnostics: Vec<_> =
        outcome.diagnostics.iter().filter(|d| d.code.as_str() == "summary_retention").collect();
    assert!(!diagnostics.is_empty(), "a retention diagnostic: {:?}", outcome.diagnostics);
    let covered = usize::try_from(checkpoint.coverage.event_count).expect("a count");
    let compacted = Compacted {
        fold: events[..covered].to_vec(),
        lossy: answers[0].clone(),
        answers,
        checkpoint,
        retention_detail: diagnostics[0].detail.clone(),
        diagnostics: outcome.diagnostics,
    };
    (compacted, sim)
}

/// `kept/total` of each class named in one half of the diagnostic (`constraint 1/3, path 2/9`).
fn class_figures(half: &str) -> Vec<(String, u32, u32)> {
    let inner = half.split_once('(').and_then(|(_, rest)| rest.split_once(')')).expect("(…)").0;
    inner
        .split(", ")
        .map(|item| {
            let (name, figure) = item.rsplit_once(' ').expect("name K/N");
            let (kept, total) = figure.split_once('/').expect("K/N");
            (name.to_owned(), kept.parse().expect("K"), total.parse().expect("N"))
        })
        .collect()
}

/// The figures of `retention` in the diagnostic's form.
fn figures_of(retention: &Retention) -> Vec<(String, u32, u32)> {
    ArtifactClass::ALL
        .iter()
        .filter(|c| retention.class(**c).total > 0)
        .map(|c| (c.name().to_owned(), retention.class(*c).kept, retention.class(*c).total))
        .collect()
}

fn above_threshold(retention: &Retention) -> bool {
    let overall = retention.overall();
    u64::from(overall.kept) * 100
        >= u64::from(overall.total) * u64::from(RETENTION_THRESHOLD_PERCENT)
}

#[tokio::test]
async fn a_lossy_summary_is_reported_and_completed_from_the_log() {
    let run = compact_with(30).await;
    let artifacts = extract_artifacts(&run.fold);
    let before = Retention::measure(&artifacts, &run.lossy.text);
    let summary = run.checkpoint.summary().expect("a text summary");
    let after = Retention::measure(&artifacts, summary);
    let (b, a) = (before.overall(), after.overall());
    println!(
        "QUALITY_GATE keep=30% simulator kept {}/{} of its transcript; gate: before {}/{}, \
         after {}/{}\n{}",
        run.lossy.kept.len(),
        run.lossy.kept.len() + run.lossy.dropped.len(),
        b.kept,
        b.total,
        a.kept,
        a.total,
        run.retention_detail
    );
    // The simulator read back from the transcript exactly the artifacts the gate extracts from
    // the folded events, so its loss is the loss the gate sees.
    let mut seen: Vec<_> = run.lossy.kept.iter().chain(&run.lossy.dropped).collect();
    seen.sort_by(|x, y| (x.class, &x.text).cmp(&(y.class, &y.text)));
    let mut folded: Vec<_> = artifacts.iter().collect();
    folded.sort_by(|x, y| (x.class, &x.text).cmp(&(y.class, &y.text)));
    let pairs = |list: &[&contextfold_core::compaction::Artifact]| {
        list.iter().map(|a| (a.class, a.text.clone())).collect::<Vec<_>>()
    };
    assert_eq!(pairs(&seen), pairs(&folded), "the transcript's artifacts are the fold's");
    assert!(!run.lossy.dropped.is_empty(), "the simulator dropped artifacts");

    // (1) The diagnostic reports the loss: its "before" figures are the simulator's text
    // measured against the fold, below the threshold, and short in every dropped class.
    let (reported_before, reported_after) =
        run.retention_detail.split_once(" appended from the log").expect("the detail's form");
    assert!(
        reported_before.contains(&format!("keeps {}/{} folded artifacts", b.kept, b.total)),
        "{}",
        run.retention_detail
    );
    assert!(!above_threshold(&before), "30% kept is below the threshold: {}/{}", b.kept, b.total);
    assert_eq!(class_figures(reported_before), figures_of(&before), "per-class figures");
    for dropped in &run.lossy.dropped {
        let class = before.class(dropped.class);
        assert!(class.kept < class.total, "{} lost none: {class:?}", dropped.class.name());
    }

    // (2) The checkpoint carries the exact-artifacts list, and the gate's "after" holds.
    assert!(summary.contains(EXACT_ARTIFACTS_LINE), "no exact-artifacts list:\n{summary}");
    assert!(above_threshold(&after), "after the gate {}/{}", a.kept, a.total);
    assert!(a.kept > b.kept);
    assert!(reported_after.contains(&format!("now {}/{}", a.kept, a.total)), "{reported_after}");
    assert_eq!(class_figures(reported_after), figures_of(&after), "per-class figures after");

    // (3) The gate never rewrites: the summary opens with the simulator's text as sent.
    assert!(summary.starts_with(run.lossy.text.trim_end()), "the simulator's text changed");
}

#[tokio::test]
async fn a_summary_that_keeps_everything_gets_nothing_appended() {
    let run = compact_with(100).await;
    let artifacts = extract_artifacts(&run.fold);
    assert!(run.lossy.dropped.is_empty() && !run.lossy.kept.is_empty());
    let summary = run.checkpoint.summary().expect("a text summary");
    let before = Retention::measure(&artifacts, &run.lossy.text);
    assert_eq!(before.overall().kept, before.overall().total, "everything kept");
    assert!(!summary.contains(EXACT_ARTIFACTS_LINE), "a list was appended:\n{summary}");
    assert_eq!(summary.trim_end(), run.lossy.text.trim_end(), "the summary is the simulator's");
    assert!(run.retention_detail.contains(" 0 appended from the log"), "{}", run.retention_detail);
}

/// A real mini-swe-agent trajectory compacted at an 8k window: the summary target is far
/// smaller than the folded artifacts, so a summary keeping 30% cannot be completed by the
/// exact-artifacts list and the step sends one repair request naming what is still missing;
/// the simulator, like a model that follows it in part, adds 30% of the named ones. The request
/// went over HTTP, the repaired answer kept more, and each repair is reported.
#[tokio::test]
async fn a_summary_the_list_cannot_complete_is_repaired_through_the_provider() {
    let path = trajectories::root().join(REPAIR_TRAJECTORY);
    let (run, sim) = compact_events(trajectories::load(&path), 8_000, 30).await;
    sim.shutdown().await;
    let repaired: Vec<_> =
        run.diagnostics.iter().filter(|d| d.code.as_str() == "summary_retention_repair").collect();
    let repairs: Vec<usize> =
        (0..run.answers.len()).filter(|&i| run.answers[i].repair_listed > 0).collect();
    println!(
        "QUALITY_REPAIR {} summarizer answers, repair requests at {repairs:?}, diagnostics: {:?}",
        run.answers.len(),
        repaired.iter().map(|d| d.detail.as_str()).collect::<Vec<_>>()
    );
    assert!(!repairs.is_empty(), "a repair request went to the provider");
    assert_eq!(repaired.len(), repairs.len(), "each repair request is reported");
    for &i in &repairs {
        let (first, second) = (&run.answers[i - 1], &run.answers[i]);
        // The request named only what its transcript shows, so the answer keeps what the
        // first kept plus 30% of what it named.
        let named = second.repair_listed;
        assert_eq!(second.kept.len(), first.kept.len() + named * 30 / 100, "{i}: {named} named");
    }
    let quality = run.checkpoint.manifest.as_ref().and_then(|m| m.quality.as_ref());
    assert!(quality.is_some(), "the checkpoint records its gate");
}
