//! Reused tool call ids across the history importers (issue 17): an id reused after its earlier
//! call was answered is imported as is, and the projection of the imported events hands the
//! provider unique, valid pairs; a reuse while the call is open and a result for no call stay
//! typed errors naming the message index.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::budget::{CharEstimator, ModelFacts};
use crate::diagnostics::ReasonCode;
use crate::event::{EventContent, RuntimeEvent};
use crate::projection::ai_sdk_import::import_model_messages;
use crate::projection::anthropic::import_anthropic;
use crate::projection::openai_chat::{ImportContext, import_openai_chat, to_openai_chat};
use crate::projection::{Part, ProjectInput, project};

/// `(call id, tool name)` of every tool call and tool result event, in order.
fn pairs(events: &[RuntimeEvent]) -> Vec<(&'static str, String, String)> {
    events
        .iter()
        .filter_map(|event| match &event.content {
            EventContent::ToolCall { call_id, tool_name, .. } => {
                Some(("call", call_id.clone(), tool_name.clone()))
            }
            EventContent::ToolResult { call_id, tool_name, .. } => {
                Some(("result", call_id.clone(), tool_name.clone()))
            }
            _ => None,
        })
        .collect()
}

/// Projects `events` and checks the provider gets unique call ids, each call answered by exactly
/// one later result; returns the projected call ids in order and whether a rename was reported.
pub(crate) fn assert_projects_to_unique_pairs(events: &[RuntimeEvent]) -> (Vec<String>, bool) {
    let model = ModelFacts::default();
    let input = ProjectInput {
        events,
        current_turn_id: None,
        checkpoint: None,
        model: &model,
        provider: None,
        fail_open: false,
    };
    let projection = project(&input, &CharEstimator).expect("projects");
    let mut results: HashMap<&str, usize> = HashMap::new();
    let mut calls = Vec::new();
    for part in projection.messages.iter().flat_map(|m| &m.parts) {
        match part {
            Part::ToolCall { call_id, .. } => {
                assert!(!calls.contains(call_id), "call id {call_id} projected twice");
                calls.push(call_id.clone());
            }
            Part::ToolResult { call_id, .. } => {
                assert!(calls.contains(call_id), "result {call_id} before or without its call");
                *results.entry(call_id).or_default() += 1;
            }
            _ => {}
        }
    }
    for call_id in &calls {
        assert_eq!(results.get(call_id.as_str()), Some(&1), "call {call_id} needs one result");
    }
    to_openai_chat(&projection.messages).expect("a valid chat request");
    let renamed = projection.diagnostics.iter().any(|d| d.code == ReasonCode::ToolCallIdRenamed);
    (calls, renamed)
}

/// The events of a reuse after an answer keep the original id, the second result is named
/// after the second call, and the projection renames the second call and its result.
fn assert_reuse_imported_and_renamed(events: &[RuntimeEvent]) {
    let expected = [
        ("call", "c1".to_owned(), "ls".to_owned()),
        ("result", "c1".to_owned(), "ls".to_owned()),
        ("call", "c1".to_owned(), "cat".to_owned()),
        ("result", "c1".to_owned(), "cat".to_owned()),
    ];
    assert_eq!(pairs(events), expected, "original ids kept, the result pairs with the new call");
    let (calls, renamed) = assert_projects_to_unique_pairs(events);
    assert_eq!(calls, ["c1", "c1_r2"]);
    assert!(renamed, "the projection reports tool_call_id_renamed");
}

fn chat_call(id: &str, name: &str) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": id, "type": "function", "function": {"name": name, "arguments": "{}"}}]})
}

fn chat_result(id: &str) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": "ok"})
}

#[test]
fn chat_accepts_an_id_reused_after_its_answer() {
    let user = json!({"role": "user", "content": "go"});
    let chat = json!([
        user,
        chat_call("c1", "ls"),
        chat_result("c1"),
        chat_call("c1", "cat"),
        chat_result("c1")
    ]);
    let events = import_openai_chat(&chat, &ImportContext::new("s")).expect("reuse accepted");
    assert_reuse_imported_and_renamed(&events);
}

#[test]
fn chat_refuses_reuse_while_open_and_orphan_results_naming_the_index() {
    let ids = ImportContext::new("s");
    let open = json!([chat_call("c1", "ls"), chat_call("c1", "cat"), chat_result("c1")]);
    let error = import_openai_chat(&open, &ids).expect_err("reuse while open");
    assert_eq!(error.code(), "chat_import_duplicate_tool_call_id");
    assert!(error.to_string().starts_with("messages[1]: "), "{error}");
    let orphan = json!([chat_call("c1", "ls"), chat_result("c1"), chat_result("c2")]);
    let error = import_openai_chat(&orphan, &ids).expect_err("orphan");
    assert_eq!(error.code(), "chat_import_unknown_tool_call_id");
    assert!(error.to_string().starts_with("messages[2]: "), "{error}");
}

fn sdk_call(id: &str, name: &str) -> Value {
    json!({"role": "assistant", "content": [
        {"type": "tool-call", "toolCallId": id, "toolName": name, "input": {}}]})
}

fn sdk_result(id: &str, name: &str) -> Value {
    json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": id, "toolName": name,
        "output": {"type": "text", "value": "ok"}}]})
}

#[test]
fn ai_sdk_accepts_an_id_reused_after_its_answer() {
    let user = json!({"role": "user", "content": "go"});
    let messages = json!([
        user,
        sdk_call("c1", "ls"),
        sdk_result("c1", "ls"),
        sdk_call("c1", "cat"),
        sdk_result("c1", "cat")
    ]);
    let events = import_model_messages(&messages, &ImportContext::new("s")).expect("accepted");
    assert_reuse_imported_and_renamed(&events);
}

#[test]
fn ai_sdk_refuses_reuse_while_open_and_orphan_results_naming_the_index() {
    let ids = ImportContext::new("s");
    let open = json!([sdk_call("c1", "ls"), sdk_call("c1", "cat")]);
    let error = import_model_messages(&open, &ids).expect_err("reuse while open");
    assert_eq!(error.code(), "ai_sdk_duplicate_tool_call_id");
    assert!(error.to_string().starts_with("messages[1]: "), "{error}");
    let orphan = json!([sdk_call("c1", "ls"), sdk_result("c1", "ls"), sdk_result("c2", "ls")]);
    let error = import_model_messages(&orphan, &ids).expect_err("orphan");
    assert_eq!(error.code(), "ai_sdk_unknown_tool_call_id");
    assert!(error.to_string().starts_with("messages[2]: "), "{error}");
}

fn anthropic_call(id: &str, name: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": name, "input": {}}]})
}

fn anthropic_result(id: &str) -> Value {
    json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "ok"}]})
}

#[test]
fn anthropic_accepts_an_id_reused_after_its_answer() {
    let user = json!({"role": "user", "content": "go"});
    let messages = json!([
        user,
        anthropic_call("c1", "ls"),
        anthropic_result("c1"),
        anthropic_call("c1", "cat"),
        anthropic_result("c1")
    ]);
    let events = import_anthropic(&messages, &ImportContext::new("s")).expect("accepted");
    assert_reuse_imported_and_renamed(&events);
}

#[test]
fn anthropic_refuses_reuse_while_open_and_orphan_results_naming_the_index() {
    let ids = ImportContext::new("s");
    let open = json!([anthropic_call("c1", "ls"), anthropic_call("c1", "cat")]);
    let error = import_anthropic(&open, &ids).expect_err("reuse while open");
    assert_eq!(error.code(), "anthropic_import_duplicate_tool_use");
    assert!(error.to_string().starts_with("messages[1].content[0]: "), "{error}");
    let orphan =
        json!([anthropic_call("c1", "ls"), anthropic_result("c1"), anthropic_result("c2")]);
    let error = import_anthropic(&orphan, &ids).expect_err("orphan");
    assert_eq!(error.code(), "anthropic_import_unknown_tool_use");
    assert!(error.to_string().starts_with("messages[2].content[0]: "), "{error}");
}

/// `provider_specific_fields` (LiteLLM, on any message) and `index` (on `tool_calls[]`) are
/// tolerated and ignored; any other extra field is still refused.
#[test]
fn chat_tolerates_litellm_extra_fields_only() {
    let ids = ImportContext::new("s");
    let with_extras = json!([
        {"role": "user", "content": "go", "provider_specific_fields": null},
        {"role": "assistant", "content": "ok", "function_call": null,
         "provider_specific_fields": {"refusal": null}, "tool_calls": [
            {"index": 0, "id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x", "provider_specific_fields": null},
    ]);
    let events = import_openai_chat(&with_extras, &ids).expect("extras tolerated");
    let plain = json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "ok", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"},
    ]);
    assert_eq!(events, import_openai_chat(&plain, &ids).expect("plain"), "extras are ignored");
    let mut unknown = with_extras.clone();
    unknown[1]["vendor_extra"] = json!(1);
    let error = import_openai_chat(&unknown, &ids).expect_err("unknown message field");
    assert_eq!(error.code(), "chat_import_unknown_field");
    let mut unknown = with_extras;
    unknown[1]["tool_calls"][0]["position"] = json!(0);
    let error = import_openai_chat(&unknown, &ids).expect_err("unknown tool call field");
    assert_eq!(error.code(), "chat_import_unknown_field");
}
