//! The sessions the cache-stability test grows: seeded generators and real trajectories, each
//! with the checkpoint it is replayed under.

use std::path::Path;

use contextfold_conformance::long_turn::{LongTurnSpec, long_turn_session};
use contextfold_conformance::random_sessions::random_session;
use contextfold_conformance::{DEFAULT_SEED, SplitMix64};
use contextfold_core::checkpoint::{HighWater, coverage_of, safe_boundaries};
use contextfold_core::event::Attachment;
use contextfold_core::{
    CheckpointProjection, EventContent, HistoryCompactCheckpoint, RuntimeEvent,
};

/// A summary that passes validation; its size does not matter here.
const SUMMARY: &str = "## Goal\nFix the failing tests.\n\n## Done and In Progress\n- Read the \
logs.\n\n## Next Steps\n- Patch the parser.\n\n## Critical Context\n- `cargo test`.\n";

/// One session to grow, and how its requests are built.
pub(crate) struct Session {
    /// A name for the report.
    pub(crate) name: String,
    /// The whole log; requests are built from its prefixes.
    pub(crate) events: Vec<RuntimeEvent>,
    /// The checkpoint every request replays, if any.
    pub(crate) checkpoint: Option<HistoryCompactCheckpoint>,
    /// Whether each request names the turn of its last event as current (a host's usual call).
    pub(crate) names_current_turn: bool,
}

impl Session {
    fn new(name: &str, events: Vec<RuntimeEvent>) -> Self {
        Self { name: name.into(), events, checkpoint: None, names_current_turn: true }
    }

    /// The same session under a V2 checkpoint covering `events[..end]`.
    fn covered(&self, end: usize) -> Self {
        let events = self.events.clone();
        let checkpoint = HistoryCompactCheckpoint {
            checkpoint_id: "cp-1".into(),
            session_id: events[0].session_id.clone(),
            created_at_ms: 1,
            high_water: HighWater { name: "manual".into(), seq: events[end - 1].seq },
            coverage: coverage_of(&events[..end]).expect("a non-empty prefix"),
            projection: CheckpointProjection::Summary(SUMMARY.into()),
            limitations: Vec::new(),
            estimated_tokens: 0,
            previous_checkpoint_id: None,
            produced_by: None,
            manifest: None,
        };
        let name = format!("{}+checkpoint@{end}", self.name);
        Self { name, events, checkpoint: Some(checkpoint), ..*self }
    }

    /// The same session with requests that name no current turn.
    fn unnamed(&self) -> Self {
        let name = format!("{}+no-current-turn", self.name);
        Self { name, events: self.events.clone(), checkpoint: None, names_current_turn: false }
    }
}

/// Several single-turn logs as consecutive turns of one session: ids, seqs, response ids and
/// call ids renumbered so that each task is its own turn (call ids reused inside a task stay
/// reused). Without the call-id prefix, a task whose last call has no result (`finish`) and a
/// later task numbering its calls the same way would pair the later result with the old call:
/// a late answer, which changes an earlier message (see the test's known breaks).
fn as_turns(session_id: &str, tasks: Vec<Vec<RuntimeEvent>>) -> Vec<RuntimeEvent> {
    let mut seq = 0u64;
    let mut out = Vec::new();
    for (task, events) in tasks.into_iter().enumerate() {
        for mut event in events {
            seq += 1;
            event.session_id = session_id.into();
            event.turn_id = format!("task-{task}-{}", event.turn_id);
            event.run_id = format!("run-{}", event.turn_id);
            event.runtime_event_id = format!("evt-{seq}");
            event.seq = seq;
            event.response_id = event.response_id.map(|id| format!("task-{task}:{id}"));
            if let EventContent::ToolCall { call_id, .. }
            | EventContent::ToolResult { call_id, .. }
            | EventContent::HostedToolCall { call_id, .. }
            | EventContent::HostedToolResult { call_id, .. } = &mut event.content
            {
                *call_id = format!("task-{task}:{call_id}");
            }
            out.push(event);
        }
    }
    out
}

fn trajectory(relative: &str) -> Vec<RuntimeEvent> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("trajectories").join(relative);
    let text = std::fs::read_to_string(&path).expect("a trajectory file");
    RuntimeEvent::parse_jsonl(&text).expect("a valid trajectory")
}

/// An archived 1280x800 screenshot (bytes in the session archive, none inline).
fn screenshot(n: usize) -> Attachment {
    let byte_length = 40_000 + n as u64;
    let sha256 = format!("{:064x}", 0x5c7e_e75b_u64.wrapping_mul(n as u64 + 1));
    serde_json::from_value(serde_json::json!({
        "mediaType": "image/png", "byteLength": byte_length, "sha256": sha256,
        "name": format!("screen-{n}.png"), "width": 1280, "height": 800,
    }))
    .expect("a valid archived attachment")
}

/// A long turn whose task and two of every three tool results carry a screenshot.
fn with_screenshots(mut events: Vec<RuntimeEvent>, first: usize) -> Vec<RuntimeEvent> {
    let mut n = first;
    let mut results = 0;
    for event in &mut events {
        let attach = match &event.content {
            EventContent::UserText { .. } => true,
            EventContent::ToolResult { .. } => {
                results += 1;
                results % 3 != 0
            }
            _ => false,
        };
        if attach {
            n += 1;
            event.content = event.content.with_attachments(vec![screenshot(n)]);
        }
    }
    events
}

/// A safe cut near the middle of `events`.
fn middle_cut(events: &[RuntimeEvent], current: Option<&str>) -> usize {
    let cuts = safe_boundaries(events, current).expect("a valid log");
    let half = events.len() / 2;
    cuts.into_iter().min_by_key(|cut| cut.abs_diff(half)).expect("a safe cut")
}

/// A safe cut near the middle of the first turn (`events[..first_turn_end]`), as a mid-turn
/// compaction makes it: later turns then run under a checkpoint that split an earlier turn.
fn inside_first_turn(events: &[RuntimeEvent], first_turn_end: usize) -> usize {
    middle_cut(&events[..first_turn_end], Some(events[0].turn_id.as_str()))
}

/// Every session of the test.
pub(crate) fn sessions() -> Vec<Session> {
    let mut all = Vec::new();

    let generated: Vec<Vec<RuntimeEvent>> =
        (0..5).map(|k| long_turn_session(&LongTurnSpec::new(DEFAULT_SEED + k, 14))).collect();
    let multi = Session::new("generated-multi-task", as_turns("generated", generated));
    let first_turn_end =
        multi.events.iter().position(|e| e.turn_id != multi.events[0].turn_id).expect("turns");
    all.push(multi.covered(first_turn_end));
    all.push(multi.covered(inside_first_turn(&multi.events, first_turn_end)));
    all.push(multi.unnamed());
    all.push(multi);

    let long = Session::new(
        "generated-long-turn",
        long_turn_session(&LongTurnSpec::new(DEFAULT_SEED, 120).with_prior_turns(6)),
    );
    let task = long.events.last().map(|e| e.turn_id.clone());
    let mid_turn = middle_cut(&long.events, task.as_deref());
    all.push(long.covered(mid_turn));
    all.push(long);

    let real = [
        "openhands/ponylang__ponyc-4595.jsonl",
        "moatless/sphinx-doc__sphinx-10325.jsonl",
        "moatless/django__django-15819.jsonl",
        "mini-swe-agent/astroid-1333-deepseek-chat.jsonl",
        "openhands/ponylang__ponyc-4588.jsonl",
        "swe-agent/pydicom-1458.jsonl",
        "moatless/pytest-dev__pytest-5227.jsonl",
    ];
    let real = Session::new("real-trajectories", as_turns("real", real.map(trajectory).into()));
    let first_turn_end =
        real.events.iter().position(|e| e.turn_id != real.events[0].turn_id).expect("turns");
    all.push(real.covered(first_turn_end));
    all.push(real.covered(inside_first_turn(&real.events, first_turn_end)));
    all.push(real);
    let single = Session::new(
        "real-sqlfluff",
        trajectory("mini-swe-agent/sqlfluff-1733-deepseek-reasoner.jsonl"),
    );
    let mid_turn = middle_cut(&single.events, Some("turn-1"));
    all.push(single.covered(mid_turn));

    let shots = vec![
        with_screenshots(long_turn_session(&LongTurnSpec::new(7, 40)), 0),
        with_screenshots(long_turn_session(&LongTurnSpec::new(8, 30)), 1_000),
    ];
    let shots = Session::new("generated-screenshots", as_turns("shots", shots));
    all.push(shots.unnamed());
    all.push(shots);

    let mut prng = SplitMix64::new(DEFAULT_SEED);
    let random: Vec<Vec<RuntimeEvent>> =
        (0..8).map(|index| random_session(&mut prng, index)).collect();
    for (index, events) in random.into_iter().enumerate() {
        all.push(Session::new(&format!("random-{index}"), events));
    }
    all
}
