//! Folds whose live head is large: a real SWE-agent session whose single turn opens with a
//! 20 KB demonstration (larger than the summarizer window), compacted through a summarizer with
//! an input window (no `extractive` label), and the write gate that refuses a checkpoint the
//! task could not be sent beside.

use std::path::Path;

use contextfold_core::compaction::{CompactInput, OutcomeKind, Trigger};
use contextfold_core::projection::{ProjectInput, Projection, project};
use contextfold_core::{CharEstimator, HistoryCompactCheckpoint, ReasonCode, RuntimeEvent};

use crate::driver::{drive_extractive, drive_summaries};
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
) -> CompactInput<'static> {
    input(trigger, events, current, None, window(tokens))
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
    let (outcome, ledger) = drive_extractive(session_input(Trigger::Manual, &events, None, 8_000));
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

#[test]
fn a_checkpoint_the_task_cannot_be_sent_beside_is_never_recorded() {
    // Issue 37 (6B): a mid-turn compaction at 4k (3,000-token budget) whose task, replayed
    // verbatim as the live head, takes about 2,300 tokens. The plan's floor (the head plus the
    // smallest checkpoint) fits, but the summary that came back (about 750 tokens) does not fit
    // beside the head: recorded, its every projection was over budget, and the next request
    // failed open (`minimum_context_exceeds_budget`).
    let task =
        format!("Fix the flaky retry test. {}", "Context: the retry loop backs off. ".repeat(260));
    let mut log = contextfold_core::LogBuilder::new(crate::support::SESSION);
    log.turn("now").user(&task);
    for step in 0..8 {
        let call = format!("c{step}");
        log.response(Some(&format!("r{step}")))
            .tool_call(
                &call,
                "shell",
                serde_json::json!({"cmd": format!("cat src/part_{step}.rs")}),
            )
            .response(None)
            .tool_result(&call, "shell", serde_json::json!("fn retry() {}\n".repeat(90)));
    }
    let events = log.build();
    let summary = crate::support::long_summary("retry", 3_000);
    let (outcome, ledger) =
        drive_summaries(session_input(Trigger::MidTurn, &events, Some("now"), 4_000), |_, _| {
            summary.clone()
        });
    for checkpoint in &ledger {
        let projection = projected(&events, Some("now"), Some(checkpoint), 4_000, true);
        assert!(
            projection.fits,
            "checkpoint {} recorded, but its projection is {} tokens: {:?}",
            checkpoint.checkpoint_id, projection.estimated_tokens, projection.diagnostics
        );
    }
    assert!(ledger.is_empty(), "{:?}", codes(&outcome));
    // Refused with its reason; an automatic trigger over budget then ends exhausted.
    assert_eq!(outcome.outcome, OutcomeKind::Exhausted, "{:?}", codes(&outcome));
    assert!(codes(&outcome).contains(&ReasonCode::MinimumContextExceedsBudget));
}

#[test]
fn a_task_the_live_head_replays_is_named_not_copied_until_the_turn_is_folded() {
    // Issue 37: a mid-turn summary quoted the task that the live head replays right after it,
    // spending up to a third of its target on a copy (the agent loop at 8k kept 58.5% of the
    // folded artifacts; 79.1% without the copy). Once a later compaction folds into the next
    // turn, that head is no longer replayed, and the summary must quote the task again.
    let rule = "You must not change the public API of crates/net/src/retry.rs.";
    let task = format!("Fix the flaky retry test. {rule}");
    let mut log = contextfold_core::LogBuilder::new(crate::support::SESSION);
    let steps = |log: &mut contextfold_core::LogBuilder, turn: &str| {
        for step in 0..30 {
            let call = format!("{turn}-c{step}");
            let cmd = serde_json::json!({"cmd": format!("cat src/{turn}_{step}.rs")});
            log.response(Some(&format!("{turn}-r{step}")))
                .tool_call(&call, "shell", cmd)
                .response(None)
                .tool_result(&call, "shell", serde_json::json!("fn retry() {}\n".repeat(60)));
        }
    };
    log.turn("t1").user(&task);
    steps(&mut log, "t1");
    let events = log.clone().build();
    let mid_turn = input(Trigger::MidTurn, &events, Some("t1"), None, window(8_000));
    let (_, ledger) = drive_extractive(mid_turn);
    let first = ledger.last().expect("a mid-turn checkpoint");
    let summary = first.summary().expect("a text checkpoint");
    assert!(!summary.contains(rule), "the summary copies the replayed task:\n{summary}");
    assert!(summary.contains("not quoted here"), "the task is named:\n{summary}");
    let request = projected(&events, Some("t1"), Some(first), 8_000, false);
    let sent = serde_json::to_string(&request.messages).expect("serializes");
    assert_eq!(sent.matches(rule).count(), 1, "the live head carries the task once");

    log.turn("t2").user("Now update the changelog.");
    steps(&mut log, "t2");
    let events = log.build();
    let mut next_turn = input(Trigger::MidTurn, &events, Some("t2"), Some(first), window(8_000));
    next_turn.new_checkpoint_id = "cp-next".into();
    let (_, ledger) = drive_extractive(next_turn);
    let rolled = ledger.last().expect("a checkpoint into turn t2");
    let summary = rolled.summary().expect("a text checkpoint");
    assert!(
        summary.contains(rule),
        "the task left the live head, the summary quotes it:\n{summary}"
    );
    let request = projected(&events, Some("t2"), Some(rolled), 8_000, false);
    let sent = serde_json::to_string(&request.messages).expect("serializes");
    assert!(sent.contains(rule), "the next request still knows the task's rule");
}
