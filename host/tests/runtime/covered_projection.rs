//! A projection whose covered prefix is proven from the stored rows (canonical bytes and
//! derived columns, `storage/covered.rs`) equals the projection over the whole loaded log: on
//! the real agent trajectories of `tests/trajectories/` (mini-swe-agent, moatless, OpenHands,
//! SWE-agent; MIT, see its README), for checkpoints cut at turn boundaries and inside long
//! single-turn loops (the live head), with no current turn, the last turn current and a new one.
//! A checkpoint the rows do not prove falls back to the whole log.

use contextfold_core::budget::PieceEstimator;
use contextfold_core::checkpoint::{
    CheckpointProjection, HighWater, HistoryCompactCheckpoint, coverage_of,
};
use contextfold_core::projection::{ProjectInput, project};
use contextfold_core::{ModelFacts, RuntimeEvent};
use contextfold_host::storage::{Store, StreamRequest};

fn trajectories() -> Vec<(String, Vec<RuntimeEvent>)> {
    contextfold_conformance::trajectories::all()
        .into_iter()
        .map(|t| (t.session_id().to_owned(), t.events))
        .collect()
}

fn checkpoint(session: &str, prefix: &[RuntimeEvent]) -> HistoryCompactCheckpoint {
    HistoryCompactCheckpoint {
        checkpoint_id: format!("cp-{}", prefix.len()),
        session_id: session.to_owned(),
        created_at_ms: 1,
        high_water: HighWater { name: "manual".into(), seq: 0 },
        coverage: coverage_of(prefix).expect("a non-empty prefix"),
        projection: CheckpointProjection::Summary(
            "## Goal\nFix the failing test.\n## Progress\nRead the code.".into(),
        ),
        limitations: vec![],
        estimated_tokens: 20,
        previous_checkpoint_id: None,
        produced_by: None,
        manifest: None,
    }
}

#[test]
fn projections_from_the_rows_equal_projections_over_the_loaded_log() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(dir.path().join("ledger.sqlite")).expect("opens");
    let model = ModelFacts { context_window: Some(400_000), ..ModelFacts::default() };
    let (mut streamed, mut with_head, mut cases) = (0, 0, 0);
    for (session, events) in trajectories() {
        store.append_events(&session, &events).expect("appends");
        let last_turn = events.last().map(|e| e.turn_id.clone());
        let step = (events.len() / 9).max(1);
        for cut in (1..events.len()).step_by(step) {
            let checkpoint = checkpoint(&session, &events[..cut]);
            let splits_turn = events[cut - 1].turn_id == events[cut].turn_id;
            for current in [None, last_turn.as_deref(), Some("a-new-turn")] {
                let request = StreamRequest {
                    current_turn_id: current,
                    checkpoint: Some(&checkpoint),
                    model: &model,
                    provider: None,
                    fail_open: false,
                };
                let from_rows =
                    store.project_streaming(&session, &request, &PieceEstimator).expect("projects");
                let input = ProjectInput {
                    events: &events,
                    current_turn_id: current,
                    checkpoint: Some(&checkpoint),
                    model: &model,
                    provider: None,
                    fail_open: false,
                };
                let whole = project(&input, &PieceEstimator).expect("a valid log");
                if from_rows.projection != whole {
                    let brief = |p: &contextfold_core::projection::Projection| {
                        (
                            p.messages.len(),
                            p.estimated_tokens,
                            p.checkpoint.clone(),
                            p.diagnostics.clone(),
                        )
                    };
                    panic!(
                        "{session} cut {cut} current {current:?} ({} streamed, {} loaded): from the rows {:?}, whole {:?}",
                        from_rows.streamed_events,
                        from_rows.loaded_events,
                        brief(&from_rows.projection),
                        brief(&whole)
                    );
                }
                cases += 1;
                assert_eq!(
                    from_rows.streamed_events > 0,
                    whole.checkpoint.is_some(),
                    "{session} cut {cut} current {current:?}: every replayed checkpoint is proven \
                     from the rows"
                );
                if from_rows.streamed_events > 0 {
                    streamed += 1;
                    assert!(from_rows.loaded_events < events.len() - cut + 50);
                    with_head += usize::from(splits_turn);
                }
            }
        }
    }
    assert!(cases >= 300, "{cases} cases");
    assert!(streamed * 10 >= cases * 8, "most cases replay the checkpoint: {streamed}/{cases}");
    assert!(with_head >= 50, "many cuts inside a turn replay a live head: {with_head}");
}

/// A checkpoint whose digest the rows do not give is not proven from them: the projection is
/// the core's own over the whole log (its mismatch diagnostic included).
#[test]
fn a_checkpoint_the_rows_do_not_prove_falls_back_to_the_whole_log() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(dir.path().join("ledger.sqlite")).expect("opens");
    let (session, events) = trajectories().remove(0);
    store.append_events(&session, &events).expect("appends");
    let mut forged = checkpoint(&session, &events[..events.len() / 2]);
    forged.coverage.source_digest = format!("sha256:{}", "0".repeat(64));
    let model = ModelFacts::default();
    let request = StreamRequest {
        current_turn_id: None,
        checkpoint: Some(&forged),
        model: &model,
        provider: None,
        fail_open: false,
    };
    let from_rows = store.project_streaming(&session, &request, &PieceEstimator).expect("projects");
    assert_eq!((from_rows.streamed_events, from_rows.loaded_events), (0, events.len()));
    let input = ProjectInput {
        events: &events,
        current_turn_id: None,
        checkpoint: Some(&forged),
        model: &model,
        provider: None,
        fail_open: false,
    };
    assert_eq!(from_rows.projection, project(&input, &PieceEstimator).expect("valid"));
    assert!(from_rows.projection.checkpoint.is_none());
}
