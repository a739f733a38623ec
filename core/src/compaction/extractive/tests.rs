use serde_json::json;

use super::*;
use crate::LogBuilder;
use crate::compaction::summary_validation::{FinishReason, validate_summary};
use crate::quality::{Retention, extract_artifacts};

fn fold() -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new("s");
    log.turn("t1").user(
        "Fix the failing test in src/parser.rs please.\nYou must not change the public API.\n\n\
         ## Expected behaviour\n```python\n    def parse(x):\n        return x\n```",
    );
    log.tool_call("c1", "shell", json!({"cmd": "cargo test -p parser  -- --nocapture"}));
    log.tool_result("c1", "shell", json!("running 3 tests\nerror: test parse_empty failed\n"));
    log.tool_call("c2", "edit", json!({"path": "src/parser.rs", "body": "a\nb"}));
    log.tool_result("c2", "edit", json!("Your proposed edit has introduced new syntax error(s)."));
    log.assistant("I decided to handle the empty input in parse() instead of the caller.");
    log.build()
}

#[test]
fn sections_quote_the_task_whole_and_name_each_outcome() {
    let summary = extractive_summary(None, &fold(), 4_000);
    assert!(summary.starts_with("(extractive summary"));
    assert!(summary.contains("- Task (event e1; quoted whole):\n> Fix the failing test"));
    // Exact text: inner spacing and code indentation kept, headings of the task quoted.
    assert!(summary.contains(">         return x\n"));
    assert!(summary.contains("> ## Expected behaviour\n"));
    assert!(summary.contains(
        "`shell` cargo test -p parser  -- --nocapture → error: error: test parse_empty failed"
    ));
    assert!(
        summary.contains("`edit` path=src/parser.rs body=<2 lines> → rejected: Your proposed edit")
    );
    assert!(summary.contains(
        "## Key Decisions\n- I decided to handle the empty input in parse() instead of the caller."
    ));
    let order = [
        "## Goal",
        "## Done and In Progress",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
    ];
    let positions: Vec<usize> = order.iter().map(|h| summary.find(h).expect(h)).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]));
    // It passes the validator the LLM summaries pass (the task's own heading stays quoted).
    assert!(
        validate_summary(&summary, FinishReason::Stop, 2_000, &CharEstimator).is_ok(),
        "{summary}"
    );
    // Every artifact of the fold is kept when there is room.
    let retention = Retention::measure(&extract_artifacts(&fold()), &summary);
    assert_eq!(retention.overall().kept, retention.overall().total, "{:?}", retention.lost);
}

#[test]
fn rolling_update_keeps_previous_items_and_is_deterministic() {
    let first = extractive_summary(None, &fold(), 4_000);
    let mut log = LogBuilder::extend(fold());
    log.turn("t2").user("Now run clippy on src/lexer.rs");
    log.tool_call("c3", "shell", json!({"cmd": "cargo clippy --all-targets"}));
    log.tool_result("c3", "shell", json!("warning: unused"));
    let events = log.build();
    let second = extractive_summary(Some(&first), &events[6..], 4_000);
    assert!(
        second.contains("- Task (event e1; quoted whole):\n> Fix the failing test"),
        "{second}"
    );
    assert!(second.contains("- Later request:\n> Now run clippy on src/lexer.rs"));
    assert!(second.contains("error: error: test parse_empty failed"));
    assert!(second.contains("cargo clippy --all-targets → ok: warning: unused"));
    assert_eq!(second, extractive_summary(Some(&first), &events[6..], 4_000));
    // A third roll changes nothing it kept: the format reads back exactly.
    let retention = Retention::measure(&extract_artifacts(&events), &second);
    assert_eq!(retention.overall().kept, retention.overall().total, "{:?}", retention.lost);
    let third = extractive_summary(Some(&second), &[], 4_000);
    assert_eq!(third, second);
}

fn long_session(turns: usize) -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new("s");
    log.turn("t0")
        .user("Refactor the storage layer. Never delete user data. Only touch src/store/.");
    for turn in 0..turns {
        log.turn(&format!("t{}", turn + 1)).user(&format!("request {turn} about src/m{turn}.rs"));
        log.tool_call("c", "shell", json!({"cmd": format!("cargo test m{turn}")}));
        log.tool_result(
            "c",
            "shell",
            json!(format!("error: m{turn} failed\n{}", "x".repeat(2_000))),
        );
    }
    log.build()
}

#[test]
fn a_short_target_keeps_task_rules_and_the_newest_of_each_kind() {
    let events = long_session(60);
    let big = extractive_summary(None, &events, 100_000);
    let small = extractive_summary(None, &events, 600);
    assert!(CharEstimator.estimate_text(&big) > 600);
    assert!(fits_target(&small, 600), "{small}");
    assert!(
        small.contains("> Refactor the storage layer. Never delete user data."),
        "the task is never dropped"
    );
    assert!(small.contains("request 59"), "the newest request is kept");
    for newest in ["error: m59 failed", "cargo test m59", "src/m59.rs"] {
        assert!(small.contains(newest), "{newest} missing from {small}");
    }
    assert!(!small.contains("cargo test m1 "), "older items go first");
    assert!(small.contains("Left out for room ("), "what was dropped is named");
}

#[test]
fn an_oversized_task_keeps_its_opening_and_every_rule() {
    let mut log = LogBuilder::new("s");
    let filler = "lorem ipsum dolor sit amet ".repeat(400);
    log.turn("t1").user(&format!("Port the parser.\n{filler}\nYou must keep the old API."));
    let events = log.build();
    let summary = extractive_summary(None, &events, 800);
    assert!(fits_target(&summary, 800));
    assert!(summary.contains("its opening; the whole text is that event in the log"));
    assert!(summary.contains("#### constraint\n- You must keep the old API.\n"), "{summary}");
}

#[test]
fn cut_names_what_it_left_out() {
    assert_eq!(material::cut("a  b", 10), "a  b");
    assert_eq!(material::cut("abcdef", 3), "abc [+3 chars]");
}

#[test]
fn a_command_quoted_only_by_its_call_line_is_listed_when_there_is_room() {
    // A rolling update reads artifacts back from Critical Context, and may drop the call line.
    // One call: its line is taken before the round of commands reaches its command.
    let summary = extractive_summary(None, &fold()[..3], 4_000);
    assert!(summary.contains("`shell` cargo test -p parser  -- --nocapture → error:"));
    assert!(
        summary.contains("#### command\n- cargo test -p parser  -- --nocapture\n"),
        "{summary}"
    );
    let previous = parse_previous(&summary);
    assert!(
        previous
            .artifacts
            .contains(&(ArtifactClass::Command, "cargo test -p parser  -- --nocapture".to_owned())),
        "{:?}",
        previous.artifacts
    );
}

#[test]
fn an_artifact_a_longer_listed_one_quotes_gives_its_room_back() {
    // The newest identifier is listed in the first round; the oldest path, which contains it,
    // in the last: once the path is listed, the identifier's own line is dropped.
    let mut log = LogBuilder::new("s");
    log.turn("t1").user("Speed up the config loader.");
    log.tool_call("c0", "shell", json!({"cmd": "wc -l src/config/parse_section.rs"}));
    log.tool_result("c0", "shell", json!("120"));
    for n in 1..8 {
        let call = format!("c{n}");
        log.tool_call(&call, "shell", json!({"cmd": format!("cat src/config/load_{n}.rs")}));
        log.tool_result(&call, "shell", json!("fn load() {}"));
    }
    log.assistant("The slow part is parse_section, called once per key.");
    let summary = extractive_summary(None, &log.build(), 4_000);
    assert!(summary.contains("src/config/parse_section.rs"), "{summary}");
    assert!(!summary.contains("- parse_section\n"), "listed twice:\n{summary}");
}

#[test]
fn a_large_fold_of_few_calls_is_summarized_above_the_validators_floor() {
    // One step whose read returns 100 KB, the task replayed beside the summary: a few calls and
    // paths come to under 200 tokens, which the validator refuses for a fold this large. The
    // opening of the large result brings the summary up to the floor, under every built-in
    // estimator at the calibrated ratios the floor allows for.
    let listing: String =
        (0..3_000).map(|i| format!("{i:>5}\tlet value_{i} = parse({i});\n")).collect();
    let mut log = LogBuilder::new("s");
    log.turn("t1").user("Find why parse() overflows on deep input.");
    log.tool_call("c1", "read_file", json!({"path": "src/parser.rs"}));
    log.tool_result("c1", "read_file", json!(listing));
    let events = log.build();
    let summary = extractive_summary_of(None, &[], &events, &events[..1], 6_000);
    assert!(summary.contains("`read_file` result ("), "{summary}");
    assert!(summary.contains("begins:     0\tlet value_0 = parse(0); |     1\t"), "{summary}");
    // Calibrated ratios from 0.5 (the floor's cap) to 8 (the calibration's largest).
    for ratio_permille in [500, 1_000, 2_000, 8_000] {
        for base in [&CharEstimator as &dyn TokenEstimator, &PieceEstimator] {
            let estimator = crate::calibration::CalibratedEstimator { base, ratio_permille };
            let fold_tokens = estimate_events(&estimator, &events);
            assert!(fold_tokens > 10_000, "{fold_tokens}");
            let verdict = validate_summary(&summary, FinishReason::Stop, fold_tokens, &estimator);
            assert!(verdict.is_ok(), "ratio {ratio_permille}: {verdict:?}\n{summary}");
        }
    }
    // A small fold is not padded: room left over stays unused.
    let small = extractive_summary_of(None, &[], &fold(), &[], 6_000);
    assert!(!small.contains("begins:"), "{small}");
}
