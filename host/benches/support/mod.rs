//! Shared by the storage benches: a generated session (turns of user text, tool call, large
//! tool result, assistant text) produced batch by batch, a checkpoint over a prefix, peak RSS,
//! and the one-line result format `bench/run.sh` collects.

#![allow(dead_code, unreachable_pub)]

pub mod child;

use contextfold_core::checkpoint::{Boundary, CheckpointProjection, Coverage, HighWater};
use contextfold_core::digest::PrefixHasher;
use contextfold_core::{EventContent, HistoryCompactCheckpoint, RuntimeEvent};
use serde_json::json;

/// Session id of every generated event.
pub const SESSION: &str = "bench";

/// Events of generated turn `turn` (four events, `seq` from `4 * turn + 1`), with a tool output
/// of about `output_bytes` bytes mixing ASCII, accents, CJK, quotes and newlines.
pub fn turn_events(turn: u64, output_bytes: usize) -> Vec<RuntimeEvent> {
    const LINE: &str = "let greeting = \"héllo 世界\"; // one line of a large tool output\n";
    let output = format!("{}{turn}", LINE.repeat(output_bytes / LINE.len()));
    let call_id = format!("c{turn}");
    let contents = [
        EventContent::user_text(format!("continue with failing test {turn}")),
        EventContent::ToolCall {
            call_id: call_id.clone(),
            tool_name: "shell".into(),
            input: json!({"cmd": "cargo test", "turn": turn}),
        },
        EventContent::ToolResult {
            call_id,
            tool_name: "shell".into(),
            output: json!(output),
            is_error: false,
            attachments: Vec::new(),
        },
        EventContent::AssistantText { text: "The test passes now; moving on.".into() },
    ];
    contents
        .into_iter()
        .enumerate()
        .map(|(index, content)| {
            let seq = 4 * turn + index as u64 + 1;
            RuntimeEvent {
                created_at_ms: Some(1_700_000_000_000 + seq),
                ..RuntimeEvent::new(
                    SESSION.into(),
                    format!("r{turn}"),
                    format!("t{turn}"),
                    format!("e{seq}"),
                    seq,
                    content,
                )
            }
        })
        .collect()
}

/// Builds the coverage of a prefix while it is generated, without keeping it.
#[derive(Debug, Default)]
pub struct CoverageBuilder {
    hasher: PrefixHasher,
    turns: u64,
    last: Option<Boundary>,
    last_seq: u64,
}

impl CoverageBuilder {
    /// Adds the next event of the prefix (turns are contiguous in generated sessions).
    pub fn push(&mut self, event: &RuntimeEvent) {
        if self.last.as_ref().is_none_or(|last| last.turn_id != event.turn_id) {
            self.turns += 1;
        }
        self.hasher.push(event);
        self.last = Some(Boundary {
            run_id: event.run_id.clone(),
            turn_id: event.turn_id.clone(),
            runtime_event_id: event.runtime_event_id.clone(),
        });
        self.last_seq = event.seq;
    }

    /// A summary checkpoint over everything pushed so far.
    pub fn checkpoint(&self, id: &str, previous: Option<&str>) -> HistoryCompactCheckpoint {
        HistoryCompactCheckpoint {
            checkpoint_id: id.into(),
            session_id: SESSION.into(),
            created_at_ms: 1,
            high_water: HighWater { name: "manual".into(), seq: self.last_seq },
            coverage: Coverage {
                event_count: self.hasher.event_count(),
                turn_count: self.turns,
                through: self.last.clone().expect("a non-empty prefix"),
                source_digest: self.hasher.digest(),
            },
            projection: CheckpointProjection::Summary(
                "## Goal\n- x\n## Done and In Progress\n- x\n## Next Steps\n- x\n## Critical Context\n- x\n"
                    .into(),
            ),
            limitations: vec![],
            estimated_tokens: 20,
            previous_checkpoint_id: previous.map(str::to_owned),
            produced_by: None,
            manifest: None,
        }
    }
}

/// Peak resident set size of this process in KiB (`VmHWM` of `/proc/self/status`).
pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Prints one result line: `RESULT|metric|measured|goal|pass or fail`.
pub fn result(metric: &str, measured: &str, goal: &str, pass: bool) {
    println!("RESULT|{metric}|{measured}|{goal}|{}", if pass { "pass" } else { "FAIL" });
}
