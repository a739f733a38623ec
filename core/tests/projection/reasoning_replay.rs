//! Round trips of replayable reasoning across formats: reasoning imported from AI SDK
//! `ModelMessage[]` keeps the provider data each native format needs to accept it back.

use contextfold_core::projection::{
    ImportContext, Message, import_anthropic, import_model_messages, materialize, to_anthropic,
    to_model_messages, to_openai_responses,
};
use serde_json::{Value, json};

fn messages_from_ai_sdk(model_messages: Value) -> Vec<Message> {
    let events = import_model_messages(&model_messages, &ImportContext::new("s")).expect("import");
    materialize(None, &events, &[]).messages
}

fn conversation(reasoning: Value) -> Value {
    json!([
        { "role": "user", "content": "think" },
        { "role": "assistant", "content": [reasoning, { "type": "text", "text": "done" }] },
    ])
}

#[test]
fn ai_sdk_anthropic_signature_survives_into_anthropic_thinking() {
    let messages = messages_from_ai_sdk(conversation(json!({
        "type": "reasoning", "text": "weighing it",
        "providerOptions": { "anthropic": { "signature": "sig-1" } },
    })));
    let history = to_anthropic(&messages).expect("maps");
    assert_eq!(
        history.messages[1]["content"],
        json!([
            { "type": "thinking", "thinking": "weighing it", "signature": "sig-1" },
            { "type": "text", "text": "done" },
        ])
    );
}

#[test]
fn ai_sdk_anthropic_redacted_data_survives_into_redacted_thinking() {
    let messages = messages_from_ai_sdk(conversation(json!({
        "type": "reasoning", "text": "",
        "providerOptions": { "anthropic": { "redactedData": "opaque" } },
    })));
    let history = to_anthropic(&messages).expect("maps");
    assert_eq!(
        history.messages[1]["content"][0],
        json!({ "type": "redacted_thinking", "data": "opaque" })
    );
}

#[test]
fn ai_sdk_openai_encrypted_content_survives_into_responses_reasoning() {
    let messages = messages_from_ai_sdk(conversation(json!({
        "type": "reasoning", "text": "weighing it",
        "providerOptions": { "openai": { "itemId": "rs_1", "reasoningEncryptedContent": "gAAA" } },
    })));
    let items = to_openai_responses(&messages);
    let reasoning: Vec<&Value> = items.iter().filter(|i| i["type"] == "reasoning").collect();
    assert_eq!(
        reasoning,
        [&json!({ "type": "reasoning", "encrypted_content": "gAAA", "summary": [] })]
    );
}

#[test]
fn anthropic_import_round_trips_thinking_through_ai_sdk() {
    let body = json!({ "messages": [
        { "role": "user", "content": "think" },
        { "role": "assistant", "content": [
            { "type": "thinking", "thinking": "weighing it", "signature": "sig-1" },
            { "type": "redacted_thinking", "data": "opaque" },
            { "type": "text", "text": "done" },
        ] },
    ] });
    let events = import_anthropic(&body, &ImportContext::new("s")).expect("import");
    let exported = to_model_messages(&materialize(None, &events, &[]).messages);
    let back = to_anthropic(&messages_from_ai_sdk(Value::Array(exported))).expect("maps");
    assert_eq!(back.messages[1]["content"], body["messages"][1]["content"]);
}
