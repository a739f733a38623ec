//! OpenAI Codex remote compaction v2: request shape, lowering, sizing, output admission,
//! provider matching and redaction.

use std::collections::HashMap;

use contextfold_core::compaction::{
    INTERRUPTED_CALL_OUTPUT, NativeBinding, NativeInputError, NativeOutputDefect, NativeRequest,
    ProviderIdentity, TOOL_RESULT_OMISSION_MARKER, accept_native_output, build_native_request,
    provider_state_matches, redact_provider_state,
};
use contextfold_core::{CharEstimator, EventContent, LogBuilder, ProviderState, ReasonCode};
use serde_json::{Value, json};

const BIG: u64 = 1_000_000;

fn hosted_call(log: &mut LogBuilder, call_id: &str, query: &str) {
    log.push(EventContent::HostedToolCall {
        call_id: call_id.into(),
        tool_name: "web_search".into(),
        input: json!({ "query": query }),
    });
}

fn hosted_result(log: &mut LogBuilder, call_id: &str, output: Value) {
    log.push(EventContent::HostedToolResult {
        call_id: call_id.into(),
        tool_name: "web_search".into(),
        output,
        is_error: false,
    });
}

fn build(log: &LogBuilder, budget: u64) -> Result<NativeRequest, NativeInputError> {
    build_native_request(None, log.events(), budget, &CharEstimator)
}

fn types(request: &NativeRequest) -> Vec<&str> {
    request.input.iter().map(|item| item["type"].as_str().unwrap_or("?")).collect()
}

fn state() -> ProviderState {
    ProviderState::OpenaiCodexRemoteV2 {
        connection_slug: "codex-sub".into(),
        model_id: "gpt-5.3-codex".into(),
        item_id: "cmp_prev".into(),
        encrypted_content: "gAAAAprevious".into(),
    }
}

fn binding() -> NativeBinding {
    NativeBinding { connection_slug: "codex-sub".into(), model_id: "gpt-5.3-codex".into() }
}

#[test]
fn items_follow_the_responses_wire_shapes_and_end_with_the_trigger() {
    let mut log = LogBuilder::new("s");
    log.user("read the manifest").tool_call("c1", "read", json!({"path": "Cargo.toml"}));
    log.tool_result("c1", "read", json!("[package]")).assistant("It is a Rust crate.");
    let request = build(&log, BIG).expect("fits");
    assert_eq!(
        request.input,
        vec![
            json!({"type": "message", "role": "user",
                   "content": [{"type": "input_text", "text": "read the manifest"}]}),
            json!({"type": "function_call", "call_id": "c1", "name": "read",
                   "arguments": "{\"path\":\"Cargo.toml\"}"}),
            json!({"type": "function_call_output", "call_id": "c1", "output": "[package]"}),
            json!({"type": "message", "role": "assistant",
                   "content": [{"type": "output_text", "text": "It is a Rust crate."}]}),
            json!({"type": "compaction_trigger"}),
        ]
    );
    assert_eq!(request.omitted_tool_results, 0);
    // 5 + 4 (user) + 1 + 6 + 4 (call) + 3 + 4 (output) + 5 + 4 (assistant) + 4 (trigger).
    assert_eq!(request.estimated_input_tokens, 40);
}

#[test]
fn the_request_is_history_only() {
    let mut log = LogBuilder::new("s");
    log.user("hi").assistant("hello");
    let request = build(&log, BIG).expect("fits");
    let text = serde_json::to_string(&request).expect("serializes");
    assert!(!text.contains("\"tools\"") && !text.contains("\"instructions\""));
    assert!(
        request.input.iter().all(|item| item["role"] != "system" && item["role"] != "developer")
    );
    let wire = serde_json::to_value(&request).expect("serializes");
    assert!(wire.get("estimatedInputTokens").is_some() && wire.get("omittedToolResults").is_some());
}

#[test]
fn an_empty_fold_is_just_the_trigger() {
    let request = build_native_request(None, &[], BIG, &CharEstimator).expect("fits");
    assert_eq!(request.input, vec![json!({"type": "compaction_trigger"})]);
    assert_eq!(request.estimated_input_tokens, 4);
}

#[test]
fn notes_become_prefixed_user_messages() {
    let mut log = LogBuilder::new("s");
    log.push(EventContent::SystemNote { text: "checkpoint replayed".into() });
    log.push(EventContent::RuntimeNote {
        code: "context_compaction_failed_open".into(),
        text: "compaction failed".into(),
    });
    let request = build(&log, BIG).expect("fits");
    assert_eq!(request.input[0]["role"], "user");
    assert_eq!(request.input[0]["content"][0]["text"], "[system note]\ncheckpoint replayed");
    assert_eq!(request.input[1]["role"], "user");
    assert_eq!(
        request.input[1]["content"][0]["text"],
        "[runtime note: context_compaction_failed_open]\ncompaction failed"
    );
}

#[test]
fn reasoning_is_omitted() {
    let mut log = LogBuilder::new("s");
    log.user("why").reasoning("secret chain of thought").assistant("because");
    let request = build(&log, BIG).expect("fits");
    assert_eq!(types(&request), ["message", "message", "compaction_trigger"]);
    let text = serde_json::to_string(&request.input).expect("serializes");
    assert!(!text.contains("secret chain of thought"));
}

#[test]
fn a_settled_hosted_call_is_lowered_to_a_pair_before_its_grounded_text() {
    for result_before_text in [true, false] {
        let mut log = LogBuilder::new("s");
        log.user("search");
        log.response(Some("resp-1"));
        hosted_call(&mut log, "ws_1", "latest release");
        if result_before_text {
            hosted_result(&mut log, "ws_1", json!({"hits": 3}));
            log.assistant("It shipped.");
        } else {
            log.assistant("It shipped.");
            hosted_result(&mut log, "ws_1", json!({"hits": 3}));
        }
        let request = build(&log, BIG).expect("fits");
        assert_eq!(
            types(&request),
            ["message", "function_call", "function_call_output", "message", "compaction_trigger"]
        );
        assert_eq!(request.input[1]["call_id"], "ws_1");
        assert_eq!(request.input[1]["name"], "web_search");
        assert_eq!(
            request.input[2],
            json!({"type": "function_call_output", "call_id": "ws_1",
                                             "output": "{\"hits\":3}"})
        );
        assert_eq!(request.input[3]["content"][0]["text"], "It shipped.");
        assert_eq!((request.lowered_hosted_calls, request.dropped_hosted_calls), (1, 0));
    }
}

#[test]
fn an_unsettled_hosted_call_is_dropped_and_counted() {
    let mut log = LogBuilder::new("s");
    log.user("search");
    hosted_call(&mut log, "ws_1", "nothing came back");
    log.assistant("The search did not finish.");
    let request = build(&log, BIG).expect("fits");
    assert_eq!(types(&request), ["message", "message", "compaction_trigger"]);
    assert_eq!((request.lowered_hosted_calls, request.dropped_hosted_calls), (0, 1));
}

#[test]
fn an_interrupted_call_gets_an_explicit_error_output_right_after_it() {
    let mut log = LogBuilder::new("s");
    log.user("run both").tool_call("a", "sh", json!({"cmd": "ls"}));
    log.tool_call("b", "sh", json!({"cmd": "pwd"})).tool_result("b", "sh", json!("/work"));
    let request = build(&log, BIG).expect("fits");
    assert_eq!(
        types(&request),
        [
            "message",
            "function_call",
            "function_call_output",
            "function_call",
            "function_call_output",
            "compaction_trigger"
        ]
    );
    assert_eq!(request.input[2]["call_id"], "a");
    assert_eq!(request.input[2]["output"], INTERRUPTED_CALL_OUTPUT);
    assert_eq!(request.input[4]["output"], "/work");
    assert_eq!(request.interrupted_calls, 1);
}

#[test]
fn failed_results_are_marked_and_json_outputs_are_strings() {
    let mut log = LogBuilder::new("s");
    log.tool_call("c1", "sh", json!({}));
    log.push(EventContent::ToolResult {
        call_id: "c1".into(),
        tool_name: "sh".into(),
        output: json!({"exit": 2}),
        is_error: true,
        attachments: Vec::new(),
    });
    let request = build(&log, BIG).expect("fits");
    assert_eq!(request.input[1]["output"], "[error] {\"exit\":2}");
}

#[test]
fn the_previous_state_is_replayed_first_on_a_rolling_request() {
    let mut log = LogBuilder::new("s");
    log.user("continue");
    let request =
        build_native_request(Some(&state()), log.events(), BIG, &CharEstimator).expect("fits");
    assert_eq!(
        request.input[0],
        json!({"type": "compaction", "id": "cmp_prev", "encrypted_content": "gAAAAprevious"})
    );
    assert_eq!(types(&request), ["compaction", "message", "compaction_trigger"]);
    // 13 chars → 4 tokens + 4 overhead for the replayed item.
    let fresh = build(&log, BIG).expect("fits");
    assert_eq!(request.estimated_input_tokens, fresh.estimated_input_tokens + 8);
}

fn three_big_results() -> LogBuilder {
    let mut log = LogBuilder::new("s");
    log.user("inspect three files");
    for (id, fill) in [("c1", "a"), ("c2", "b"), ("c3", "c")] {
        log.tool_call(id, "read", json!({"path": id}));
        log.tool_result(id, "read", json!(fill.repeat(400)));
        log.assistant(&format!("{id} read"));
    }
    log
}

#[test]
fn older_tool_results_are_omitted_oldest_first_until_the_request_fits() {
    let log = three_big_results();
    let full = build(&log, BIG).expect("fits").estimated_input_tokens;
    let saving = (100 + 4) - marker_tokens();
    for omitted in 1..=3u64 {
        let budget = full - omitted * saving;
        let request = build(&log, budget).expect("fits after omission");
        assert_eq!(request.omitted_tool_results, omitted);
        assert_eq!(request.estimated_input_tokens, budget);
        let outputs: Vec<&Value> = request
            .input
            .iter()
            .filter(|item| item["type"] == "function_call_output")
            .map(|item| &item["output"])
            .collect();
        assert_eq!(outputs.len(), 3, "every pair is kept");
        for (index, output) in outputs.iter().enumerate() {
            assert_eq!(*output == TOOL_RESULT_OMISSION_MARKER, (index as u64) < omitted);
        }
        let texts = request.input.iter().filter(|item| item["type"] == "message").count();
        assert_eq!(texts, 4, "all grounded text is kept");
    }
    let one_short = full - 3 * saving - 1;
    let error = build(&log, one_short).expect_err("cannot fit");
    assert_eq!(error, NativeInputError::CannotFit { needed: full - 3 * saving, budget: one_short });
}

/// Estimated tokens of an output item holding the omission marker (CharEstimator).
fn marker_tokens() -> u64 {
    (TOOL_RESULT_OMISSION_MARKER.len() as u64).div_ceil(4) + 4
}

#[test]
fn small_outputs_are_never_swapped_for_a_larger_marker() {
    let mut log = LogBuilder::new("s");
    log.tool_call("c1", "sh", json!({})).tool_result("c1", "sh", json!("ok"));
    log.user(&"x".repeat(4_000));
    let error = build(&log, 100).expect_err("text alone exceeds the budget");
    let full = build(&log, BIG).expect("fits");
    assert_eq!(
        error,
        NativeInputError::CannotFit { needed: full.estimated_input_tokens, budget: 100 }
    );
}

#[test]
fn history_that_cannot_fit_is_reported_with_its_code() {
    let mut log = three_big_results();
    log.user(&"long grounded text ".repeat(200));
    let error = build(&log, 500).expect_err("cannot fit");
    let NativeInputError::CannotFit { needed, budget } = error.clone() else {
        panic!("unexpected {error:?}");
    };
    assert!(needed > budget && budget == 500);
    assert_eq!(error.code(), "native_input_cannot_fit");
    assert_eq!(error.reason_code(), ReasonCode::NativeInputCannotFit);
    let smallest = build(&log, needed).expect("the reported size fits exactly");
    assert_eq!(smallest.omitted_tool_results, 3);
    assert_eq!(smallest.estimated_input_tokens, needed);
}

#[test]
fn a_fold_that_is_not_a_safe_prefix_is_rejected() {
    let mut orphan = LogBuilder::new("s");
    orphan.tool_result("c9", "sh", json!("late"));
    let mut early = LogBuilder::new("s");
    early.tool_result("c1", "sh", json!("x")).tool_call("c1", "sh", json!({}));
    let mut crossed = LogBuilder::new("s");
    crossed.tool_call("c1", "sh", json!({}));
    hosted_result(&mut crossed, "c1", json!("x"));
    let mut twice = LogBuilder::new("s");
    twice.tool_call("c1", "sh", json!({})).tool_result("c1", "sh", json!("1"));
    twice.tool_result("c1", "sh", json!("2"));
    for log in [orphan, early, crossed, twice] {
        let error = build(&log, BIG).expect_err("unpaired");
        assert!(matches!(error, NativeInputError::UnpairedResult { .. }), "{error:?}");
        assert_eq!(error.reason_code(), ReasonCode::NativeInputInvalid);
    }
    let mut duplicate = LogBuilder::new("s");
    duplicate.tool_call("c1", "sh", json!({})).tool_call("c1", "sh", json!({}));
    let error = build(&duplicate, BIG).expect_err("duplicate");
    assert_eq!(error, NativeInputError::DuplicateCallId { index: 1, call_id: "c1".into() });
    assert_eq!(error.code(), "native_input_invalid");
}

#[path = "native/admission.rs"]
mod admission;
#[path = "native/properties.rs"]
mod properties;
