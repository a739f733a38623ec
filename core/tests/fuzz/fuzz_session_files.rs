//! Proptest fuzzing of the session-file readers (Claude Code, Codex rollouts, Cline): records of
//! the real fixtures with one subtree replaced by random JSON, lines dropped or repeated, and
//! files cut at any character. The property: no panic, every rejection a typed error with a
//! stable snake_case code, and every import a valid log.

use contextfold_core::event::validate_log;
use contextfold_core::projection::{ImportContext, SessionFormat, import_session_file};
use proptest::prelude::*;
use serde_json::Value;

use crate::fuzz_parsers::{arbitrary_json, is_code, mutate};

/// The first `lines` records of a committed fixture, one JSON value each (a Cline file: its
/// messages).
fn fixture_records(agent: &str, file: &str, lines: usize) -> Vec<Value> {
    let path = format!("{}/../tests/agent-files/{agent}/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture");
    text.lines().take(lines).filter_map(|line| serde_json::from_str(line).ok()).collect()
}

fn cline_records() -> Vec<Value> {
    serde_json::from_str::<Value>(
        r#"[{"role":"user","content":[{"type":"text","text":"<task>fix the build</task>"}]},
            {"role":"assistant","content":[{"type":"text","text":"Reading it."},
              {"type":"tool_use","id":"t1","name":"read_file","input":{"path":"src/a.ts"}}]},
            {"role":"user","content":[{"type":"text","text":"[read_file for 'src/a.ts'] Result:\nexport {}"},
              {"type":"text","text":"<environment_details>cwd</environment_details>"}]},
            {"role":"assistant","content":[{"type":"text","text":"Done."}]}]"#,
    )
    .expect("json")
    .as_array()
    .cloned()
    .unwrap_or_default()
}

/// `records` as the format writes them: JSON Lines, or one JSON array for Cline.
fn render(format: SessionFormat, records: &[Value]) -> String {
    match format {
        SessionFormat::Cline => Value::Array(records.to_vec()).to_string(),
        _ => records.iter().map(|r| r.to_string() + "\n").collect(),
    }
}

fn check(format: Option<SessionFormat>, text: &str) -> Result<(), TestCaseError> {
    match import_session_file(format, text, &ImportContext::new("s")) {
        Ok(session) => {
            if !session.events.is_empty() {
                prop_assert!(validate_log(&session.events).is_ok(), "invalid main log");
            }
            for linked in &session.linked {
                prop_assert!(validate_log(&linked.events).is_ok(), "invalid linked log");
            }
        }
        Err(error) => prop_assert!(is_code(error.code()), "{}", error.code()),
    }
    Ok(())
}

proptest! {
    #[test]
    fn session_files_never_panic(
        which in 0usize..3,
        line in any::<u64>(),
        pick in any::<u64>(),
        junk in arbitrary_json(),
        drop in any::<bool>(),
        cut in any::<u64>(),
    ) {
        let (format, mut records) = match which {
            0 => (SessionFormat::ClaudeCode, fixture_records("claude-code", "spotter-tool-heavy.jsonl", 24)),
            1 => (SessionFormat::CodexRollout, fixture_records("codex", "acidicsoil-rollout-2025-11-17.jsonl", 24)),
            _ => (SessionFormat::Cline, cline_records()),
        };
        prop_assume!(!records.is_empty());
        let at = (line % records.len() as u64) as usize;
        if drop {
            let removed = records.remove(at);
            records.push(removed);
        } else {
            records[at] = mutate(records[at].clone(), pick, junk);
        }
        let text = render(format, &records);
        check(Some(format), &text)?;
        check(None, &text)?;
        let boundary = (0..=text.len()).filter(|&i| text.is_char_boundary(i)).nth((cut % 512) as usize);
        if let Some(end) = boundary {
            check(Some(format), &text[..end])?;
        }
    }
}
