//! The Responses `input` importer: what `to_openai_responses` writes reads back as the same
//! events (attachments included), and what it cannot hold is a typed error.

use contextfold_core::event::encode_base64;
use contextfold_core::projection::{
    ImportContext, import_model_messages, import_openai_responses, materialize, to_openai_responses,
};
use contextfold_core::{EventContent, LogBuilder};
use serde_json::{Value, json};

const PNG: &[u8] = include_bytes!("../fixtures/screenshot.png");
const PDF: &[u8] = include_bytes!("../fixtures/report.pdf");

fn ids() -> ImportContext {
    ImportContext::new("s")
}

#[test]
fn projected_input_reads_back_as_the_same_request() {
    let history = json!([
        { "role": "system", "content": "be brief" },
        { "role": "user", "content": [
            { "type": "text", "text": "Look at this." },
            { "type": "image", "image": encode_base64(PNG), "mediaType": "image/png" },
            { "type": "file", "data": encode_base64(PDF), "mediaType": "application/pdf", "filename": "r.pdf" },
        ] },
        { "role": "assistant", "content": [
            { "type": "reasoning", "text": "", "providerOptions": { "openai": { "reasoningEncryptedContent": "gAAAA" } } },
            { "type": "text", "text": "Taking a screenshot." },
            { "type": "tool-call", "toolCallId": "c1", "toolName": "shot", "input": { "full": true } },
        ] },
        { "role": "tool", "content": [{ "type": "tool-result", "toolCallId": "c1", "toolName": "shot",
            "output": { "type": "content", "value": [
                { "type": "text", "text": "done" },
                { "type": "image-data", "data": encode_base64(PNG), "mediaType": "image/png" } ] } }] },
        { "role": "assistant", "content": "A test page." },
    ]);
    let events = import_model_messages(&history, &ids()).expect("imports");
    let input = to_openai_responses(&materialize(None, &events, &[]).messages);
    let back = import_openai_responses(&json!({ "input": input }), &ids()).expect("reads back");
    let again = to_openai_responses(&materialize(None, &back, &[]).messages);
    assert_eq!(again, input, "the same request");
    // The same attachments; Responses always states a detail, `auto` when none was given.
    let without_detail = |event: &contextfold_core::RuntimeEvent| {
        let mut attachments = event.attachments().to_vec();
        attachments.iter_mut().for_each(|a| a.detail = None);
        attachments
    };
    assert!(without_detail(&back[1]) == without_detail(&events[1]), "same attachments");
    assert_eq!(back[1].attachments()[0].detail.as_deref(), Some("auto"));
    let EventContent::ToolResult { output, attachments, .. } = &back[5].content else { panic!() };
    assert_eq!((output, attachments.len()), (&json!("done"), 1));
    let responses: Vec<Option<&str>> = back.iter().map(|e| e.response_id.as_deref()).collect();
    assert_eq!(responses[2..5], [Some("resp-3"), Some("resp-3"), Some("resp-3")], "one response");
}

#[test]
fn calls_pair_and_errors_are_typed() {
    let mut log = LogBuilder::new("s");
    log.user("go").tool_call("c1", "ls", json!({})).tool_result("c1", "ls", json!("a.rs"));
    let input = to_openai_responses(&materialize(None, log.events(), &[]).messages);
    let events = import_openai_responses(&Value::Array(input), &ids()).expect("imports");
    assert!(
        matches!(&events[2].content, EventContent::ToolResult { call_id, .. } if call_id == "c1")
    );
    let cases = [
        (json!("nope"), "responses_import_invalid_shape"),
        (
            json!([{ "type": "function_call_output", "call_id": "z", "output": "x" }]),
            "responses_import_unknown_call_id",
        ),
        (
            json!([{ "type": "function_call", "call_id": "a", "name": "t", "arguments": "{}" },
                { "type": "function_call", "call_id": "a", "name": "t", "arguments": "{}" }]),
            "responses_import_duplicate_call_id",
        ),
        (json!([{ "type": "web_search_call", "id": "w" }]), "responses_import_unsupported"),
        (
            json!([{ "role": "user", "content": [{ "type": "input_image", "file_id": "file-1" }] }]),
            "responses_import_unsupported",
        ),
        (
            json!([{ "role": "user", "content": [{ "type": "input_image", "image_url": "data:image/png;base64,abc" }] }]),
            "attachment_invalid_base64",
        ),
        (
            json!([{ "role": "user", "content": [{ "type": "input_file", "file_data": "data:application/pdf;base64,aGVsbG8=" }] }]),
            "attachment_media_type_mismatch",
        ),
    ];
    for (input, code) in cases {
        let error = import_openai_responses(&input, &ids()).expect_err("must fail");
        assert_eq!(error.code(), code, "{input}: {error}");
    }
}
