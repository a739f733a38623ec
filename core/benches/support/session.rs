//! The generated session every cold-path bench uses (core's `projection` bench and the host's
//! `cold_pipeline` and `cold_paired` benches include this file), so their ratios are over the
//! same bytes.

use contextfold_core::checkpoint::{
    CheckpointProjection, HighWater, HistoryCompactCheckpoint, coverage_of,
};
use contextfold_core::digest::canonical_event_json;
use contextfold_core::projection::ProjectInput;
use contextfold_core::{LogBuilder, ModelFacts, RuntimeEvent};

/// A generated session with what a cold-path bench needs: its canonical bytes (the SHA-256
/// floor hashes them), a checkpoint over all but the last 40 events, and a 1M-token model.
pub(crate) struct ColdCase {
    /// The generated events.
    pub events: Vec<RuntimeEvent>,
    /// [`canonical_bytes`] of the events.
    pub bytes: Vec<u8>,
    /// A summary checkpoint over all but the last 40 events.
    pub checkpoint: HistoryCompactCheckpoint,
    /// A model with a 1,000,000-token window (everything fits).
    pub model: ModelFacts,
}

impl ColdCase {
    /// The case over [`generated_session`]`(turns)`.
    pub(crate) fn new(turns: usize) -> Self {
        let events = generated_session(turns);
        let bytes = canonical_bytes(&events);
        let checkpoint = checkpoint_over(&events[..events.len() - 40]);
        let model = ModelFacts { context_window: Some(1_000_000), ..Default::default() };
        Self { events, bytes, checkpoint, model }
    }

    /// The projection input: the whole session with the checkpoint, no fail-open.
    pub(crate) fn input(&self) -> ProjectInput<'_> {
        ProjectInput {
            events: &self.events,
            current_turn_id: None,
            checkpoint: Some(&self.checkpoint),
            model: &self.model,
            provider: None,
            fail_open: false,
        }
    }
}

/// A session of `turns` turns (four events each) with ~20 KB tool outputs mixing ASCII,
/// accents and CJK: 10,000 events are ~50 MB of canonical bytes.
fn generated_session(turns: usize) -> Vec<RuntimeEvent> {
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

/// The canonical bytes of `events`, one line each: what SHA-256 alone hashes (the floor).
fn canonical_bytes(events: &[RuntimeEvent]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for event in events {
        bytes.extend_from_slice(canonical_event_json(event).as_bytes());
        bytes.push(b'\n');
    }
    bytes
}

/// A summary checkpoint covering all of `events`.
fn checkpoint_over(events: &[RuntimeEvent]) -> HistoryCompactCheckpoint {
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
        manifest: None,
    }
}
