//! Coverage rows: what a recorded checkpoint claims, rolling updates, reuse of an old
//! checkpoint after a rolling failure, and prefix or digest mismatches.

use contextfold_core::checkpoint::{coverage_of, safe_boundaries};
use contextfold_core::compaction::{
    AttemptKind, OutcomeKind, ProviderFailureKind, RAW_TAIL_SHARE_PERCENT, SummaryPurpose, Trigger,
};
use contextfold_core::event::EventContent;
use contextfold_core::projection::{Part, ProjectInput, project};
use contextfold_core::{CharEstimator, ReasonCode};

use crate::driver::{append_ok, assert_raw_tail_share, drive, summary, summary_failure};
use crate::support::{
    SESSION, codes, count, end_of_turn, good_summary, input, provider, session, start_current_turn,
    v2_checkpoint, window,
};

/// History budget 6,000 tokens.
const WINDOW: u64 = 8_000;

#[test]
fn recorded_checkpoint_covers_the_prefix_and_names_its_trigger_and_predecessor() {
    let mut log = session(14, 2_000);
    let current = start_current_turn(&mut log, 15, 60);
    let events = log.events().to_vec();
    let first_end = end_of_turn(&events, 3);
    let previous = v2_checkpoint("cp-old", &events, first_end, &good_summary("old"));
    let run = drive(
        input(Trigger::PreTurn, &events, Some(&current), Some(&previous), window(WINDOW)),
        vec![summary(good_summary("new")), append_ok()],
    );
    assert_eq!(run.outcome.outcome, OutcomeKind::Recorded, "{:?}", codes(&run.outcome));
    assert_eq!(run.outcome.reason, ReasonCode::CheckpointRecorded);
    let summarize = run.summaries()[0];
    assert_eq!(summarize.fold.start, first_end, "rolling: only newly folded events");
    assert_eq!(summarize.previous_summary.as_deref(), Some(good_summary("old").as_str()));
    assert_eq!(summarize.request.purpose, SummaryPurpose::Rolling);
    let recorded = run.outcome.checkpoint.as_ref().expect("recorded");
    assert_eq!(run.ledger, vec![recorded.clone()]);
    assert_eq!(run.appends(), vec![recorded]);
    let end = summarize.fold.end;
    // Automatic triggers keep the newest small turns raw, within their share of the budget.
    let cuts = safe_boundaries(&events, Some(&current)).expect("suffix");
    assert_raw_tail_share(&events, &cuts, end, run.outcome.tokens.budget, RAW_TAIL_SHARE_PERCENT);
    assert_eq!(recorded.coverage, coverage_of(&events[..end]).expect("non-empty"));
    assert_eq!(recorded.previous_checkpoint_id.as_deref(), Some("cp-old"));
    assert_eq!(recorded.high_water.name, Trigger::PreTurn.as_str());
    assert_eq!(recorded.high_water.seq, events[end - 1].seq);
    assert_eq!(recorded.checkpoint_id, "cp-new");
    assert_eq!(recorded.session_id, SESSION);
    assert_eq!(recorded.created_at_ms, 1_800_000_000_000);
    // The summarizer's text as written; the quality gate only appends exact artifacts of the
    // fold after it, and reports its scores.
    let summary = recorded.summary().expect("a text summary");
    assert!(summary.starts_with(good_summary("new").trim_end()), "{summary}");
    let gate = run.outcome.diagnostics.iter().find(|d| d.code == ReasonCode::SummaryRetention);
    assert!(gate.expect("the gate's scores").detail.starts_with("quality gate v1:"));
    if let Some(appended) = summary.strip_prefix(good_summary("new").trim_end()) {
        assert!(
            appended.trim().is_empty()
                || appended.contains("Exact artifacts of the covered events")
        );
    }
    assert_eq!(recorded.produced_by.as_deref(), Some("text-summary:gpt-5-codex"));
    assert_eq!(run.outcome.attempts.len(), 1);
    assert_eq!(run.outcome.attempts[0].kind, AttemptKind::TextSummary);
    assert_eq!(run.outcome.attempts[0].result, ReasonCode::CheckpointRecorded);
    assert!(run.outcome.tokens.after <= run.outcome.tokens.budget);
    assert!(run.outcome.tokens.after < run.outcome.tokens.before);
}

#[test]
fn rolling_failure_reuses_the_old_checkpoint_without_widening_it() {
    let mut log = session(14, 2_000);
    let current = start_current_turn(&mut log, 15, 60);
    let events = log.events().to_vec();
    let covered = end_of_turn(&events, 3);
    let old = v2_checkpoint("cp-old", &events, covered, &good_summary("old"));
    let run = drive(
        input(Trigger::PreTurn, &events, Some(&current), Some(&old), window(WINDOW)),
        vec![summary_failure(ProviderFailureKind::Unavailable)],
    );
    assert_eq!(run.outcome.outcome, OutcomeKind::FailedOpen);
    assert_eq!(run.outcome.reason, ReasonCode::ProviderUnavailable);
    assert_eq!(count(&run.outcome, ReasonCode::PreviousCheckpointReused), 1);
    assert_eq!(count(&run.outcome, ReasonCode::ContextBudgetExhausted), 0);
    assert!(run.outcome.failure_note.is_none() && run.outcome.checkpoint.is_none());
    assert!(run.ledger.is_empty(), "nothing new is recorded");
    assert!(run.outcome.tokens.after <= run.outcome.tokens.budget);

    let model = window(WINDOW);
    let projection = |fail_open| {
        project(
            &ProjectInput {
                events: &events,
                current_turn_id: Some(&current),
                checkpoint: Some(&old),
                model: &model,
                provider: Some(&provider()),
                fail_open,
            },
            &CharEstimator,
        )
        .expect("valid log")
    };
    let strict = projection(false);
    assert!(strict.checkpoint.is_none() && !strict.fits);
    assert!(strict.diagnostics.iter().any(|d| d.code == ReasonCode::CheckpointOverBudget));

    let reused = projection(true);
    assert!(reused.fits, "{} > {}", reused.estimated_tokens, reused.history_budget);
    let replayed = reused.checkpoint.as_ref().expect("old checkpoint reused");
    assert_eq!(replayed.checkpoint_id, "cp-old");
    assert_eq!(replayed.covered_events, covered as u64, "coverage never widens");
    assert_eq!(old.coverage.event_count, covered as u64);
    assert!(reused.omitted_events > 0);
    let kept = covered + reused.omitted_events as usize;
    assert_ne!(events[kept].turn_id, events[kept - 1].turn_id, "the tail starts at a turn");
    assert!(reused.diagnostics.iter().any(|d| d.code == ReasonCode::PreviousCheckpointReused));
    // The newest complete turn is kept raw, and the current turn is last.
    let last_prior = format!("turn {}: please", 14);
    let texts: Vec<String> = reused
        .messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match p {
            Part::Text { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert!(texts.iter().any(|t| t.starts_with(&last_prior)));
    assert!(texts.last().expect("current turn").starts_with("continue with the next"));
    // One more turn would not fit: the kept tail is the largest that does.
    assert!(reused.omitted_events < (events.len() - covered) as u64);
}

#[test]
fn fail_open_with_an_oversized_current_turn_sends_the_checkpoint_not_the_raw_log() {
    let mut log = session(14, 2_000);
    // A pasted message larger than the whole history budget.
    let current = start_current_turn(&mut log, 15, 32_000);
    let events = log.events().to_vec();
    let covered = end_of_turn(&events, 3);
    let old = v2_checkpoint("cp-old", &events, covered, &good_summary("old"));
    let model = window(WINDOW);
    let projection = |fail_open| {
        project(
            &ProjectInput {
                events: &events,
                current_turn_id: Some(&current),
                checkpoint: Some(&old),
                model: &model,
                provider: Some(&provider()),
                fail_open,
            },
            &CharEstimator,
        )
        .expect("valid log")
    };
    let strict = projection(false);
    assert!(strict.checkpoint.is_none() && !strict.fits);
    let minimal = projection(true);
    assert!(!minimal.fits, "nothing source-derived fits");
    assert_eq!(minimal.checkpoint.as_ref().map(|c| c.checkpoint_id.as_str()), Some("cp-old"));
    let prior_end = events.len() - 1;
    assert_eq!(minimal.omitted_events, (prior_end - covered) as u64, "no raw prior turn fits");
    assert!(
        minimal.estimated_tokens < strict.estimated_tokens,
        "{} is not smaller than the raw {}",
        minimal.estimated_tokens,
        strict.estimated_tokens
    );
    assert!(minimal.diagnostics.iter().any(|d| d.code == ReasonCode::MinimumContextExceedsBudget));
}

#[test]
fn prefix_mismatch_rejects_the_checkpoint_and_folds_from_event_zero() {
    let log = session(6, 400);
    let events = log.events().to_vec();
    let mut moved = v2_checkpoint("cp-old", &events, end_of_turn(&events, 3), &good_summary("old"));
    moved.coverage.through.runtime_event_id = "e999".into();
    let mut tampered =
        v2_checkpoint("cp-old", &events, end_of_turn(&events, 3), &good_summary("old"));
    tampered.coverage.source_digest = format!("sha256:{}", "0".repeat(64));
    for (checkpoint, code) in
        [(moved, ReasonCode::CoverageMiss), (tampered, ReasonCode::SourceHashMismatch)]
    {
        let run = drive(
            input(Trigger::Manual, &events, None, Some(&checkpoint), window(WINDOW)),
            vec![summary(good_summary("fresh")), append_ok()],
        );
        assert_eq!(codes(&run.outcome)[0], code);
        let summarize = run.summaries()[0];
        assert_eq!(summarize.fold.start, 0, "an unmatched checkpoint seeds nothing");
        assert!(summarize.previous_summary.is_none());
        assert_eq!(run.outcome.outcome, OutcomeKind::Recorded);
        let recorded = run.outcome.checkpoint.expect("recorded");
        assert_eq!(recorded.coverage, coverage_of(&events).expect("non-empty"));
    }
}

#[test]
fn an_edited_log_is_a_digest_mismatch() {
    let log = session(6, 400);
    let mut events = log.events().to_vec();
    let checkpoint =
        v2_checkpoint("cp-old", &events, end_of_turn(&events, 3), &good_summary("old"));
    events[1].content = EventContent::user_text("an edited request");
    let run = drive(
        input(Trigger::Manual, &events, None, Some(&checkpoint), window(WINDOW)),
        vec![summary(good_summary("fresh")), append_ok()],
    );
    assert!(codes(&run.outcome).contains(&ReasonCode::SourceHashMismatch));
    assert_eq!(run.summaries()[0].fold.start, 0);
}

#[test]
fn already_covered_prefix_is_skipped_without_effect() {
    let mut log = session(6, 400);
    let events_before = log.events().to_vec();
    let covered = events_before.len();
    let checkpoint = v2_checkpoint("cp-old", &events_before, covered, &good_summary("old"));
    let current = start_current_turn(&mut log, 7, 60);
    let run = drive(
        input(Trigger::Manual, log.events(), Some(&current), Some(&checkpoint), window(WINDOW)),
        vec![],
    );
    assert_eq!(run.outcome.outcome, OutcomeKind::Skipped);
    assert_eq!(run.outcome.reason, ReasonCode::AlreadyCovered);
    assert!(run.effects.is_empty());
}
