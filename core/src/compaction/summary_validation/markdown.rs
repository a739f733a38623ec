//! The Markdown rules behind summary validation: the section outline, fences, placeholders,
//! truncation markers and error signs. Each rule is exact and deliberately conservative.

use serde_json::Value;

use super::sections;

/// Section bodies that carry no content (compared after normalization: trimmed, one list or
/// quote marker removed, `*`, `_` and `` ` `` removed at both ends, trailing `.` and `:`
/// removed, ASCII-lowercased). An empty normalized line is never substantive either.
pub(crate) const PLACEHOLDER_BODIES: &[&str] =
    &["tbd", "tba", "todo", "n/a", "na", "none", "…", "-", "—", "(empty)"];

/// Literal suffixes that mark a truncated text (after trailing whitespace is removed; the
/// bracketed ones compare case-insensitively).
pub(crate) const TRUNCATION_MARKERS: &[&str] =
    &["…", "...", "[truncated]", "(truncated)", "<truncated>"];

/// How each truncation rule is named in a defect detail: one entry per
/// [`TRUNCATION_MARKERS`] entry, then the unfinished heading and the dangling backslash.
pub(super) const TRUNCATION_DESCRIPTIONS: &[&str] = &[
    "the ellipsis `…`",
    "the ellipsis `...`",
    "the marker `[truncated]`",
    "the marker `(truncated)`",
    "the marker `<truncated>`",
    "an unfinished heading (a heading line with nothing after it)",
    "a dangling backslash in the middle of a word",
];

/// Prefixes of the first non-blank line (lowercased, `’` read as `'`) that mark an error or
/// refusal instead of a summary.
pub(crate) const ERROR_PREFIXES: &[&str] = &[
    "error:",
    "error ",
    "an error occurred",
    "i'm sorry",
    "i am sorry",
    "sorry, ",
    "i can't",
    "i cannot",
    "i'm unable",
    "i am unable",
    "as an ai",
    "request failed",
    "internal server error",
    "service unavailable",
    "bad gateway",
    "gateway timeout",
    "too many requests",
    "unauthorized",
    "traceback (most recent call last)",
];

/// Phrases (lowercased) anywhere in the text that mark a provider error.
pub(crate) const ERROR_PHRASES: &[&str] = &[
    "rate limit",
    "rate_limit",
    "too many requests",
    "quota exceeded",
    "insufficient_quota",
    "context_length_exceeded",
    "overloaded_error",
    "invalid_request_error",
];

/// One recognized section marker and the body lines under it.
#[derive(Debug)]
pub(super) struct Section<'a> {
    /// Index into [`SUMMARY_SECTIONS`](crate::compaction::summary_template::SUMMARY_SECTIONS).
    pub(super) section: usize,
    /// The marker's rank: heading level 1 to 3, or [`sections::LABEL_RANK`] for a label.
    pub(super) rank: u8,
    /// The normalized title it was written with (a canonical title or a synonym).
    pub(super) title: String,
    /// Body lines up to the next section marker: `(line, inside a code fence)`. The marker's
    /// inline content comes first; fence lines themselves are left out.
    pub(super) body: Vec<(&'a str, bool)>,
}

/// The structure of a summary text.
#[derive(Debug)]
pub(super) struct Outline<'a> {
    /// Section markers outside code fences that open a section, in text order.
    pub(super) sections: Vec<Section<'a>>,
    /// Number of fence lines (first non-blank characters are three backticks).
    pub(super) fence_lines: usize,
}

fn is_fence_line(line: &str) -> bool {
    line.trim_start().starts_with("```")
}

impl<'a> Outline<'a> {
    /// Splits `text` into template sections. A marker of a deeper rank than the current
    /// section's (`### Done` under `## Progress`, any label under a heading) is a subsection:
    /// its line is body text of the current section. Lines before the first section, and
    /// headings or labels of unknown titles, are not sections either (preamble or body text).
    pub(super) fn parse(text: &'a str) -> Self {
        let mut sections: Vec<Section<'a>> = Vec::new();
        let mut fence_lines = 0;
        let mut in_fence = false;
        for line in text.lines() {
            if is_fence_line(line) {
                fence_lines += 1;
                in_fence = !in_fence;
                continue;
            }
            if !in_fence
                && let Some(marker) = sections::section_marker(line)
                && sections.last().is_none_or(|current| marker.rank <= current.rank)
            {
                let body = if marker.inline.is_empty() {
                    Vec::new()
                } else {
                    vec![(marker.inline, false)]
                };
                sections.push(Section {
                    section: marker.section,
                    rank: marker.rank,
                    title: marker.title,
                    body,
                });
                continue;
            }
            if let Some(current) = sections.last_mut() {
                current.body.push((line, in_fence));
            }
        }
        Outline { sections, fence_lines }
    }
}

/// `line` without one leading list or quote marker (`- `, `* `, `+ `, `> `) and then one
/// leading number (`1.`, `2)`).
fn without_item_marker(line: &str) -> &str {
    let mut rest = line;
    for marker in ["- ", "* ", "+ ", "> "] {
        if let Some(stripped) = rest.strip_prefix(marker) {
            rest = stripped.trim_start();
            break;
        }
    }
    if let Some((number, stripped)) = rest.split_once(['.', ')'])
        && !number.is_empty()
        && number.chars().all(|c| c.is_ascii_digit())
        && stripped.starts_with(' ')
    {
        rest = stripped.trim_start();
    }
    rest
}

/// Whether a body line carries content. Inside a fence any line that is not blank or a
/// placeholder counts. Outside, after one list marker or number is removed, a heading does not
/// count, and a label (see [`sections::label_content`]) counts only by what follows it:
/// `**Done:**` and `In progress:` do not, `**Done:** TBD` is a placeholder.
pub(super) fn is_substantive(line: &(&str, bool)) -> bool {
    let (text, in_fence) = *line;
    let mut rest = without_item_marker(text.trim());
    if !in_fence {
        if let Some(content) = sections::label_content(rest) {
            rest = without_item_marker(content);
        } else if sections::heading(rest).is_some() {
            return false;
        }
    }
    let normalized = rest
        .trim_matches(|c| c == '*' || c == '_' || c == '`')
        .trim()
        .trim_end_matches(['.', ':'])
        .trim()
        .to_ascii_lowercase();
    !normalized.is_empty() && !PLACEHOLDER_BODIES.contains(&normalized.as_str())
}

/// The truncation rule the end of `text` matches, as a description for the defect detail.
///
/// After removing trailing whitespace, the text is truncated when it:
/// - ends with one of [`TRUNCATION_MARKERS`] (an ellipsis `…` or `...`, or `[truncated]`,
///   `(truncated)`, `<truncated>` in any case); a `...` anywhere else is fine;
/// - has as its last line a heading, so nothing follows it: one to six `#` followed by a
///   space or by nothing (`## Next Steps`, `##`; `#tag` is not a heading). A section heading
///   with content after its title's colon (`## Critical Context: see the log`) has a body;
/// - ends with an odd run of backslashes directly after a letter or digit (`foo\`: an escape
///   cut mid-word). `C:\dir\\` (even run) and `a \` (after a space) are not matched.
pub(super) fn trailing_truncation_marker(text: &str) -> Option<&'static str> {
    let end = text.trim_end();
    let lowered = end.to_ascii_lowercase();
    for (index, marker) in TRUNCATION_MARKERS.iter().enumerate() {
        if lowered.ends_with(marker) {
            return Some(TRUNCATION_DESCRIPTIONS[index]);
        }
    }
    let last_line = end.lines().last().unwrap_or("").trim();
    let hashes = last_line.len() - last_line.trim_start_matches('#').len();
    let after_hashes = &last_line[hashes..];
    let inline_body = sections::section_marker(last_line).is_some_and(|m| !m.inline.is_empty());
    if (1..=6).contains(&hashes)
        && (after_hashes.is_empty() || after_hashes.starts_with(' '))
        && !inline_body
    {
        return Some(TRUNCATION_DESCRIPTIONS[TRUNCATION_MARKERS.len()]);
    }
    let backslashes = end.len() - end.trim_end_matches('\\').len();
    let before = end.trim_end_matches('\\').chars().next_back();
    if backslashes % 2 == 1 && before.is_some_and(char::is_alphanumeric) {
        return Some(TRUNCATION_DESCRIPTIONS[TRUNCATION_MARKERS.len() + 1]);
    }
    None
}

/// What made a headingless text look like an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ErrorSign {
    /// The whole text is a JSON object with an `error` key or `"type": "error"`.
    JsonError,
    /// The first non-blank line starts with this [`ERROR_PREFIXES`] entry.
    Prefix(&'static str),
    /// The text contains this [`ERROR_PHRASES`] entry.
    Phrase(&'static str),
}

/// Error signs of a text, checked in the order of [`ErrorSign`]'s variants.
pub(super) fn error_sign(text: &str) -> Option<ErrorSign> {
    let trimmed = text.trim();
    if trimmed.starts_with('{')
        && let Ok(Value::Object(object)) = crate::json_read::text::value_from_text(trimmed)
        && (object.contains_key("error") || object.get("type") == Some(&Value::from("error")))
    {
        return Some(ErrorSign::JsonError);
    }
    let lowered = trimmed.to_ascii_lowercase().replace('\u{2019}', "'");
    let first_line = lowered.lines().next().unwrap_or("").trim_start_matches(['*', '#', ' ']);
    if let Some(prefix) = ERROR_PREFIXES.iter().find(|prefix| first_line.starts_with(*prefix)) {
        return Some(ErrorSign::Prefix(prefix));
    }
    ERROR_PHRASES.iter().find(|phrase| lowered.contains(*phrase)).map(|p| ErrorSign::Phrase(p))
}
