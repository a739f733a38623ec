//! A checkpoint made for a larger window, over a session that moved to a smaller one (issue 41,
//! point 2): the checkpoint covers the whole safe prefix but no longer fits the budget, so the
//! next compaction compresses the same prefix again (`recompress_for_budget`) instead of
//! answering `already_covered`, and the request fits.

use contextfold_core::checkpoint::is_valid_successor;
use contextfold_core::compaction::{OutcomeKind, Trigger};
use contextfold_core::projection::{ProjectInput, project};
use contextfold_core::{CharEstimator, HistoryCompactCheckpoint, ReasonCode, RuntimeEvent};

use crate::driver::{append_ok, drive, drive_extractive, summary};
use crate::support::{
    codes, count, input, long_summary, provider, session, start_current_turn, v2_checkpoint, window,
};

const LARGE: u64 = 32_000;
const SMALL: u64 = 8_000;

/// Tokens of the request `checkpoint` gives at `context_window`, and whether it fits.
fn request(
    events: &[RuntimeEvent],
    current: &str,
    checkpoint: &HistoryCompactCheckpoint,
    context_window: u64,
) -> (u64, bool) {
    let model = window(context_window);
    let provider = provider();
    let input = ProjectInput {
        events,
        current_turn_id: Some(current),
        checkpoint: Some(checkpoint),
        model: &model,
        provider: Some(&provider),
        fail_open: false,
    };
    let projection = project(&input, &CharEstimator).expect("projects");
    (projection.estimated_tokens, projection.fits)
}

/// A session of `turns` turns whose tool results each carry a dozen distinct error lines: the
/// exact artifacts the extractive summarizer keeps, so its 32k summary is large.
fn artifact_session(turns: usize) -> contextfold_core::LogBuilder {
    let mut log = contextfold_core::LogBuilder::new(crate::support::SESSION);
    for n in 1..=turns {
        let errors: String = (1..=12)
            .map(|k| {
                format!(
                    "error[E{n:02}{k:02}]: mismatched types in src/mod_{n}/part_{k}.rs:{}\n",
                    n * k
                )
            })
            .collect();
        log.turn(&format!("t{n}"))
            .user(&format!("turn {n}: run `cargo test -p crate_{n}` and fix what fails"))
            .response(Some(&format!("resp-{n}-a")))
            .tool_call(
                &format!("c{n}"),
                "shell",
                serde_json::json!({"cmd": format!("cargo test -p crate_{n}")}),
            )
            .response(None)
            .tool_result(&format!("c{n}"), "shell", serde_json::json!(errors.repeat(3)))
            .response(Some(&format!("resp-{n}-b")))
            .assistant(&format!("Fixed src/mod_{n}/part_1.rs; `cargo test -p crate_{n}` passes."))
            .response(None);
    }
    log
}

/// A 32k checkpoint over 40 turns, made by the offline extractive summarizer (labelled, as the
/// runtimes label it), with a current turn opened after it.
fn compacted_at_32k() -> (Vec<RuntimeEvent>, String, HistoryCompactCheckpoint) {
    let mut log = artifact_session(60);
    let folded = log.events().to_vec();
    let mut manual = input(Trigger::Manual, &folded, None, None, window(LARGE));
    manual.new_checkpoint_id = "cp-32k".into();
    manual.summarizer_label = Some("extractive".into());
    let (outcome, ledger) = drive_extractive(manual);
    assert_eq!(outcome.outcome, OutcomeKind::Recorded, "{:?}", codes(&outcome));
    let checkpoint = ledger.last().expect("recorded").clone();
    assert_eq!(checkpoint.coverage.event_count, folded.len() as u64);
    let current = start_current_turn(&mut log, 61, 200);
    (log.events().to_vec(), current, checkpoint)
}

#[test]
fn every_trigger_recompresses_a_32k_checkpoint_for_an_8k_window() {
    let (events, current, large) = compacted_at_32k();
    let (tokens, fits) = request(&events, &current, &large, SMALL);
    assert!(!fits, "the 32k checkpoint must not fit 8k: {tokens} tokens");
    for trigger in [Trigger::PreTurn, Trigger::MidTurn, Trigger::Manual, Trigger::Overflow] {
        let mut at_8k = input(trigger, &events, Some(&current), Some(&large), window(SMALL));
        at_8k.summarizer_label = Some("extractive".into());
        let (outcome, ledger) = drive_extractive(at_8k);
        assert_eq!(outcome.outcome, OutcomeKind::Recorded, "{trigger:?}: {:?}", codes(&outcome));
        assert_eq!(count(&outcome, ReasonCode::RecompressForBudget), 2, "plan and step");
        let small = &ledger[0];
        assert_eq!(ledger.len(), 1);
        assert_eq!(small.coverage, large.coverage, "the same prefix, an equal-coverage successor");
        assert_eq!(small.previous_checkpoint_id.as_deref(), Some(large.checkpoint_id.as_str()));
        is_valid_successor(Some(&large), small).expect("a valid successor");
        assert!(small.estimated_tokens < large.estimated_tokens);
        let (tokens, fits) = request(&events, &current, small, SMALL);
        assert!(fits, "{trigger:?}: the next request fits 8k ({tokens} tokens)");
    }
}

/// A 40-turn session (30k tokens) under a 32k summary of `summary_chars`, with a current turn
/// of 10,000 characters: over the 8k budget together.
fn summarized_at_32k(
    summary_chars: usize,
) -> (Vec<RuntimeEvent>, String, HistoryCompactCheckpoint) {
    let mut log = session(40, 3_000);
    let covered = log.events().len();
    let old = long_summary("large window", summary_chars);
    let large = v2_checkpoint("cp-32k", log.events(), covered, &old);
    let current = start_current_turn(&mut log, 41, 10_000);
    (log.events().to_vec(), current, large)
}

#[test]
fn a_source_too_large_to_send_verbatim_rolls_on_the_old_summary() {
    // An LLM summarizer's input window is the history budget: the 40 turns fit one 8k request
    // only with their outputs left out, so the old summary alone is compressed (an empty fold).
    let (events, current, large) = summarized_at_32k(16_000);
    let covered = large.coverage.event_count as usize;
    let run = drive(
        input(Trigger::PreTurn, &events, Some(&current), Some(&large), window(SMALL)),
        vec![summary(long_summary("small window", 2_000)), append_ok()],
    );
    assert_eq!(run.outcome.outcome, OutcomeKind::Recorded, "{:?}", codes(&run.outcome));
    let asked = run.summaries()[0];
    assert_eq!((asked.fold.start, asked.fold.end), (covered, covered), "nothing new folded");
    assert_eq!(asked.previous_summary.as_deref(), large.summary());
    let small = &run.ledger[0];
    assert_eq!(small.coverage, large.coverage);
    assert!(request(&events, &current, small, SMALL).1, "the next request fits");
}

#[test]
fn an_old_summary_too_large_to_send_is_replaced_from_the_source() {
    // A 10k-token summary cannot be sent to the 8k summarizer: the prefix is folded again from
    // its start, with the largest outputs left out.
    let (events, current, large) = summarized_at_32k(40_000);
    let run = drive(
        input(Trigger::PreTurn, &events, Some(&current), Some(&large), window(SMALL)),
        vec![summary(long_summary("small window", 2_000)), append_ok()],
    );
    assert_eq!(run.outcome.outcome, OutcomeKind::Recorded, "{:?}", codes(&run.outcome));
    let asked = run.summaries()[0];
    assert_eq!(asked.fold.start, 0);
    assert_eq!(asked.previous_summary, None);
    assert!(request(&events, &current, &run.ledger[0], SMALL).1, "the next request fits");
}

#[test]
fn a_recompressed_summary_must_be_smaller_than_the_one_it_replaces() {
    let (events, current, large) = summarized_at_32k(16_000);
    let run = drive(
        input(Trigger::PreTurn, &events, Some(&current), Some(&large), window(SMALL)),
        vec![summary(large.summary().expect("text").to_owned())],
    );
    assert_ne!(run.outcome.outcome, OutcomeKind::Recorded);
    assert!(codes(&run.outcome).contains(&ReasonCode::ReplacementNotSmaller));
    assert!(run.ledger.is_empty(), "nothing recorded");
}

#[test]
fn a_checkpoint_that_fits_is_still_already_covered() {
    let (events, current, large) = compacted_at_32k();
    let run =
        drive(input(Trigger::Manual, &events, Some(&current), Some(&large), window(LARGE)), vec![]);
    assert_eq!(run.outcome.reason, ReasonCode::AlreadyCovered);
    assert!(run.effects.is_empty());
}
