//! The summarizer request: transcript, reasoning omission, sizing, repair and overflow retry.

use contextfold_core::budget::TokenEstimator;
use contextfold_core::compaction::{
    OVERFLOW_RETRY_DIVISOR, REPAIR_SEPARATOR, SummaryDefect, SummaryInputError, SummaryPurpose,
    SummaryRequest, TOOL_RESULT_OMISSION_MARKER, build_repair_request, build_summary_request,
    repair_sizing_samples, shrink_for_overflow_retry,
};
use contextfold_core::event::EventContent;
use contextfold_core::projection::{Message, Part, Role};
use contextfold_core::{CharEstimator, LogBuilder, ReasonCode, RuntimeEvent};
use proptest::prelude::*;
use serde_json::json;

/// The text of a message (its text parts joined).
pub(crate) fn text(message: &Message) -> String {
    message
        .parts
        .iter()
        .map(|part| match part {
            Part::Text { text } => text.as_str(),
            _ => "",
        })
        .collect()
}

/// The request's size measured on its messages, as the core measures it.
pub(crate) fn exact_estimate(request: &SummaryRequest) -> u64 {
    let e = CharEstimator;
    request.messages.iter().map(|m| e.estimate_text(&text(m)) + e.message_overhead()).sum()
}

/// Three tool pairs with 4,000-byte outputs (`out-1…`, `out-2…`, `out-3…`), then small text.
fn fold_with_big_results() -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new("s");
    log.user("Fix the parser.");
    for n in 1..=3 {
        log.reasoning(&format!("secret plan {n}"));
        log.tool_call(&format!("c{n}"), "bash", json!({"cmd": format!("run {n}")}));
        log.tool_result(&format!("c{n}"), "bash", json!(format!("out-{n} {}", "y".repeat(4_000))));
    }
    log.assistant("Done with the parser.");
    log.build()
}

fn unlimited(previous: Option<&str>, fold: &[RuntimeEvent]) -> SummaryRequest {
    build_summary_request(previous, fold, u64::MAX, &CharEstimator).expect("fits")
}

#[test]
fn initial_and_rolling_requests_have_instructions_and_a_reasoning_free_transcript() {
    let fold = fold_with_big_results();
    let initial = unlimited(None, &fold);
    assert_eq!(initial.purpose, SummaryPurpose::Initial);
    assert_eq!(initial.messages.len(), 2);
    assert_eq!((initial.messages[0].role, initial.messages[1].role), (Role::System, Role::User));
    let user = text(&initial.messages[1]);
    assert!(user.starts_with(
        "<events>\n[user]\nFix the parser.\n\n[tool call c1] bash {\"cmd\":\"run 1\"}"
    ));
    assert!(user.contains("[tool result c1] bash:\nout-1 yyy"));
    assert!(!user.contains("secret plan"));
    assert!(!user.contains("<previous_summary>"));
    assert_eq!(initial.estimated_input_tokens, exact_estimate(&initial));
    assert_eq!(initial.omitted_tool_results, 0);

    let rolling = unlimited(Some("## Goal\nOld goal."), &fold);
    assert_eq!(rolling.purpose, SummaryPurpose::Rolling);
    let user = text(&rolling.messages[1]);
    assert!(user.starts_with("<previous_summary>\n## Goal\nOld goal.\n</previous_summary>"));
    assert!(user.contains("<new_events>\n[user]"));
    assert!(text(&rolling.messages[0]).contains("still valid"));
    let json = serde_json::to_value(&rolling).expect("json");
    assert!(json.get("estimatedInputTokens").is_some() && json["purpose"] == "rolling");
}

#[test]
fn hosted_calls_notes_and_errors_are_rendered() {
    let mut log = LogBuilder::new("s");
    log.push(EventContent::HostedToolCall {
        call_id: "h1".into(),
        tool_name: "web_search".into(),
        input: json!({"q": "rust"}),
    });
    log.push(EventContent::HostedToolResult {
        call_id: "h1".into(),
        tool_name: "web_search".into(),
        output: json!({"hits": 2}),
        is_error: true,
    });
    log.push(EventContent::RuntimeNote { code: "turn_interrupted".into(), text: "n".into() });
    // The note a failed compaction leaves is about contextfold, not the task: left out.
    log.push(EventContent::RuntimeNote {
        code: "context_compaction_failed_open".into(),
        text: "Context compaction failed".into(),
    });
    let user = text(&unlimited(None, &log.build()).messages[1]);
    assert!(user.contains("[hosted tool call h1] web_search {\"q\":\"rust\"}"));
    assert!(user.contains("[hosted tool result h1] web_search (error):\n{\"hits\":2}"));
    assert!(user.contains("[runtime note turn_interrupted]\nn"));
    assert!(
        !user.contains("context_compaction_failed_open")
            && !user.contains("Context compaction failed")
    );
}

#[test]
fn the_oldest_tool_result_payloads_are_omitted_first_and_pairs_are_kept() {
    let fold = fold_with_big_results();
    let full = unlimited(None, &fold);
    let checked = full.estimated_input_tokens + full.repair_reserve_tokens;

    let one = build_summary_request(None, &fold, checked - 1, &CharEstimator).expect("fits");
    assert_eq!(one.omitted_tool_results, 1);
    let user = text(&one.messages[1]);
    assert!(user.contains(&format!("[tool result c1] bash:\n{TOOL_RESULT_OMISSION_MARKER}")));
    assert!(!user.contains("out-1") && user.contains("out-2") && user.contains("out-3"));
    assert!(one.estimated_input_tokens + one.repair_reserve_tokens < checked);

    let two = build_summary_request(None, &fold, checked - 1_100, &CharEstimator).expect("fits");
    assert_eq!(two.omitted_tool_results, 2);
    let user = text(&two.messages[1]);
    assert!(!user.contains("out-2") && user.contains("out-3"));
    for n in 1..=3 {
        assert!(user.contains(&format!("[tool call c{n}] bash")), "call {n} kept");
        assert!(user.contains(&format!("[tool result c{n}] bash:")), "result {n} kept");
    }
    assert!(two.estimated_input_tokens + two.repair_reserve_tokens <= checked - 1_100);
}

#[test]
fn results_shorter_than_the_marker_are_never_replaced() {
    let mut log = LogBuilder::new("s");
    log.tool_call("c1", "ls", json!({})).tool_result("c1", "ls", json!("a.rs"));
    log.user(&"long question ".repeat(300));
    let fold = log.build();
    let err = build_summary_request(None, &fold, 100, &CharEstimator).expect_err("cannot fit");
    assert!(matches!(err, SummaryInputError::CannotFit { budget: 100, .. }));
    let full = unlimited(None, &fold);
    assert!(text(&full.messages[1]).contains("a.rs"));
}

#[test]
fn a_request_that_cannot_fit_reports_its_smallest_size() {
    let fold = fold_with_big_results();
    let err = build_summary_request(None, &fold, 800, &CharEstimator).expect_err("cannot fit");
    assert_eq!(err.code(), ReasonCode::SummaryInputCannotFit);
    assert_eq!(err.code().as_str(), "summary_input_cannot_fit");
    let SummaryInputError::CannotFit { needed, budget } = err else { panic!("variant") };
    assert_eq!(budget, 800);
    assert!(needed > 800);
    let smallest =
        build_summary_request(None, &fold, needed, &CharEstimator).expect("fits exactly");
    assert_eq!(smallest.omitted_tool_results, 3);
    assert_eq!(smallest.estimated_input_tokens + smallest.repair_reserve_tokens, needed);
    assert!(build_summary_request(None, &fold, needed - 1, &CharEstimator).is_err());
}

#[test]
fn the_repair_request_keeps_the_input_quotes_the_reason_and_fits_the_budget() {
    let fold = fold_with_big_results();
    let full = unlimited(None, &fold);
    let budget = full.estimated_input_tokens + full.repair_reserve_tokens - 1;
    let first = build_summary_request(None, &fold, budget, &CharEstimator).expect("fits");
    let defect = SummaryDefect::OpenFence { detail: "the text has 3 code-fence lines".into() };
    let repair = build_repair_request(&first, "BAD OUTPUT TEXT", &defect);
    assert_eq!(repair.purpose, SummaryPurpose::Repair);
    assert_eq!(repair.messages[1], first.messages[1], "same input");
    let system = text(&repair.messages[0]);
    assert!(system.starts_with(&text(&first.messages[0])));
    assert!(system.contains("malformed_summary_open_fence: the text has 3 code-fence lines"));
    assert!(system.contains("(15 characters)") && !system.contains("BAD OUTPUT TEXT"));
    assert!(exact_estimate(&repair) <= repair.estimated_input_tokens);
    assert!(repair.estimated_input_tokens <= budget);

    // Every validator reason fits the reserve; a repair of a repair does not stack blocks.
    for sample in repair_sizing_samples() {
        let again = build_repair_request(&repair, &"z".repeat(100_000), &sample);
        assert_eq!(text(&again.messages[0]).matches(REPAIR_SEPARATOR).count(), 1);
        assert!(exact_estimate(&again) <= again.estimated_input_tokens, "{sample:?}");
        assert!(again.estimated_input_tokens <= budget);
    }
    let huge = SummaryDefect::Truncated { detail: "q".repeat(50_000) };
    assert!(exact_estimate(&build_repair_request(&first, "", &huge)) <= budget);
}

#[test]
fn an_overflow_retry_halves_the_request_or_gives_up() {
    let fold = fold_with_big_results();
    let first = unlimited(Some("## Goal\nOld."), &fold);
    let checked = first.estimated_input_tokens + first.repair_reserve_tokens;
    let retry = shrink_for_overflow_retry(&first, Some("## Goal\nOld."), &fold, &CharEstimator)
        .expect("smaller retry");
    assert_eq!(retry.purpose, SummaryPurpose::Rolling);
    assert!(
        retry.estimated_input_tokens + retry.repair_reserve_tokens
            <= checked / OVERFLOW_RETRY_DIVISOR
    );
    assert!(retry.omitted_tool_results >= 1);

    // When half cannot fit, a retry omits everything it can, once; then nothing is left.
    let tight = match retry.omitted_tool_results {
        3 => retry,
        _ => shrink_for_overflow_retry(&retry, Some("## Goal\nOld."), &fold, &CharEstimator)
            .expect("all omitted"),
    };
    assert_eq!(tight.omitted_tool_results, 3);
    assert!(
        shrink_for_overflow_retry(&tight, Some("## Goal\nOld."), &fold, &CharEstimator).is_none()
    );

    // A repair request keeps its repair instructions through the retry.
    let defect = SummaryDefect::Empty { detail: "blank".into() };
    let repair = build_repair_request(&first, "", &defect);
    let retried = shrink_for_overflow_retry(&repair, Some("## Goal\nOld."), &fold, &CharEstimator)
        .expect("smaller");
    assert_eq!(retried.purpose, SummaryPurpose::Repair);
    assert_eq!(retried.messages[0], repair.messages[0]);
    assert!(exact_estimate(&retried) <= retried.estimated_input_tokens);
    assert!(retried.estimated_input_tokens < repair.estimated_input_tokens);

    let text_only = LogBuilder::new("s").user(&"words ".repeat(2_000)).clone().build();
    let request = unlimited(None, &text_only);
    assert!(shrink_for_overflow_retry(&request, None, &text_only, &CharEstimator).is_none());
}

#[derive(Debug, Clone)]
enum Step {
    User(String),
    Reasoning(String),
    Pair(String),
    Hosted(String),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        "[a-z ]{0,40}".prop_map(Step::User),
        "[a-z ]{0,40}".prop_map(|t| Step::Reasoning(format!("§{t}§"))),
        "[a-z]{0,600}".prop_map(Step::Pair),
        "[a-z]{0,300}".prop_map(Step::Hosted),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn reasoning_never_leaks_and_every_call_keeps_its_result(
        steps in prop::collection::vec(step(), 0..30),
        budget in 0u64..6_000,
        rolling in any::<bool>(),
    ) {
        let mut log = LogBuilder::new("s");
        let mut reasoning = Vec::new();
        for (n, step) in steps.iter().enumerate() {
            match step {
                Step::User(text) => { log.assistant(text); }
                Step::Reasoning(text) => { reasoning.push(text.clone()); log.reasoning(text); }
                Step::Pair(out) => {
                    log.tool_call(&format!("c{n}"), "t", json!({"n": n}));
                    log.tool_result(&format!("c{n}"), "t", json!(out));
                }
                Step::Hosted(out) => {
                    log.push(EventContent::HostedToolCall { call_id: format!("h{n}"), tool_name: "w".into(), input: json!(n) });
                    log.push(EventContent::HostedToolResult { call_id: format!("h{n}"), tool_name: "w".into(), output: json!(out), is_error: false });
                }
            }
        }
        let fold = log.build();
        let previous = rolling.then_some("## Goal\nPrevious.");
        match build_summary_request(previous, &fold, budget, &CharEstimator) {
            Ok(request) => {
                let all: String = request.messages.iter().map(text).collect();
                prop_assert!(!all.contains('§'));
                for secret in &reasoning { prop_assert!(!all.contains(secret.as_str())); }
                for (n, step) in steps.iter().enumerate() {
                    let (call, result) = match step {
                        Step::Pair(_) => (format!("[tool call c{n}] t "), format!("[tool result c{n}] t:\n")),
                        Step::Hosted(_) => (format!("[hosted tool call h{n}] w "), format!("[hosted tool result h{n}] w:\n")),
                        _ => continue,
                    };
                    let call_at = all.find(&call);
                    prop_assert!(call_at.is_some());
                    prop_assert!(all.find(&result) > call_at);
                }
                prop_assert_eq!(all.matches(TOOL_RESULT_OMISSION_MARKER).count() as u64 - 1, request.omitted_tool_results);
                prop_assert_eq!(request.estimated_input_tokens, exact_estimate(&request));
                prop_assert!(request.estimated_input_tokens + request.repair_reserve_tokens <= budget);
            }
            Err(SummaryInputError::CannotFit { needed, budget: reported }) => {
                prop_assert_eq!(reported, budget);
                prop_assert!(needed > budget);
            }
            Err(other) => prop_assert!(false, "unexpected {other:?}"),
        }
    }
}
