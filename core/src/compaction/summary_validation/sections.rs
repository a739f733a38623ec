//! Which lines of a summary open a template section: the synonym table, the title
//! normalization and the three marker shapes (heading, bold line, bare label).
//!
//! A line is a *section marker* when, outside a code fence, it is one of:
//!
//! - a heading of level 1 to 3 (`#`, `##`, `###` then a space) whose text is a known title,
//!   optionally followed by `:` and, after the colon, inline content (`## Goal: fix the lexer`);
//! - a bold line (`**Goal**`, `**Goal:**`, `**Goal**:`, `__Goal__`) whose text is a known title,
//!   optionally followed (after the colon) by inline content (`**Goal:** fix the lexer`);
//! - a bare label: a known title followed by `:` and nothing else on the line (`Goal:`). A
//!   `Word: text` line is ordinary body text, and so is a bare label of an unknown title.
//!
//! A *known title* is a canonical title of [`SUMMARY_SECTIONS`] or one of its
//! [`SECTION_SYNONYMS`], compared after [`normalize_title`]. Headings of level 4 to 6, list
//! items (`- **Goal:** …`) and quoted lines never open a section.

use crate::compaction::summary_template::SUMMARY_SECTIONS;

/// The titles the validator accepts for one template section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionSynonyms {
    /// The canonical title, exactly as in [`SUMMARY_SECTIONS`] (the one the prompt asks for).
    pub title: &'static str,
    /// Other titles that name the same section, compared like the canonical title.
    pub synonyms: &'static [&'static str],
}

/// Accepted titles for each template section, in [`SUMMARY_SECTIONS`] order. A title in a
/// summary is compared case-insensitively after surrounding punctuation and emphasis, a
/// leading number (`1.`) and repeated whitespace are removed and `&` is read as `and`; so
/// every entry here is written in that form (single spaces, `and`, no punctuation around it;
/// unit tests check this, the alignment with [`SUMMARY_SECTIONS`] and that no title is listed
/// twice).
pub const SECTION_SYNONYMS: [SectionSynonyms; SUMMARY_SECTIONS.len()] = [
    SectionSynonyms {
        title: "Goal",
        synonyms: &[
            "Goals",
            "Objective",
            "Objectives",
            "Task",
            "Current Task",
            "User Goal",
            "Current Goal",
            "Primary Goal",
            "User Request",
            "Primary Request",
        ],
    },
    SectionSynonyms {
        title: "Done and In Progress",
        synonyms: &[
            "Progress",
            "Progress So Far",
            "Done",
            "Done So Far",
            "In Progress",
            "Completed",
            "Completed Work",
            "Work Done",
            "Work Completed",
            "What Was Done",
            "Status",
            "Current Status",
            "Current State",
        ],
    },
    SectionSynonyms {
        title: "Key Decisions",
        synonyms: &[
            "Decisions",
            "Decisions Made",
            "Design Decisions",
            "Key Design Decisions",
            "Technical Decisions",
            "Important Decisions",
            "Decisions and Preferences",
        ],
    },
    SectionSynonyms {
        title: "Next Steps",
        synonyms: &[
            "Next",
            "Next Step",
            "Next Actions",
            "Plan",
            "Remaining Work",
            "Remaining Tasks",
            "Remaining Steps",
            "Pending Tasks",
            "Pending Work",
            "Open Tasks",
            "TODO",
            "To Do",
            "To-Do",
        ],
    },
    SectionSynonyms {
        title: "Critical Context",
        synonyms: &[
            "Context",
            "Key Context",
            "Important Context",
            "Relevant Context",
            "Technical Context",
            "Important Details",
            "Key Details",
            "Technical Details",
            "Key Information",
            "Important Information",
            "Relevant Files",
            "Key Files",
            "Important Files",
            "Files and Commands",
        ],
    },
];

/// The rank of a bold line or bare label: below every heading level, so a label under a
/// heading section is always content of that section.
pub(super) const LABEL_RANK: u8 = 7;

/// A line that opens (or, when nested, would open) a template section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Marker<'a> {
    /// Index into [`SUMMARY_SECTIONS`].
    pub(super) section: usize,
    /// The heading level (1 to 3), or [`LABEL_RANK`] for a bold line or bare label.
    pub(super) rank: u8,
    /// The title as written, normalized by [`normalize_title`].
    pub(super) title: String,
    /// Content written on the marker line after the title's colon (may be empty).
    pub(super) inline: &'a str,
}

/// Normalizes a title for comparison: surrounding characters that are neither letters nor
/// digits are removed (emphasis, colons, `#`, emoji), then a leading `1.`/`1)` number and
/// what surrounds it; `&` reads as `and`, whitespace runs become one space, and ASCII letters
/// are lowercased (every name it is compared with is ASCII; other letters stay as written, so
/// the module carries no Unicode case tables).
pub(super) fn normalize_title(raw: &str) -> String {
    let trim = |text: &str| text.trim_matches(|c: char| !c.is_alphanumeric()).to_owned();
    let mut title = trim(raw);
    let digits = title.len() - title.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits > 0 && title[digits..].starts_with(['.', ')']) {
        title = trim(&title[digits + 1..]);
    }
    title
        .replace('&', " and ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_lowercase()
}

#[cfg(test)]
/// The template section a title names (canonical or synonym), if any.
pub(crate) fn section_for_title(raw: &str) -> Option<usize> {
    known_title(raw).map(|(section, _)| section)
}

/// The section a title names and the title normalized. Table entries are written normalized
/// up to ASCII case (a unit test checks it), so they compare without allocating.
fn known_title(raw: &str) -> Option<(usize, String)> {
    let title = normalize_title(raw);
    let names = |entry: &SectionSynonyms| {
        std::iter::once(entry.title)
            .chain(entry.synonyms.iter().copied())
            .any(|name| name.eq_ignore_ascii_case(&title))
    };
    let section = SECTION_SYNONYMS.iter().position(names)?;
    Some((section, title))
}

/// Splits `text` into a known title and the inline content after its colon: the whole text
/// is the title, or the part before the first `:` is.
fn titled<'a>(text: &'a str, rank: u8) -> Option<Marker<'a>> {
    let text = text.trim();
    if let Some((section, title)) = known_title(text) {
        return Some(Marker { section, rank, title, inline: "" });
    }
    let (head, inline) = text.split_once(':')?;
    let (section, title) = known_title(head)?;
    let inline = inline.trim_start_matches(['*', '_']).trim();
    Some(Marker { section, rank, title, inline })
}

/// The level (1 to 6) and text of an ATX heading line (`#` run, then a space or the end),
/// with a closing `#` run removed.
pub(super) fn heading(line: &str) -> Option<(u8, &str)> {
    let trimmed = line.trim_start();
    let rest = trimmed.trim_start_matches('#');
    let level = trimmed.len() - rest.len();
    if !(1..=6).contains(&level) || !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    Some((level as u8, rest.trim().trim_end_matches('#').trim_end()))
}

/// The inner text of a line that starts with `**` or `__`, and what follows the closing
/// delimiter.
fn bold(line: &str) -> Option<(&str, &str)> {
    let trimmed = line.trim();
    let delimiter = ["**", "__"].into_iter().find(|d| trimmed.starts_with(d))?;
    let rest = &trimmed[2..];
    let close = rest.find(delimiter)?;
    Some((&rest[..close], &rest[close + 2..]))
}

/// A bold-line or bare-label marker, if `title` is a known title.
fn label<'a>(title: &str, inline: &'a str) -> Option<Marker<'a>> {
    let (section, title) = known_title(title)?;
    Some(Marker { section, rank: LABEL_RANK, title, inline })
}

/// The section marker a line is, if any (see the module documentation for the shapes).
pub(super) fn section_marker(line: &str) -> Option<Marker<'_>> {
    if let Some((level, text)) = heading(line) {
        return if level <= 3 { titled(text, level) } else { None };
    }
    if let Some((inner, after)) = bold(line) {
        let after = after.trim();
        if let Some(title) = inner.trim_end().strip_suffix(':') {
            return label(title, after);
        }
        let inline = if after.is_empty() { "" } else { after.strip_prefix(':')?.trim() };
        return label(inner, inline);
    }
    let title = line.trim().strip_suffix(':')?;
    if !title.starts_with(char::is_alphabetic) || title.contains(':') {
        return None;
    }
    label(title, "")
}

/// The content of a body line that is a label, with the label removed: a section marker's
/// inline content (`**Done:** the lexer` gives `the lexer`, `### Done` and `In progress:` give
/// nothing), or what follows a bold title ending with a colon (`**Files touched:**` gives
/// nothing). `None` when the line is not a label: it is content as written.
pub(super) fn label_content(line: &str) -> Option<&str> {
    if let Some(marker) = section_marker(line) {
        return Some(marker.inline);
    }
    let (inner, after) = bold(line)?;
    let after = after.trim();
    if inner.trim_end().ends_with(':') {
        return Some(after);
    }
    after.strip_prefix(':').map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_synonym_table_follows_the_template_and_names_each_title_once() {
        let mut seen = Vec::new();
        for (entry, section) in SECTION_SYNONYMS.iter().zip(&SUMMARY_SECTIONS) {
            assert_eq!(entry.title, section.title);
            for title in std::iter::once(&entry.title).chain(entry.synonyms) {
                let normalized = normalize_title(title);
                assert_eq!(normalized, title.to_ascii_lowercase(), "{title} is not normalized");
                assert!(!seen.contains(&normalized), "{title} is listed twice");
                seen.push(normalized);
            }
        }
    }

    #[test]
    fn titles_compare_without_case_emphasis_numbering_or_ampersands() {
        for (raw, section) in [
            ("Goal", Some(0)),
            ("**GOAL:**", Some(0)),
            ("1. Objective", Some(0)),
            ("2) done & in progress", Some(1)),
            ("🧭 Next  steps", Some(3)),
            ("to-do", Some(3)),
            ("Relevant files:", Some(4)),
            ("Summary", None),
            ("", None),
        ] {
            assert_eq!(section_for_title(raw), section, "{raw:?}");
        }
    }

    #[test]
    fn markers_have_three_shapes_and_ordinary_lines_are_not_markers() {
        let marker = |line| section_marker(line).map(|m| (m.section, m.rank, m.inline));
        assert_eq!(marker("# Goal"), Some((0, 1, "")));
        assert_eq!(marker("### Progress:"), Some((1, 3, "")));
        assert_eq!(marker("## Goal: fix the lexer"), Some((0, 2, "fix the lexer")));
        assert_eq!(marker("## **Next Steps**"), Some((3, 2, "")));
        assert_eq!(marker("**Goal:** fix it"), Some((0, LABEL_RANK, "fix it")));
        assert_eq!(marker("**Goal**: fix it"), Some((0, LABEL_RANK, "fix it")));
        assert_eq!(marker("__Plan__"), Some((3, LABEL_RANK, "")));
        assert_eq!(marker("Context:"), Some((4, LABEL_RANK, "")));
        for line in [
            "#### Goal",
            "#Goal",
            "## Summary",
            "Goal: fix it",
            "Files touched:",
            "- **Goal:** fix it",
            "> Goal:",
            "1. Plan:",
            "**Goal** is to fix it",
            "__init__.py: the module",
        ] {
            assert_eq!(marker(line), None, "{line:?}");
        }
    }

    #[test]
    fn labels_introduce_content_and_are_not_content() {
        for (line, content) in [
            ("**Done:**", Some("")),
            ("**Files touched**:", Some("")),
            ("**Files touched:** two", Some("two")),
            ("In progress:", Some("")),
            ("**Status**", Some("")),
            ("### Done: the lexer", Some("the lexer")),
            ("**Done:** TBD", Some("TBD")),
            ("**Fix the parser**", None),
            ("Files touched:", None),
            ("Goal: x", None),
            ("#### Notes", None),
        ] {
            assert_eq!(label_content(line), content, "{line:?}");
        }
    }
}
