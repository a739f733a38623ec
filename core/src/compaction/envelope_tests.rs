//! [`envelope_tokens`] measures a summary checkpoint's envelope before the summary exists: never
//! short of the envelope recorded, and close to it, also with the longest session id (128
//! characters, named in the tag, the coverage line and the source address) and a long
//! checkpoint id.

use serde_json::json;

use super::envelope::envelope_tokens;
use super::{
    CompactInput, Compaction, Compactor, Effect, FinishReason, MalformedInputCircuit,
    ProviderIdentity, Step, SummaryResponse, Trigger, extractive_summary_for,
};
use crate::budget::{CharEstimator, PieceEstimator, TokenEstimator};
use crate::{LogBuilder, ModelFacts, replay::checkpoint_tokens};

#[test]
fn the_envelope_is_measured_before_the_summary_exists() {
    for session in ["s".repeat(128), "s1".to_owned(), "mini-swe-agent-astroid-1333".to_owned()] {
        check_envelope(&session);
    }
}

fn check_envelope(session: &str) {
    let mut log = LogBuilder::new(session);
    log.turn("t1").user("Fix the parser. You must not break its public API.");
    for i in 0..40 {
        let call = format!("c{i}");
        log.tool_call(&call, "bash", json!({"command": format!("cat src/file_{i}.py")}));
        log.tool_result(&call, "bash", json!("error: unexpected token\n".repeat(100)));
    }
    let events = log.build();
    let mut tx = Compaction::start(CompactInput {
        trigger: Trigger::Manual,
        events: events.as_slice().into(),
        current_turn_id: None,
        checkpoint: None,
        model: ModelFacts { context_window: Some(8_000), ..Default::default() },
        provider: ProviderIdentity {
            provider: "p".into(),
            connection_slug: "c".into(),
            model_id: "m".into(),
        },
        compactor: Compactor::TextSummary,
        new_checkpoint_id: format!("cp-{}", "9".repeat(40)),
        now_ms: 1_800_000_000_000,
        provider_options: None,
        summarizer_label: Some("extractive".into()),
        circuit: MalformedInputCircuit::new(),
        prepared: None,
    })
    .expect("valid log");
    let mut measured = 0;
    loop {
        match tx.poll().expect("driver order") {
            Step::Effect(Effect::Summarize(effect)) => {
                let text = extractive_summary_for(&events, &effect);
                let answer = SummaryResponse { text, finish_reason: FinishReason::Stop };
                tx.handle_summary(Ok(answer)).expect("summary awaited");
            }
            Step::Effect(Effect::AppendCheckpoint(checkpoint)) => {
                let summary = checkpoint.summary().expect("a text checkpoint");
                assert!(
                    checkpoint.limitations.iter().any(|l| l.contains("contextfold://archive/"))
                );
                let estimators: [&dyn TokenEstimator; 2] = [&CharEstimator, &PieceEstimator];
                for estimator in estimators {
                    let envelope = checkpoint_tokens(&checkpoint, estimator)
                        - estimator.estimate_text(summary);
                    let end = checkpoint.coverage.event_count as usize;
                    let id = &checkpoint.checkpoint_id;
                    let expected = envelope_tokens(&events, end, id, "manual", true, estimator);
                    assert!(
                        (envelope..=envelope + 32).contains(&expected),
                        "measured {expected} tokens for an envelope of {envelope} ({})",
                        estimator.name()
                    );
                    measured += 1;
                }
                tx.handle_append(Ok(())).expect("append awaited");
            }
            Step::Effect(other) => panic!("unexpected effect {other:?}"),
            Step::Done(_) => break,
        }
    }
    assert!(measured > 0, "a checkpoint was recorded");
}
