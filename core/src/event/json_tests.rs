//! The hand-written content reader (kept for the npm package's size) against the serde derive it
//! stands for, kept here as the reference, and the envelope's text fast path against the
//! derive's route: the differential tests of the event readers.
use serde::Deserialize;
use serde_json::json;

use super::*;
use crate::event::EventParseError;
use crate::json_read::test_support::{sample_values, variants};

/// The derived internally tagged enum `EventContent` used to be.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[allow(dead_code)]
enum DerivedContent {
    UserText {
        text: String,
        #[serde(default)]
        attachments: Vec<Attachment>,
    },
    AssistantText {
        text: String,
    },
    Reasoning {
        text: String,
        #[serde(default, rename = "providerData")]
        provider_data: Option<Value>,
    },
    #[serde(rename_all = "camelCase")]
    ToolCall {
        call_id: String,
        tool_name: String,
        input: Value,
    },
    #[serde(rename_all = "camelCase")]
    ToolResult {
        call_id: String,
        tool_name: String,
        output: Value,
        #[serde(default)]
        is_error: bool,
        #[serde(default)]
        attachments: Vec<Attachment>,
    },
    #[serde(rename_all = "camelCase")]
    HostedToolCall {
        call_id: String,
        tool_name: String,
        input: Value,
    },
    #[serde(rename_all = "camelCase")]
    HostedToolResult {
        call_id: String,
        tool_name: String,
        output: Value,
        #[serde(default)]
        is_error: bool,
    },
    SystemNote {
        text: String,
    },
    RuntimeNote {
        code: String,
        text: String,
    },
}

/// How serde words the same refusal differently: the hand reader names what it expected in
/// its own words where the derive names its private helper types.
fn same_message(hand: &str, derive: &str) -> bool {
    hand == derive || (hand.starts_with("invalid type") && derive.starts_with("invalid type"))
}

/// The one thing the derive took that the hand reader refuses: a struct or tagged content
/// written as an array of its fields' values (see `json_read`'s documentation).
fn is_array_form(hand: &str) -> bool {
    hand.starts_with("invalid type: sequence, expected struct")
        || hand.starts_with("invalid type: sequence, expected an event content object")
}

/// Compares both reads of `case` (as `what`): the same acceptance and, for an accepted case,
/// the same value (by its written JSON); for a refused one the same message.
fn compare<H: serde::Serialize, D: std::fmt::Debug>(
    case: &Value,
    hand: Result<H, JsonReadError>,
    derive: Result<D, serde_json::Error>,
) {
    match (hand, derive) {
        (Ok(hand), Ok(derive)) => {
            let written = serde_json::to_value(&hand).expect("writes");
            let derive = format!("{derive:?}");
            assert!(!derive.is_empty(), "{case}");
            assert_eq!(&written, &strip_defaults(case), "{case}: hand read then written");
        }
        (Err(JsonReadError(hand)), _) if is_array_form(&hand) => {}
        (Err(JsonReadError(hand)), Err(derive)) => {
            let derive = derive.to_string();
            assert!(same_message(&hand, &derive), "{case}: hand `{hand}`, derive `{derive}`");
        }
        (hand, derive) => panic!(
            "{case}: hand {:?}, derive {:?}",
            hand.map(|_| "accepted"),
            derive.map(|_| "accepted")
        ),
    }
}

/// `case` as the event writer writes it back: defaults and `null`s of optional fields left out.
fn strip_defaults(case: &Value) -> Value {
    match case {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, value)| {
                    let defaulted = matches!(
                        (key.as_str(), value),
                        (_, Value::Null) if !matches!(key.as_str(), "input" | "output")
                    ) || matches!(
                        (key.as_str(), value),
                        ("partial" | "pinned" | "isError", Value::Bool(false))
                    ) || matches!((key.as_str(), value), ("attachments", Value::Array(a)) if a.is_empty());
                    !defaulted
                })
                .map(|(key, value)| {
                    let keep = matches!(key.as_str(), "input" | "output" | "metadata" | "providerData");
                    (key.clone(), if keep { value.clone() } else { strip_defaults(value) })
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip_defaults).collect()),
        other => other.clone(),
    }
}

fn valid_contents() -> Vec<Value> {
    vec![
        json!({"type": "user_text", "text": "hi", "attachments": [
            {"mediaType": "image/png", "url": "https://x/y.png"}]}),
        json!({"type": "assistant_text", "text": "a"}),
        json!({"type": "reasoning", "text": "r", "providerData": {"sig": "x"}}),
        json!({"type": "tool_call", "callId": "c", "toolName": "t", "input": {"a": 1}}),
        json!({"type": "tool_result", "callId": "c", "toolName": "t", "output": "o",
               "isError": true, "attachments": []}),
        json!({"type": "hosted_tool_call", "callId": "c", "toolName": "t", "input": null}),
        json!({"type": "hosted_tool_result", "callId": "c", "toolName": "t", "output": 1,
               "isError": false}),
        json!({"type": "system_note", "text": "s"}),
        json!({"type": "runtime_note", "code": "c", "text": "t"}),
    ]
}

/// Every kind with every field of the union given every shape of value, one at a time, every
/// field removed, and all of it again with `type` last: both reads accept the same objects,
/// build the same content and refuse the rest in the same words.
#[test]
fn content_agrees_with_the_derive_on_every_single_change() {
    let names = ["type", "text", "attachments", "providerData", "callId", "toolName", "input"];
    let more = ["output", "isError", "code", "mood"];
    let shapes = [
        json!("s"),
        json!(null),
        json!(1),
        json!(true),
        json!({}),
        json!([]),
        json!("tool_call"),
        json!([{"kind": "image", "mediaType": "image/png", "url": "https://x/y.png"}]),
        json!([{"mediaType": "image/png", "url": "ftp://x"}]),
        json!([{"mediaType": "image/png", "url": "https://x", "width": 4294967296u64}]),
    ];
    let mut compared = 0;
    for base in valid_contents() {
        let mut cases = vec![base.clone()];
        for field in names.iter().chain(&more) {
            let mut removed = base.clone();
            removed.as_object_mut().expect("object").remove(*field);
            cases.push(removed);
            for shape in &shapes {
                let mut changed = base.clone();
                changed[*field] = shape.clone();
                cases.push(changed);
            }
        }
        let type_last: Vec<Value> = cases
            .iter()
            .filter_map(|case| {
                let mut object = case.as_object()?.clone();
                let kind = object.shift_remove("type")?;
                object.insert("type".to_owned(), kind);
                Some(Value::Object(object))
            })
            .collect();
        cases.extend(type_last);
        for case in cases {
            let derive = serde_json::from_value::<DerivedContent>(case.clone());
            let hand = EventContent::read_json(case.clone());
            same_as_serde_route(&case, &hand);
            compare(&case, hand, derive);
            compared += 1;
        }
    }
    assert_eq!(compared, 9 * (2 * (1 + 11 * 11) - 1));
}

/// serde's route of `EventContent` (its members as values, keys borrowed from a text) reads
/// `case` as `read_json` does: the same content, or the same message (serde_json adds where).
fn same_as_serde_route(case: &Value, hand: &Result<EventContent, JsonReadError>) {
    let from_text = serde_json::from_str::<EventContent>(&case.to_string());
    let from_value = serde_json::from_value::<EventContent>(case.clone());
    for serde_read in [from_text, from_value] {
        match (hand, serde_read) {
            (Ok(hand), Ok(read)) => assert_eq!(hand, &read, "{case}"),
            (Err(JsonReadError(hand)), Err(read)) => {
                assert!(read.to_string().starts_with(hand.as_str()), "{case}: `{hand}`, `{read}`")
            }
            (hand, read) => panic!("{case}: read_json {hand:?}, serde {read:?}"),
        }
    }
}

#[test]
fn serde_route_keeps_a_repeated_key_s_first_place_and_last_value() {
    // As the `Value` the content stands for: the refused first value is replaced.
    let text = r#"{"type":"tool_call","callId":5,"toolName":"t","input":{},"callId":"c"}"#;
    let content: EventContent = serde_json::from_str(text).expect("reads");
    assert_eq!(
        content,
        EventContent::ToolCall {
            call_id: "c".into(),
            tool_name: "t".into(),
            input: serde_json::json!({}),
        }
    );
    let repeated_type = r#"{"type":"tool_call","text":"x","type":"system_note"}"#;
    let content: EventContent = serde_json::from_str(repeated_type).expect("reads");
    assert_eq!(content, EventContent::SystemNote { text: "x".into() });
    for not_object in ["null", "true", "1", "-1", "1.5", "\"s\"", "[]"] {
        let error = serde_json::from_str::<EventContent>(not_object).expect_err(not_object);
        let value: Value = serde_json::from_str(not_object).expect("json");
        let JsonReadError(hand) = EventContent::read_json(value).expect_err(not_object);
        assert!(error.to_string().starts_with(&hand), "{not_object}: {error}");
    }
}

/// Text, `serde` and value reads of one event agree, and a refused event names its class.
#[test]
fn every_reader_reads_through_the_value_reader() {
    let event = json!({"sessionId": "s", "runId": "r", "turnId": "t", "runtimeEventId": "e",
        "seq": 1, "content": {"text": "hi", "type": "user_text"}});
    let typed: RuntimeEvent = serde_json::from_value(event.clone()).expect("serde");
    assert_eq!(RuntimeEvent::from_json(&event.to_string()), Ok(typed.clone()));
    assert_eq!(RuntimeEvent::from_value(event.clone()), Ok(typed));
    let mut unknown = event.clone();
    unknown["content"]["mood"] = json!(1);
    assert_eq!(RuntimeEvent::from_value(unknown).unwrap_err().code(), "event_unknown_field");
    let mut bad = event;
    bad["content"]["attachments"] = json!([{"mediaType": "image/png", "url": "ftp://x"}]);
    assert_eq!(RuntimeEvent::from_value(bad).unwrap_err().code(), "event_invalid_attachment");
}

/// The text fast path against the value route on every case of the tests above, written with
/// `type` first and last, with a key repeated, pretty-printed, and cut short.
#[test]
fn text_read_agrees_with_the_value_route() {
    let base = json!({
        "sessionId": "s", "runId": "r", "turnId": "t", "runtimeEventId": "e", "seq": 3,
        "createdAtMs": 17, "responseId": "resp", "partial": true, "pinned": false,
        "content": {"type": "tool_result", "callId": "c", "toolName": "t", "output": "o",
                    "attachments": [{"mediaType": "image/png", "url": "https://x/y.png"}]},
        "metadata": {"a": 1}
    });
    let mut cases = variants(&base, &sample_values(&["user_text", "tool_call"]));
    for content in valid_contents() {
        let mut event = base.clone();
        event["content"] = content;
        cases.push(event);
    }
    let mut texts = Vec::new();
    for case in &cases {
        let text = case.to_string();
        texts.push(serde_json::to_string_pretty(case).expect("writes"));
        texts.push(
            text.replace("{\"type\":\"tool_result\",", "{")
                .replace("\"o\"", "\"o\",\"type\":\"tool_result\""),
        );
        texts.push(text.replacen("\"seq\":3", "\"seq\":3,\"seq\":4", 1));
        texts.push(text.replacen("\"callId\":\"c\"", "\"callId\":\"c\",\"callId\":\"d\"", 1));
        texts.push(text.replacen(
            "\"content\":",
            "\"content\":{\"type\":\"system_note\",\"text\":\"x\"},\"content\":",
            1,
        ));
        texts.push(text[..text.len() / 2].to_owned());
        texts.push(format!("{text} x"));
        texts.push(text);
    }
    for (index, text) in texts.iter().enumerate() {
        let by_value = match serde_json::from_str::<Value>(text) {
            Ok(value) => RuntimeEvent::from_value(value),
            Err(e) => Err(EventParseError::Syntax(e.to_string())),
        };
        let read = RuntimeEvent::from_json(text);
        match (&read, &by_value) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{text}"),
            (Err(a), Err(b)) => assert_eq!(a.code(), b.code(), "{text}: {a} / {b}"),
            _ => panic!("{text}: from_json {read:?}, by value {by_value:?}"),
        }
        // Every valid event as written (compact or pretty) is read by the fast path.
        let as_written = index % 8 == 0 || index % 8 == 7;
        let fast = RuntimeEvent::read_text(&mut TextReader::new(text));
        if as_written && by_value.is_ok() && !text.contains("\"content\":{\"callId") {
            assert!(fast.is_some(), "{text}");
        }
    }
}

const JSONL_EVENT: &str = r#"{"sessionId":"s","runId":"r","turnId":"t","runtimeEventId":"e1","seq":1,"content":{"type":"user_text","text":"héllo"}}"#;

fn jsonl_error(text: &str) -> (usize, &'static str) {
    let error = RuntimeEvent::parse_jsonl_lines(text).expect_err("a bad line");
    (error.line, error.source.code())
}

#[test]
fn jsonl_lines_skip_blanks_and_keep_each_event_s_line() {
    let event2 = JSONL_EVENT.replace("e1", "e2").replace("\"seq\":1", "\"seq\":2");
    let text = format!("\r\n{JSONL_EVENT}\r\n   \n{event2}\n");
    let (events, lines) = RuntimeEvent::parse_jsonl_lines(&text).expect("parses");
    assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(lines, [2, 4]);
    assert!(RuntimeEvent::parse_jsonl("").expect("empty").is_empty());
    assert!(RuntimeEvent::parse_jsonl("\n\n").expect("blank").is_empty());
}

#[test]
fn a_jsonl_duplicate_key_keeps_its_last_value() {
    // The text fast path refuses a repeated field; the value route reads it as serde_json does.
    let text = JSONL_EVENT.replace("\"seq\":1", "\"seq\":1,\"seq\":2");
    assert_eq!(RuntimeEvent::parse_jsonl(&text).expect("parses")[0].seq, 2);
}

#[test]
fn bad_jsonl_lines_report_their_number_and_code() {
    assert_eq!(jsonl_error(&format!("{JSONL_EVENT}\n{{not json")), (2, "event_syntax"));
    let unknown = JSONL_EVENT.replace("user_text", "telepathy");
    assert_eq!(jsonl_error(&format!("\n\n{unknown}")), (3, "event_unknown_kind"));
    let extra = JSONL_EVENT.replace("\"seq\":1", "\"seq\":1,\"mood\":\"ok\"");
    assert_eq!(jsonl_error(&extra), (1, "event_unknown_field"));
    assert_eq!(jsonl_error(&JSONL_EVENT.replace("\"seq\":1,", "")), (1, "event_invalid"));
    assert_eq!(jsonl_error("[]"), (1, "event_missing_kind"));
}
