//! Folds whose live head is large: a real SWE-agent session whose single turn opens with a
//! 20 KB demonstration (larger than the summarizer window), compacted through a summarizer with
//! an input window (no `extractive` label), and the write gate that refuses a checkpoint the
//! task could not be sent beside.

use std::path::Path;

use contextfold_core::compaction::extractive::extractive_summary;
use contextfold_core::compaction::summary_validation::FinishReason;
use contextfold_core::compaction::{
    CompactInput, Compaction, CompactionOutcome, Effect, OutcomeKind, Step, SummaryResponse,
    Trigger,
};
use contextfold_core::projection::{ProjectInput, Projection, project};
use contextfold_core::{CharEstimator, HistoryCompactCheckpoint, ReasonCode, RuntimeEvent};

use crate::support::{codes, input, provider, window};

/// The events of `tests/trajectories/<relative>`.
fn trajectory(relative: &str) -> Vec<RuntimeEvent> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/trajectories").join(relative);
    let text = std::fs::read_to_string(&path).expect("committed trajectory");
    RuntimeEvent::parse_jsonl(&text).expect("valid JSONL")
}

/// SWE-agent on pydicom#1458: one turn, a system note, a 20 KB demonstration and the task.
fn pydicom() -> Vec<RuntimeEvent> {
    trajectory("swe-agent/pydicom-1458.jsonl")
}

/// `input` with the events' own session id (the trajectories are not session `s1`).
fn session_input(
    trigger: Trigger,
    events: &[RuntimeEvent],
    current: Option<&str>,
    tokens: u64,
) -> CompactInput {
    input(trigger, events, current, None, window(tokens))
}

/// Drives `input` with a summarizer that has an input window (the extractive summary of each
/// effect's fold, unlabelled) and a ledger that appends every checkpoint.
fn drive_windowed(input: CompactInput) -> (CompactionOutcome, Vec<HistoryCompactCheckpoint>) {
    let events = input.events.clone();
    let mut tx = Compaction::start(input).expect("valid input");
    let mut ledger = Vec::new();
    loop {
        match tx.poll().expect("driver order") {
            Step::Effect(Effect::Summarize(effect)) => {
                let fold = &events[effect.fold.start..effect.fold.end];
                let text = extractive_summary(
                    effect.previous_summary.as_deref(),
                    fold,
                    effect.target_tokens,
                );
                let answer = SummaryResponse { text, finish_reason: FinishReason::Stop };
                tx.handle_summary(Ok(answer)).expect("summary expected");
            }
            Step::Effect(Effect::AppendCheckpoint(checkpoint)) => {
                ledger.push(*checkpoint);
                tx.handle_append(Ok(())).expect("append expected");
            }
            Step::Effect(other) => panic!("unexpected effect {other:?}"),
            Step::Done(outcome) => return (*outcome, ledger),
        }
    }
}

/// The next request's history at `tokens` with `checkpoint`.
fn projected(
    events: &[RuntimeEvent],
    current: Option<&str>,
    checkpoint: Option<&HistoryCompactCheckpoint>,
    tokens: u64,
    fail_open: bool,
) -> Projection {
    let (model, provider) = (window(tokens), provider());
    let input = ProjectInput {
        events,
        current_turn_id: current,
        checkpoint,
        model: &model,
        provider: Some(&provider),
        fail_open,
    };
    project(&input, &CharEstimator).expect("valid log")
}

#[test]
fn a_demonstration_larger_than_the_summarizer_window_does_not_block_compaction() {
    // Issue 37 (6A): the smallest safe fold (the first model step) went with the demonstration
    // as an archive marker, but a fold ending inside the turn replays the turn's notes and user
    // texts verbatim as its live head, so the checkpoint replaced only the step's ~100 tokens
    // and the whole compaction failed open (`replacement_not_smaller`) at 14,873 tokens.
    let events = pydicom();
    let before = projected(&events, None, None, 8_000, false);
    assert!(!before.fits, "the raw session is over the 6,000-token budget");
    let (outcome, ledger) = drive_windowed(session_input(Trigger::Manual, &events, None, 8_000));
    assert_eq!(outcome.outcome, OutcomeKind::Recorded, "{:?}", codes(&outcome));
    assert!(codes(&outcome).contains(&ReasonCode::EventPayloadsOmitted), "{:?}", codes(&outcome));
    let after = projected(&events, None, ledger.last(), 8_000, false);
    assert!(after.fits, "{} tokens: {:?}", after.estimated_tokens, after.diagnostics);
    assert_eq!(outcome.tokens.after, after.estimated_tokens);
    println!(
        "pydicom-1458 at 8k: {} -> {} tokens in {} checkpoints",
        before.estimated_tokens,
        after.estimated_tokens,
        ledger.len()
    );
}
