//! Seeded long single-turn sessions: one user task followed by many model steps in the same turn,
//! the shape of a coding agent's loop (and of the real trajectories in `tests/trajectories/`).
//!
//! Each step has one `responseId`: optional `reasoning` and `assistant_text`, then 1 to 4
//! parallel `tool_call`s, then their `tool_result`s. Output sizes are drawn log-uniformly from
//! [`MIN_OUTPUT_BYTES`] to [`MAX_OUTPUT_BYTES`] (in 1/16-octave bins, integer arithmetic only, so
//! every platform gives the same bytes); the content looks like file listings, file reads, test
//! logs, grep hits and diffs; about one result in ten has `isError`. Now and then a step reuses
//! a call id of an earlier, already answered step, as providers that number calls per turn do.
//!
//! ```
//! use contextfold_conformance::long_turn::{LongTurnSpec, long_turn_session};
//! let events = long_turn_session(&LongTurnSpec::new(7, 50));
//! assert_eq!(events[0].turn_id, "turn-1");
//! ```

use contextfold_core::{EventContent, RuntimeEvent};
use serde_json::{Value, json};

use crate::prng::SplitMix64;

/// Smallest tool output, in bytes.
pub const MIN_OUTPUT_BYTES: usize = 100;
/// Largest tool output, in bytes (200 KiB).
pub const MAX_OUTPUT_BYTES: usize = 200 * 1024;

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LongTurnSpec {
    /// Seed of the SplitMix64 stream; the same spec always gives the same events.
    pub seed: u64,
    /// Model steps after the task, all in the task's turn.
    pub steps: u32,
    /// Completed turns (a question, one to three steps, an answer) before the task.
    pub prior_turns: u32,
    /// `sessionId` of every event.
    pub session_id: String,
}

impl LongTurnSpec {
    /// `steps` steps from `seed`, no prior turns, session `long-turn-<seed>`.
    pub fn new(seed: u64, steps: u32) -> Self {
        Self { seed, steps, prior_turns: 0, session_id: format!("long-turn-{seed}") }
    }

    /// The same spec with `prior_turns` completed turns before the task.
    pub fn with_prior_turns(mut self, prior_turns: u32) -> Self {
        self.prior_turns = prior_turns;
        self
    }

    /// The turn id of the task: `turn-<prior_turns + 1>` (`turn-1` without prior turns).
    pub fn task_turn_id(&self) -> String {
        format!("turn-{}", u64::from(self.prior_turns) + 1)
    }
}

/// The events of `spec`: prior turns, then the task's `user_text` and `spec.steps` steps.
///
/// Ids: runId `run-<turn>`, runtimeEventId `evt-<seq>`, seq 1, 2, 3…, responseId
/// `resp-<turn>-<step>`; `createdAtMs` increases from 2026-01-01T00:00:00Z. The task turn ends
/// with its last tool results (the loop is still running), so it is the live, uncompacted head.
pub fn long_turn_session(spec: &LongTurnSpec) -> Vec<RuntimeEvent> {
    let mut writer = Writer {
        prng: SplitMix64::new(spec.seed),
        session_id: spec.session_id.clone(),
        turn: 0,
        response_id: None,
        seq: 0,
        now_ms: 1_767_225_600_000,
        events: Vec::new(),
        answered: Vec::new(),
        next_call: 0,
    };
    for _ in 0..spec.prior_turns {
        let question = pick_str(&mut writer.prng, PRIOR_QUESTIONS);
        writer.begin_turn(question);
        let steps = 1 + writer.prng.below(3);
        for step in 1..=steps {
            writer.step(step);
        }
        writer.response_id = Some(format!("resp-{}-{}", writer.turn, steps + 1));
        let answer = pick_str(&mut writer.prng, ANSWERS);
        writer.push(EventContent::AssistantText { text: answer });
    }
    let task = pick_str(&mut writer.prng, TASKS);
    writer.begin_turn(task);
    for step in 1..=u64::from(spec.steps) {
        writer.step(step);
    }
    writer.events
}

/// Renders events as JSON Lines (one event per line, `\n` after each).
pub fn to_jsonl(events: &[RuntimeEvent]) -> String {
    let mut out = String::new();
    for event in events {
        out.push_str(&serde_json::to_string(event).unwrap_or_default());
        out.push('\n');
    }
    out
}

const TASKS: &[&str] = &[
    "The CI job `test (ubuntu-latest)` fails since yesterday's merge. Find out why and fix it; keep the public API unchanged.",
    "Add a `--since` option to the `export` command that skips events older than the given timestamp, with tests and docs.",
    "Users report that importing a 300 MB log takes minutes. Profile the import path and make it at least five times faster.",
    "Port the retry logic from the Python client to the Rust client and make both pass the shared conformance suite.",
];
const PRIOR_QUESTIONS: &[&str] = &[
    "What does the `ledger` module do?",
    "Which tests cover the projection code?",
    "Is there a benchmark for the digest?",
];
const ANSWERS: &[&str] = &[
    "It appends events durably and recovers the projection row after a crash; see `host/src/ledger.rs`.",
    "The projection is covered by `core/tests/projection.rs` and the conformance vectors.",
    "Yes: `bench/run.sh` measures it among the other ratios.",
];
const THOUGHTS: &[&str] = &[
    "Let me look at the failing test's output first.",
    "The error points at the parser; read that file around the reported line.",
    "Search for other callers before changing the signature.",
    "Run the whole suite again to be sure nothing else broke.",
    "The diff is getting large; check it before going on.",
];
const DIRS: &[&str] = &["src", "src/ledger", "src/runtime", "tests", "core/src", "docs", "scripts"];
const FILES: &[&str] = &[
    "mod.rs",
    "parser.rs",
    "ledger.rs",
    "import.rs",
    "digest.rs",
    "retry.rs",
    "client.rs",
    "config.toml",
    "README.md",
    "lib.rs",
    "project.rs",
    "state.rs",
];
const WORDS: &[&str] = &[
    "event",
    "seq",
    "digest",
    "checkpoint",
    "turn",
    "session",
    "ledger",
    "projection",
    "budget",
    "summary",
    "provider",
    "retry",
    "timeout",
    "buffer",
    "parse",
    "record",
    "offset",
    "prefix",
];

fn pick_str(prng: &mut SplitMix64, items: &[&str]) -> String {
    (*prng.pick(items)).to_owned()
}

/// 2^(i/16) for i in 0..16, in Q16 fixed point.
const SIXTEENTH_OCTAVES_Q16: [u64; 16] = [
    65536, 68438, 71468, 74632, 77936, 81386, 84990, 88752, 92682, 96785, 101070, 105545, 110218,
    115097, 120193, 125514,
];

/// An output size drawn log-uniformly from `MIN_OUTPUT_BYTES..=MAX_OUTPUT_BYTES`.
fn output_size(prng: &mut SplitMix64) -> usize {
    // 100 B · 2^11 = 204800 B = 200 KiB: 11 octaves of 16 bins each, then uniform in the bin.
    let bin = prng.below(11 * 16);
    let (octave, sixteenth) = (bin / 16, (bin % 16) as usize);
    let low = (((MIN_OUTPUT_BYTES as u64) << octave) * SIXTEENTH_OCTAVES_Q16[sixteenth]) >> 16;
    let high = if sixteenth == 15 {
        (MIN_OUTPUT_BYTES as u64) << (octave + 1)
    } else {
        (((MIN_OUTPUT_BYTES as u64) << octave) * SIXTEENTH_OCTAVES_Q16[sixteenth + 1]) >> 16
    };
    let size = low + prng.below(high.saturating_sub(low).max(1));
    usize::try_from(size).unwrap_or(MAX_OUTPUT_BYTES).clamp(MIN_OUTPUT_BYTES, MAX_OUTPUT_BYTES)
}

/// The kinds of tool the generated agent uses, each with its own output style.
#[derive(Clone, Copy)]
enum Tool {
    ListFiles,
    ReadFile,
    RunTests,
    Grep,
    Diff,
}

const ALL_TOOLS: [Tool; 5] =
    [Tool::ListFiles, Tool::ReadFile, Tool::RunTests, Tool::Grep, Tool::Diff];

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::ListFiles => "list_files",
            Tool::ReadFile => "read_file",
            Tool::RunTests => "shell",
            Tool::Grep => "grep",
            Tool::Diff => "apply_patch",
        }
    }
}

struct Writer {
    prng: SplitMix64,
    session_id: String,
    turn: u64,
    response_id: Option<String>,
    seq: u64,
    now_ms: u64,
    events: Vec<RuntimeEvent>,
    /// Call ids of earlier steps whose results are recorded (candidates for reuse).
    answered: Vec<String>,
    next_call: u64,
}

impl Writer {
    fn push(&mut self, content: EventContent) {
        self.seq += 1;
        self.now_ms += 200 + self.prng.below(20_000);
        self.events.push(RuntimeEvent {
            created_at_ms: Some(self.now_ms),
            response_id: self.response_id.clone(),
            ..RuntimeEvent::new(
                self.session_id.clone(),
                format!("run-{}", self.turn),
                format!("turn-{}", self.turn),
                format!("evt-{}", self.seq),
                self.seq,
                content,
            )
        });
    }

    fn begin_turn(&mut self, text: String) {
        self.turn += 1;
        self.response_id = None;
        self.answered.clear();
        self.next_call = 0;
        self.push(EventContent::user_text(text));
    }

    fn path(&mut self) -> String {
        format!("{}/{}", pick_str(&mut self.prng, DIRS), pick_str(&mut self.prng, FILES))
    }

    fn call_id(&mut self, in_step: &[String]) -> String {
        if !self.answered.is_empty() && self.prng.chance(1, 12) {
            let reused = self.prng.pick(&self.answered).clone();
            if !in_step.contains(&reused) {
                return reused;
            }
        }
        self.next_call += 1;
        format!("call_{:02}", self.next_call)
    }

    /// One model step: optional reasoning and text, 1 to 4 calls, then their results.
    fn step(&mut self, step: u64) {
        self.response_id = Some(format!("resp-{}-{step}", self.turn));
        if self.prng.chance(1, 3) {
            let text = pick_str(&mut self.prng, THOUGHTS);
            let provider_data = self
                .prng
                .chance(1, 2)
                .then(|| json!({"signature": format!("sig-{:016x}", self.prng.next_u64())}));
            self.push(EventContent::Reasoning { text, provider_data });
        }
        if self.prng.chance(1, 3) {
            let text = pick_str(&mut self.prng, THOUGHTS);
            self.push(EventContent::AssistantText { text });
        }
        let count = 1 + self.prng.below(4);
        let mut calls: Vec<(String, Tool, String)> = Vec::new();
        for _ in 0..count {
            let ids: Vec<String> = calls.iter().map(|(id, _, _)| id.clone()).collect();
            let call_id = self.call_id(&ids);
            let tool = *self.prng.pick(&ALL_TOOLS);
            let path = self.path();
            let input = match tool {
                Tool::ListFiles => {
                    json!({"path": path.rsplit_once('/').map_or("", |(dir, _)| dir)})
                }
                Tool::ReadFile => json!({"path": path}),
                Tool::RunTests => {
                    json!({"command": "cargo test --workspace", "timeoutMs": 600_000})
                }
                Tool::Grep => json!({"pattern": pick_str(&mut self.prng, WORDS), "path": "."}),
                Tool::Diff => json!({"path": path, "patch": "@@ -1 +1 @@"}),
            };
            self.push(EventContent::ToolCall {
                call_id: call_id.clone(),
                tool_name: tool.name().to_owned(),
                input,
            });
            calls.push((call_id, tool, path));
        }
        self.response_id = None;
        for (call_id, tool, path) in calls {
            let size = output_size(&mut self.prng);
            let is_error = self.prng.chance(1, 10);
            let text = if is_error {
                self.error_text(tool, &path, size)
            } else {
                self.output(tool, &path, size)
            };
            self.push(EventContent::ToolResult {
                call_id: call_id.clone(),
                tool_name: tool.name().to_owned(),
                output: Value::String(text),
                is_error,
                attachments: Vec::new(),
            });
            if !self.answered.contains(&call_id) {
                self.answered.push(call_id);
            }
        }
    }

    fn error_text(&mut self, tool: Tool, path: &str, size: usize) -> String {
        let mut text = match tool {
            Tool::RunTests => {
                "error: test failed, to rerun pass `-p contextfold-core --lib`\n".to_owned()
            }
            Tool::ReadFile | Tool::Diff => {
                format!("error: {path}: No such file or directory (os error 2)\n")
            }
            Tool::ListFiles | Tool::Grep => {
                format!("error: permission denied while walking {path}\n")
            }
        };
        // Errors carry a backtrace or log tail of the drawn size.
        let mut frame = 0;
        while text.len() < size {
            frame += 1;
            let word = pick_str(&mut self.prng, WORDS);
            text.push_str(&format!(
                "  {frame:>3}: contextfold::{word}::handle at ./{path}:{}\n",
                1 + self.prng.below(900)
            ));
        }
        fit(text, size)
    }

    fn output(&mut self, tool: Tool, path: &str, size: usize) -> String {
        let mut text = String::new();
        let mut line = 0u64;
        while text.len() < size {
            line += 1;
            let word = pick_str(&mut self.prng, WORDS);
            let other = pick_str(&mut self.prng, WORDS);
            let piece = match tool {
                Tool::ListFiles => format!(
                    "-rw-r--r--  1 agent agent {:>8} Jan {:>2} 12:{:02} {word}_{other}_{line}.rs\n",
                    self.prng.below(90_000),
                    1 + self.prng.below(28),
                    self.prng.below(60)
                ),
                Tool::ReadFile => {
                    format!("{line:>6}\t    let {word} = self.{other}(&{word}_{line})?;\n")
                }
                Tool::RunTests => {
                    let verdict = if self.prng.chance(1, 25) { "FAILED" } else { "ok" };
                    format!("test {word}::tests::{other}_{line} ... {verdict}\n")
                }
                Tool::Grep => {
                    format!(
                        "{path}:{}:    {word}.{other}(seq, &{word}_buffer);\n",
                        1 + self.prng.below(2000)
                    )
                }
                Tool::Diff => {
                    if line % 8 == 1 {
                        format!("@@ -{line},7 +{line},8 @@ fn {word}_{other}() {{\n")
                    } else if self.prng.chance(1, 3) {
                        format!(
                            "-    let {word} = {other}(seq);\n+    let {word} = {other}(seq, budget)?;\n"
                        )
                    } else {
                        format!("     {word}.push({other});\n")
                    }
                }
            };
            text.push_str(&piece);
        }
        fit(text, size)
    }
}

/// `text` cut to exactly `size` bytes (all generated text is ASCII).
fn fit(mut text: String, size: usize) -> String {
    text.truncate(size);
    text
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;

    fn results(events: &[RuntimeEvent]) -> Vec<(&str, &Value, bool)> {
        events
            .iter()
            .filter_map(|e| match &e.content {
                EventContent::ToolResult { call_id, output, is_error, .. } => {
                    Some((call_id.as_str(), output, *is_error))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn same_seed_same_events_other_seed_other_events() {
        let spec = LongTurnSpec::new(42, 60).with_prior_turns(2);
        assert_eq!(long_turn_session(&spec), long_turn_session(&spec));
        assert_eq!(
            to_jsonl(&long_turn_session(&spec)),
            to_jsonl(&long_turn_session(&spec.clone()))
        );
        assert_ne!(long_turn_session(&spec), long_turn_session(&LongTurnSpec { seed: 43, ..spec }));
    }

    #[test]
    fn every_call_has_exactly_one_result_and_ids_are_reused_sometimes() {
        let mut reused_somewhere = false;
        for seed in 0..20 {
            let events = long_turn_session(&LongTurnSpec::new(seed, 80).with_prior_turns(1));
            let mut open = BTreeSet::new();
            let mut seen = BTreeMap::<&str, u32>::new();
            for event in &events {
                match &event.content {
                    EventContent::ToolCall { call_id, .. } => {
                        assert!(
                            open.insert(call_id.as_str()),
                            "seed {seed}: {call_id} called while open"
                        );
                        *seen.entry(call_id).or_default() += 1;
                    }
                    EventContent::ToolResult { call_id, .. } => {
                        assert!(
                            open.remove(call_id.as_str()),
                            "seed {seed}: result for {call_id} without call"
                        );
                    }
                    _ => {}
                }
            }
            assert!(open.is_empty(), "seed {seed}: unanswered {open:?}");
            reused_somewhere |= seen.values().any(|&n| n > 1);
        }
        assert!(reused_somewhere, "no call id was ever reused");
    }

    #[test]
    fn step_count_turn_and_ids() {
        for (steps, prior) in [(0, 0), (1, 0), (7, 3), (250, 0)] {
            let spec = LongTurnSpec::new(9, steps).with_prior_turns(prior);
            let events = long_turn_session(&spec);
            let task = spec.task_turn_id();
            assert_eq!(task, format!("turn-{}", prior + 1));
            let start = events.iter().position(|e| e.turn_id == task).unwrap_or(usize::MAX);
            assert!(matches!(events[start].content, EventContent::UserText { .. }));
            let tail = &events[start..];
            assert!(tail.iter().all(|e| e.turn_id == task));
            let responses: BTreeSet<_> =
                tail.iter().filter_map(|e| e.response_id.as_deref()).collect();
            assert_eq!(responses.len(), steps as usize);
            let user_texts =
                tail.iter().filter(|e| matches!(e.content, EventContent::UserText { .. })).count();
            assert_eq!(user_texts, 1);
            for (i, e) in events.iter().enumerate() {
                assert_eq!(e.seq, i as u64 + 1);
                assert_eq!(e.runtime_event_id, format!("evt-{}", i + 1));
            }
            assert!(contextfold_core::event::validate_log(&events).is_ok());
        }
        assert_eq!(long_turn_session(&LongTurnSpec::new(9, 1))[0].turn_id, "turn-1");
    }

    #[test]
    fn calls_per_step_between_one_and_four() {
        let events = long_turn_session(&LongTurnSpec::new(5, 200));
        let mut per_step = BTreeMap::<&str, usize>::new();
        for e in &events {
            if let (Some(rid), EventContent::ToolCall { .. }) =
                (e.response_id.as_deref(), &e.content)
            {
                *per_step.entry(rid).or_default() += 1;
            }
        }
        assert_eq!(per_step.len(), 200);
        assert!(per_step.values().all(|&n| (1..=4).contains(&n)));
        assert!(per_step.values().any(|&n| n == 4) && per_step.values().any(|&n| n == 1));
    }

    #[test]
    fn output_sizes_span_the_range_and_errors_are_about_ten_percent() {
        let events = long_turn_session(&LongTurnSpec::new(11, 400));
        let all = results(&events);
        let sizes: Vec<usize> =
            all.iter().map(|(_, output, _)| output.as_str().map_or(0, str::len)).collect();
        assert!(sizes.iter().all(|s| (MIN_OUTPUT_BYTES..=MAX_OUTPUT_BYTES).contains(s)));
        assert!(sizes.iter().any(|&s| s < 200), "no small output");
        assert!(sizes.iter().any(|&s| s > 100 * 1024), "no large output");
        // Log-uniform: about as many outputs below 4.5 KB (the geometric midpoint) as above.
        let below = sizes.iter().filter(|&&s| s < 4_525).count();
        assert!(
            below * 3 > sizes.len() && below * 3 < sizes.len() * 2,
            "{below} of {}",
            sizes.len()
        );
        let errors = all.iter().filter(|(_, _, e)| *e).count();
        assert!(
            errors * 20 > all.len() && errors * 20 < all.len() * 4,
            "{errors} of {}",
            all.len()
        );
    }

    #[test]
    fn output_size_bins_stay_in_range() {
        let mut prng = SplitMix64::new(1);
        for _ in 0..10_000 {
            let size = output_size(&mut prng);
            assert!((MIN_OUTPUT_BYTES..=MAX_OUTPUT_BYTES).contains(&size));
        }
    }

    #[test]
    fn jsonl_round_trips_through_the_core_parser() {
        let events = long_turn_session(&LongTurnSpec::new(3, 30).with_prior_turns(2));
        let parsed = RuntimeEvent::parse_jsonl(&to_jsonl(&events));
        assert_eq!(parsed.ok(), Some(events));
    }
}
