use serde_json::json;

use super::*;

fn import(messages: Value) -> Result<Vec<RuntimeEvent>> {
    import_model_messages(&messages, &ImportContext::new("s"))
}

#[test]
fn ids_turns_and_response_ids_follow_the_chat_import() {
    let events = import(json!({ "messages": [
        { "role": "user", "content": "one" },
        { "role": "assistant", "content": [{ "type": "text", "text": "a" }, { "type": "text", "text": "b" }] },
        { "role": "user", "content": [{ "type": "text", "text": "two" }] },
    ] }))
    .expect("import");
    let ids: Vec<(&str, &str, Option<&str>)> = events
        .iter()
        .map(|e| (e.runtime_event_id.as_str(), e.turn_id.as_str(), e.response_id.as_deref()))
        .collect();
    assert_eq!(
        ids,
        [
            ("evt-1", "turn-0", None),
            ("evt-2", "turn-0", Some("resp-2")),
            ("evt-3", "turn-0", Some("resp-2")),
            ("evt-4", "turn-1", None),
        ]
    );
}

#[test]
fn outputs_errors_and_provider_options_are_kept() {
    let events = import(json!([
        { "role": "user", "content": "go", "providerOptions": { "x": { "y": 1 } } },
        { "role": "assistant", "content": [
            { "type": "tool-call", "toolCallId": "a", "toolName": "t", "input": {}, "providerOptions": { "p": {} } },
            { "type": "tool-call", "toolCallId": "b", "toolName": "t", "input": {} },
        ] },
        { "role": "tool", "content": [
            { "type": "tool-result", "toolCallId": "a", "toolName": "t", "output": { "type": "error-json", "value": { "e": 1 } } },
            { "type": "tool-result", "toolCallId": "b", "toolName": "t", "output": { "type": "execution-denied", "reason": "no" } },
        ] },
    ]))
    .expect("import");
    let metadata = events[0].metadata.as_ref().expect("metadata");
    assert_eq!(metadata["messageProviderOptions"], json!({ "x": { "y": 1 } }));
    assert_eq!(events[1].metadata.as_ref().expect("part")["providerOptions"], json!({ "p": {} }));
    assert!(
        matches!(&events[3].content, EventContent::ToolResult { is_error: true, output, .. } if output == &json!({ "e": 1 }))
    );
    assert!(
        matches!(&events[4].content, EventContent::ToolResult { is_error: true, output, .. } if output["type"] == "execution-denied")
    );
}

#[test]
fn bad_input_is_a_typed_error() {
    let cases = [
        (json!("nope"), "ai_sdk_invalid_shape"),
        (json!([{ "role": "critic", "content": "x" }]), "ai_sdk_unknown_role"),
        (
            json!([{ "role": "user", "content": [{ "type": "image", "image": "x" }] }]),
            "attachment_invalid_base64",
        ),
        (
            json!([{ "role": "user", "content": [{ "type": "tool-approval-response" }] }]),
            "ai_sdk_unsupported_part",
        ),
        (
            json!([{ "role": "tool", "content": [{ "type": "tool-result", "toolCallId": "z", "toolName": "t", "output": { "type": "text", "value": "" } }] }]),
            "ai_sdk_unknown_tool_call_id",
        ),
        (
            json!([{ "role": "assistant", "content": [
                { "type": "tool-call", "toolCallId": "a", "toolName": "t", "input": {} },
                { "type": "tool-call", "toolCallId": "a", "toolName": "t", "input": {} }] }]),
            "ai_sdk_duplicate_tool_call_id",
        ),
        (
            json!([
                { "role": "assistant", "content": [{ "type": "tool-call", "toolCallId": "a", "toolName": "t", "input": {} }] },
                { "role": "tool", "content": [
                    { "type": "tool-result", "toolCallId": "a", "toolName": "t", "output": { "type": "text", "value": "1" } },
                    { "type": "tool-result", "toolCallId": "a", "toolName": "t", "output": { "type": "text", "value": "2" } }] }]),
            "ai_sdk_duplicate_tool_result",
        ),
        (
            json!([
                { "role": "assistant", "content": [{ "type": "tool-call", "toolCallId": "a", "toolName": "t", "input": {} }] },
                { "role": "tool", "content": [{ "type": "tool-result", "toolCallId": "a", "toolName": "t", "output": { "type": "media" } }] }]),
            "ai_sdk_invalid_shape",
        ),
    ];
    for (input, code) in cases {
        let error = import(input.clone()).expect_err("must fail");
        assert_eq!(error.code(), code, "{input}: {error}");
    }
}
