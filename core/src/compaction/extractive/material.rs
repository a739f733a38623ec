//! What an extractive summary is made of: the task, later requests, one line per tool call,
//! decisions, notes and the exact artifacts, read from the folded events or from the previous
//! summary a rolling update carries forward.

use serde_json::Value;

use crate::event::{EventContent, RuntimeEvent};
use crate::quality::artifacts::{command_of, error_lines, output_text, sentences};
use crate::quality::{ArtifactClass, extract_artifacts};

/// Longest first line of a tool result quoted under Done, in characters.
const MAX_OUTCOME_CHARS: usize = 200;
/// Longest string argument shown whole under Done, in characters.
const MAX_ARGUMENT_CHARS: usize = 200;

/// A tool result longer than this many bytes keeps the opening of its lines, quoted only to
/// bring a summary of a large fold up to its floor (`extractive::pad_to_floor`).
const LARGE_RESULT_BYTES: usize = 1_000;
/// Longest opening kept of a large result, in characters (a summary's floor is a few hundred
/// tokens, so this is more than one opening is ever cut to).
const MAX_OPENING_CHARS: usize = 2_000;

/// Cues of assistant sentences that record a decision.
const DECISION_CUES: &[&str] = &["decided", "instead", "we will", "i will", "chose", "going with"];

/// Cues of a first output line that says the tool refused the action.
const REJECTION_CUES: &[&str] = &[
    "rejected",
    "was not applied",
    "no replacement was performed",
    "your proposed edit has introduced",
    "permission denied",
    "refused",
];

/// A user message as a summary quotes it: trimmed at the ends, its attachments named by their
/// stand-ins.
pub(super) fn user_text(event: &RuntimeEvent) -> Option<String> {
    let EventContent::UserText { text, attachments } = &event.content else { return None };
    let mut text = text.trim().to_owned();
    for attachment in attachments {
        text.push_str(&format!(" {}", attachment.stand_in(&event.session_id)));
    }
    Some(text)
}

/// The session's task: the first user message, whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Task {
    /// Where it is in the log (`runtimeEventId`).
    pub(super) event_id: String,
    /// Its exact text, attachments named by their stand-ins.
    pub(super) text: String,
}

/// Everything a summary may quote, oldest first within each list.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Material {
    pub(super) task: Option<Task>,
    /// Later user messages, exact (trimmed at the ends).
    pub(super) requests: Vec<String>,
    /// One line per tool call: the call as issued and what came of it.
    pub(super) done: Vec<String>,
    pub(super) decisions: Vec<String>,
    pub(super) notes: Vec<String>,
    /// How large tool results began: their first non-empty lines, each exact, joined by
    /// ` | `, after the tool's name and the result's size.
    pub(super) openings: Vec<String>,
    /// The newest plan's lines.
    pub(super) plan: Vec<String>,
    /// Exact artifacts (plan excluded), newest last.
    pub(super) artifacts: Vec<(ArtifactClass, String)>,
    /// `runtimeEventId` of the first and last folded event.
    pub(super) span: Option<(String, String)>,
}

impl Material {
    /// Reads `fold`.
    pub(super) fn from_fold(fold: &[RuntimeEvent]) -> Self {
        let mut material = Material {
            span: fold
                .first()
                .zip(fold.last())
                .map(|(a, b)| (a.runtime_event_id.clone(), b.runtime_event_id.clone())),
            ..Material::default()
        };
        for (index, event) in fold.iter().enumerate() {
            match &event.content {
                EventContent::UserText { .. } => {
                    let text = user_text(event).unwrap_or_default();
                    match material.task {
                        None => {
                            material.task =
                                Some(Task { event_id: event.runtime_event_id.clone(), text });
                        }
                        Some(_) => material.requests.push(text),
                    }
                }
                EventContent::AssistantText { text } => {
                    for sentence in sentences(text) {
                        let lower = sentence.to_ascii_lowercase();
                        if DECISION_CUES.iter().any(|cue| lower.contains(cue)) {
                            material.decisions.push(sentence.to_owned());
                        }
                    }
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
                    material.done.push(format!(
                        "`{tool_name}` {} → {}",
                        call_text(input),
                        outcome(result)
                    ));
                }
                EventContent::SystemNote { text } | EventContent::RuntimeNote { text, .. } => {
                    if let Some(first) = text.lines().map(str::trim).find(|l| !l.is_empty()) {
                        material.notes.push(format!("Note: {}", cut(first, MAX_OUTCOME_CHARS)));
                    }
                }
                EventContent::ToolResult { tool_name, output, .. }
                | EventContent::HostedToolResult { tool_name, output, .. } => {
                    // A string output is read in place: most results are, and most are long.
                    let text = match output {
                        Value::String(text) => std::borrow::Cow::Borrowed(text.as_str()),
                        other => std::borrow::Cow::Owned(output_text(other)),
                    };
                    if text.len() > LARGE_RESULT_BYTES {
                        let mut lines = text.lines().map(str::trim_end).filter(|l| !l.is_empty());
                        let mut begins = lines.next().unwrap_or_default().to_owned();
                        for line in lines {
                            if begins.len() >= MAX_OPENING_CHARS * 4 {
                                break;
                            }
                            begins.push_str(" | ");
                            begins.push_str(line);
                        }
                        let begins = cut(&begins, MAX_OPENING_CHARS);
                        let bytes = text.len();
                        material
                            .openings
                            .push(format!("`{tool_name}` result ({bytes} bytes) begins: {begins}"));
                    }
                }
                EventContent::Reasoning { .. } => {}
            }
        }
        let mut artifacts = extract_artifacts(fold);
        crate::sort::sort_by_key(&mut artifacts, |a| a.last_seen);
        for artifact in artifacts {
            match artifact.class {
                ArtifactClass::Plan => material.plan.push(artifact.text),
                class => material.artifacts.push((class, artifact.text)),
            }
        }
        material
    }

    /// `self` rolled forward by `newer`: the older task stays the task (a task the older
    /// summary only pointed at takes its text from `newer`), lists append, the newer plan
    /// replaces the older one, and a repeated item keeps its newest place.
    pub(super) fn then(self, newer: Material) -> Material {
        let mut requests = self.requests;
        let task = match (self.task, newer.task) {
            (Some(task), Some(next)) if task.text.is_empty() || task.text == next.text => {
                Some(Task { event_id: task.event_id, text: next.text })
            }
            (Some(task), Some(next)) => {
                requests.push(next.text);
                Some(task)
            }
            (task, next) => task.or(next),
        };
        requests.extend(newer.requests);
        Material {
            task,
            requests: newest_place(requests),
            done: newest_place([self.done, newer.done].concat()),
            decisions: newest_place([self.decisions, newer.decisions].concat()),
            notes: newest_place([self.notes, newer.notes].concat()),
            openings: newest_place([self.openings, newer.openings].concat()),
            plan: if newer.plan.is_empty() { self.plan } else { newer.plan },
            artifacts: newest_place([self.artifacts, newer.artifacts].concat()),
            span: match (self.span, newer.span) {
                (Some((first, _)), Some((_, last))) => Some((first, last)),
                (a, b) => b.or(a),
            },
        }
    }
}

/// `items` with each repeated item kept only at its last place.
fn newest_place<T: PartialEq + Clone>(items: Vec<T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(items.len());
    for (at, item) in items.iter().enumerate() {
        if !items[at + 1..].contains(item) {
            out.push(item.clone());
        }
    }
    out
}

/// A tool call as issued: its command's first line exactly, else its short arguments as
/// `key=value` (a long or multi-line value is named by its size).
fn call_text(input: &Value) -> String {
    if let Some(command) = command_of(input) {
        let mut lines = command.lines().map(str::trim_end).filter(|l| !l.trim().is_empty());
        let first = lines.next().unwrap_or("").trim_start().to_owned();
        let more = lines.count();
        let mut text = first;
        // Other short arguments (an editor's `path`) say what the command acted on.
        if let Value::Object(map) = input {
            for (key, value) in map {
                if !["cmd", "command", "script"].contains(&key.as_str()) {
                    text.push_str(&format!(" {}", argument(key, value)));
                }
            }
        }
        if more > 0 {
            text.push_str(&format!(" (+{more} lines)"));
        }
        return text;
    }
    match input {
        Value::Object(map) => {
            map.iter().map(|(key, value)| argument(key, value)).collect::<Vec<_>>().join(" ")
        }
        other => cut(&output_text(other), MAX_ARGUMENT_CHARS),
    }
}

fn argument(key: &str, value: &Value) -> String {
    let text = output_text(value);
    let lines = text.lines().count();
    if lines > 1 {
        format!("{key}=<{lines} lines>")
    } else if text.chars().count() > MAX_ARGUMENT_CHARS {
        format!("{key}=<{} chars>", text.chars().count())
    } else {
        format!("{key}={text}")
    }
}

/// What came of a call, named for what it was: `error:` with its first error line,
/// `rejected:`, or `ok:` with the first line of the result.
fn outcome(result: Option<(&Value, bool)>) -> String {
    let Some((output, is_error)) = result else { return "no result recorded".to_owned() };
    let text = output_text(output);
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("(empty)");
    let more = lines.count();
    let more = if more > 0 { format!(" (+{more} lines)") } else { String::new() };
    let lower = first.to_ascii_lowercase();
    if let Some(error) = error_lines(&text, is_error).first() {
        format!("error: {}{more}", cut(error, MAX_OUTCOME_CHARS))
    } else if REJECTION_CUES.iter().any(|cue| lower.contains(cue)) {
        format!("rejected: {}{more}", cut(first, MAX_OUTCOME_CHARS))
    } else {
        format!("ok: {}{more}", cut(first, MAX_OUTCOME_CHARS))
    }
}

/// `text` cut to `max_chars`, the cut named by how much it left out (never an ellipsis, which
/// reads as a truncated summary).
pub(super) fn cut(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => {
            format!("{} [+{} chars]", text[..at].trim_end(), text[at..].chars().count())
        }
        None => text.to_owned(),
    }
}
