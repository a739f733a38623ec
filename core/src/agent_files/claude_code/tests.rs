//! Tests of the Claude Code reader: one small transcript per rule, and every real fixture under
//! `tests/agent-files/claude-code/`.

use serde_json::{Value, json};

use super::{import, looks_like};
use crate::agent_files::{ImportedSession, SessionFileError, SessionFormat, import_session_file};
use crate::event::{EventContent, validate_log};
use crate::projection::ImportContext;

/// A transcript of `records`, one per line.
fn transcript(records: &[Value]) -> String {
    records.iter().map(Value::to_string).collect::<Vec<_>>().join("\n")
}

fn read(records: &[Value]) -> Result<ImportedSession, SessionFileError> {
    import(&transcript(records), &ImportContext::new("s"))
}

fn user(uuid: &str, content: Value) -> Value {
    json!({"type": "user", "uuid": uuid, "sessionId": "cc", "isSidechain": false,
           "message": {"role": "user", "content": content}})
}

/// One line of the assistant message `id` holding `block`, with usage `input` (uncached).
fn assistant(uuid: &str, id: &str, block: Value, input: u64) -> Value {
    json!({"type": "assistant", "uuid": uuid, "sessionId": "cc", "isSidechain": false,
           "message": {"id": id, "model": "claude-opus-4-6", "role": "assistant",
                       "content": [block],
                       "usage": {"input_tokens": input, "cache_read_input_tokens": 0,
                                 "cache_creation_input_tokens": 0, "output_tokens": 7}}})
}

fn tool_use(id: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "Bash", "input": {"command": "ls"}})
}

fn tool_result(id: &str) -> Value {
    json!([{"type": "tool_result", "tool_use_id": id, "content": "ok"}])
}

fn kinds(events: &[crate::event::RuntimeEvent]) -> Vec<&'static str> {
    events.iter().map(|e| e.content.kind_name()).collect()
}

#[test]
fn lines_of_one_message_id_are_one_response_and_its_results_follow_it() {
    let session = read(&[
        user("u1", json!("list it")),
        assistant("a1", "msg_1", json!({"type": "text", "text": "running"}), 3_000),
        assistant("a2", "msg_1", tool_use("t1"), 3_000),
        user("u2", tool_result("t1")),
        assistant("a3", "msg_1", tool_use("t2"), 3_000),
        user("u3", tool_result("t2")),
        assistant("a4", "msg_2", json!({"type": "text", "text": "done"}), 3_100),
    ])
    .expect("imports");
    let events = &session.events;
    assert_eq!(
        kinds(events),
        [
            "user_text",
            "assistant_text",
            "tool_call",
            "tool_call",
            "tool_result",
            "tool_result",
            "assistant_text"
        ]
    );
    let responses: Vec<Option<&str>> = events.iter().map(|e| e.response_id.as_deref()).collect();
    assert_eq!(responses[1..4], [Some("resp-2"); 3], "one response id per message.id");
    assert_eq!(responses[6], Some("resp-7"));
    assert_eq!(session.usage.len(), 2, "one usage fact per message.id");
    assert_eq!(session.usage[0].model, "claude-opus-4-6");
    validate_log(events).expect("valid log");
}

#[test]
fn sidechains_are_linked_sessions_numbered_from_one() {
    let mut side = user("x1", json!("explore"));
    side["isSidechain"] = json!(true);
    side["agentId"] = json!("a9f");
    let mut side_answer = assistant("x2", "msg_s", json!({"type": "text", "text": "found"}), 900);
    side_answer["isSidechain"] = json!(true);
    side_answer["agentId"] = json!("a9f");
    let mut old_side = user("y1", json!("warmup"));
    old_side["isSidechain"] = json!(true);
    let mut old_reply = assistant("y2", "msg_y", json!({"type": "text", "text": "ready"}), 800);
    old_reply["isSidechain"] = json!(true);
    old_reply["parentUuid"] = json!("y1");
    let session = read(&[
        user("u1", json!("go")),
        side,
        old_side,
        side_answer,
        old_reply,
        assistant("a1", "msg_1", json!({"type": "text", "text": "ok"}), 1_000),
    ])
    .expect("imports");
    assert_eq!(kinds(&session.events), ["user_text", "assistant_text"]);
    let names: Vec<&str> = session.linked.iter().map(|l| l.session_id.as_str()).collect();
    assert_eq!(names, ["s/a9f", "s/sidechain-y1"]);
    for linked in &session.linked {
        assert_eq!(linked.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2]);
        assert!(linked.events.iter().all(|e| e.session_id == linked.session_id));
        assert_eq!(linked.usage.len(), 1);
        validate_log(&linked.events).expect("valid linked log");
    }
}

#[test]
fn thinking_keeps_its_signature() {
    let thinking =
        json!({"type": "thinking", "thinking": "check the file", "signature": "EqQBsig"});
    let session = read(&[user("u1", json!("why?")), assistant("a1", "msg_1", thinking, 10)])
        .expect("imports");
    assert_eq!(
        session.events[1].content,
        EventContent::Reasoning {
            text: "check the file".into(),
            provider_data: Some(json!({"signature": "EqQBsig"})),
        }
    );
}

#[test]
fn images_become_attachments_of_the_text_before_them() {
    let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}});
    let session = read(&[user("u1", json!([{"type": "text", "text": "this screen"}, image]))])
        .expect("imports");
    let EventContent::UserText { text, attachments } = &session.events[0].content else {
        panic!("a user text");
    };
    assert_eq!((text.as_str(), attachments.len()), ("this screen", 1));
    assert_eq!(attachments[0].media_type, "image/png");
}

#[test]
fn a_compact_boundary_is_a_note_and_usage_restarts_after_it() {
    let long = "a".repeat(40_000);
    let boundary = json!({"type": "system", "subtype": "compact_boundary", "uuid": "b1",
        "content": "Conversation compacted", "compactMetadata": {"trigger": "auto", "preTokens": 167094}});
    let mut summary = user("u3", json!("This session is being continued…"));
    summary["isCompactSummary"] = json!(true);
    let session = read(&[
        user("u1", json!(long)),
        assistant("a1", "msg_1", json!({"type": "text", "text": "ok"}), 20_000),
        boundary,
        summary,
        user("u4", json!("go on")),
        assistant("a2", "msg_2", json!({"type": "text", "text": "going"}), 10_200),
    ])
    .expect("imports");
    let codes: Vec<&str> = session
        .events
        .iter()
        .filter_map(|e| match &e.content {
            EventContent::RuntimeNote { code, .. } => Some(code.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(codes, ["claude_code_compact_boundary", "claude_code_compact_summary"]);
    let [before, after] = &session.usage[..] else { panic!("two facts") };
    assert!(
        after.estimated_input_tokens < before.estimated_input_tokens,
        "the long message before the boundary is not counted again: {} vs {}",
        after.estimated_input_tokens,
        before.estimated_input_tokens
    );
}

#[test]
fn an_unknown_record_is_a_typed_error_naming_its_line() {
    let error = read(&[user("u1", json!("hi")), json!({"type": "hologram", "uuid": "h1"})])
        .expect_err("refused");
    assert_eq!((error.code(), error.line()), ("session_file_unsupported", Some(2)));
    let error = import("{\"type\":\"user\"\n", &ImportContext::new("s")).expect_err("refused");
    assert_eq!((error.code(), error.line()), ("session_file_syntax", Some(1)));
}

#[test]
fn a_result_for_an_unknown_call_is_a_pairing_error_and_an_unanswered_call_imports() {
    let error =
        read(&[user("u1", json!("hi")), user("u2", tool_result("nope"))]).expect_err("refused");
    assert!(
        matches!(&error, SessionFileError::CallPairing { line: 2, call_id, .. } if call_id == "nope"),
        "{error}"
    );
    let session = read(&[user("u1", json!("hi")), assistant("a1", "msg_1", tool_use("t1"), 10)])
        .expect("an open call imports");
    assert_eq!(kinds(&session.events), ["user_text", "tool_call"]);
}

#[test]
fn records_without_conversation_are_skipped_with_a_diagnostic_and_meta_text_is_a_system_note() {
    let mut caveat = user("u0", json!("Caveat: The messages below were generated by the user…"));
    caveat["isMeta"] = json!(true);
    let session = read(&[
        json!({"type": "file-history-snapshot", "messageId": "m", "snapshot": {}}),
        caveat,
        user("u1", json!("<command-name>/model</command-name>")),
        user("u2", json!("<local-command-stdout>Kept model</local-command-stdout>")),
        json!({"type": "progress", "uuid": "p1", "data": {"type": "hook_progress"}}),
        json!({"type": "system", "subtype": "turn_duration", "uuid": "d1"}),
    ])
    .expect("imports");
    assert_eq!(kinds(&session.events), ["system_note", "user_text", "system_note"]);
    let skipped: Vec<(usize, &str)> =
        session.diagnostics.iter().map(|d| (d.line, d.code)).collect();
    assert_eq!(
        skipped,
        [
            (1, "claude_code_file_snapshot_skipped"),
            (5, "claude_code_progress_skipped"),
            (6, "claude_code_system_record_skipped")
        ]
    );
}

#[test]
fn detection_tells_claude_code_from_codex_and_cline() {
    assert!(looks_like(&transcript(&[user("u1", json!("hi"))])));
    let codex =
        r#"{"timestamp":"2025-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x"}}"#;
    assert!(!looks_like(codex));
    assert!(!looks_like(r#"[{"role":"user","content":"hi"}]"#));
    assert!(!looks_like("[\n  {\"role\": \"user\"}\n]"));
    assert!(!looks_like(""));
}

/// Every real transcript under `tests/agent-files/claude-code/` imports (detected), gives valid
/// logs with events, and yields usage facts.
#[test]
fn every_fixture_imports() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/agent-files/claude-code");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixture directory")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "at least three fixtures in {}", dir.display());
    for path in files {
        let text = std::fs::read_to_string(&path).expect("readable");
        let name = path.display();
        let session = import_session_file(None, &text, &ImportContext::new("fixture"))
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(session.format, SessionFormat::ClaudeCode, "{name}");
        validate_log(&session.events).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut events = session.events.len();
        let mut usage = session.usage.len();
        for linked in &session.linked {
            validate_log(&linked.events).unwrap_or_else(|e| panic!("{name}: {e}"));
            events += linked.events.len();
            usage += linked.usage.len();
        }
        assert!(events > 0, "{name}: no events");
        assert!(usage > 0, "{name}: no usage facts");
    }
}
