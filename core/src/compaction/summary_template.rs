//! The one section template shared by the summarizer prompt and the summary validator.
//!
//! A V2 continuation summary is Markdown with these `## ` headings, in this order:
//!
//! | Heading | Required substantive content? |
//! |---|---|
//! | `## Goal` | yes |
//! | `## Done and In Progress` | yes |
//! | `## Key Decisions` | no (may say `None.`; may be absent) |
//! | `## Next Steps` | yes |
//! | `## Critical Context` | yes |
//!
//! The prompt builders below render the template from [`SUMMARY_SECTIONS`], and
//! [`crate::compaction::summary_validation`] checks the same table, so the two cannot drift.
//! The prompt always asks for these canonical `## ` headings; the validator also accepts the
//! other spellings real models produce (heading levels 1 to 3, bold lines, bare labels, the
//! titles of [`crate::compaction::summary_validation::SECTION_SYNONYMS`]).
//! Every instruction text tells the summarizer that reasoning was omitted from its input and
//! that it must not invent facts.

/// The fixed text that replaces an omitted tool-result payload.
pub const TOOL_RESULT_OMISSION_MARKER: &str =
    "[tool result omitted to fit the compaction request; the full result remains in the event log]";

/// One section of the continuation-summary template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummarySection {
    /// The heading title, written after `## `.
    pub title: &'static str,
    /// What the section must contain (rendered into the prompt).
    pub guidance: &'static str,
    /// The section must be present with substantive content.
    pub required: bool,
}

impl SummarySection {
    /// The Markdown heading line, e.g. `## Goal`.
    pub fn heading(&self) -> String {
        format!("## {}", self.title)
    }
}

/// The template sections, in the required order.
pub const SUMMARY_SECTIONS: [SummarySection; 5] = [
    SummarySection {
        title: "Goal",
        guidance: "The user's current objective, and every constraint they stated (each \
                   sentence that says must, should, do not, only, never or always) copied \
                   word for word.",
        required: true,
    },
    SummarySection {
        title: "Done and In Progress",
        guidance: "What is finished (with evidence: tests run, results seen) and what is \
                   partially done, including abandoned directions and why they were dropped.",
        required: true,
    },
    SummarySection {
        title: "Key Decisions",
        guidance: "Decisions and user preferences that must stay in force. Write `None.` if \
                   there are none.",
        required: false,
    },
    SummarySection {
        title: "Next Steps",
        guidance: "The concrete next actions, in order, with the latest plan or todo list \
                   as the agent last wrote it.",
        required: true,
    },
    SummarySection {
        title: "Critical Context",
        guidance: "Copied verbatim, one per line, never paraphrased or shortened: file \
                   paths, commands exactly as issued, error lines whole, and function, test \
                   and type names. Name each command's outcome (error, rejected, ok).",
        required: true,
    },
];

/// Version of the summarizer prompt (every instruction text of this module), recorded in each
/// checkpoint's manifest. Any change to an instruction text must bump it; a test pins the texts'
/// digest to this version.
pub const SUMMARY_PROMPT_VERSION: u32 = 2;

/// Marker that separates base instructions from the repair block in a repair request's
/// system message. Used to keep exactly one repair block when a repair is repaired again.
pub const REPAIR_SEPARATOR: &str = "\n\n=== REPAIR ===\n";

const ROLE_LINE: &str = "You write continuation summaries for an AI coding agent whose \
conversation history no longer fits its context window. Another model will continue the task \
from your summary alone, so it must be complete, specific and faithful.";

fn input_rules() -> String {
    format!(
        "Input rules:\n\
         - The transcript contains user and assistant text, tool calls with their JSON input, \
         tool results, hosted tool calls and results, and runtime notes.\n\
         - The assistant's reasoning (thinking) was omitted on purpose. Do not guess what it \
         said.\n\
         - Some older tool results may read `{TOOL_RESULT_OMISSION_MARKER}`. Do not guess their \
         content; say a result was omitted if it matters.\n\
         - Use only facts present in the input. Never invent paths, names, commands, results or \
         decisions. If something is unknown, say it is unknown."
    )
}

const OUTPUT_RULES: &str = "Output rules:\n\
- Answer with the summary only: no preamble, no closing remarks.\n\
- Use exactly these Markdown `## ` headings, each once, in this order:";

const CLOSING_RULES: &str = "- Every section except Key Decisions needs real content; never \
write `TBD`, `N/A` or `...` as a section body.\n\
- Close every code fence you open. Finish every sentence; do not stop mid-way.\n\
- Be complete rather than short: long histories need correspondingly detailed summaries.";

/// The template as prompt text: one line per heading with its guidance.
pub(crate) fn section_template() -> String {
    let mut text = String::new();
    for section in &SUMMARY_SECTIONS {
        let requirement = if section.required { "required" } else { "optional content" };
        text.push_str(&format!("{}\n  ({requirement}) {}\n", section.heading(), section.guidance));
    }
    text
}

fn instructions(task: &str) -> String {
    format!(
        "{ROLE_LINE}\n\n{task}\n\n{}\n\n{OUTPUT_RULES}\n\n{}\n{CLOSING_RULES}",
        input_rules(),
        section_template()
    )
}

/// System instructions for an initial summary (no previous checkpoint).
pub fn initial_instructions() -> String {
    instructions("Task: summarize the transcript inside <events> into one continuation summary.")
}

/// System instructions for a rolling update: previous summary plus newly folded events.
pub(crate) fn rolling_instructions() -> String {
    instructions(
        "Task: update a continuation summary. <previous_summary> summarizes everything before \
         the transcript inside <new_events>. Produce ONE updated summary that covers both: keep \
         every fact of the previous summary that is still valid (paths, commands, decisions, \
         errors), update facts the new events changed, drop only what the new events show to be \
         obsolete, and add what is new. Do not mention that this is an update.",
    )
}

/// The stricter repair block appended after a malformed first completion. `reason` quotes
/// what was wrong (a [`crate::compaction::summary_validation::SummaryDefect::reason`]);
/// `previous_output_chars` is the length of the rejected output in characters.
pub(crate) fn repair_instructions(reason: &str, previous_output_chars: u64) -> String {
    let mut headings = String::new();
    for section in &SUMMARY_SECTIONS {
        headings.push_str(&section.heading());
        headings.push('\n');
    }
    format!(
        "Your previous answer ({previous_output_chars} characters) was rejected by an automatic \
         validator and discarded. What was wrong: {reason}\n\
         Write the whole summary again from the same input, obeying every rule above strictly:\n\
         - start directly with `## Goal` and use exactly these headings, once each, in order:\n\
         {headings}\
         - give Goal, Done and In Progress, Next Steps and Critical Context substantive content;\n\
         - close every code fence and end with a complete sentence, never with `...`;\n\
         - do not answer with an apology, an error message or a question;\n\
         - still use only facts from the input: reasoning was omitted, do not invent anything."
    )
}

/// The repair block appended after a valid summary that left out exact artifacts of its input
/// (the quality gate's one repair request). `missing` lists them, one `- <class>: <text>` line
/// each.
pub(crate) fn retention_repair_instructions(missing: &str) -> String {
    format!(
        "Your previous answer was a valid summary, but an automatic check found that it left \
         out these exact artifacts of the input, which the next model call needs:\n{missing}\n\
         Write the whole summary again from the same input, with the same headings, and \
         include each of them verbatim (copy the text exactly, in the section where it belongs) \
         beside everything your previous answer kept. Still use only facts from the input."
    )
}

#[cfg(test)]
/// The required sections, in order.
pub(crate) fn required_sections() -> impl Iterator<Item = &'static SummarySection> {
    SUMMARY_SECTIONS.iter().filter(|section| section.required)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_instruction_text_lists_all_headings_in_order_and_forbids_invention() {
        for text in [initial_instructions(), rolling_instructions()] {
            let mut last = 0;
            for section in &SUMMARY_SECTIONS {
                let at = text.find(&section.heading()).expect("heading present");
                assert!(at >= last, "{} out of order", section.title);
                last = at;
            }
            assert!(text.contains("reasoning (thinking) was omitted"));
            assert!(text.contains("Never invent"));
        }
        assert!(rolling_instructions().contains("still valid"));
    }

    /// Pins every instruction text to [`SUMMARY_PROMPT_VERSION`]: a changed text fails here
    /// until the version is bumped and the digest below updated with it.
    #[test]
    fn the_prompt_version_changes_with_the_prompt() {
        let texts = [
            initial_instructions(),
            rolling_instructions(),
            repair_instructions("reason", 7),
            retention_repair_instructions("- path: a.py"),
        ];
        let digest = crate::digest::sha256_text(texts.join("\u{0}").as_bytes());
        let pinned = (2, "sha256:457639b1f3a01ac97a1857aa7890c33bb3f2f2f0385ad90a6e875cceac402d76");
        assert_eq!((SUMMARY_PROMPT_VERSION, digest.as_str()), pinned, "bump the prompt version");
    }

    #[test]
    fn repair_block_quotes_the_reason() {
        let text = repair_instructions("malformed_summary_open_fence: x", 42);
        assert!(text.contains("malformed_summary_open_fence: x"));
        assert!(text.contains("42 characters"));
        assert!(text.contains("do not invent"));
    }

    #[test]
    fn required_sections_are_the_four_substantive_ones() {
        let titles: Vec<_> = required_sections().map(|s| s.title).collect();
        assert_eq!(titles, ["Goal", "Done and In Progress", "Next Steps", "Critical Context"]);
    }
}
