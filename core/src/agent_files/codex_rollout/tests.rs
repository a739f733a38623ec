//! Tests of the Codex rollout reader: one small rollout per rule, and every licensed fixture.

use serde_json::{Value, json};

use super::super::{SessionFileError, SessionFormat, detect_session_format, import_session_file};
use super::*;
use crate::calibration::UsageReport;
use crate::event::{EventContent, validate_log};
use crate::projection::materialize;

/// A rollout of `records` (`[type, payload]` pairs), one line each.
fn rollout(records: &[(&str, Value)]) -> String {
    let lines: Vec<String> = records
        .iter()
        .map(|(kind, payload)| {
            json!({"timestamp": "2025-11-17T21:30:28.664Z", "type": kind, "payload": payload})
                .to_string()
        })
        .collect();
    lines.join("\n")
}

fn meta() -> (&'static str, Value) {
    ("session_meta", json!({"id": "s1", "cwd": "/w", "originator": "codex_cli_rs"}))
}

fn user(text: &str) -> (&'static str, Value) {
    let content = json!([{"type": "input_text", "text": text}]);
    ("response_item", json!({"type": "message", "role": "user", "content": content}))
}

fn read(text: &str) -> ImportedSession {
    let session = import(text, &ImportContext::new("s")).expect("imports");
    validate_log(&session.events).expect("valid log");
    session
}

fn kinds(session: &ImportedSession) -> Vec<&'static str> {
    session.events.iter().map(|e| e.content.kind_name()).collect()
}

#[test]
fn detection_takes_rollouts_and_leaves_other_files() {
    let text = rollout(&[meta(), user("hi")]);
    assert!(looks_like(&text));
    assert_eq!(detect_session_format(&text), Some(SessionFormat::CodexRollout));
    let legacy =
        "{\"id\":\"x\",\"timestamp\":\"2025-09-10T18:58:38.331Z\",\"instructions\":null}\n";
    assert!(looks_like(legacy));
    let claude =
        r#"{"type":"user","sessionId":"s","uuid":"u","message":{"role":"user","content":"hi"}}"#;
    assert!(!looks_like(claude));
    assert!(!looks_like(r#"[{"role":"user","content":"hi"}]"#));
    assert!(!looks_like("[\n  {\"role\": \"user\", \"content\": \"hi\"}\n]"));
    assert!(!looks_like(""));
}

#[test]
fn injected_context_is_a_system_note_and_the_prompt_opens_the_turn() {
    let text = rollout(&[
        meta(),
        user("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
        ("event_msg", json!({"type": "user_message", "message": "fix it", "images": []})),
        user("fix it"),
        ("event_msg", json!({"type": "user_message", "message": "more", "images": []})),
        user("more"),
    ]);
    let session = read(&text);
    assert_eq!(kinds(&session), ["system_note", "user_text", "user_text"]);
    let turns: Vec<&str> = session.events.iter().map(|e| e.turn_id.as_str()).collect();
    assert_eq!(turns, ["turn-0", "turn-0", "turn-1"]);
    let skipped: Vec<(usize, &str)> =
        session.diagnostics.iter().map(|d| (d.line, d.code)).collect();
    assert_eq!(skipped, [(3, "codex_event_msg_skipped")], "one diagnostic per kind");
}

#[test]
fn custom_tool_call_pairs_with_its_output_and_keeps_the_raw_input() {
    let patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n";
    let text = rollout(&[
        meta(),
        user("add a.txt"),
        (
            "response_item",
            json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}], "content": null, "encrypted_content": "gAAA"}),
        ),
        (
            "response_item",
            json!({"type": "custom_tool_call", "status": "completed", "call_id": "c1", "name": "apply_patch", "input": patch}),
        ),
        (
            "response_item",
            json!({"type": "custom_tool_call_output", "call_id": "c1", "output": "{\"output\":\"Success\"}"}),
        ),
    ]);
    let session = read(&text);
    assert_eq!(kinds(&session), ["user_text", "reasoning", "tool_call", "tool_result"]);
    let EventContent::Reasoning { provider_data, .. } = &session.events[1].content else {
        panic!("reasoning")
    };
    assert_eq!(provider_data, &Some(json!({"encrypted_content": "gAAA"})));
    assert_eq!(
        session.events[2].content,
        EventContent::ToolCall {
            call_id: "c1".into(),
            tool_name: "apply_patch".into(),
            input: Value::String(patch.into())
        }
    );
    assert_eq!(session.events[1].response_id, session.events[2].response_id, "one response");
    let EventContent::ToolResult { tool_name, .. } = &session.events[3].content else {
        panic!("result")
    };
    assert_eq!(tool_name, "apply_patch");
    assert!(materialize(None, &session.events, &[]).repairs.is_empty());
}

#[test]
fn local_shell_call_is_answered_by_a_function_call_output() {
    let action = json!({"type": "exec", "command": ["bash", "-lc", "ls"]});
    let text = rollout(&[
        user("ls"),
        (
            "response_item",
            json!({"type": "local_shell_call", "call_id": "c2", "status": "completed", "action": action}),
        ),
        (
            "response_item",
            json!({"type": "function_call_output", "call_id": "c2", "output": "a\nb"}),
        ),
    ]);
    let session = read(&text);
    assert_eq!(kinds(&session), ["user_text", "tool_call", "tool_result"]);
    assert!(matches!(&session.events[1].content,
        EventContent::ToolCall { tool_name, input, .. } if tool_name == "local_shell" && *input == action));
}

#[test]
fn web_search_call_is_hosted_with_or_without_a_result() {
    let text = rollout(&[
        user("search"),
        (
            "response_item",
            json!({"type": "web_search_call", "id": "ws1", "status": "completed", "action": {"type": "search", "query": "rust"}}),
        ),
        (
            "response_item",
            json!({"type": "web_search_call", "action": {"type": "search", "query": "no status"}}),
        ),
        (
            "response_item",
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "found"}]}),
        ),
    ]);
    let session = read(&text);
    assert_eq!(
        kinds(&session),
        [
            "user_text",
            "hosted_tool_call",
            "hosted_tool_result",
            "hosted_tool_call",
            "assistant_text"
        ]
    );
    assert_eq!(session.events[3].content.call_id(), Some("web_search_3"));
    let projected = materialize(None, &session.events, &[]);
    let repairs: Vec<&str> = projected.repairs.iter().map(|r| r.code()).collect();
    assert_eq!(repairs, ["tool_call_interrupted"], "only the call without a status is repaired");
}

#[test]
fn ghost_snapshot_is_skipped_with_a_diagnostic() {
    let snapshot =
        json!({"type": "ghost_snapshot", "ghost_commit": {"id": "a01966ef", "parent": null}});
    let session = read(&rollout(&[meta(), user("hi"), ("response_item", snapshot)]));
    assert_eq!(kinds(&session), ["user_text"]);
    assert_eq!(session.diagnostics.len(), 1);
    assert_eq!(session.diagnostics[0].code, "codex_ghost_snapshot_skipped");
    assert_eq!(session.diagnostics[0].line, 3);
    assert!(session.diagnostics[0].detail.contains("a01966ef"));
}

fn token_count(input: u64, cached: u64, output: u64, total: u64) -> (&'static str, Value) {
    let usage = json!({"input_tokens": input, "cached_input_tokens": cached, "output_tokens": output, "reasoning_output_tokens": 0, "total_tokens": input + output});
    let totals = json!({"input_tokens": total, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_output_tokens": 0, "total_tokens": total});
    (
        "event_msg",
        json!({"type": "token_count", "info": {"total_token_usage": totals, "last_token_usage": usage, "model_context_window": 272000}}),
    )
}

#[test]
fn token_count_is_a_usage_fact_of_the_turn_model() {
    let assistant = json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]});
    let text = rollout(&[
        meta(),
        ("turn_context", json!({"cwd": "/w", "model": "gpt-5-codex"})),
        user("hi"),
        ("event_msg", json!({"type": "token_count", "info": null, "rate_limits": {}})),
        ("response_item", assistant.clone()),
        token_count(5_000, 4_000, 20, 5_020),
        token_count(5_000, 4_000, 20, 5_020),
        ("turn_context", json!({"cwd": "/w", "model": "gpt-5.1-codex"})),
        user("again"),
        ("response_item", assistant),
        token_count(5_100, 5_000, 30, 10_150),
    ]);
    let session = read(&text);
    assert_eq!(session.usage.len(), 2, "null info and the repeated count are skipped");
    let first = &session.usage[0];
    assert_eq!((first.provider.as_str(), first.model.as_str()), ("openai", "gpt-5-codex"));
    assert_eq!(
        first.report,
        UsageReport::Response {
            input_tokens: 5_000,
            cached_input_tokens: 4_000,
            cache_write_tokens: 0,
            output_tokens: 20
        }
    );
    assert_eq!(session.usage[1].model, "gpt-5.1-codex");
    assert_ne!(session.events[1].response_id, session.events[3].response_id);
}

#[test]
fn compacted_is_a_runtime_note_and_usage_restarts_after_it() {
    let big = "x".repeat(40_000);
    let text = rollout(&[
        ("turn_context", json!({"model": "gpt-5-codex"})),
        user(&big),
        token_count(20_000, 0, 10, 20_010),
        (
            "compacted",
            json!({"message": "summary of the work so far", "replacement_history": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}),
        ),
        user("go on"),
        token_count(3_000, 0, 10, 23_020),
    ]);
    let session = read(&text);
    assert_eq!(kinds(&session), ["user_text", "runtime_note", "user_text"]);
    assert_eq!(
        session.events[1].content,
        EventContent::RuntimeNote {
            code: "codex_compacted".into(),
            text: "summary of the work so far".into()
        }
    );
    assert_eq!(session.usage.len(), 2);
    assert!(
        session.usage[1].estimated_input_tokens < session.usage[0].estimated_input_tokens,
        "after the compaction the request no longer carries the big message"
    );
    let codes: Vec<&str> = session.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(codes, ["codex_replacement_history_skipped"]);
}

#[test]
fn unknown_kinds_and_broken_lines_are_typed_errors_with_their_line() {
    let ids = ImportContext::new("s");
    let unknown_item =
        rollout(&[meta(), user("hi"), ("response_item", json!({"type": "teleport"}))]);
    assert_eq!(
        import(&unknown_item, &ids),
        Err(SessionFileError::Unsupported { line: 3, kind: "teleport".into() })
    );
    let unknown_record = rollout(&[meta(), ("world_state", json!({}))]);
    assert_eq!(
        import(&unknown_record, &ids),
        Err(SessionFileError::Unsupported { line: 2, kind: "world_state".into() })
    );
    let orphan = rollout(&[
        meta(),
        (
            "response_item",
            json!({"type": "custom_tool_call_output", "call_id": "nope", "output": "x"}),
        ),
    ]);
    assert_eq!(
        import(&orphan, &ids).map_err(|e| (e.code(), e.line())),
        Err(("session_file_call_pairing", Some(2)))
    );
    let broken = format!("{}\n{{not json", rollout(&[meta()]));
    assert_eq!(import(&broken, &ids).map_err(|e| e.line()), Err(Some(2)));
    let bad_call = rollout(&[(
        "response_item",
        json!({"type": "function_call", "name": "shell", "call_id": "c", "arguments": "{"}),
    )]);
    assert_eq!(
        import(&bad_call, &ids),
        Err(SessionFileError::Shape {
            line: 1,
            path: "payload.arguments".into(),
            expected: "a JSON text"
        })
    );
}

#[test]
fn a_legacy_rollout_reads_bare_items() {
    let text = [
        r#"{"id":"cf4d","timestamp":"2025-09-10T18:58:38.331Z","instructions":"be brief"}"#,
        r#"{"record_type":"state"}"#,
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"<user_instructions>\n\nbe brief\n\n</user_instructions>"}]}"#,
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#,
        r#"{"record_type":"state"}"#,
        r#"{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"c1"}"#,
        r#"{"type":"function_call_output","call_id":"c1","output":"a"}"#,
    ]
    .join("\n");
    let session = read(&text);
    assert_eq!(kinds(&session), ["system_note", "user_text", "tool_call", "tool_result"]);
    let codes: Vec<&str> = session.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(codes, ["codex_state_record_skipped"]);
}

/// Every rollout under `tests/agent-files/codex/` imports into a valid, non-empty log.
#[test]
fn every_codex_fixture_imports() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/agent-files/codex");
    let mut read_any = false;
    for entry in std::fs::read_dir(&dir).expect("fixture dir") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("utf-8 fixture");
        let session = import_session_file(None, &text, &ImportContext::new("s"))
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        assert_eq!(session.format, SessionFormat::CodexRollout, "{}", path.display());
        assert!(!session.events.is_empty(), "{}", path.display());
        validate_log(&session.events).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        read_any = true;
    }
    assert!(read_any, "no fixture in {}", dir.display());
}
