//! Validation of a summarizer completion against the shared section template.
//!
//! [`validate_summary`] applies these checks in this order and reports the FIRST defect:
//!
//! 1. [`SummaryDefect::LengthFinish`]: the finish reason is [`FinishReason::Length`], whatever
//!    the text (an output-length stop is never admitted as a partial summary).
//! 2. [`SummaryDefect::Empty`]: the text is blank (only whitespace).
//! 3. [`SummaryDefect::ErrorText`]: the text has no section marker (see below) outside code
//!    fences and looks like an error or refusal: the whole text is a JSON object with an
//!    `error` key or `"type": "error"`; or its first non-blank line (lowercased, leading `*`,
//!    `#` and spaces removed, `’` read as `'`) starts with one of [`ERROR_PREFIXES`]; or it
//!    contains one of [`ERROR_PHRASES`]. Because such a text would fail the section checks anyway, this rule
//!    only makes the reason more precise; it never rejects a text that would otherwise pass.
//! 4. [`SummaryDefect::OpenFence`]: an odd number of fence lines (lines whose first
//!    non-blank characters are three backticks).
//! 5. [`SummaryDefect::Truncated`]: after trailing whitespace is removed, the text
//!    - ends with one of [`TRUNCATION_MARKERS`] (`…`, `...`, or `[truncated]`, `(truncated)`,
//!      `<truncated>` in any case); a `...` anywhere else is fine;
//!    - or has a heading as its last line, so nothing follows it: one to six `#` then a space
//!      or nothing (`## Next Steps`, `##`; `#tag` is not a heading), unless it is a section
//!      heading with content after its title's colon (`## Critical Context: see the log`);
//!    - or ends with an odd run of backslashes right after a letter or digit (`src\`: an
//!      escape cut mid-word); an even run (`C:\temp\\`) or one after a space is fine.
//! 6. [`SummaryDefect::MissingSection`]: a required section of [`SUMMARY_SECTIONS`] has no
//!    marker.
//! 7. [`SummaryDefect::SectionOrder`]: sections appear out of template order, or one title
//!    repeats. Consecutive markers of one section under different titles are parts of that
//!    section (`## Done` then `## In Progress`); the same title twice is a repeat.
//! 8. [`SummaryDefect::EmptySection`]: a required section has no substantive line (over all
//!    its parts and subsections). A line is not substantive when it is blank, a fence line, a
//!    `#` heading (outside fences), or, after trimming, removing one list/quote marker,
//!    surrounding `*`, `_`, `` ` `` and trailing `.`/`:`, and lowercasing, one of
//!    [`PLACEHOLDER_BODIES`] (`TBD`, `N/A`, `...`, `None.`…). A label outside fences
//!    (`**Done:**`, `In progress:`, `### Done: text`) counts only by the text after its
//!    colon, judged the same way: `**Done:** TBD` is a placeholder.
//! 9. [`SummaryDefect::TooSmall`]: the fold is above [`LARGE_FOLD_TOKENS`] estimated tokens and
//!    the summary has fewer than [`MIN_LARGE_FOLD_SUMMARY_TOKENS`] estimated tokens.
//!
//! Sections are found by substance, not by exact spelling. Outside code fences, a *section
//! marker* is a heading of level 1 to 3 (`# Goal`, `### Goal:`, `## Goal: fix the lexer`), a
//! bold line (`**Goal**`, `**Goal:** fix the lexer`, `__Goal__`) or a bare label (`Goal:`
//! alone on its line), whose title is a canonical title or one of its [`SECTION_SYNONYMS`]
//! (case-insensitive; emphasis, a leading `1.` and surrounding punctuation ignored). A bare
//! label needs a known title and nothing after its colon, because `Word: text` lines are
//! common body text. A marker deeper than the current section's (`### Done` under
//! `## Progress`; any bold line or bare label under a heading) is always a subsection: content
//! of the current section, whatever its title. Headings of unknown titles are content too,
//! and text before the first marker is a preamble (`Here is the summary:`).
//!
//! Every detail string is built from a fixed template (heading titles, fixed marker names and
//! numbers only), never from the rejected text, so a repair request that quotes it has a
//! bounded size (see [`repair_sizing_samples`]).

mod markdown;
mod sections;

use serde::{Deserialize, Serialize};

use crate::budget::TokenEstimator;
use crate::compaction::summary_template::SUMMARY_SECTIONS;
use crate::diagnostics::ReasonCode;

pub(crate) use markdown::{ERROR_PHRASES, ERROR_PREFIXES, TRUNCATION_MARKERS};
pub use sections::{SECTION_SYNONYMS, SectionSynonyms};

/// A fold strictly above this many estimated tokens needs a summary of at least
/// [`MIN_LARGE_FOLD_SUMMARY_TOKENS`].
pub(crate) const LARGE_FOLD_TOKENS: u64 = 10_000;
/// Minimum estimated summary tokens for a fold above [`LARGE_FOLD_TOKENS`].
pub(crate) const MIN_LARGE_FOLD_SUMMARY_TOKENS: u64 = 200;

/// Why the provider stopped generating.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// Natural stop (`stop`, `end_turn`, `stop_sequence`).
    Stop,
    /// Output-length limit (`length`, `max_tokens`, `max_output_tokens`).
    Length,
    /// Content filter (`content_filter`, `content-filter`, `safety`).
    ContentFilter,
    /// The model asked for tools (`tool_calls`, `tool_use`, `function_call`).
    ToolCalls,
    /// Any other provider value, kept verbatim.
    Other(String),
    /// Not reported.
    Unknown,
}

impl FinishReason {
    /// Parses a provider finish/stop reason (OpenAI, Anthropic, Gemini, AI SDK spellings;
    /// case-insensitive, `-` treated as `_`). Unrecognized values become [`FinishReason::Other`].
    pub fn parse(value: &str) -> Self {
        let normalized = value.trim().to_ascii_lowercase().replace('-', "_");
        match normalized.as_str() {
            "stop" | "end_turn" | "stop_sequence" => FinishReason::Stop,
            "length" | "max_tokens" | "max_output_tokens" => FinishReason::Length,
            "content_filter" | "safety" => FinishReason::ContentFilter,
            "tool_calls" | "tool_use" | "function_call" => FinishReason::ToolCalls,
            "" | "unknown" => FinishReason::Unknown,
            _ => FinishReason::Other(value.trim().to_owned()),
        }
    }
}

/// A summary that passed every check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ValidatedSummary {
    /// The complete summary text, unchanged.
    pub text: String,
    /// Its estimated tokens (`estimate_text`, without message overhead).
    pub estimated_tokens: u64,
}

/// Why a summarizer completion was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SummaryDefect {
    /// The text is blank.
    #[error("empty summary: {detail}")]
    Empty {
        /// What was wrong.
        detail: String,
    },
    /// The provider stopped on its output-length limit.
    #[error("length finish: {detail}")]
    LengthFinish {
        /// What was wrong.
        detail: String,
    },
    /// A required section is missing.
    #[error("missing section: {detail}")]
    MissingSection {
        /// What was wrong.
        detail: String,
    },
    /// Template sections repeat or are out of order.
    #[error("section order: {detail}")]
    SectionOrder {
        /// What was wrong.
        detail: String,
    },
    /// A required section has no substantive content.
    #[error("empty section: {detail}")]
    EmptySection {
        /// What was wrong.
        detail: String,
    },
    /// The text ends inside an open code fence.
    #[error("open fence: {detail}")]
    OpenFence {
        /// What was wrong.
        detail: String,
    },
    /// The text ends with a truncation marker.
    #[error("truncated: {detail}")]
    Truncated {
        /// What was wrong.
        detail: String,
    },
    /// The summary is too small for a large fold.
    #[error("too small: {detail}")]
    TooSmall {
        /// What was wrong.
        detail: String,
    },
    /// The text is an error message or refusal, not a summary.
    #[error("error text: {detail}")]
    ErrorText {
        /// What was wrong.
        detail: String,
    },
}

impl SummaryDefect {
    /// The stable reason code reported in diagnostics.
    pub fn code(&self) -> ReasonCode {
        match self {
            SummaryDefect::Empty { .. } => ReasonCode::EmptySummary,
            SummaryDefect::LengthFinish { .. } => ReasonCode::MalformedSummaryLengthFinish,
            SummaryDefect::MissingSection { .. } => ReasonCode::MalformedSummaryMissingSection,
            SummaryDefect::SectionOrder { .. } => ReasonCode::MalformedSummarySectionOrder,
            SummaryDefect::EmptySection { .. } => ReasonCode::MalformedSummaryEmptySection,
            SummaryDefect::OpenFence { .. } => ReasonCode::MalformedSummaryOpenFence,
            SummaryDefect::Truncated { .. } => ReasonCode::MalformedSummaryTruncated,
            SummaryDefect::TooSmall { .. } => ReasonCode::MalformedSummaryTooSmall,
            SummaryDefect::ErrorText { .. } => ReasonCode::MalformedSummaryErrorText,
        }
    }

    /// The human detail.
    pub fn detail(&self) -> &str {
        match self {
            SummaryDefect::Empty { detail }
            | SummaryDefect::LengthFinish { detail }
            | SummaryDefect::MissingSection { detail }
            | SummaryDefect::SectionOrder { detail }
            | SummaryDefect::EmptySection { detail }
            | SummaryDefect::OpenFence { detail }
            | SummaryDefect::Truncated { detail }
            | SummaryDefect::TooSmall { detail }
            | SummaryDefect::ErrorText { detail } => detail,
        }
    }

    /// `code: detail`, the text quoted to the summarizer by a repair request.
    pub fn reason(&self) -> String {
        format!("{}: {}", self.code(), self.detail())
    }

    /// True for the granular `malformed_summary_*` defects (every defect but an empty summary).
    pub fn is_malformed(&self) -> bool {
        !matches!(self, SummaryDefect::Empty { .. })
    }
}

/// Validates one summarizer completion. `fold_tokens` is the estimated size of the folded
/// source events (the previous summary is not part of it).
pub fn validate_summary(
    text: &str,
    finish: FinishReason,
    fold_tokens: u64,
    estimator: &dyn TokenEstimator,
) -> Result<ValidatedSummary, SummaryDefect> {
    if finish == FinishReason::Length {
        return Err(length_finish());
    }
    if text.trim().is_empty() {
        return Err(SummaryDefect::Empty { detail: "the summarizer returned blank text".into() });
    }
    let outline = markdown::Outline::parse(text);
    if outline.sections.is_empty()
        && let Some(sign) = markdown::error_sign(text)
    {
        return Err(error_text(&sign));
    }
    if outline.fence_lines % 2 == 1 {
        return Err(open_fence(outline.fence_lines));
    }
    if let Some(marker) = markdown::trailing_truncation_marker(text) {
        return Err(truncated(marker));
    }
    check_sections(&outline)?;
    let estimated_tokens = estimator.estimate_text(text);
    if fold_tokens > LARGE_FOLD_TOKENS && estimated_tokens < MIN_LARGE_FOLD_SUMMARY_TOKENS {
        return Err(too_small(fold_tokens, estimated_tokens));
    }
    Ok(ValidatedSummary { text: text.to_owned(), estimated_tokens })
}

fn check_sections(outline: &markdown::Outline<'_>) -> Result<(), SummaryDefect> {
    for (index, section) in SUMMARY_SECTIONS.iter().enumerate() {
        if section.required && !outline.sections.iter().any(|s| s.section == index) {
            return Err(missing_section(section.title));
        }
    }
    let runs = section_runs(&outline.sections);
    for (index, run) in runs.iter().enumerate() {
        let title = SUMMARY_SECTIONS[run[0].section].title;
        if index > 0 && run[0].section < runs[index - 1][0].section {
            return Err(section_order(title, SUMMARY_SECTIONS[runs[index - 1][0].section].title));
        }
        for (at, part) in run.iter().enumerate() {
            if run[..at].iter().any(|earlier| earlier.title == part.title) {
                return Err(repeated_section(title));
            }
        }
    }
    for run in &runs {
        let section = &SUMMARY_SECTIONS[run[0].section];
        let mut body = run.iter().flat_map(|part| &part.body);
        if section.required && !body.any(markdown::is_substantive) {
            return Err(empty_section(section.title));
        }
    }
    Ok(())
}

/// Groups consecutive markers of the same section: `## Done` then `## In Progress` are two
/// parts of one section, written under different titles.
fn section_runs<'s, 'a>(sections: &'s [markdown::Section<'a>]) -> Vec<&'s [markdown::Section<'a>]> {
    sections.chunk_by(|a, b| a.section == b.section).collect()
}

fn length_finish() -> SummaryDefect {
    SummaryDefect::LengthFinish {
        detail: "the provider stopped on its output-length limit; a partial summary is never \
                 admitted"
            .into(),
    }
}

fn error_text(sign: &markdown::ErrorSign) -> SummaryDefect {
    let what = match sign {
        markdown::ErrorSign::JsonError => "it is a JSON error object".to_owned(),
        markdown::ErrorSign::Prefix(prefix) => format!("it starts with `{prefix}`"),
        markdown::ErrorSign::Phrase(phrase) => format!("it mentions `{phrase}`"),
    };
    SummaryDefect::ErrorText {
        detail: format!("the output has no summary heading and looks like an error: {what}"),
    }
}

fn open_fence(fence_lines: usize) -> SummaryDefect {
    SummaryDefect::OpenFence {
        detail: format!(
            "the text has {fence_lines} code-fence lines, so it ends inside an open fence"
        ),
    }
}

fn truncated(marker: &str) -> SummaryDefect {
    SummaryDefect::Truncated { detail: format!("the text ends with {marker}") }
}

fn missing_section(title: &str) -> SummaryDefect {
    SummaryDefect::MissingSection { detail: format!("required section `## {title}` is missing") }
}

fn repeated_section(title: &str) -> SummaryDefect {
    SummaryDefect::SectionOrder { detail: format!("section `## {title}` appears more than once") }
}

fn section_order(title: &str, after: &str) -> SummaryDefect {
    SummaryDefect::SectionOrder {
        detail: format!("section `## {title}` appears after `## {after}`, out of template order"),
    }
}

fn empty_section(title: &str) -> SummaryDefect {
    SummaryDefect::EmptySection {
        detail: format!("required section `## {title}` has no substantive content"),
    }
}

fn too_small(fold_tokens: u64, summary_tokens: u64) -> SummaryDefect {
    SummaryDefect::TooSmall {
        detail: format!(
            "the fold has {fold_tokens} estimated tokens (over {LARGE_FOLD_TOKENS}) but the \
             summary only {summary_tokens}; at least {MIN_LARGE_FOLD_SUMMARY_TOKENS} are needed"
        ),
    }
}

/// Every detail shape [`validate_summary`] can produce, with worst-case numbers
/// (`u64::MAX`) and every heading, marker and error pattern. A repair request is sized for the
/// largest of these, so it fits the budget whatever the actual defect.
pub fn repair_sizing_samples() -> Vec<SummaryDefect> {
    let mut samples = vec![
        length_finish(),
        SummaryDefect::Empty { detail: "the summarizer returned blank text".into() },
        error_text(&markdown::ErrorSign::JsonError),
        open_fence(usize::MAX),
        too_small(u64::MAX, u64::MAX),
    ];
    samples.extend(ERROR_PREFIXES.iter().map(|p| error_text(&markdown::ErrorSign::Prefix(p))));
    samples.extend(ERROR_PHRASES.iter().map(|p| error_text(&markdown::ErrorSign::Phrase(p))));
    samples.extend(markdown::TRUNCATION_DESCRIPTIONS.iter().map(|marker| truncated(marker)));
    for a in &SUMMARY_SECTIONS {
        samples.push(missing_section(a.title));
        samples.push(repeated_section(a.title));
        samples.push(empty_section(a.title));
        for b in &SUMMARY_SECTIONS {
            samples.push(section_order(a.title, b.title));
        }
    }
    samples
}
