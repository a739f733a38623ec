//! Text summaries (V2): validation against the shared template, the sized summarizer request
//! and the malformed-input circuit.

#[path = "summary/circuit.rs"]
mod circuit;
#[path = "summary/corpus.rs"]
mod corpus;
#[path = "summary/oversized.rs"]
mod oversized;
#[path = "summary/request.rs"]
mod request;

use contextfold_core::budget::TokenEstimator;
use contextfold_core::compaction::{
    FinishReason, SECTION_SYNONYMS, SUMMARY_SECTIONS, SummaryDefect, initial_instructions,
    validate_summary,
};
use contextfold_core::{CharEstimator, ReasonCode};

const GOOD: &str = "## Goal
Make `cargo test -p parser` pass again after the tokenizer rewrite.

## Done and In Progress
- Rewrote `Tokenizer::next_token` in `parser/src/lexer.rs`; the lexer tests pass.
- The parser still fails... two cases remain, see Critical Context.

## Key Decisions
None.

## Next Steps
1. Fix `parse_block` so it accepts an empty block.
2. Rerun the whole suite.

## Critical Context
- Failing command:
```bash
cargo test -p parser parse_block -- --nocapture
```
- Error: `assertion failed: block.is_empty()` at `parser/src/block.rs:88`.
";

fn check(text: &str) -> Result<(), SummaryDefect> {
    validate_summary(text, FinishReason::Stop, 500, &CharEstimator).map(|_| ())
}

fn code_of(text: &str) -> ReasonCode {
    check(text).expect_err("must be rejected").code()
}

fn replace_body(title: &str, body: &str) -> String {
    let start = GOOD.find(&format!("## {title}\n")).expect("section") + title.len() + 4;
    let end = GOOD[start..].find("\n## ").map_or(GOOD.len(), |offset| start + offset + 1);
    format!("{}{body}\n{}", &GOOD[..start], &GOOD[end..])
}

fn drop_section(title: &str) -> String {
    let start = GOOD.find(&format!("## {title}\n")).expect("section");
    let end = GOOD[start + 3..].find("\n## ").map_or(GOOD.len(), |offset| start + 3 + offset + 1);
    format!("{}{}", &GOOD[..start], &GOOD[end..])
}

#[test]
fn a_complete_summary_passes_with_none_decisions_closed_fence_and_inner_ellipsis() {
    let validated = validate_summary(GOOD, FinishReason::Stop, 10_000, &CharEstimator)
        .expect("a good summary passes");
    assert_eq!(validated.text, GOOD);
    assert_eq!(validated.estimated_tokens, CharEstimator.estimate_text(GOOD));
    assert!(check(&drop_section("Key Decisions")).is_ok(), "Key Decisions is optional");
    assert!(check(&GOOD.replace("## Goal", "# Summary\n\n## Goal:")).is_ok(), "preamble, colon");
    for finish in [FinishReason::Unknown, FinishReason::Other("error".into())] {
        assert!(validate_summary(GOOD, finish, 0, &CharEstimator).is_ok());
    }
}

#[test]
fn an_output_length_finish_is_rejected_whatever_the_text() {
    for text in [GOOD, "", "  "] {
        let defect = validate_summary(text, FinishReason::Length, 0, &CharEstimator)
            .expect_err("length finish");
        assert_eq!(defect.code(), ReasonCode::MalformedSummaryLengthFinish);
    }
}

#[test]
fn blank_text_is_an_empty_summary_not_a_malformed_one() {
    for text in ["", " \n\t\n"] {
        let defect = check(text).expect_err("blank");
        assert_eq!(defect.code(), ReasonCode::EmptySummary);
        assert!(!defect.is_malformed());
    }
}

#[test]
fn every_required_section_is_required_and_key_decisions_is_not() {
    for section in &SUMMARY_SECTIONS {
        let result = check(&drop_section(section.title));
        if section.required {
            let defect = result.expect_err(section.title);
            assert_eq!(defect.code(), ReasonCode::MalformedSummaryMissingSection);
            assert!(defect.detail().contains(section.title));
        } else {
            assert!(result.is_ok());
        }
    }
    assert_eq!(
        code_of("The user wants tests to pass."),
        ReasonCode::MalformedSummaryMissingSection
    );
    assert_eq!(
        code_of(&GOOD.replace("## Goal", "#### Goal")),
        ReasonCode::MalformedSummaryMissingSection,
        "level 4 never opens a section"
    );
}

#[test]
fn sections_are_recognized_at_heading_levels_one_to_three() {
    for level in ["#", "###"] {
        let text = GOOD.replace("## ", &format!("{level} "));
        assert!(check(&text).is_ok(), "every section at {level}");
    }
    // `### Goal` then `## Done and In Progress`: the shallower heading is a new section.
    assert!(check(&GOOD.replace("## Goal", "### Goal")).is_ok());
    // `# Goal` then `## Done and In Progress`: a deeper heading is always a subsection, so
    // Done and In Progress is content of Goal and missing as a section.
    let defect = check(&GOOD.replace("## Goal", "# Goal")).expect_err("nested under Goal");
    assert_eq!(defect.code(), ReasonCode::MalformedSummaryMissingSection);
    assert!(defect.detail().contains("Done and In Progress"));
}

#[test]
fn subsections_and_split_sections_belong_to_their_section() {
    let nested = replace_body(
        "Done and In Progress",
        "### Done\n- Lexer rewritten.\n### In Progress\n- Parser.",
    )
    .replace("## Done and In Progress", "## Progress");
    assert_ne!(nested, GOOD);
    assert!(check(&nested).is_ok(), "### Done and ### In Progress are subsections");
    let only_empty_subsections =
        nested.replace("- Lexer rewritten.\n", "").replace("- Parser.\n", "");
    assert_eq!(code_of(&only_empty_subsections), ReasonCode::MalformedSummaryEmptySection);
    let split = nested.replace("### ", "## ").replace("## Progress\n", "");
    assert!(check(&split).is_ok(), "## Done then ## In Progress are two parts of one section");
    let twice = split.replace("## In Progress", "## Done");
    assert_eq!(code_of(&twice), ReasonCode::MalformedSummarySectionOrder);
}

#[test]
fn sections_out_of_order_or_repeated_are_rejected() {
    let swapped = GOOD
        .replace("## Done and In Progress", "## TMP")
        .replace("## Next Steps", "## Done and In Progress")
        .replace("## TMP", "## Next Steps");
    assert_eq!(code_of(&swapped), ReasonCode::MalformedSummarySectionOrder);
    let decisions_late = drop_section("Key Decisions") + "\n## Key Decisions\nKeep the API.\n";
    assert_eq!(code_of(&decisions_late), ReasonCode::MalformedSummarySectionOrder);
    let repeated = GOOD.replace("## Key Decisions", "## Goal");
    assert_eq!(code_of(&repeated), ReasonCode::MalformedSummarySectionOrder);
    // A template heading inside a code fence is content, not a section.
    let fenced = replace_body("Critical Context", "```md\n## Goal\n```\nThe README template.");
    assert!(check(&fenced).is_ok());
}

#[test]
fn placeholder_bodies_make_a_required_section_empty() {
    let labels = ["**Done:**", "**Done:** TBD", "In progress:\n- N/A", "### Done: none"];
    let placeholders =
        ["", "   ", "TBD", "N/A", "...", "…", "- None.", "*TODO*", "```\n```", "### Files"];
    for body in placeholders.into_iter().chain(labels) {
        for title in ["Goal", "Next Steps"] {
            let defect = check(&replace_body(title, body)).expect_err(body);
            assert_eq!(defect.code(), ReasonCode::MalformedSummaryEmptySection, "{body:?}");
        }
    }
    // In the last section an empty body leaves the text ending on a heading: truncation wins.
    assert_eq!(
        code_of(&replace_body("Critical Context", "")),
        ReasonCode::MalformedSummaryTruncated
    );
    let none = replace_body("Critical Context", "None.");
    assert_eq!(code_of(&none), ReasonCode::MalformedSummaryEmptySection);
    for body in
        ["N/A values must be rejected.", "- none of the tests ran", "```\nls\n```", "**Done:** x"]
    {
        assert!(check(&replace_body("Goal", body)).is_ok(), "{body:?}");
    }
}

#[test]
fn an_odd_number_of_fence_lines_is_an_open_fence() {
    let open = format!("{GOOD}```text\ncargo test output follows.");
    assert_eq!(code_of(&open), ReasonCode::MalformedSummaryOpenFence);
    let indented = format!("{GOOD}   ```\nstill inside.");
    assert_eq!(code_of(&indented), ReasonCode::MalformedSummaryOpenFence);
    assert!(check(&format!("{GOOD}Wrap code in ``` fences inline.\n")).is_ok());
}

#[test]
fn trailing_truncation_markers_are_rejected_precisely() {
    let truncated = [
        "Then we...",
        "Then we…",
        "output [truncated]",
        "output (TRUNCATED)",
        "output <truncated>  \n",
        "\n## Critical Notes",
        "\n##",
        "\n#",
        "path src\\",
    ];
    for tail in truncated {
        let text = format!("{GOOD}{tail}");
        assert_eq!(code_of(&text), ReasonCode::MalformedSummaryTruncated, "{tail:?}");
    }
    let fine = ["Mention `...` in docs.", "tag #wip", "dir C:\\temp\\\\", "a \\", "end."];
    for tail in fine {
        assert!(check(&format!("{GOOD}{tail}\n")).is_ok(), "{tail:?}");
    }
}

#[test]
fn error_messages_and_refusals_are_error_text() {
    let errors = [
        r#"{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}"#,
        r#"{"type":"error","error":{"type":"overloaded_error"}}"#,
        "Error: upstream request timed out",
        "I'm sorry, but I can't help with that.",
        "I\u{2019}m sorry, but I can\u{2019}t summarize this.",
        "**Error 500**: internal failure",
        "Request blocked.\nYou exceeded your current quota exceeded limit",
        "The API returned 429 Too Many Requests.",
    ];
    for text in errors {
        assert_eq!(code_of(text), ReasonCode::MalformedSummaryErrorText, "{text:?}");
    }
    // A real summary may quote errors and rate limits in its sections.
    let quoting =
        replace_body("Critical Context", "Error: rate limit hit at 14:02; I'm sorry text.");
    assert!(check(&quoting).is_ok());
    assert_eq!(code_of(r#"{"result":"ok"}"#), ReasonCode::MalformedSummaryMissingSection);
}

/// GOOD plus a detail line, exactly `tokens` estimated tokens long (ASCII: 4 bytes a token).
fn padded_to(tokens: u64) -> String {
    assert!(GOOD.is_ascii());
    let base = format!("{GOOD}Detail: ");
    let filler = tokens as usize * 4 - base.len() - 2;
    format!("{base}{}.\n", "x".repeat(filler))
}

#[test]
fn a_fold_above_ten_thousand_tokens_needs_two_hundred_summary_tokens() {
    let small = padded_to(199);
    let enough = padded_to(200);
    assert_eq!(CharEstimator.estimate_text(&small), 199);
    assert_eq!(CharEstimator.estimate_text(&enough), 200);
    let at = |text: &str, fold| validate_summary(text, FinishReason::Stop, fold, &CharEstimator);
    assert!(at(&small, 10_000).is_ok(), "10,000 exactly is not above the threshold");
    let defect = at(&small, 10_001).expect_err("too small");
    assert_eq!(defect.code(), ReasonCode::MalformedSummaryTooSmall);
    assert!(defect.detail().contains("10001") && defect.detail().contains("199"));
    assert!(at(&enough, 10_001).is_ok());
    assert!(at(&enough, u64::MAX).is_ok());
}

#[test]
fn finish_reasons_parse_from_provider_spellings_and_serialize_snake_case() {
    let table = [
        ("stop", FinishReason::Stop),
        ("end_turn", FinishReason::Stop),
        ("STOP", FinishReason::Stop),
        ("length", FinishReason::Length),
        ("max_tokens", FinishReason::Length),
        ("MAX_TOKENS", FinishReason::Length),
        ("content_filter", FinishReason::ContentFilter),
        ("content-filter", FinishReason::ContentFilter),
        ("tool_calls", FinishReason::ToolCalls),
        ("tool_use", FinishReason::ToolCalls),
        ("", FinishReason::Unknown),
        ("pause_turn", FinishReason::Other("pause_turn".into())),
    ];
    for (text, expected) in table {
        assert_eq!(FinishReason::parse(text), expected, "{text:?}");
    }
    let json = serde_json::to_string(&FinishReason::ContentFilter).expect("json");
    assert_eq!(json, "\"content_filter\"");
    let other: FinishReason = serde_json::from_str(r#"{"other":"x"}"#).expect("json");
    assert_eq!(other, FinishReason::Other("x".into()));
}

#[test]
fn the_prompt_and_the_validator_share_the_headings() {
    // A summary made of exactly the headings the prompt lists, each with content, passes.
    let prompt = initial_instructions();
    let mut text = String::new();
    for section in &SUMMARY_SECTIONS {
        assert!(prompt.contains(&section.heading()));
        text.push_str(&format!("{}\nContent for {}.\n\n", section.heading(), section.title));
    }
    assert!(check(&text).is_ok());
}

#[test]
fn the_documented_synonym_table_matches_the_const() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/architecture.md");
    let doc = std::fs::read_to_string(path).expect("docs/architecture.md");
    for (entry, section) in SECTION_SYNONYMS.iter().zip(&SUMMARY_SECTIONS) {
        let required = if section.required { "yes" } else { "no" };
        let row =
            format!("| `{}` | {required} | {} |", section.heading(), entry.synonyms.join(", "));
        assert!(doc.contains(&row), "docs/architecture.md lacks the row {row}");
    }
}
