//! The hand-designed vector cases: each stresses one part of `docs/digest.md`.

use contextfold_core::{EventContent, LogBuilder, RuntimeEvent};
use serde_json::{Map, Value, json};

use crate::prng::SplitMix64;
use crate::random_json::random_text;

/// One named case: the events exactly as they appear in the vector file.
pub(crate) type NamedEvents = (&'static str, Vec<Value>);

/// Every fixed case, in file order.
pub(crate) fn fixed_cases(prng: &mut SplitMix64) -> Vec<NamedEvents> {
    vec![
        ("every_kind", as_values(every_kind())),
        ("unicode", as_values(unicode())),
        ("numbers", as_values(numbers())),
        ("empty_fields", as_values(empty_fields())),
        ("escapes_and_controls", as_values(escapes_and_controls())),
        ("flags_and_optionals", as_values(flags_and_optionals())),
        ("explicit_defaults", explicit_defaults()),
        ("large_tool_output", as_values(large_tool_output(prng))),
    ]
}

fn as_values(events: Vec<RuntimeEvent>) -> Vec<Value> {
    events
        .iter()
        .map(|event| serde_json::to_value(event).expect("a RuntimeEvent always serializes"))
        .collect()
}

fn call(call_id: &str, tool_name: &str, input: Value) -> EventContent {
    EventContent::ToolCall { call_id: call_id.into(), tool_name: tool_name.into(), input }
}

fn result(call_id: &str, tool_name: &str, output: Value, is_error: bool) -> EventContent {
    EventContent::tool_result(call_id, tool_name, output, is_error)
}

/// One event of each of the nine kinds, as a realistic two-turn session.
fn every_kind() -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new("sess-kinds");
    log.turn("t1").user("Why does `cargo test` fail?");
    log.response(Some("resp-1"));
    log.push(EventContent::Reasoning {
        text: "Run the tests first.".into(),
        provider_data: Some(json!({"signature": "c2lnbmF0dXJl", "type": "thinking"})),
    });
    log.push(call("call-1", "shell", json!({"command": ["cargo", "test"], "timeoutMs": 60000})));
    log.response(None);
    log.push(result("call-1", "shell", json!("test result: FAILED. 1 failed"), true));
    log.response(Some("resp-2"));
    log.push(EventContent::HostedToolCall {
        call_id: "ws-1".into(),
        tool_name: "web_search".into(),
        input: json!({"query": "E0599 method not found"}),
    });
    log.push(EventContent::HostedToolResult {
        call_id: "ws-1".into(),
        tool_name: "web_search".into(),
        output: json!([{"title": "E0599", "url": "https://doc.rust-lang.org/error_codes/E0599.html"}]),
        is_error: false,
    });
    log.assistant("A trait is not in scope; add `use std::fmt::Write;`.");
    log.response(None).turn("t2");
    log.push(EventContent::SystemNote { text: "The user switched models.".into() });
    log.push(EventContent::RuntimeNote {
        code: "context_compaction_failed_open".into(),
        text: "Compaction failed; continuing with source-derived context.".into(),
    });
    log.build()
}

/// CJK, emoji (astral, ZWJ sequences), combining marks, RTL scripts, and keys whose UTF-16
/// order differs from their UTF-8 order.
fn unicode() -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new("会话-😀");
    log.turn("轮-1").user("你好，世界！こんにちは 안녕하세요 👩\u{200d}💻🏳\u{fe0f}\u{200d}🌈");
    log.push(call(
        "c-é",
        "ünïcödé_tool",
        json!({
            "\u{ff61}": "halfwidth ideographic full stop (U+FF61)",
            "\u{1f600}": "grinning face (U+1F600, surrogates D83D DE00)",
            "\u{e000}": "private use (U+E000)",
            "\u{10000}": "linear b (U+10000)",
            "z": "z", "é": "e acute", "e\u{301}": "e + combining acute", "Z": "Z"
        }),
    ));
    log.push(result("c-é", "ünïcödé_tool", json!("שלום עולם · مرحبا بالعالم · नमस्ते"), false));
    let text = "a\u{308}\u{323} ǅ ﬁ ẞ ß \u{fffd} \u{feff} \u{10ffff} \u{ffff} 𝄞";
    log.push(EventContent::AssistantText { text: text.into() }).metadata =
        Some(Map::from_iter([("ラベル".to_owned(), json!("表示")), ("😀".to_owned(), json!(1))]));
    log.build()
}

/// Integers of every size (beyond ±2^53 they round to the nearest double), floats in plain and
/// exponent form, negative zero, and `seq`/`createdAtMs` beyond 2^53.
fn numbers() -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new("sess-numbers");
    log.turn("t1").push(call(
        "n-1",
        "calc",
        json!({
            "ints": [0, 1, -1, 42, -1000, 1_700_000_000_000_u64],
            "aroundTwoPow53": [
                9_007_199_254_740_991_u64, 9_007_199_254_740_992_u64, 9_007_199_254_740_993_u64,
                9_007_199_254_740_995_u64, -9_007_199_254_740_993_i64
            ],
            "extremes": [u64::MAX, i64::MAX, i64::MIN],
            "floats": [0.5, -0.0, 1.5, -2.25, 0.1, 0.30000000000000004, 123.456, 3.0],
            "exponents": [1e21, 1e20, -1e21, 1e-7, 1e-6, 1.5e-7, 2e22, 1e100, 5e-324],
        }),
    ));
    log.push(result("n-1", "calc", json!(1e21), false));
    log.push(result("n-2", "calc", json!(-0.0), false));
    let big = log.push(EventContent::user_text("seq beyond 2^53"));
    big.seq = 9_007_199_254_740_993;
    big.created_at_ms = Some(u64::MAX);
    log.build()
}

/// Empty strings, arrays and objects everywhere they are allowed.
fn empty_fields() -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new("");
    log.turn("").user("");
    log.push(EventContent::AssistantText { text: String::new() }).metadata = Some(Map::new());
    log.push(EventContent::Reasoning { text: String::new(), provider_data: Some(json!({})) });
    log.push(call("", "", json!({})));
    log.push(result("", "", json!([]), false));
    log.push(result("", "", json!(""), false));
    log.push(call("", "", json!({"": {"": [[], {}, ""]}})));
    log.push(result("", "", Value::Null, false)).response_id = Some(String::new());
    log.push(EventContent::RuntimeNote { code: String::new(), text: String::new() });
    log.build()
}

/// All 32 control characters, quote, backslash, slash, DEL and the line separators, in text
/// and in keys.
fn escapes_and_controls() -> Vec<RuntimeEvent> {
    let controls: String = (0u8..0x20).map(char::from).collect();
    let mut log = LogBuilder::new("sess\t\"esc\"");
    log.turn("t\\1").user(&format!("controls:{controls}:end"));
    log.push(call(
        "c\n1",
        "to\"ol",
        json!({"\u{1}": "\u{7f}", "\n": "/\\/", "\"": "\u{2028}\u{2029}", "</script>": "<!--"}),
    ));
    log.push(result("c\n1", "to\"ol", json!("\u{8}\u{c}\u{b}\u{1f}\u{0}\r\n\t"), false));
    log.build()
}

/// `pinned`, `partial`, `metadata`, `responseId`, `isError` and `providerData` present, and an
/// event without `createdAtMs`.
fn flags_and_optionals() -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new("sess-flags");
    log.turn("t1").response(Some("resp-a"));
    log.push(call("p-1", "read", json!({"path": "a.rs"}))).metadata =
        Some(Map::from_iter([("ui".to_owned(), json!({"collapsed": true, "order": [3, 1, 2]}))]));
    log.push(call("p-2", "read", json!({"path": "b.rs"})));
    log.response(None);
    log.push(result("p-1", "read", json!({"error": "ENOENT"}), true)).created_at_ms = None;
    log.push(result("p-2", "read", json!({"bytes": 12}), false));
    log.response(Some("resp-b"));
    let streaming = log.push(EventContent::AssistantText { text: "Partial ans".into() });
    streaming.partial = true;
    streaming.pinned = true;
    let reasoning = log.push(EventContent::Reasoning {
        text: "hidden".into(),
        provider_data: Some(json!({"encrypted": "gAAAA==", "id": "rs_1"})),
    });
    reasoning.pinned = true;
    reasoning.metadata = Some(Map::from_iter([("providerOptions".to_owned(), json!({"a": null}))]));
    log.build()
}

/// Events written with explicit default values (`false` flags, `null` optionals). They parse
/// to the same events as without them, so their digests equal those of the bare forms.
fn explicit_defaults() -> Vec<Value> {
    vec![
        json!({
            "sessionId": "sess-defaults", "runId": "r", "turnId": "t", "runtimeEventId": "e1",
            "seq": 1, "createdAtMs": null, "responseId": null, "partial": false, "pinned": false,
            "metadata": null, "content": {"type": "user_text", "text": "defaults"}
        }),
        json!({
            "sessionId": "sess-defaults", "runId": "r", "turnId": "t", "runtimeEventId": "e2",
            "seq": 2, "content": {"type": "reasoning", "text": "", "providerData": null}
        }),
        json!({
            "sessionId": "sess-defaults", "runId": "r", "turnId": "t", "runtimeEventId": "e3",
            "seq": 3,
            "content": {"type": "tool_result", "callId": "c", "toolName": "x", "output": null,
                        "isError": false}
        }),
    ]
}

/// A tool result of about 200 KB (seeded random text lines), between a call and an answer.
fn large_tool_output(prng: &mut SplitMix64) -> Vec<RuntimeEvent> {
    let mut output = String::with_capacity(210_000);
    let mut line_number = 0u32;
    while output.len() < 200_000 {
        line_number += 1;
        output.push_str(&format!("{line_number:05} {}\n", random_text(prng, 12)));
    }
    let mut log = LogBuilder::new("sess-large");
    log.turn("t1").user("cat the log");
    log.tool_call("big-1", "shell", json!({"command": "cat build.log"}));
    log.tool_result("big-1", "shell", Value::String(output));
    log.assistant("The log is long; the failure is near the end.");
    log.build()
}

/// Images and files (docs/events.md#attachments): an inline PNG with a detail hint and a URL
/// image on a user message, an archived screenshot (hash and length, no bytes) and an inline
/// PDF on a tool result. Appended after the random sessions, so older vectors keep their places.
pub(crate) fn attachments() -> Vec<Value> {
    use contextfold_core::event::Attachment;
    let png: &[u8] = include_bytes!("../../core/tests/fixtures/screenshot.png");
    let pdf: &[u8] = include_bytes!("../../core/tests/fixtures/report.pdf");
    let inline = Attachment::from_bytes(None, png, Some("écran.png".into()))
        .expect("a real PNG")
        .with_detail(Some("low".into()));
    let url = Attachment::from_url("https://example.com/chart.jpg?v=2", None, None).expect("a URL");
    let archived = Attachment { data: None, name: None, detail: None, ..inline.clone() };
    let report = Attachment::from_bytes(Some("application/pdf"), pdf, Some("report.pdf".into()))
        .expect("a real PDF");
    let mut log = LogBuilder::new("sess-media");
    log.turn("t1");
    log.push(EventContent::UserText {
        text: "What changed on the page?".into(),
        attachments: vec![inline, url],
    });
    log.response(Some("resp-1")).push(call("shot-1", "screenshot", json!({})));
    log.response(None);
    log.push(EventContent::ToolResult {
        call_id: "shot-1".into(),
        tool_name: "screenshot".into(),
        output: json!("captured"),
        is_error: false,
        attachments: vec![archived, report],
    });
    as_values(log.build())
}
