//! The verified-digest cache gives exactly the answers of a full verification, detects every
//! structural defect a full validation detects, and starts over when the log is not the one it
//! cached.

use contextfold_core::checkpoint::{
    CheckpointProjection, HighWater, HistoryCompactCheckpoint, PrefixVerifier, VerifiedPrefix,
    coverage_of,
};
use contextfold_core::event::LogError;
use contextfold_core::projection::{ProjectInput, project, project_with};
use contextfold_core::{CharEstimator, EventContent, LogBuilder, ModelFacts, RuntimeEvent};
use proptest::prelude::*;
use serde_json::json;

fn session(turns: usize, size: usize) -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new("s");
    for turn in 0..turns {
        let call = format!("c{turn}");
        log.turn(&format!("t{turn}")).user(&format!("request {turn}"));
        log.tool_call(&call, "shell", json!({"n": turn}));
        log.tool_result(&call, "shell", json!("x".repeat(size)));
    }
    log.build()
}

fn checkpoint(events: &[RuntimeEvent], id: &str) -> HistoryCompactCheckpoint {
    HistoryCompactCheckpoint {
        checkpoint_id: id.into(),
        session_id: "s".into(),
        created_at_ms: 0,
        high_water: HighWater { name: "manual".into(), seq: events.len() as u64 },
        coverage: coverage_of(events).expect("non-empty"),
        projection: CheckpointProjection::Summary("## Goal\n- g".into()),
        limitations: vec![],
        estimated_tokens: 5,
        previous_checkpoint_id: None,
        produced_by: None,
        manifest: None,
    }
}

fn input<'a>(
    events: &'a [RuntimeEvent],
    cp: Option<&'a HistoryCompactCheckpoint>,
    model: &'a ModelFacts,
    current: Option<&'a str>,
) -> ProjectInput<'a> {
    ProjectInput {
        events,
        current_turn_id: current,
        checkpoint: cp,
        model,
        provider: None,
        fail_open: false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// A growing session with advancing (and occasionally older) checkpoints: the cached
    /// projection equals the full one at every step.
    #[test]
    fn cached_projection_equals_full_projection(
        steps in prop::collection::vec((1usize..4, 0usize..5, any::<bool>()), 1..12),
        window in 500u64..20_000,
    ) {
        let model = ModelFacts { context_window: Some(window), ..Default::default() };
        let mut cache = VerifiedPrefix::new();
        let mut log = LogBuilder::new("s");
        let mut turn = 0;
        for (new_turns, lag, older) in steps {
            for _ in 0..new_turns {
                turn += 1;
                log.turn(&format!("t{turn}")).user(&format!("request {turn}")).assistant("ok");
            }
            let events = log.events();
            let end = events.len().saturating_sub(lag * 2).max(1);
            let end = if older { end / 2 + 1 } else { end };
            let cp = checkpoint(&events[..end], "cp");
            let current = Some(events[events.len() - 1].turn_id.as_str());
            let full = project(&input(events, Some(&cp), &model, current), &CharEstimator);
            let cached = project_with(&input(events, Some(&cp), &model, current), &CharEstimator, &mut cache);
            prop_assert_eq!(full, cached);
        }
    }
}

#[test]
fn steady_state_touches_only_new_events() {
    let events = session(50, 100);
    let mut cache = VerifiedPrefix::new();
    let cp = checkpoint(&events[..120], "cp");
    let model = ModelFacts::default();
    project_with(&input(&events, Some(&cp), &model, None), &CharEstimator, &mut cache).expect("ok");
    assert_eq!(cache.len(), 120);
    let cp2 = checkpoint(&events[..141], "cp2");
    project_with(&input(&events, Some(&cp2), &model, None), &CharEstimator, &mut cache)
        .expect("ok");
    assert_eq!(cache.len(), 141, "advanced by the new events only");
}

#[test]
fn a_rewritten_log_resets_the_cache_and_is_caught() {
    let events = session(10, 10);
    let cp = checkpoint(&events[..15], "cp");
    let model = ModelFacts::default();
    let mut cache = VerifiedPrefix::new();
    project_with(&input(&events, Some(&cp), &model, None), &CharEstimator, &mut cache).expect("ok");
    // Same length, the last cached event rewritten under the same position: the key changes.
    let mut tampered = events.clone();
    tampered[14].runtime_event_id = "forged".into();
    let projection =
        project_with(&input(&tampered, Some(&cp), &model, None), &CharEstimator, &mut cache)
            .expect("ok");
    assert!(projection.checkpoint.is_none(), "tampered prefix must not replay");
    // An edit deeper in the prefix keeps the key; a cold start (new cache) still catches it.
    let mut deep = events.clone();
    deep[3].content = EventContent::user_text("forged");
    let cold = project_with(
        &input(&deep, Some(&cp), &model, None),
        &CharEstimator,
        &mut VerifiedPrefix::new(),
    )
    .expect("ok");
    assert!(cold.checkpoint.is_none());
}

#[test]
fn structural_defects_are_found_across_the_cache_boundary() {
    let events = session(6, 10);
    let mut cache = VerifiedPrefix::new();
    cache.check_log(&events, None).expect("valid");
    let cp = checkpoint(&events[..9], "cp");
    cache.verify(&cp, &events, &CharEstimator).expect("matches");
    // A tail event repeating a cached id.
    let mut log = LogBuilder::extend(events.clone());
    log.turn("t9").user("again");
    let mut bad = log.build();
    let last = bad.len() - 1;
    bad[last].runtime_event_id = events[2].runtime_event_id.clone();
    assert!(matches!(cache.check_log(&bad, None), Err(LogError::DuplicateEventId { .. })));
    // A current turn whose id also appears inside the cached prefix.
    let mut log = LogBuilder::extend(events.clone());
    log.turn("t1").user("reopened");
    let reopened = log.build();
    assert!(matches!(
        cache.check_log(&reopened, Some("t1")),
        Err(LogError::CurrentTurnNotSuffix { .. })
    ));
    assert!(matches!(
        cache.check_log(&reopened, Some("t5")),
        Err(LogError::CurrentTurnNotSuffix { .. })
    ));
}
