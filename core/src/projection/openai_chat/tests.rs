//! Unit tests of the Chat Completions mapping and import.

use serde_json::json;

use super::*;
use crate::checkpoint::ProviderState;
use crate::event::EventContent;
use crate::projection::materialize::materialize;

fn call(id: &str, hosted: bool) -> Part {
    Part::ToolCall {
        call_id: id.into(),
        tool_name: "search".into(),
        input: json!({"q": "x"}),
        hosted,
    }
}

fn result(id: &str, output: Value, is_error: bool, hosted: bool) -> Part {
    Part::ToolResult {
        call_id: id.into(),
        tool_name: "search".into(),
        output,
        is_error,
        hosted,
        attachments: Vec::new(),
    }
}

fn message(role: Role, parts: Vec<Part>) -> Message {
    Message { role, parts }
}

#[test]
fn maps_roles_calls_and_results() {
    let messages = [
        Message::text(Role::System, "rules"),
        Message::text(Role::User, "find x"),
        message(
            Role::Assistant,
            vec![Part::Text { text: "on it".into() }, call("c1", false), call("c2", false)],
        ),
        message(
            Role::Tool,
            vec![
                result("c2", json!({"hits": 0}), true, false),
                result("c1", json!("x found"), false, false),
            ],
        ),
    ];
    let chat = to_openai_chat(&messages).unwrap_or_default();
    assert_eq!(
        chat,
        [
            json!({"role": "system", "content": "rules"}),
            json!({"role": "user", "content": "find x"}),
            json!({"role": "assistant", "content": "on it", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{\"q\":\"x\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "search", "arguments": "{\"q\":\"x\"}"}},
            ]}),
            // Results keep their recorded order.
            json!({"role": "tool", "tool_call_id": "c2", "content": "Tool error: {\"hits\":0}"}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "x found"}),
        ]
    );
}

#[test]
fn several_text_parts_become_a_part_array_and_reasoning_is_dropped() {
    let reasoning = Part::Reasoning { text: "hmm".into(), provider_data: None };
    let messages = [
        message(Role::User, vec![Part::Text { text: "a".into() }, Part::Text { text: "b".into() }]),
        message(Role::Assistant, vec![reasoning.clone()]),
        message(Role::Assistant, vec![reasoning, call("c1", false)]),
        message(Role::Tool, vec![result("c1", json!("ok"), false, false)]),
    ];
    let chat = to_openai_chat(&messages).unwrap_or_default();
    assert_eq!(chat.len(), 3);
    assert_eq!(
        chat[0]["content"],
        json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])
    );
    assert_eq!(chat[1]["content"], Value::Null);
    assert_eq!(chat[1]["tool_calls"][0]["id"], "c1");
}

#[test]
fn hosted_pairs_lower_to_function_calls_and_keep_chronology() {
    let messages = [
        message(
            Role::Assistant,
            vec![
                Part::Text { text: "searching".into() },
                call("h1", true),
                result("h1", json!("page"), false, true),
                Part::Text { text: "found: page".into() },
                call("c1", false),
            ],
        ),
        message(Role::Tool, vec![result("c1", json!("done"), false, false)]),
    ];
    let chat = to_openai_chat(&messages).unwrap_or_default();
    let shape: Vec<(String, Value)> = chat
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or("").to_owned(),
                m.get("content").cloned().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("assistant".into(), json!("searching")),
            ("tool".into(), json!("page")),
            ("assistant".into(), json!("found: page")),
            ("tool".into(), json!("done")),
        ]
    );
    assert_eq!(chat[0]["tool_calls"][0]["id"], "h1");
    assert_eq!(chat[2]["tool_calls"][0]["id"], "c1");
}

#[test]
fn provider_state_is_a_typed_error() {
    let state = ProviderState::OpenaiCodexRemoteV2 {
        connection_slug: "c".into(),
        model_id: "m".into(),
        item_id: "i".into(),
        encrypted_content: "e".into(),
    };
    let messages = [
        Message::text(Role::User, "x"),
        message(Role::Assistant, vec![Part::ProviderState { state }]),
    ];
    let error = to_openai_chat(&messages).err();
    assert!(matches!(error, Some(ChatMappingError::ProviderStateUnsupported { index: 1 })));
    assert_eq!(error.map(|e| e.code()), Some("chat_provider_state_unsupported"));
}

#[test]
fn broken_pairing_is_rejected() {
    let orphan = [
        Message::text(Role::User, "x"),
        message(Role::Tool, vec![result("c9", json!(1), false, false)]),
    ];
    assert!(matches!(
        to_openai_chat(&orphan),
        Err(ChatMappingError::OrphanToolResult { index: 1, .. })
    ));
    let unanswered =
        [message(Role::Assistant, vec![call("c1", false)]), Message::text(Role::User, "x")];
    assert!(matches!(
        to_openai_chat(&unanswered),
        Err(ChatMappingError::UnansweredToolCall { index: 0, .. })
    ));
    let stray = [
        message(Role::Assistant, vec![call("c1", false)]),
        message(
            Role::Tool,
            vec![result("c1", json!(1), false, false), result("c2", json!(1), false, false)],
        ),
    ];
    let error = to_openai_chat(&stray).err();
    assert!(
        matches!(&error, Some(ChatMappingError::OrphanToolResult { index: 1, call_id }) if call_id == "c2")
    );
    let twice = [
        message(Role::Assistant, vec![call("c1", false)]),
        message(Role::Tool, vec![result("c1", json!(1), false, false)]),
        message(Role::Tool, vec![result("c1", json!(2), false, false)]),
    ];
    assert!(matches!(
        to_openai_chat(&twice),
        Err(ChatMappingError::DuplicateToolResult { index: 2, .. })
    ));
    let reused = [
        message(Role::Assistant, vec![call("c1", false)]),
        message(Role::Tool, vec![result("c1", json!(1), false, false)]),
        message(Role::Assistant, vec![call("c1", false)]),
        message(Role::Tool, vec![result("c1", json!(1), false, false)]),
    ];
    assert!(matches!(
        to_openai_chat(&reused),
        Err(ChatMappingError::DuplicateToolCall { index: 2, .. })
    ));
    let misplaced = [message(Role::User, vec![call("c1", false)])];
    let error = to_openai_chat(&misplaced).err();
    assert!(matches!(
        error,
        Some(ChatMappingError::UnsupportedPart { index: 0, role: "user", part: "tool-call" })
    ));
}

#[test]
fn import_assigns_deterministic_ids_turns_and_responses() {
    let chat = json!({"model": "gpt-4.1", "messages": [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": [{"type": "text", "text": "fi"}, {"type": "text", "text": "nd"}]},
        {"role": "assistant", "content": null, "refusal": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{\"p\": 1}"}},
            {"id": "c2", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c2", "content": "Tool error: denied"},
        {"role": "tool", "tool_call_id": "c1", "content": "hit"},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "more"}
    ]});
    let mut ids = ImportContext::new("s");
    ids.first_seq = 10;
    ids.first_turn = 3;
    let events = import_openai_chat(&chat, &ids).unwrap_or_default();
    let summary: Vec<(u64, &str, &str, &str, Option<&str>)> = events
        .iter()
        .map(|e| {
            (
                e.seq,
                e.runtime_event_id.as_str(),
                e.turn_id.as_str(),
                e.run_id.as_str(),
                e.response_id.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (10, "evt-10", "turn-3", "run-3", None),
            (11, "evt-11", "turn-3", "run-3", None),
            (12, "evt-12", "turn-3", "run-3", Some("resp-12")),
            (13, "evt-13", "turn-3", "run-3", Some("resp-12")),
            (14, "evt-14", "turn-3", "run-3", None),
            (15, "evt-15", "turn-3", "run-3", None),
            (16, "evt-16", "turn-3", "run-3", Some("resp-16")),
            (17, "evt-17", "turn-4", "run-4", None),
        ]
    );
    assert_eq!(
        events[1].content,
        EventContent::UserText { text: "find".into(), attachments: Vec::new() }
    );
    assert_eq!(
        events[2].content,
        EventContent::ToolCall {
            call_id: "c1".into(),
            tool_name: "grep".into(),
            input: json!({"p": 1})
        }
    );
    assert_eq!(
        events[4].content,
        EventContent::ToolResult {
            call_id: "c2".into(),
            tool_name: "ls".into(),
            output: json!("denied"),
            is_error: true,
            attachments: Vec::new()
        }
    );
    assert_eq!(crate::event::validate_log(&events), Ok(()));
}

#[test]
fn import_then_materialize_then_map_gives_the_chat_back() {
    let chat = json!([
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "find"},
        {"role": "assistant", "content": "looking", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{\"p\":[1,2]}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Tool error: {\"code\":2}"},
        {"role": "assistant", "content": "failed"},
        {"role": "assistant", "content": "again"},
        {"role": "user", "content": "ok"}
    ]);
    let events = import_openai_chat(&chat, &ImportContext::new("s")).unwrap_or_default();
    let out = materialize(None, &events, &[]);
    assert!(out.repairs.is_empty());
    assert_eq!(Value::Array(to_openai_chat(&out.messages).unwrap_or_default()), chat);
    let developer = json!([{"role": "developer", "content": "d"}]);
    let events = import_openai_chat(&developer, &ImportContext::new("s")).unwrap_or_default();
    let back = to_openai_chat(&materialize(None, &events, &[]).messages).unwrap_or_default();
    assert_eq!(back, [json!({"role": "system", "content": "d"})]);
}

#[test]
fn import_rejects_what_it_cannot_carry() {
    let ids = ImportContext::new("s");
    let code = |chat: Value| import_openai_chat(&chat, &ids).err().map(|e| e.code());
    let call = |args: &str| json!({"id": "c1", "type": "function", "function": {"name": "f", "arguments": args}});
    assert_eq!(code(json!("hi")), Some("chat_import_invalid_shape"));
    assert_eq!(code(json!({"model": "m"})), Some("chat_import_invalid_shape"));
    assert_eq!(
        code(json!([{"role": "function", "content": "x"}])),
        Some("chat_import_unknown_role")
    );
    assert_eq!(code(json!([{"role": "user"}])), Some("chat_import_invalid_shape"));
    assert_eq!(
        code(json!([{"role": "user", "content": "x", "extra": 1}])),
        Some("chat_import_unknown_field")
    );
    assert_eq!(
        code(json!([{"role": "user", "content": "x", "name": "bob"}])),
        Some("chat_import_unsupported")
    );
    let image =
        json!([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}]);
    assert_eq!(code(image), Some("attachment_url_not_allowed"));
    let audio = json!([{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}]);
    assert_eq!(code(audio), Some("chat_import_unsupported"));
    assert_eq!(
        code(json!([{"role": "assistant", "content": null}])),
        Some("chat_import_empty_assistant_message")
    );
    assert_eq!(
        code(json!([{"role": "assistant", "refusal": "no"}])),
        Some("chat_import_unsupported")
    );
    assert_eq!(
        code(json!([{"role": "assistant", "tool_calls": [call("{oops")]}])),
        Some("chat_import_invalid_arguments")
    );
    let custom =
        json!([{"role": "assistant", "tool_calls": [{"id": "c", "type": "custom", "custom": {}}]}]);
    assert_eq!(code(custom), Some("chat_import_unknown_field"));
    let custom = json!([{"role": "assistant", "tool_calls": [{"id": "c", "type": "custom"}]}]);
    assert_eq!(code(custom), Some("chat_import_unsupported"));
    let reused = json!([{"role": "assistant", "tool_calls": [call("{}"), call("{}")]}]);
    assert_eq!(code(reused), Some("chat_import_duplicate_tool_call_id"));
    assert_eq!(
        code(json!([{"role": "tool", "tool_call_id": "c1", "content": "x"}])),
        Some("chat_import_unknown_tool_call_id")
    );
    let twice = json!([
        {"role": "assistant", "tool_calls": [call("{}")]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"},
        {"role": "tool", "tool_call_id": "c1", "content": "y"}
    ]);
    assert_eq!(code(twice), Some("chat_import_duplicate_tool_result"));
}
