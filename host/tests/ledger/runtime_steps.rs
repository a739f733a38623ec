//! The session runtime over either backend: an agent's steps with mid-turn compactions, each
//! warm projection equal to a fresh runtime's, whose cold projection proves the checkpoint's
//! coverage from the stored rows (on PostgreSQL, the streamed `read_covered`); and the same
//! steps give the same projections on PostgreSQL as on SQLite.

use std::sync::Arc;

use contextfold_host::ledger::Ledger;
use contextfold_host::runtime::{
    ExtractiveSummarizer, NoNativeCompactor, ProjectionReport, SessionRuntime,
};

use super::support::backends;
use crate::reliability_support::{SESSION, config, extend, history};

const WINDOW: u64 = 12_000;

fn runtime(ledger: &Arc<dyn Ledger>) -> SessionRuntime<ExtractiveSummarizer, NoNativeCompactor> {
    SessionRuntime::new(
        Arc::clone(ledger),
        config(WINDOW, false),
        ExtractiveSummarizer,
        NoNativeCompactor,
    )
    .with_clock(Arc::new(|| 1_700_000_000_000))
}

/// What a fresh runtime (an empty cache) projects for turn `turn`.
async fn cold_projection(ledger: &Arc<dyn Ledger>, turn: &str) -> ProjectionReport {
    let cold = runtime(ledger);
    cold.begin_turn(turn).expect("begin");
    cold.project(false).await.expect("cold projection")
}

/// One step as both backends must agree on it: whether it compacted, the projection's size,
/// its message count and the events its checkpoint covers.
type Step = (usize, bool, u64, usize, u64);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runtime_steps_and_projects_alike_on_both_backends() {
    let mut traces: Vec<(&'static str, Vec<Step>)> = Vec::new();
    for backend in backends("runtime_steps").await {
        let ledger = &backend.ledger;
        let name = backend.name();
        let mut builder = history(4);
        ledger.append_events(SESSION, builder.clone().build()).await.expect("seed");
        let warm = runtime(ledger);
        let mut trace = Vec::new();
        for turn in 4..28 {
            let before = ledger.last_seq(SESSION).await.expect("last").unwrap_or(0);
            let turn_id = format!("t{turn}");
            extend(&mut builder, turn);
            let new: Vec<_> =
                builder.clone().build().into_iter().filter(|e| e.seq > before).collect();
            warm.begin_turn(&turn_id).expect("begin");
            warm.append(new).await.expect("append");
            let compacted = warm.evaluate_mid_turn().await.expect("mid-turn").is_some();
            let report = warm.project(false).await.expect("warm");
            let cold = cold_projection(ledger, &turn_id).await;
            assert_eq!(report.projection, cold.projection, "{name} turn {turn}");
            let covered = cold.projection.checkpoint.as_ref().map_or(0, |cp| cp.covered_events);
            assert_eq!(cold.proven_from_rows, covered, "{name} turn {turn}: proven from the rows");
            trace.push((
                turn,
                compacted,
                report.projection.estimated_tokens,
                report.projection.messages.len(),
                covered,
            ));
            warm.end_turn().expect("end");
        }
        let compactions = trace.iter().filter(|step| step.1).count();
        assert!(compactions >= 2, "{name}: the session compacts along the way ({compactions})");
        traces.push((name, trace));
    }
    if let [(_, sqlite), (_, postgres)] = traces.as_slice() {
        assert_eq!(postgres, sqlite, "the same steps on PostgreSQL as on SQLite");
    }
}
