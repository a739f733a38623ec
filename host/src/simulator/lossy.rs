//! The lossy summarizer mode: with [`SimulatorConfig::lossy_keep_percent`] set, a summarizer
//! request (one whose messages carry contextfold's `<events>` or `<new_events>` transcript) is
//! answered with a valid template summary that keeps only a known share of the transcript's
//! exact artifacts, so a test can measure what the host does about the loss.
//!
//! The transcript is read back into events (one per entry, `[user]`, `[assistant]`, `[tool
//! call …]`, `[tool result …]`, hosted calls and results; notes carry no artifacts) and
//! [`extract_artifacts`] runs over them, exactly as the quality gate runs over the folded
//! events. Within each class, in the order extracted, artifact `i` (from 0) is kept when
//! `⌊(i+1)·p/100⌋ > ⌊i·p/100⌋`: `⌊n·p/100⌋` of `n`, spread evenly (every third or so at 30%).
//! Constraints go under Goal, plan lines under Next Steps, the rest under Critical Context,
//! one list item each; the fixed sentences around them contain no artifact.
//!
//! [`SimulatorConfig::lossy_keep_percent`]: super::SimulatorConfig::lossy_keep_percent

use contextfold_core::compaction::{Artifact, ArtifactClass, extract_artifacts};
use contextfold_core::{EventContent, LogBuilder, RuntimeEvent};
use serde_json::Value;

/// The opening tags of the transcript in a summarizer request (initial, rolling).
const TRANSCRIPT_TAGS: [(&str, &str); 2] =
    [("<events>\n", "\n</events>"), ("<new_events>\n", "\n</new_events>")];

/// A lossy summary and the artifacts it was built from.
#[derive(Debug, Clone, PartialEq)]
pub struct LossySummary {
    /// The summary text (the assistant's answer).
    pub text: String,
    /// The artifacts written into it.
    pub kept: Vec<Artifact>,
    /// The artifacts left out.
    pub dropped: Vec<Artifact>,
    /// How many artifacts of its transcript the request named as missing (0 unless it was a
    /// retention repair).
    pub repair_listed: usize,
}

/// The transcript of a summarizer request: the text inside `<events>` or `<new_events>` of
/// the first string of `request` that carries one; `None` for any other request.
pub fn transcript_of(request: &Value) -> Option<String> {
    match request {
        Value::String(text) => TRANSCRIPT_TAGS.iter().find_map(|(open, close)| {
            let start = text.find(open)? + open.len();
            let end = text.rfind(close)?;
            (end >= start).then(|| text[start..end].to_owned())
        }),
        Value::Array(items) => items.iter().find_map(transcript_of),
        Value::Object(map) => map.values().find_map(transcript_of),
        _ => None,
    }
}

/// The events a transcript renders, in order (ids and turns are stand-ins).
pub fn transcript_events(transcript: &str) -> Vec<RuntimeEvent> {
    let mut builder = LogBuilder::new("lossy");
    builder.turn("t");
    for (head, body) in split_entries(transcript) {
        if let Some(content) = entry_content(head, body) {
            builder.push(content);
        }
    }
    builder.build()
}

/// Whether artifact `index` of a class is kept at `keep_percent`.
pub fn is_kept(index: usize, keep_percent: u8) -> bool {
    let p = usize::from(keep_percent.min(100));
    (index + 1) * p / 100 > index * p / 100
}

/// The lossy mode's answer to a summarizer `request` (`None` for any other request). A
/// retention repair request, whose instructions list artifacts the first answer left out, is
/// answered like a model that follows them only in part: the first answer plus the same share
/// (`keep_percent`, spread as in [`is_kept`]) of the listed artifacts.
pub fn lossy_answer(request: &Value, keep_percent: u8) -> Option<LossySummary> {
    let transcript = transcript_of(request)?;
    let mut summary = lossy_summary(&transcript, keep_percent);
    let listed = repair_listing(request);
    if listed.is_empty() {
        return Some(summary);
    }
    let mut index = 0;
    let mut still_dropped = Vec::new();
    for artifact in std::mem::take(&mut summary.dropped) {
        let asked = listed.iter().any(|line| line == &artifact.text);
        if asked && is_kept(index, keep_percent) {
            summary.kept.push(artifact);
        } else {
            still_dropped.push(artifact);
        }
        index += usize::from(asked);
    }
    summary.dropped = still_dropped;
    summary.repair_listed = index;
    summary.text = render(&summary.kept, summary.kept.len() + summary.dropped.len(), &transcript);
    Some(summary)
}

/// The artifact texts a retention repair request lists (`- <class>: <text>` lines of its
/// instructions), or none.
fn repair_listing(request: &Value) -> Vec<String> {
    const OPENING: &str = "which the next model call needs:\n";
    const CLOSING: &str = "\nWrite the whole summary again";
    let mut strings = Vec::new();
    collect_strings(request, &mut strings);
    let Some(text) = strings.into_iter().find(|s| s.contains(OPENING)) else { return Vec::new() };
    let start = text.find(OPENING).map_or(0, |at| at + OPENING.len());
    let end = text[start..].find(CLOSING).map_or(text.len(), |at| start + at);
    text[start..end]
        .lines()
        .filter_map(|line| {
            let item = line.strip_prefix("- ")?;
            let (class, rest) = item.split_once(": ")?;
            ArtifactClass::ALL.iter().any(|c| c.name() == class).then(|| rest.to_owned())
        })
        .collect()
}

fn collect_strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(text) => out.push(text),
        Value::Array(items) => items.iter().for_each(|item| collect_strings(item, out)),
        Value::Object(map) => map.values().for_each(|item| collect_strings(item, out)),
        _ => {}
    }
}

/// The lossy summary of `transcript` keeping `keep_percent` percent of each class.
pub fn lossy_summary(transcript: &str, keep_percent: u8) -> LossySummary {
    let artifacts = extract_artifacts(&transcript_events(transcript));
    let (mut kept, mut dropped) = (Vec::new(), Vec::new());
    for class in ArtifactClass::ALL {
        let of_class = artifacts.iter().filter(|a| a.class == class);
        for (index, artifact) in of_class.enumerate() {
            let side = if is_kept(index, keep_percent) { &mut kept } else { &mut dropped };
            side.push(artifact.clone());
        }
    }
    let text = render(&kept, artifacts.len(), transcript);
    LossySummary { text, kept, dropped, repair_listed: 0 }
}

/// The template summary holding `kept` (of `total` artifacts of `transcript`).
fn render(kept: &[Artifact], total: usize, transcript: &str) -> String {
    let items = |classes: &[ArtifactClass]| -> String {
        kept.iter()
            .filter(|a| classes.contains(&a.class))
            .map(|a| format!("- {}\n", a.text))
            .collect()
    };
    format!(
        "## Goal\nContinue the task of the transcript; a lossy simulated summary keeps {} of \
         {total} exact artifacts.\n{}\n## Done and In Progress\nThe transcript had {} entries; \
         the work is in progress.\n\n## Key Decisions\nNone.\n\n## Next Steps\nContinue from \
         the last step.\n{}\n## Critical Context\n{}- End of the lossy simulated summary.\n",
        kept.len(),
        items(&[ArtifactClass::Constraint]),
        split_entries(transcript).len(),
        items(&[ArtifactClass::Plan]),
        items(&[
            ArtifactClass::Error,
            ArtifactClass::Command,
            ArtifactClass::Path,
            ArtifactClass::Identifier,
        ]),
    )
}

/// Splits a transcript into (head line, body) entries: an entry starts at a head line
/// (`[user]`, `[tool call c1] shell {…}`) after a blank line, or at the very start.
fn split_entries(transcript: &str) -> Vec<(&str, &str)> {
    let mut starts = vec![0];
    let mut at = 0;
    while let Some(found) = transcript[at..].find("\n\n[") {
        let start = at + found + 2;
        if entry_kind(line_at(transcript, start)).is_some() {
            starts.push(start);
        }
        at = start;
    }
    let mut entries = Vec::new();
    for (i, &start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).map_or(transcript.len(), |next| next - 2);
        let entry = &transcript[start..end];
        let head_end = entry.find('\n').unwrap_or(entry.len());
        let body = entry.get(head_end + 1..).unwrap_or("");
        entries.push((&entry[..head_end], body));
    }
    entries
}

fn line_at(text: &str, start: usize) -> &str {
    let rest = &text[start..];
    &rest[..rest.find('\n').unwrap_or(rest.len())]
}

/// The bracketed kind of a head line (`user`, `tool call c1`), if it is one.
fn entry_kind(head: &str) -> Option<&str> {
    let kind = head.strip_prefix('[')?.split(']').next()?;
    let known = ["user", "assistant", "system note"].contains(&kind)
        || ["tool call ", "tool result ", "hosted tool call ", "hosted tool result "]
            .iter()
            .chain(&["runtime note "])
            .any(|prefix| kind.starts_with(prefix));
    known.then_some(kind)
}

/// The event content of one entry; `None` for notes (they carry no artifacts).
fn entry_content(head: &str, body: &str) -> Option<EventContent> {
    let kind = entry_kind(head)?;
    let rest = head[kind.len() + 2..].trim_start();
    let call_id = |prefix: &str| kind[prefix.len()..].to_owned();
    let content = match kind {
        "user" => EventContent::UserText { text: body.to_owned(), attachments: Vec::new() },
        "assistant" => EventContent::AssistantText { text: body.to_owned() },
        _ if kind.starts_with("tool call ") || kind.starts_with("hosted tool call ") => {
            // `[tool call c1] name {json}`: the input is on the head line and may continue.
            let (tool_name, input) = rest.split_once(' ').unwrap_or((rest, "null"));
            let input = if body.is_empty() { input.to_owned() } else { format!("{input}\n{body}") };
            let input = serde_json::from_str(&input).unwrap_or(Value::String(input));
            let (tool_name, call_id) = (tool_name.to_owned(), call_id(kind_prefix(kind)));
            if kind.starts_with("hosted") {
                EventContent::HostedToolCall { call_id, tool_name, input }
            } else {
                EventContent::ToolCall { call_id, tool_name, input }
            }
        }
        _ if kind.starts_with("tool result ") || kind.starts_with("hosted tool result ") => {
            let name = rest.strip_suffix(':').unwrap_or(rest);
            let (tool_name, is_error) = match name.strip_suffix(" (error)") {
                Some(name) => (name.to_owned(), true),
                None => (name.to_owned(), false),
            };
            let (output, call_id) = (Value::String(body.to_owned()), call_id(kind_prefix(kind)));
            if kind.starts_with("hosted") {
                EventContent::HostedToolResult { call_id, tool_name, output, is_error }
            } else {
                let attachments = Vec::new();
                EventContent::ToolResult { call_id, tool_name, output, is_error, attachments }
            }
        }
        _ => return None,
    };
    Some(content)
}

/// The fixed prefix of a call or result kind (`tool call `, `hosted tool result `).
fn kind_prefix(kind: &str) -> &'static str {
    ["hosted tool call ", "hosted tool result ", "tool call ", "tool result "]
        .into_iter()
        .find(|prefix| kind.starts_with(prefix))
        .unwrap_or("")
}
