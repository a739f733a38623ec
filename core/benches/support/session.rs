//! The generated session every cold-path bench uses (core's `projection` bench and the host's
//! `cold_pipeline` bench include this file), so their ratios are over the same bytes.

use contextfold_core::checkpoint::{CheckpointProjection, HighWater, HistoryCompactCheckpoint};
use contextfold_core::prefix_match::coverage_of;
use contextfold_core::{LogBuilder, RuntimeEvent};

/// A session of `turns` turns (four events each) with ~20 KB tool outputs mixing ASCII,
/// accents and CJK: 10,000 events are ~50 MB of canonical bytes.
pub(crate) fn generated_session(turns: usize) -> Vec<RuntimeEvent> {
    let body = "let greeting = \"héllo 世界\"; // one line of a large tool output\n".repeat(300);
    let mut log = LogBuilder::new("bench");
    for turn in 0..turns {
        let call = format!("c{turn}");
        log.turn(&format!("t{turn}")).user("continue with the next failing test");
        log.tool_call(&call, "shell", serde_json::json!({"cmd": "cat src/lib.rs", "turn": turn}));
        log.tool_result(&call, "shell", serde_json::json!(format!("{body}{turn}")));
        log.assistant("The test passes now; moving on.");
    }
    log.build()
}

/// A summary checkpoint covering all of `events`.
pub(crate) fn checkpoint_over(events: &[RuntimeEvent]) -> HistoryCompactCheckpoint {
    HistoryCompactCheckpoint {
        checkpoint_id: "cp".into(),
        session_id: "bench".into(),
        created_at_ms: 0,
        high_water: HighWater { name: "manual".into(), seq: events.len() as u64 },
        coverage: coverage_of(events).expect("non-empty"),
        projection: CheckpointProjection::Summary(
            "## Goal\n- x\n## Done and In Progress\n- x\n## Next Steps\n- x\n## Critical Context\n- x\n"
                .into(),
        ),
        limitations: vec![],
        estimated_tokens: 20,
        previous_checkpoint_id: None,
        produced_by: None,
    }
}
