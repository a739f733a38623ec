//! The exact artifacts of a stretch of the log that the next model call may need: file paths,
//! commands as the agent issued them, error lines, identifiers, the task's constraint sentences
//! and the latest plan.
//!
//! Every artifact is a piece of the source, copied exactly (lines trimmed at their ends, never
//! inside), so "kept" can be checked by a plain substring test against a request. Extraction is
//! pure and deterministic; the same events give the same artifacts in the same order.
//!
//! What counts, per class:
//! - **Path**: a path-like token (`src/lib.rs`, `./x.py`, `/etc/hosts`, `setup.py`) that the user,
//!   the model or a tool call named, or that an error line carries. Paths that appear only in a
//!   tool's listing (a `find` output) are not artifacts: nobody referred to them.
//! - **Command**: the first line of a tool call's `command` / `cmd` / `script` argument, exactly
//!   as issued (one-word commands such as `submit` or an editor's `view` are skipped).
//! - **Error**: a line of a tool result that reads as an error message (`ValueError: …`,
//!   `error[E0308]: …`, `FAILED …`, `… FAILED`, `Traceback …`, `fatal: …`), or the first line of a result
//!   marked as failed. Numbered source listings are not errors.
//! - **Identifier**: a snake_case or camelCase name the model or a call used (`parse_empty`,
//!   `test_load_config`, `fromString`).
//! - **Constraint**: a sentence of a user message that says must, should, do not, don't, only,
//!   never or always.
//! - **Plan**: the lines of the newest plan: a todo/plan tool call's text, else the list items of
//!   the newest assistant message that has a list.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::event::{EventContent, RuntimeEvent};

/// Longest artifact text, in characters: a longer line is a payload, not an artifact.
pub(crate) const MAX_ARTIFACT_CHARS: usize = 300;

/// Words that make a user sentence a constraint.
const CONSTRAINT_CUES: &[&str] = &["must", "should", "do not", "don't", "only", "never", "always"];

/// File extensions that make a bare name (`setup.py`) a path.
const CODE_EXTENSIONS: &[&str] = &[
    "py", "rs", "js", "ts", "tsx", "jsx", "go", "c", "h", "cc", "cpp", "hpp", "java", "kt", "rb",
    "php", "cs", "swift", "md", "rst", "toml", "json", "yaml", "yml", "txt", "cfg", "ini", "sh",
    "pony", "lock", "html", "css", "sql", "xml",
];

/// What kind of thing an artifact is, in the order a summary keeps them when room is short.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ArtifactClass {
    /// A sentence of a user message that sets a rule.
    Constraint,
    /// A line of the newest plan or todo list.
    Plan,
    /// An error line of a tool result.
    Error,
    /// A command as the agent issued it.
    Command,
    /// A file path someone referred to.
    Path,
    /// A function, test or variable name the model used.
    Identifier,
}

impl ArtifactClass {
    /// Every class, in priority order.
    pub const ALL: [ArtifactClass; 6] = [
        ArtifactClass::Constraint,
        ArtifactClass::Plan,
        ArtifactClass::Error,
        ArtifactClass::Command,
        ArtifactClass::Path,
        ArtifactClass::Identifier,
    ];

    /// The class's stable snake_case name (reports, manifests, summaries).
    pub fn name(self) -> &'static str {
        match self {
            ArtifactClass::Constraint => "constraint",
            ArtifactClass::Plan => "plan",
            ArtifactClass::Error => "error",
            ArtifactClass::Command => "command",
            ArtifactClass::Path => "path",
            ArtifactClass::Identifier => "identifier",
        }
    }

    /// The class named `name` (the inverse of [`ArtifactClass::name`]).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|class| class.name() == name)
    }
}

/// One exact piece of the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    /// What kind of thing it is.
    pub class: ArtifactClass,
    /// Its exact text.
    pub text: String,
    /// Index (into the events it was extracted from) of its newest occurrence.
    pub last_seen: usize,
}

/// The artifacts of `events`, each once (at its newest occurrence), ordered by first
/// occurrence.
pub fn extract_artifacts(events: &[RuntimeEvent]) -> Vec<Artifact> {
    let mut found = Found::default();
    for (index, event) in events.iter().enumerate() {
        match &event.content {
            EventContent::UserText { text, .. } => {
                for sentence in constraint_sentences(text) {
                    found.add(ArtifactClass::Constraint, sentence, index);
                }
                found.paths(text, index);
            }
            EventContent::AssistantText { text } => {
                found.paths(text, index);
                found.identifiers(text, index);
            }
            EventContent::ToolCall { input, .. } | EventContent::HostedToolCall { input, .. } => {
                if let Some(command) = command_line(input) {
                    found.add(ArtifactClass::Command, command, index);
                }
                for_each_string(input, &mut |text| {
                    found.paths(text, index);
                    if let Some(first) = text.lines().next() {
                        found.identifiers(first, index);
                    }
                });
            }
            EventContent::ToolResult { output, is_error, .. }
            | EventContent::HostedToolResult { output, is_error, .. } => {
                let text = output_text(output);
                for line in error_lines(&text, *is_error) {
                    found.paths(line, index);
                    found.add(ArtifactClass::Error, line, index);
                }
            }
            EventContent::SystemNote { .. }
            | EventContent::RuntimeNote { .. }
            | EventContent::Reasoning { .. } => {}
        }
    }
    if let Some((index, lines)) = newest_plan(events) {
        for line in lines {
            found.add(ArtifactClass::Plan, line, index);
        }
    }
    found.artifacts
}

/// Artifacts in first-occurrence order, with an index for dedup.
#[derive(Default)]
struct Found {
    artifacts: Vec<Artifact>,
    positions: BTreeMap<(ArtifactClass, String), usize>,
}

impl Found {
    fn add(&mut self, class: ArtifactClass, text: &str, index: usize) {
        let text = text.trim();
        if text.is_empty() || text.chars().count() > MAX_ARTIFACT_CHARS {
            return;
        }
        match self.positions.get(&(class, text.to_owned())) {
            Some(&at) => self.artifacts[at].last_seen = index,
            None => {
                self.positions.insert((class, text.to_owned()), self.artifacts.len());
                self.artifacts.push(Artifact { class, text: text.to_owned(), last_seen: index });
            }
        }
    }

    fn paths(&mut self, text: &str, index: usize) {
        for path in path_tokens(text) {
            self.add(ArtifactClass::Path, path, index);
        }
    }

    fn identifiers(&mut self, text: &str, index: usize) {
        for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '/')) {
            if is_identifier(word) {
                self.add(ArtifactClass::Identifier, word, index);
            }
        }
    }
}

/// The text of a tool output: a string as is, anything else as compact JSON.
pub(crate) fn output_text(output: &Value) -> String {
    match output {
        Value::String(text) => text.clone(),
        other => crate::json_text::json_text(other),
    }
}

/// Calls `f` with every string inside `value`.
fn for_each_string<'a>(value: &'a Value, f: &mut impl FnMut(&'a str)) {
    match value {
        Value::String(text) => f(text),
        Value::Array(items) => items.iter().for_each(|item| for_each_string(item, f)),
        Value::Object(map) => map.values().for_each(|item| for_each_string(item, f)),
        _ => {}
    }
}

/// The command a tool call issued, whole: its `command` / `cmd` / `script` argument (an array
/// joined with spaces).
pub(crate) fn command_of(input: &Value) -> Option<String> {
    ["cmd", "command", "script"].iter().find_map(|key| match input.get(key)? {
        Value::String(command) => Some(command.clone()),
        Value::Array(parts) => Some(parts.iter().map(output_text).collect::<Vec<_>>().join(" ")),
        _ => None,
    })
}

/// The first non-empty line of the call's command, when it has more than one word.
fn command_line(input: &Value) -> Option<&str> {
    let command = ["cmd", "command", "script"].iter().find_map(|key| input.get(key)?.as_str())?;
    let line = command.lines().map(str::trim).find(|line| !line.is_empty())?;
    line.contains(char::is_whitespace).then_some(line)
}

/// The sentences of `text`, trimmed: split at line ends and at `.`/`!`/`?` followed by a space
/// or the end, so `setup.py` stays whole.
pub(crate) fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for line in text.lines() {
        let bytes = line.as_bytes();
        let mut start = 0;
        for (at, &byte) in bytes.iter().enumerate() {
            let ends = matches!(byte, b'.' | b'!' | b'?')
                && bytes.get(at + 1).is_none_or(|next| next.is_ascii_whitespace());
            if ends || at + 1 == bytes.len() {
                let sentence = line[start..=at].trim();
                if !sentence.is_empty() {
                    out.push(sentence);
                }
                start = at + 1;
            }
        }
    }
    out
}

/// The sentences of `text` that set a rule (see [`sentences`]).
pub(crate) fn constraint_sentences(text: &str) -> Vec<&str> {
    sentences(text).into_iter().filter(|sentence| is_constraint(sentence)).collect()
}

fn is_constraint(sentence: &str) -> bool {
    if sentence.len() < 8 || sentence.chars().count() > MAX_ARTIFACT_CHARS {
        return false;
    }
    let words: Vec<&str> = sentence
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .collect();
    let lower: Vec<String> = words.iter().map(|w| w.to_ascii_lowercase()).collect();
    CONSTRAINT_CUES.iter().any(|cue| {
        let cue_words: Vec<&str> = cue.split(' ').collect();
        lower.windows(cue_words.len()).enumerate().any(|(at, window)| {
            window.iter().zip(&cue_words).all(|(word, cue)| word == cue)
                && reads_as_rule(words[at], at)
        })
    })
}

/// Whether a cue word (`must`, `never`, ...) at word `at` of its sentence reads as a rule:
/// written in lower case, in capitals (`MUST`) or opening the sentence. A capitalized cue
/// inside a sentence is a title's word, as in a browsing agent's accessibility tree
/// (`[64] StaticText 'Back to Basics: Customers Must Loved'`).
fn reads_as_rule(word: &str, at: usize) -> bool {
    at == 0
        || !word.chars().any(|c| c.is_ascii_uppercase())
        || !word.chars().any(|c| c.is_ascii_lowercase())
}

/// The error lines of a tool result: lines that read as error messages; for a failed result
/// with none, its first non-empty line.
pub(crate) fn error_lines(text: &str, is_error: bool) -> Vec<&str> {
    let mut lines: Vec<&str> =
        text.lines().map(str::trim).filter(|line| is_error_line(line)).collect();
    if lines.is_empty()
        && is_error
        && let Some(first) = text.lines().map(str::trim).find(|line| !line.is_empty())
    {
        lines.push(first);
    }
    lines
}

/// Whether a trimmed line reads as an error message rather than source code or a listing.
fn is_error_line(line: &str) -> bool {
    if line.len() < 6 || line.chars().count() > MAX_ARTIFACT_CHARS {
        return false;
    }
    // `123:    raise ValueError(...)` and `123|...` are numbered listings of source.
    let numbered = line
        .split_once([':', '|'])
        .is_some_and(|(n, _)| !n.is_empty() && n.trim().chars().all(|c| c.is_ascii_digit()));
    if numbered || line.starts_with("raise ") || line.starts_with('#') || line.starts_with("//") {
        return false;
    }
    let head = line.split_once(':').map_or("", |(head, _)| head);
    let named_error = !head.contains(' ')
        && (head.ends_with("Error") || head.ends_with("Exception") || head.ends_with("Warning"));
    named_error
        || line.starts_with("Traceback (most recent call last)")
        || line.starts_with("error:")
        || line.starts_with("error[")
        || line.starts_with("fatal:")
        || line.starts_with("FAILED")
        || line.ends_with(" FAILED")
        || line.starts_with("assertion failed")
        || line.starts_with("ERROR")
        || line.starts_with("E   ")
        || line.contains("panicked at")
        || line.contains("No such file or directory")
        || line.contains("command not found")
        || line.contains(": error:")
}

/// Path-like tokens of `text`.
pub(crate) fn path_tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || "\"'`,;()[]{}<>=".contains(c))
        .map(|raw| raw.trim_end_matches([':', '.']))
        .filter(|token| is_path(token))
}

fn is_path(token: &str) -> bool {
    if token.len() < 4 || token.len() > 160 || token.contains("://") {
        return false;
    }
    if !token.chars().all(|c| c.is_alphanumeric() || "/._-~+@".contains(c)) {
        return false;
    }
    let name = token.rsplit('/').next().unwrap_or(token);
    let Some((stem, extension)) = name.rsplit_once('.') else { return false };
    if stem.is_empty() || extension.is_empty() {
        return false;
    }
    if token.contains('/') {
        name.len() > 2
    } else {
        CODE_EXTENSIONS.contains(&extension) && stem.chars().any(|c| c.is_ascii_alphabetic())
    }
}

fn is_identifier(word: &str) -> bool {
    if word.len() < 5 || word.len() > 80 || word.contains('/') {
        return false;
    }
    let first = word.chars().next().unwrap_or('0');
    if !(first.is_ascii_alphabetic() || first == '_') {
        return false;
    }
    let has_lower = word.chars().any(|c| c.is_ascii_lowercase());
    let snake = word.trim_matches('_').contains('_') && has_lower;
    let camel =
        word.as_bytes().windows(2).any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase());
    snake || camel
}

/// The newest plan: a todo/plan tool call's lines, or the list items of the newest assistant
/// message that has any.
fn newest_plan(events: &[RuntimeEvent]) -> Option<(usize, Vec<&str>)> {
    events.iter().enumerate().rev().find_map(|(index, event)| match &event.content {
        EventContent::ToolCall { tool_name, input, .. } => {
            let name = tool_name.to_ascii_lowercase();
            if !(name.contains("todo") || name.contains("plan")) {
                return None;
            }
            let mut lines = Vec::new();
            for_each_string(input, &mut |text| {
                lines.extend(text.lines().map(str::trim).filter(|l| l.len() >= 4));
            });
            (!lines.is_empty()).then_some((index, lines))
        }
        EventContent::AssistantText { text } => {
            let lines: Vec<&str> =
                text.lines().map(str::trim).filter(|l| is_list_item(l)).collect();
            (!lines.is_empty()).then_some((index, lines))
        }
        _ => None,
    })
}

fn is_list_item(line: &str) -> bool {
    if line.len() < 6 {
        return false;
    }
    let numbered = line.split_once(". ").is_some_and(|(n, _)| {
        !n.is_empty() && n.len() <= 2 && n.chars().all(|c| c.is_ascii_digit())
    });
    numbered
        || line.starts_with("- ")
        || line.starts_with("* ")
        || line.starts_with("[ ]")
        || line.starts_with("- [")
}
