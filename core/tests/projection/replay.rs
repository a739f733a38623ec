//! The replay gate (`evaluate_replay`) and its use by `project`: shrinking window, model switch,
//! session mismatch, replacement not smaller, prefix and digest mismatch.

use contextfold_core::budget::{ContextBudget, estimate_events};
use contextfold_core::checkpoint::{
    HighWater, ReplayRejection, checkpoint_tokens, coverage_of, evaluate_replay,
};
use contextfold_core::compaction::{OPENAI_CODEX_PROVIDER, ProviderIdentity};
use contextfold_core::projection::{
    Part, ProjectInput, Projection, estimate_messages, materialize, project,
};
use contextfold_core::{
    CharEstimator, CheckpointProjection, HistoryCompactCheckpoint, LogBuilder, ModelFacts,
    ProviderState, ReasonCode, RuntimeEvent,
};
use serde_json::json;

const SUMMARY: &str = "## Goal\nFix the tests.\n\n## Done and In Progress\n- Fixed mod_1.\n\n\
## Next Steps\n- Run the tests.\n\n## Critical Context\n- `cargo test`.\n";

fn provider(connection: &str, model: &str) -> ProviderIdentity {
    ProviderIdentity {
        provider: OPENAI_CODEX_PROVIDER.into(),
        connection_slug: connection.into(),
        model_id: model.into(),
    }
}

/// `turns` completed turns with a 2,000-character tool result each, then current turn `tc`.
fn log(turns: usize) -> (Vec<RuntimeEvent>, usize) {
    let mut log = LogBuilder::new("s1");
    for n in 1..=turns {
        log.turn(&format!("t{n}"))
            .user(&format!("turn {n}: fix src/mod_{n}.rs"))
            .response(Some(&format!("r{n}")))
            .tool_call(&format!("c{n}"), "shell", json!({"cmd": format!("cat src/mod_{n}.rs")}))
            .response(None)
            .tool_result(&format!("c{n}"), "shell", json!("x".repeat(2_000)))
            .assistant("fixed");
    }
    let prior_end = log.events().len();
    log.turn("tc").user("continue");
    (log.build(), prior_end)
}

fn checkpoint(
    events: &[RuntimeEvent],
    end: usize,
    projection: CheckpointProjection,
) -> HistoryCompactCheckpoint {
    HistoryCompactCheckpoint {
        checkpoint_id: "cp-1".into(),
        session_id: "s1".into(),
        created_at_ms: 1,
        high_water: HighWater { name: "manual".into(), seq: events[end - 1].seq },
        coverage: coverage_of(&events[..end]).expect("non-empty"),
        projection,
        limitations: Vec::new(),
        estimated_tokens: 0,
        previous_checkpoint_id: None,
        produced_by: None,
        manifest: None,
    }
}

fn v2(events: &[RuntimeEvent], end: usize) -> HistoryCompactCheckpoint {
    checkpoint(events, end, CheckpointProjection::Summary(SUMMARY.into()))
}

fn v3(
    events: &[RuntimeEvent],
    end: usize,
    connection: &str,
    model: &str,
) -> HistoryCompactCheckpoint {
    checkpoint(
        events,
        end,
        CheckpointProjection::ProviderState(ProviderState::OpenaiCodexRemoteV2 {
            connection_slug: connection.into(),
            model_id: model.into(),
            item_id: "cmp_1".into(),
            encrypted_content: "gAAAA-opaque".into(),
        }),
    )
}

fn budget(window: u64, overhead: u64) -> ContextBudget {
    ContextBudget::from_model(&ModelFacts {
        context_window: Some(window),
        fixed_overhead_tokens: overhead,
        ..ModelFacts::default()
    })
}

fn evaluate(
    cp: &HistoryCompactCheckpoint,
    events: &[RuntimeEvent],
    prior_end: usize,
    budget: &ContextBudget,
    provider: Option<&ProviderIdentity>,
) -> Result<contextfold_core::checkpoint::ReplayPlan, ReplayRejection> {
    evaluate_replay(cp, events, prior_end, budget, provider, &CharEstimator)
}

#[test]
fn accepted_plan_measures_the_materialized_replay() {
    let (events, prior_end) = log(6);
    let end = 4 * 4; // four turns of four events
    let cp = v2(&events, end);
    let plan = evaluate(&cp, &events, prior_end, &budget(32_000, 0), None).expect("fits");
    assert_eq!(plan.covered, end);
    assert_eq!(plan.checkpoint_tokens, checkpoint_tokens(&cp, &CharEstimator));
    assert_eq!(plan.source_tokens, estimate_events(&CharEstimator, &events[..end]));
    let replay = materialize(Some(&cp), &events[end..prior_end], &events[prior_end..]);
    assert_eq!(plan.total(), estimate_messages(&CharEstimator, &replay.messages));
    let current = materialize(None, &[], &events[prior_end..]);
    assert_eq!(plan.current_tokens, estimate_messages(&CharEstimator, &current.messages));
}

#[test]
fn the_budget_boundary_is_inclusive() {
    let (events, prior_end) = log(6);
    let cp = v2(&events, 16);
    let total = evaluate(&cp, &events, prior_end, &budget(32_000, 0), None).expect("fits").total();
    let history = budget(100_000, 0).history_budget;
    let exact = budget(100_000, history - total);
    assert_eq!(exact.history_budget, total);
    assert!(evaluate(&cp, &events, prior_end, &exact, None).is_ok());
    let short = budget(100_000, history - total + 1);
    let rejection = evaluate(&cp, &events, prior_end, &short, None).expect_err("one token over");
    assert_eq!(rejection.diagnostic.code, ReasonCode::CheckpointOverBudget);
}

#[test]
fn a_shrinking_window_rejects_a_once_valid_checkpoint_but_keeps_its_coverage_proof() {
    let (events, prior_end) = log(6);
    let cp = v2(&events, 16);
    let accepted = evaluate(&cp, &events, prior_end, &budget(32_000, 0), None).expect("fits");
    let small = budget(1_200, 0);
    let rejection = evaluate(&cp, &events, prior_end, &small, None).expect_err("over budget");
    assert_eq!(rejection.diagnostic.code, ReasonCode::CheckpointOverBudget);
    let tokens = rejection.diagnostic.tokens.expect("figures");
    assert_eq!((tokens.after, tokens.budget), (accepted.total(), small.history_budget));
    assert_eq!(rejection.plan, Some(accepted), "matched: the plan proves its coverage");
}

#[test]
fn a_v3_checkpoint_replays_only_on_its_own_connection_and_model() {
    let (events, prior_end) = log(6);
    let cp = v3(&events, 16, "codex-main", "gpt-5-codex");
    let b = budget(32_000, 0);
    assert!(
        evaluate(&cp, &events, prior_end, &b, Some(&provider("codex-main", "gpt-5-codex"))).is_ok()
    );
    let mut other_kind = provider("codex-main", "gpt-5-codex");
    other_kind.provider = "anthropic".into();
    for switched in [
        Some(provider("codex-other", "gpt-5-codex")),
        Some(provider("codex-main", "gpt-5-codex-mini")),
        Some(other_kind),
        None,
    ] {
        let rejection =
            evaluate(&cp, &events, prior_end, &b, switched.as_ref()).expect_err("switched");
        assert_eq!(rejection.diagnostic.code, ReasonCode::ProviderMismatch, "{switched:?}");
        assert!(rejection.plan.is_none(), "another provider's state proves nothing here");
    }
    // A V2 text checkpoint is provider-neutral.
    let text = v2(&events, 16);
    assert!(evaluate(&text, &events, prior_end, &b, Some(&provider("x", "y"))).is_ok());
}

#[test]
fn another_sessions_checkpoint_is_a_session_mismatch() {
    let (events, prior_end) = log(6);
    let mut cp = v2(&events, 16);
    cp.session_id = "s2".into();
    let rejection =
        evaluate(&cp, &events, prior_end, &budget(32_000, 0), None).expect_err("session");
    assert_eq!(rejection.diagnostic.code, ReasonCode::SessionMismatch);
    assert!(rejection.plan.is_none());
}

#[test]
fn a_replacement_not_smaller_than_its_source_is_rejected() {
    let (events, prior_end) = log(6);
    let large = format!("{SUMMARY}{}", "- detail that repeats the source\n".repeat(200));
    let cp = checkpoint(&events, 6, CheckpointProjection::Summary(large));
    let rejection =
        evaluate(&cp, &events, prior_end, &budget(200_000, 0), None).expect_err("larger");
    assert_eq!(rejection.diagnostic.code, ReasonCode::ReplacementNotSmaller);
    let plan = rejection.plan.expect("matched");
    assert!(plan.checkpoint_tokens >= plan.source_tokens);
}

#[test]
fn prefix_and_digest_mismatches_are_rejected_without_a_plan() {
    let (events, prior_end) = log(6);
    let b = budget(32_000, 0);
    let mut beyond = v2(&events, 16);
    beyond.coverage.event_count = prior_end as u64 + 1;
    let mut moved = v2(&events, 16);
    moved.coverage.through.turn_id = "t9".into();
    let mut tampered = v2(&events, 16);
    tampered.coverage.source_digest = format!("sha256:{}", "f".repeat(64));
    for (cp, code) in [
        (beyond, ReasonCode::CoverageMiss),
        (moved, ReasonCode::CoverageMiss),
        (tampered, ReasonCode::SourceHashMismatch),
    ] {
        let rejection = evaluate(&cp, &events, prior_end, &b, None).expect_err("mismatch");
        assert_eq!(rejection.diagnostic.code, code);
        assert!(rejection.plan.is_none());
    }
}

fn projection(
    events: &[RuntimeEvent],
    cp: Option<&HistoryCompactCheckpoint>,
    window: u64,
    provider: &ProviderIdentity,
) -> Projection {
    let model = ModelFacts { context_window: Some(window), ..Default::default() };
    project(
        &ProjectInput {
            events,
            current_turn_id: Some("tc"),
            checkpoint: cp,
            model: &model,
            provider: Some(provider),
            fail_open: false,
        },
        &CharEstimator,
    )
    .expect("valid log")
}

#[test]
fn project_does_not_replay_a_checkpoint_over_the_current_budget() {
    let (events, _) = log(6);
    let cp = v2(&events, 16);
    let codex = provider("codex-main", "gpt-5-codex");
    let wide = projection(&events, Some(&cp), 32_000, &codex);
    assert_eq!(wide.checkpoint.as_ref().map(|c| c.covered_events), Some(16));
    assert!(wide.diagnostics.iter().any(|d| d.code == ReasonCode::CheckpointReplayed));
    let narrow = projection(&events, Some(&cp), 1_200, &codex);
    assert!(narrow.checkpoint.is_none());
    assert!(narrow.diagnostics.iter().any(|d| d.code == ReasonCode::CheckpointOverBudget));
    assert_eq!(narrow.messages, projection(&events, None, 1_200, &codex).messages, "raw source");
    assert_eq!(narrow.omitted_events, 0);
}

#[test]
fn project_never_replays_provider_state_after_a_model_switch() {
    let (events, _) = log(6);
    let cp = v3(&events, 16, "codex-main", "gpt-5-codex");
    let has_state = |p: &Projection| {
        p.messages
            .iter()
            .flat_map(|m| &m.parts)
            .any(|part| matches!(part, Part::ProviderState { .. }))
    };
    let same = projection(&events, Some(&cp), 32_000, &provider("codex-main", "gpt-5-codex"));
    assert!(has_state(&same));
    assert_eq!(same.checkpoint.as_ref().map(|c| c.schema_version), Some(3));
    for switched in
        [provider("codex-main", "gpt-5-codex-mini"), provider("codex-other", "gpt-5-codex")]
    {
        let p = projection(&events, Some(&cp), 32_000, &switched);
        assert!(p.checkpoint.is_none() && !has_state(&p));
        assert!(p.diagnostics.iter().any(|d| d.code == ReasonCode::ProviderMismatch));
        assert_eq!(p.messages, projection(&events, None, 32_000, &switched).messages);
    }
}
