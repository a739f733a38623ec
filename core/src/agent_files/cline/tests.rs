//! Tests of the Cline / Roo Code reader: text results paired with their tool uses, and every
//! licensed fixture.

use serde_json::{Value, json};

use super::super::{SessionFileError, SessionFormat, detect_session_format, import_session_file};
use super::*;
use crate::event::{EventContent, validate_log};
use crate::projection::materialize;

fn read(history: &Value) -> ImportedSession {
    let session = import(&history.to_string(), &ImportContext::new("s")).expect("imports");
    validate_log(&session.events).expect("valid log");
    session
}

fn kinds(session: &ImportedSession) -> Vec<&'static str> {
    session.events.iter().map(|e| e.content.kind_name()).collect()
}

fn tool_use(id: &str, name: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": {"path": "src/x.ts"}})
}

fn text(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

#[test]
fn detection_takes_a_message_array_only() {
    let history = json!([{"role": "user", "content": "hi", "ts": 1}]).to_string();
    assert!(looks_like(&history));
    assert_eq!(detect_session_format(&history), Some(SessionFormat::Cline));
    assert!(!looks_like(r#"[{"type":"session_meta"}]"#));
    assert!(!looks_like(r#"{"role":"user","content":"hi"}"#));
    assert!(!looks_like("[]"));
}

#[test]
fn a_text_result_answers_its_tool_use_and_nothing_is_repaired() {
    let history = json!([
        {"role": "user", "content": [text("<task>\nread x\n</task>"), text("<environment_details>\n…\n</environment_details>")], "ts": 1},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": null, "signature": "sig"}, text("Reading."), tool_use("t1", "read_file")], "ts": 2},
        {"role": "user", "content": [text("[read_file for 'src/x.ts'] Result:\n1 | export {}"), text("<environment_details>\n…\n</environment_details>")], "ts": 3},
        {"role": "assistant", "content": [text("done")], "ts": 4},
    ]);
    let session = read(&history);
    assert_eq!(
        kinds(&session),
        [
            "user_text",
            "user_text",
            "reasoning",
            "assistant_text",
            "tool_call",
            "tool_result",
            "user_text",
            "assistant_text"
        ]
    );
    let EventContent::ToolResult { call_id, tool_name, output, is_error, .. } =
        &session.events[5].content
    else {
        panic!("a tool result")
    };
    assert_eq!((call_id.as_str(), tool_name.as_str(), *is_error), ("t1", "read_file", false));
    assert_eq!(output, &json!("[read_file for 'src/x.ts'] Result:\n1 | export {}"));
    let projected = materialize(None, &session.events, &[]);
    assert!(
        projected.repairs.is_empty(),
        "no synthetic interrupted result: {:?}",
        projected.repairs
    );
}

#[test]
fn results_pair_by_name_then_in_order_and_refusals_are_errors() {
    let history = json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [tool_use("a", "list_files"), tool_use("b", "read_file"), tool_use("c", "use_subagents"), tool_use("d", "read_file")]},
        {"role": "user", "content": [
            text("[read_file for 'src/x.ts'] Result:\nx"),
            text("[list_files for 'src'] Result:\nx.ts"),
            text("[subagents] Result:\nSubagent results"),
            text("Tool [read_file] was not executed because a tool has already been used in this message."),
            text("<environment_details>\n…\n</environment_details>"),
        ]},
    ]);
    let session = read(&history);
    let answered: Vec<(&str, bool)> = session
        .events
        .iter()
        .filter_map(|event| match &event.content {
            EventContent::ToolResult { call_id, is_error, .. } => {
                Some((call_id.as_str(), *is_error))
            }
            _ => None,
        })
        .collect();
    assert_eq!(answered, [("b", false), ("a", false), ("c", false), ("d", true)]);
    assert_eq!(kinds(&session).last(), Some(&"user_text"));
    assert!(materialize(None, &session.events, &[]).repairs.is_empty());
}

#[test]
fn text_without_an_open_tool_use_stays_text() {
    // Older Cline: tools as XML in assistant text, results as user text; nothing to pair.
    let history = json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [text("<read_file>\n<path>x</path>\n</read_file>")]},
        {"role": "user", "content": [text("[read_file for 'x'] Result:\nx")]},
    ]);
    let session = read(&history);
    assert_eq!(kinds(&session), ["user_text", "assistant_text", "user_text"]);
}

#[test]
fn a_screenshot_after_a_result_joins_it() {
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    let history = json!([
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": [tool_use("b1", "browser_action")]},
        {"role": "user", "content": [
            text("[browser_action for 'screenshot'] Result:\nThe browser action has been executed."),
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
        ]},
    ]);
    let session = read(&history);
    assert_eq!(kinds(&session), ["user_text", "tool_call", "tool_result"]);
    assert_eq!(session.events[2].attachments().len(), 1);
}

#[test]
fn errors_name_the_message() {
    let ids = ImportContext::new("s");
    let unknown = json!([{"role": "user", "content": "a"}, {"role": "assistant", "content": [{"type": "teleport"}]}]);
    assert_eq!(
        import(&unknown.to_string(), &ids),
        Err(SessionFileError::Unsupported { line: 2, kind: "teleport".into() })
    );
    let orphan = json!([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "?"}]}]);
    assert_eq!(
        import(&orphan.to_string(), &ids).map_err(|e| (e.code(), e.line())),
        Err(("session_file_call_pairing", Some(1)))
    );
    assert_eq!(import("[", &ids).map_err(|e| e.code()), Err("session_file_syntax"));
    assert_eq!(import("{}", &ids).map_err(|e| e.code()), Err("session_file_shape"));
}

/// Every history under `tests/agent-files/cline/` imports into a valid, non-empty log. (No
/// licensed public history was found yet: the directory may hold only its README.)
#[test]
fn every_cline_fixture_imports() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/agent-files/cline");
    for entry in std::fs::read_dir(&dir).expect("fixture dir") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("utf-8 fixture");
        let session = import_session_file(None, &text, &ImportContext::new("s"))
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        assert_eq!(session.format, SessionFormat::Cline, "{}", path.display());
        assert!(!session.events.is_empty(), "{}", path.display());
        validate_log(&session.events).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}
