use serde_json::json;

use super::artifacts::{constraint_sentences, error_lines, path_tokens};
use super::*;
use crate::LogBuilder;
use crate::TokenEstimator;

fn texts(artifacts: &[Artifact], class: ArtifactClass) -> Vec<&str> {
    artifacts.iter().filter(|a| a.class == class).map(|a| a.text.as_str()).collect()
}

fn session() -> Vec<crate::RuntimeEvent> {
    let mut log = LogBuilder::new("s");
    log.turn("t1").user(
        "Fix the crash in src/parser.rs. You must not change the public API.\n\
         Only edit files under src/. Thanks!",
    );
    log.tool_call("c1", "bash", json!({"command": "cargo test -p parser -- parse_empty"}));
    log.tool_result(
        "c1",
        "bash",
        json!("running 3 tests\n12:    raise ValueError('x')\nerror: test parse_empty failed\n"),
    );
    log.tool_call("c2", "bash", json!({"command": "submit"}));
    log.tool_result("c2", "bash", json!("Traceback (most recent call last):\nKeyError: 'k'"));
    log.assistant("Plan:\n1. Read parse_empty in src/parser.rs\n2. Handle emptyInput first");
    log.build()
}

#[test]
fn every_class_is_extracted_exactly() {
    let artifacts = extract_artifacts(&session());
    assert_eq!(
        texts(&artifacts, ArtifactClass::Constraint),
        ["You must not change the public API.", "Only edit files under src/."]
    );
    assert_eq!(texts(&artifacts, ArtifactClass::Command), ["cargo test -p parser -- parse_empty"]);
    assert_eq!(
        texts(&artifacts, ArtifactClass::Error),
        ["error: test parse_empty failed", "Traceback (most recent call last):", "KeyError: 'k'"]
    );
    assert_eq!(texts(&artifacts, ArtifactClass::Path), ["src/parser.rs"]);
    assert_eq!(texts(&artifacts, ArtifactClass::Identifier), ["parse_empty", "emptyInput"]);
    assert_eq!(
        texts(&artifacts, ArtifactClass::Plan),
        ["1. Read parse_empty in src/parser.rs", "2. Handle emptyInput first"]
    );
    // Each artifact once, at its newest occurrence (the plan names the path again).
    let path = artifacts.iter().find(|a| a.class == ArtifactClass::Path).expect("a path");
    assert_eq!(path.last_seen, 5);
}

#[test]
fn retention_counts_verbatim_occurrences_per_class() {
    let artifacts = extract_artifacts(&session());
    let text = "cargo test -p parser -- parse_empty\nYou must not change the public API.";
    let retention = Retention::measure(&artifacts, text);
    assert_eq!(retention.class(ArtifactClass::Command), ClassRetention { kept: 1, total: 1 });
    assert_eq!(retention.class(ArtifactClass::Constraint), ClassRetention { kept: 1, total: 2 });
    assert_eq!(retention.class(ArtifactClass::Identifier).kept, 1);
    let overall = retention.overall();
    assert_eq!(overall.total as usize, artifacts.len());
    assert_eq!(overall.total - overall.kept, retention.lost.len() as u32);
    // Whitespace is part of the text: a command with its spaces collapsed is not kept.
    let squashed = Retention::measure(&artifacts, "cargo test -p parser --  parse_empty");
    assert_eq!(squashed.class(ArtifactClass::Command).kept, 0);
}

#[test]
fn sentences_split_at_ends_not_inside_file_names() {
    assert_eq!(
        constraint_sentences("Edit setup.py only. Never touch tests/conftest.py! ok"),
        ["Edit setup.py only.", "Never touch tests/conftest.py!"]
    );
    assert!(constraint_sentences("This is shouldered weight.").is_empty());
}

#[test]
fn listings_are_not_errors_and_failed_results_give_their_first_line() {
    assert!(error_lines("41:        raise TypeError(msg)\n# error handling", false).is_empty());
    assert_eq!(error_lines("\n  permission denied\nmore", true), ["permission denied"]);
    assert_eq!(error_lines("  File \"a.py\"\nTypeError: bad", false), ["TypeError: bad"]);
}

#[test]
fn paths_need_a_name_with_an_extension() {
    let found: Vec<&str> =
        path_tokens("see ./a/b.py, e.g. the docs at https://x.io/a.html and setup.py: or v1.2")
            .collect();
    assert_eq!(found, ["./a/b.py", "setup.py"]);
}

#[test]
fn visible_text_reads_inside_json_arguments() {
    let messages = json!([
        {"role": "assistant", "toolCalls": [{"arguments": "{\"command\":\"grep -n \\\"x\\\" a.py\"}"}]}
    ]);
    assert!(visible_text(&messages).contains("grep -n \"x\" a.py"));
}

#[test]
fn the_gate_appends_lost_artifacts_within_the_target_and_reports_both_scores() {
    let events = session();
    let lossy = "## Goal\n- Fix the parser.\n## Done and In Progress\n- Ran the tests.\n\
                 ## Next Steps\n- Fix it.\n## Critical Context\n- none\n";
    let outcome = gate_summary(lossy, &events, "", 2_000, &crate::CharEstimator);
    assert!(outcome.before.overall().kept < outcome.before.overall().total / 2);
    assert_eq!(
        outcome.after.overall().kept,
        outcome.after.overall().total,
        "{:?}",
        outcome.after.lost
    );
    // An artifact quoted inside another appended one (a path in a plan line) is not repeated.
    assert!(outcome.appended > 0 && outcome.appended < outcome.before.lost.len());
    assert!(outcome.text.starts_with(lossy.trim_end()), "the summarizer's text is kept as written");
    assert!(outcome.text.contains("- error: error: test parse_empty failed"));
    assert!(outcome.detail().starts_with("quality gate v1: the summary keeps "));
    // A tight target: only what fits is appended, constraints first.
    let tight = gate_summary(lossy, &events, "", 80, &crate::CharEstimator);
    assert!(tight.appended > 0 && tight.appended < outcome.appended);
    assert!(tight.text.contains("constraint: You must not change the public API."));
    assert!(crate::CharEstimator.estimate_text(&tight.text) <= 80 + 1);
    // A summary that keeps enough is left as it is.
    let kept = gate_summary(&outcome.text, &events, "", 2_000, &crate::CharEstimator);
    assert_eq!(kept.appended, 0);
    assert_eq!(kept.text, outcome.text);
}

#[test]
fn a_text_ending_like_a_cut_is_closed() {
    let mut text = "- error: Loading...\n".to_owned();
    gate::end_cleanly(&mut text);
    assert!(text.ends_with("- (end of the list)\n"));
    let mut plain = "- error: done\n".to_owned();
    gate::end_cleanly(&mut plain);
    assert_eq!(plain, "- error: done\n");
}

#[test]
fn a_capitalized_cue_inside_a_title_is_not_a_rule() {
    let page = "[61] heading 'Previously live: Back to Basics: Customers Must Loved'\n\
                2) You must Distinguish between textbox and search button.\n\
                You MUST use this EXACT command to submit.";
    assert_eq!(
        crate::quality::artifacts::constraint_sentences(page),
        [
            "2) You must Distinguish between textbox and search button.",
            "You MUST use this EXACT command to submit.",
        ]
    );
}
