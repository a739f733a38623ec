//! The offline extractive summarizer: the embedded default compactor (no key, no network).
//!
//! It does not paraphrase. It copies the user's own words into Goal, lists tool calls with the
//! first line of each result under Done and In Progress, and collects exact paths, commands and
//! error lines into Critical Context, in the same section template the LLM summarizer is held
//! to. It is pure and deterministic: the same fold gives the same bytes. Every summary it writes
//! says it is extractive, and checkpoints record `produced_by: "extractive"`.

use crate::json_text::json_text;
use std::collections::BTreeSet;

use serde_json::Value;

use crate::budget::{CharEstimator, PieceEstimator, TokenEstimator};
use crate::event::{EventContent, RuntimeEvent};

/// `produced_by` value of checkpoints written from extractive summaries.
pub const EXTRACTIVE_PRODUCER: &str = "extractive";

const MAX_ITEMS_PER_SECTION: usize = 40;
const MAX_GOAL_ITEMS: usize = 8;
const MAX_QUOTE_CHARS: usize = 400;
const MAX_RESULT_LINE_CHARS: usize = 200;
const LARGE_RESULT_BYTES: usize = 1_000;
const MAX_EXCERPT_CHARS: usize = 800;

/// Writes a structured summary of `fold`, merged into `previous_summary` for a rolling update,
/// within about `target_tokens` (oldest list items are dropped first; every section keeps at
/// least its newest item). The target is met under both built-in estimators, so the summary
/// fits whichever one the runtime measuring it uses.
pub fn extractive_summary(
    previous_summary: Option<&str>,
    fold: &[RuntimeEvent],
    target_tokens: u64,
) -> String {
    let previous = previous_summary.map(parse_sections).unwrap_or_default();
    let facts = Facts::collect(fold);
    let next = match facts.goals.last().or(previous.goal.last()) {
        Some(last) => vec![format!("- Continue from the latest request: {}", strip_bullet(last))],
        None => vec![],
    };
    let mut sections = [
        (
            "Goal",
            goal_items(&previous.goal, &facts.goals),
            "- (no user request in the covered events)",
        ),
        (
            "Done and In Progress",
            merge(&previous.done, &facts.done, MAX_ITEMS_PER_SECTION),
            "- No tool calls in the covered events.",
        ),
        ("Key Decisions", merge(&previous.decisions, &facts.decisions, 12), "None."),
        ("Next Steps", next, "- Continue from the raw recent history."),
        (
            "Critical Context",
            merge(&previous.critical, &facts.critical, MAX_ITEMS_PER_SECTION),
            "- No paths, commands or errors recorded.",
        ),
    ];
    let mut shorten_to = SHORTENED_ITEM_CHARS.iter();
    loop {
        let text = render(&sections);
        if fits_target(&text, target_tokens) {
            return text;
        }
        // Drop the oldest item of the longest droppable section.
        let longest = sections
            .iter_mut()
            .filter(|(title, items, _)| items.len() > 1 + usize::from(*title == "Goal"))
            .max_by_key(|(_, items, _)| items.iter().map(String::len).sum::<usize>());
        match longest {
            Some((title, items, _)) => {
                // Keep the original request (first Goal item); drop the next oldest instead.
                let oldest = usize::from(*title == "Goal");
                items.remove(oldest);
            }
            // Nothing left to drop: shorten the items that remain, in a few bounded rounds (a
            // small target is what a tight window leaves beside the task and the raw tail).
            None => match shorten_to.next() {
                Some(&limit) => {
                    for (_, items, _) in sections.iter_mut() {
                        for item in items.iter_mut() {
                            shorten(item, limit);
                        }
                    }
                }
                None => return text,
            },
        }
    }
}

/// Whether `text` is within `target_tokens` by the larger of the characters and the pieces
/// estimate (the cheap one first).
fn fits_target(text: &str, target_tokens: u64) -> bool {
    CharEstimator.estimate_text(text) <= target_tokens
        && PieceEstimator.estimate_text(text) <= target_tokens
}

/// Item lengths, in characters, that the last rounds of fitting shorten every item to.
const SHORTENED_ITEM_CHARS: &[usize] = &[200, 120, 60];

/// Cuts `item` to at most `limit` characters, marking the cut as `(shortened)` (never an
/// ellipsis, which would read as a truncated summary).
fn shorten(item: &mut String, limit: usize) {
    if item.chars().count() > limit {
        let cut: String = item.chars().take(limit).collect();
        *item = format!("{} (shortened)", cut.trim_end());
    }
}

/// The session's original request always stays first (a summary must never lose the task),
/// followed by the newest requests.
fn goal_items(previous: &[String], new: &[String]) -> Vec<String> {
    let all = merge(previous, new, usize::MAX);
    match all.split_first() {
        Some((original, rest)) if rest.len() > MAX_GOAL_ITEMS - 1 => {
            let mut items = vec![original.clone()];
            items.extend_from_slice(&rest[rest.len() - (MAX_GOAL_ITEMS - 1)..]);
            items
        }
        _ => all,
    }
}

fn render(sections: &[(&str, Vec<String>, &str)]) -> String {
    let mut out =
        String::from("(extractive summary: copied from the event log, not paraphrased)\n");
    for (title, items, empty) in sections {
        section(&mut out, title, items, empty);
    }
    out
}

#[derive(Debug, Default)]
struct Sections {
    goal: Vec<String>,
    done: Vec<String>,
    decisions: Vec<String>,
    critical: Vec<String>,
}

fn parse_sections(summary: &str) -> Sections {
    let mut sections = Sections::default();
    let mut target: Option<&mut Vec<String>> = None;
    for line in summary.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            target = match heading.trim() {
                "Goal" => Some(&mut sections.goal),
                "Done and In Progress" => Some(&mut sections.done),
                "Key Decisions" => Some(&mut sections.decisions),
                "Critical Context" => Some(&mut sections.critical),
                _ => None,
            };
        } else if line.starts_with("- ")
            && let Some(items) = target.as_deref_mut()
        {
            items.push(line.to_owned());
        }
    }
    sections
}

#[derive(Debug, Default)]
struct Facts {
    goals: Vec<String>,
    done: Vec<String>,
    decisions: Vec<String>,
    critical: Vec<String>,
}

impl Facts {
    fn collect(fold: &[RuntimeEvent]) -> Self {
        let mut facts = Facts::default();
        let mut critical = BTreeSet::new();
        for (index, event) in fold.iter().enumerate() {
            match &event.content {
                EventContent::UserText { text, attachments } => {
                    let mut goal = format!("- User: \"{}\"", clip(text, MAX_QUOTE_CHARS));
                    for attachment in attachments {
                        goal.push_str(&format!(" {}", attachment.stand_in(&event.session_id)));
                    }
                    facts.goals.push(goal);
                    collect_paths(text, &mut critical);
                }
                EventContent::AssistantText { text } => {
                    for sentence in text.split_inclusive(['.', '\n']) {
                        let lower = sentence.to_ascii_lowercase();
                        if ["decided", "instead", "we will", "i will", "chose", "going with"]
                            .iter()
                            .any(|cue| lower.contains(cue))
                        {
                            facts.decisions.push(format!("- {}", clip(sentence.trim(), 240)));
                        }
                    }
                    collect_paths(text, &mut critical);
                }
                EventContent::ToolCall { call_id, tool_name, input }
                | EventContent::HostedToolCall { call_id, tool_name, input } => {
                    let result =
                        fold[index + 1..].iter().find_map(|e| match &e.content {
                            EventContent::ToolResult { call_id: c, output, is_error, .. }
                            | EventContent::HostedToolResult {
                                call_id: c, output, is_error, ..
                            } if c == call_id => Some((output, *is_error)),
                            _ => None,
                        });
                    let args = clip(&compact_json(input), 160);
                    let outcome = match result {
                        Some((output, false)) => format!("ok: {}", first_line(output)),
                        Some((output, true)) => format!("FAILED: {}", first_line(output)),
                        None => "no result recorded".to_owned(),
                    };
                    facts.done.push(format!("- `{tool_name}` {args} → {outcome}"));
                    if let Some(command) = command_of(input) {
                        critical.insert(format!("- command: `{}`", clip(&command, 240)));
                    }
                    collect_paths(&compact_json(input), &mut critical);
                }
                EventContent::ToolResult { tool_name, output, is_error, .. }
                | EventContent::HostedToolResult { tool_name, output, is_error, .. } => {
                    let text = value_text(output);
                    if text.len() > LARGE_RESULT_BYTES {
                        critical.insert(format!(
                            "- result excerpt from `{tool_name}`: {}",
                            clip(&text, MAX_EXCERPT_CHARS)
                        ));
                    }
                    for line in text.lines().filter(|l| is_error_line(l) || *is_error).take(3) {
                        critical.insert(format!(
                            "- error from `{tool_name}`: {}",
                            clip(line.trim(), 240)
                        ));
                    }
                    collect_paths(&text, &mut critical);
                }
                EventContent::SystemNote { text } | EventContent::RuntimeNote { text, .. } => {
                    facts.decisions.push(format!("- Note: {}", clip(text, 240)));
                }
                EventContent::Reasoning { .. } => {}
            }
        }
        facts.critical = critical.into_iter().collect();
        facts
    }
}

fn section(out: &mut String, title: &str, items: &[String], empty: &str) {
    out.push_str("\n## ");
    out.push_str(title);
    out.push('\n');
    if items.is_empty() {
        out.push_str(empty);
        out.push('\n');
    }
    for item in items {
        out.push_str(item);
        out.push('\n');
    }
}

/// Previous items then new ones, without duplicates, keeping the newest `limit`.
fn merge(previous: &[String], new: &[String], limit: usize) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let all: Vec<String> =
        previous.iter().chain(new).filter(|item| seen.insert(item.as_str())).cloned().collect();
    let skip = all.len().saturating_sub(limit);
    all.into_iter().skip(skip).collect()
}

fn strip_bullet(item: &str) -> &str {
    item.strip_prefix("- ").unwrap_or(item)
}

fn clip(text: &str, max_chars: usize) -> String {
    let single: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match single.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{} [+{} chars]", &single[..cut], single[cut..].chars().count()),
        None => single,
    }
}

fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => json_text(other),
    }
}

fn compact_json(value: &Value) -> String {
    json_text(value)
}

fn first_line(value: &Value) -> String {
    let text = value_text(value);
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("(empty)");
    let more = text.lines().count().saturating_sub(1);
    let clipped = clip(line, MAX_RESULT_LINE_CHARS);
    if more > 0 { format!("{clipped} (+{more} lines)") } else { clipped }
}

fn command_of(input: &Value) -> Option<String> {
    ["cmd", "command", "script"].iter().find_map(|key| match input.get(key)? {
        Value::String(command) => Some(command.clone()),
        Value::Array(parts) => Some(parts.iter().map(value_text).collect::<Vec<_>>().join(" ")),
        _ => None,
    })
}

fn is_error_line(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    ["error", "failed", "panicked", "exception", "traceback"].iter().any(|cue| lower.contains(cue))
}

/// Adds path-like tokens (`src/lib.rs`, `./x.py`, `/etc/hosts`) to `out`.
fn collect_paths(text: &str, out: &mut BTreeSet<String>) {
    for raw in text.split(|c: char| c.is_whitespace() || "\"'`,;()[]{}<>=".contains(c)) {
        let token = raw.trim_end_matches([':', '.']);
        let looks_like_path = token.contains('/')
            && token.len() <= 160
            && !token.contains("://")
            && token.rsplit('/').next().is_some_and(|name| name.contains('.') && name.len() > 2)
            && token.chars().all(|c| c.is_alphanumeric() || "/._-~+@".contains(c));
        if looks_like_path && out.len() < MAX_ITEMS_PER_SECTION * 2 {
            out.insert(format!("- path: `{token}`"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LogBuilder;
    use serde_json::json;

    fn fold() -> Vec<RuntimeEvent> {
        let mut log = LogBuilder::new("s");
        log.turn("t1").user("Fix the failing test in src/parser.rs please");
        log.tool_call("c1", "shell", json!({"cmd": "cargo test -p parser"}));
        log.tool_result("c1", "shell", json!("running 3 tests\nerror: test parse_empty failed\n"));
        log.assistant("I decided to handle the empty input in parse() instead of the caller.");
        log.build()
    }

    #[test]
    fn sections_carry_exact_words_paths_commands_and_errors() {
        let summary = extractive_summary(None, &fold(), 4_000);
        assert!(summary.starts_with("(extractive summary"));
        assert!(summary.contains("- User: \"Fix the failing test in src/parser.rs please\""));
        assert!(summary.contains("- command: `cargo test -p parser`"));
        assert!(summary.contains("- path: `src/parser.rs`"));
        assert!(summary.contains("error from `shell`: error: test parse_empty failed"));
        assert!(summary.contains("→ ok: running 3 tests (+1 lines)"));
        assert!(summary.contains("## Key Decisions\n- I decided to handle"));
        let order = [
            "## Goal",
            "## Done and In Progress",
            "## Key Decisions",
            "## Next Steps",
            "## Critical Context",
        ];
        let positions: Vec<usize> = order.iter().map(|h| summary.find(h).expect(h)).collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn rolling_update_keeps_previous_items_and_is_deterministic() {
        let first = extractive_summary(None, &fold(), 4_000);
        let mut log = LogBuilder::extend(fold());
        log.turn("t2").user("Now run clippy");
        let events = log.build();
        let second = extractive_summary(Some(&first), &events[4..], 4_000);
        assert!(second.contains("src/parser.rs"));
        assert!(second.contains("Now run clippy"));
        assert_eq!(second, extractive_summary(Some(&first), &events[4..], 4_000));
    }

    #[test]
    fn summary_stays_within_its_target() {
        let mut log = LogBuilder::new("s");
        for turn in 0..60 {
            log.turn(&format!("t{turn}")).user(&format!("request {turn} about src/m{turn}.rs"));
            log.tool_call("c", "shell", json!({"cmd": format!("cargo test m{turn}")}));
            log.tool_result(
                "c",
                "shell",
                json!(format!("error: m{turn} failed\n{}", "x".repeat(2_000))),
            );
        }
        let events = log.build();
        let big = extractive_summary(None, &events, 100_000);
        let small = extractive_summary(None, &events, 1_000);
        assert!(CharEstimator.estimate_text(&big) > 1_000);
        assert!(CharEstimator.estimate_text(&small) <= 1_000);
        assert!(small.contains("request 59"), "newest items are kept");
        assert!(small.contains("User: \"request 0 about"), "the original task is never dropped");
        assert!(!small.contains("request 1 "), "oldest items go first");
    }

    #[test]
    fn clip_marks_what_it_cut() {
        assert_eq!(clip("a  b\nc", 10), "a b c");
        assert_eq!(clip("abcdef", 3), "abc [+3 chars]");
    }
}
