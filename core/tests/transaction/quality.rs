//! The quality gate inside the transaction (issue 37, point 4): the projection manifest every
//! checkpoint records, the one repair request naming what an LLM summary left out when the
//! exact-artifacts list cannot complete it, and the re-compaction of a decayed rolling chain
//! from the start of the log.

use contextfold_core::checkpoint::{ProjectionManifest, QualityRecord, Score, Scores};
use contextfold_core::compaction::{
    CompactInput, OutcomeKind, ProviderFailureKind, QUALITY_GATE_VERSION, Retention,
    SUMMARY_PROMPT_VERSION, SummaryPurpose, Trigger, extract_artifacts,
};
use contextfold_core::{HistoryCompactCheckpoint, ReasonCode};

use crate::driver::{Driven, append_ok, drive, drive_extractive, summary, summary_failure};
use crate::support::{
    codes, count, end_of_turn, good_summary, input, session, start_current_turn, v2_checkpoint,
    window,
};

const TURNS: usize = 100;

/// A hundred completed turns, each with its own path and command, folded beside a current turn
/// whose request leaves a summary target of about 700 tokens: far fewer than the fold's
/// artifacts need, so the exact-artifacts list cannot reach the threshold.
fn crowded() -> CompactInput<'static> {
    let mut log = session(TURNS, 20);
    let turn = start_current_turn(&mut log, TURNS + 1, 44_400);
    input(Trigger::Manual, log.events(), Some(&turn), None, window(16_000))
}

/// A valid summary naming the newest 80 turns' commands (and so their paths) within the
/// target: more than the first summary plus the exact-artifacts list can hold.
fn thorough_summary() -> String {
    let mut text = good_summary("thorough");
    for n in TURNS - 79..=TURNS {
        text.push_str(&format!("- cat src/mod_{n}.rs\n"));
    }
    text
}

fn recorded(run: &Driven) -> &HistoryCompactCheckpoint {
    assert_eq!(run.outcome.outcome, OutcomeKind::Recorded, "{:?}", run.outcome.diagnostics);
    run.outcome.checkpoint.as_ref().expect("a recorded checkpoint")
}

fn quality(checkpoint: &HistoryCompactCheckpoint) -> &QualityRecord {
    let manifest = checkpoint.manifest.as_ref().expect("a manifest");
    manifest.quality.as_ref().expect("a quality record")
}

#[test]
fn a_summary_the_list_cannot_complete_gets_one_repair_request_naming_what_is_missing() {
    let run = drive(
        crowded(),
        vec![summary(good_summary("first")), summary(thorough_summary()), append_ok()],
    );
    let checkpoint = recorded(&run);
    let summaries = run.summaries();
    assert_eq!(summaries.len(), 2);
    let repair = &summaries[1].request;
    assert_eq!(repair.purpose, SummaryPurpose::RetentionRepair);
    let instructions = serde_json::to_string(&repair.messages[0]).expect("json");
    // It names what the exact-artifacts list could not carry, newest first: the list already
    // holds the newest commands, so the newest is not named again.
    let listed: Vec<usize> = instructions
        .split("- command: cat src/mod_")
        .skip(1)
        .map(|rest| rest.split('.').next().and_then(|n| n.parse().ok()).expect("a turn"))
        .collect();
    assert!(!listed.is_empty(), "{instructions}");
    assert!(listed.windows(2).all(|w| w[0] > w[1]), "newest first: {listed:?}");
    assert!(!listed.contains(&TURNS), "the appended list already holds it: {listed:?}");
    assert_eq!(count(&run.outcome, ReasonCode::SummaryRetentionRepair), 1);
    // The repaired summary keeps more, so it is the one recorded.
    let text = checkpoint.summary().expect("a text summary");
    assert!(text.starts_with(thorough_summary().trim_end()), "{text}");
    let record = quality(checkpoint);
    assert!(record.repair_requested);
    let events = crowded().events;
    let covered = usize::try_from(checkpoint.coverage.event_count).expect("count");
    let measured = Retention::measure(&extract_artifacts(&events[..covered]), text);
    assert_eq!(record.after, measured.scores(), "the manifest's scores are the text's");
    assert!(record.after.overall.percent() >= 80, "the repair reached the threshold: {record:?}");
}

#[test]
fn a_failed_repair_leaves_the_first_summary_standing() {
    for failed in
        [summary("I cannot help with that."), summary_failure(ProviderFailureKind::Unavailable)]
    {
        let run = drive(crowded(), vec![summary(good_summary("first")), failed, append_ok()]);
        let checkpoint = recorded(&run);
        let text = checkpoint.summary().expect("a text summary");
        assert!(text.starts_with(good_summary("first").trim_end()), "{text}");
        let stands = run.outcome.diagnostics.iter().any(|d| {
            d.code == ReasonCode::SummaryRetentionRepair
                && d.detail.contains("first summary stands")
        });
        assert!(stands, "{:?}", codes(&run.outcome));
        assert!(!quality(checkpoint).repair_requested || text.contains("Fix the failing tests"));
    }
}

#[test]
fn the_extractive_summarizer_is_never_asked_for_a_repair() {
    let mut crowded = crowded();
    crowded.summarizer_label = Some("extractive".into());
    let (outcome, ledger) = drive_extractive(crowded);
    assert_eq!(outcome.outcome, OutcomeKind::Recorded);
    assert_eq!(count(&outcome, ReasonCode::SummaryRetentionRepair), 0);
    let record = quality(&ledger[0]);
    assert!(!record.repair_requested && !record.recompacted);
}

#[test]
fn every_text_checkpoint_records_its_manifest() {
    let run =
        drive(crowded(), vec![summary(good_summary("a")), summary(good_summary("b")), append_ok()]);
    let checkpoint = recorded(&run);
    let manifest: &ProjectionManifest = checkpoint.manifest.as_ref().expect("a manifest");
    assert_eq!(manifest.version, 1);
    assert_eq!(manifest.summarizer, checkpoint.produced_by.clone().expect("producer"));
    assert_eq!(manifest.prompt_version, Some(SUMMARY_PROMPT_VERSION));
    assert_eq!(manifest.estimator, "chars-v1");
    assert!(manifest.request_shape.starts_with("sha256:") && manifest.request_shape.len() == 71);
    let record = quality(checkpoint);
    assert_eq!((record.gate_version, record.threshold_percent), (QUALITY_GATE_VERSION, 80));
    assert!(!record.lost.is_empty() && record.lost.len() <= 20, "{:?}", record.lost);
    assert!(record.lost[0].starts_with("command: "), "{:?}", record.lost);
    // The manifest survives the checkpoint's JSON.
    let back = HistoryCompactCheckpoint::from_json(&checkpoint.to_json()).expect("parses");
    assert_eq!(back.manifest.as_ref(), Some(manifest));
}

/// A checkpoint over the first 40 turns whose manifest reports `covered` percent of a chain
/// whose best was `best` percent.
fn chained(covered: u32, best: u32) -> (CompactInput<'static>, HistoryCompactCheckpoint) {
    let log = session(60, 20);
    let events = log.events();
    let end = end_of_turn(events, 40);
    let mut checkpoint = v2_checkpoint("cp-old", events, end, &good_summary("old"));
    let score = Score { kept: covered, total: 100 };
    checkpoint.manifest = Some(ProjectionManifest {
        version: 1,
        summarizer: "text-summary:m".into(),
        prompt_version: Some(SUMMARY_PROMPT_VERSION),
        request_shape: format!("sha256:{}", "0".repeat(64)),
        estimator: "chars-v1".into(),
        quality: Some(QualityRecord {
            gate_version: QUALITY_GATE_VERSION,
            threshold_percent: 80,
            before: Scores::default(),
            after: Scores::default(),
            covered: score,
            chain_best_percent: best,
            lost: Vec::new(),
            appended: 0,
            repair_requested: false,
            recompacted: false,
        }),
    });
    let input = input(Trigger::Manual, events, None, Some(&checkpoint), window(200_000));
    (input, checkpoint)
}

#[test]
fn a_decayed_chain_is_recompacted_from_the_start_of_the_log() {
    let (input, _) = chained(30, 90);
    let run = drive(input, vec![summary(thorough_summary()), append_ok()]);
    let checkpoint = recorded(&run);
    let first = run.summaries()[0];
    assert_eq!((first.previous_summary.as_deref(), first.fold.start), (None, 0));
    assert_eq!(first.request.purpose, SummaryPurpose::Initial);
    assert_eq!(count(&run.outcome, ReasonCode::QualityRecompaction), 1);
    let record = quality(checkpoint);
    assert!(record.recompacted);
    assert_eq!(record.chain_best_percent, record.covered.percent(), "a new chain starts");
    assert_eq!(checkpoint.previous_checkpoint_id.as_deref(), Some("cp-old"));
}

#[test]
fn a_chain_within_the_decay_allowance_rolls_on() {
    for (covered, best) in [(75, 90), (85, 100)] {
        let (input, _) = chained(covered, best);
        let run = drive(input, vec![summary(thorough_summary()), append_ok()]);
        let checkpoint = recorded(&run);
        let first = run.summaries()[0];
        assert!(first.previous_summary.is_some(), "{covered}/{best} rolls on");
        assert_eq!(count(&run.outcome, ReasonCode::QualityRecompaction), 0);
        let record = quality(checkpoint);
        assert!(!record.recompacted);
        assert!(record.chain_best_percent >= best, "the chain's best is carried");
    }
}

#[test]
fn an_extractive_chain_is_never_recompacted() {
    let (mut input, _) = chained(30, 90);
    input.summarizer_label = Some("extractive".into());
    let (outcome, ledger) = drive_extractive(input);
    assert_eq!(outcome.outcome, OutcomeKind::Recorded);
    assert_eq!(count(&outcome, ReasonCode::QualityRecompaction), 0);
    assert!(!quality(&ledger[0]).recompacted);
}

#[test]
fn a_refused_recompaction_rolls_on_instead() {
    let (input, _) = chained(30, 90);
    let run = drive(
        input,
        vec![summary("## Goal\nfix it\n## Later\nstuff"), summary(thorough_summary()), append_ok()],
    );
    let checkpoint = recorded(&run);
    let summaries = run.summaries();
    assert_eq!((summaries[0].previous_summary.as_deref(), summaries[0].fold.start), (None, 0));
    assert!(summaries[1].previous_summary.is_some(), "the second request rolls on");
    assert_eq!(count(&run.outcome, ReasonCode::QualityRecompaction), 2);
    assert!(!quality(checkpoint).recompacted);
}
