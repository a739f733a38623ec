//! The native-format copies of real agent trajectories (`tests/trajectories/*/native/`, see
//! `docs/trajectories.md`) import with the matching core importer, and their projection hands
//! the provider unique call ids, each call answered at most once by a later result.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use contextfold_core::budget::{CharEstimator, ModelFacts};
use contextfold_core::event::RuntimeEvent;
use contextfold_core::projection::{
    ImportContext, Part, ProjectInput, import_anthropic, import_openai_chat, project,
    to_openai_chat,
};
use serde_json::Value;

fn native(relative: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/trajectories").join(relative);
    serde_json::from_str(&std::fs::read_to_string(&path).expect("native file")).expect("JSON")
}

/// Projects `events`; returns (projected call ids, calls without a result). Fails on a call id
/// projected twice or a result without an earlier call.
fn project_pairs(events: &[RuntimeEvent]) -> (Vec<String>, usize) {
    let model = ModelFacts::default();
    let input = ProjectInput {
        events,
        current_turn_id: None,
        checkpoint: None,
        model: &model,
        provider: None,
        fail_open: false,
    };
    let projection = project(&input, &CharEstimator).expect("projects");
    let mut answers: HashMap<String, usize> = HashMap::new();
    let mut calls = Vec::new();
    for part in projection.messages.iter().flat_map(|m| &m.parts) {
        match part {
            Part::ToolCall { call_id, .. } => {
                assert!(!answers.contains_key(call_id), "call id {call_id} projected twice");
                answers.insert(call_id.clone(), 0);
                calls.push(call_id.clone());
            }
            Part::ToolResult { call_id, .. } => {
                let count = answers.get_mut(call_id).expect("result after its call");
                *count += 1;
                assert_eq!(*count, 1, "call {call_id} answered twice");
            }
            _ => {}
        }
    }
    to_openai_chat(&projection.messages).expect("a valid chat request");
    let unanswered = answers.values().filter(|count| **count == 0).count();
    (calls, unanswered)
}

/// Source: SWE-agent (MIT), function-calling trajectory of marshmallow-code/marshmallow#1867;
/// it reuses call ids after their answers (one id four times).
#[test]
fn swe_agent_function_calling_chat_imports_and_projects_unique_pairs() {
    let chat = native("swe-agent/native/marshmallow-1867-function-calling.openai-chat.json");
    let events = import_openai_chat(&chat, &ImportContext::new("swe-agent")).expect("imports");
    assert_eq!(events.len(), 35);
    let (calls, unanswered) = project_pairs(&events);
    assert_eq!(calls.len(), 11);
    assert_eq!(unanswered, 0);
    assert!(calls.iter().any(|id| id.ends_with("_r4")), "the id used four times is renamed");
}

/// Source: mini-swe-agent PR #816 (MIT), deepseek-chat trajectory of pvlib#1072 written through
/// LiteLLM: `provider_specific_fields` and `function_call: null` on assistant messages, `index`
/// on tool calls; the last call has no result yet.
#[test]
fn mini_swe_agent_litellm_chat_imports_and_projects_unique_pairs() {
    let chat = native("mini-swe-agent/native/pvlib-1072-deepseek-chat.openai-chat.json");
    let events = import_openai_chat(&chat, &ImportContext::new("mini")).expect("imports");
    assert_eq!(events.len(), 223);
    let (calls, unanswered) = project_pairs(&events);
    assert_eq!(calls.len(), 74);
    assert!(unanswered <= 1, "{unanswered} unanswered calls");
}

/// Source: Moatless Tools (MIT), django__django-15819 as an Anthropic Messages request.
#[test]
fn moatless_anthropic_request_imports_and_projects_unique_pairs() {
    let body = native("moatless/native/django__django-15819.anthropic.json");
    let events = import_anthropic(&body, &ImportContext::new("moatless")).expect("imports");
    assert_eq!(events.len(), 55);
    let (calls, unanswered) = project_pairs(&events);
    assert_eq!(calls.len(), 18);
    assert!(unanswered <= 1, "{unanswered} unanswered calls");
}

/// Every native file is covered by a test above: a new one must get its own.
#[test]
fn every_native_file_is_covered() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/trajectories");
    let mut found: Vec<PathBuf> = Vec::new();
    for source in std::fs::read_dir(&root).expect("trajectories").flatten() {
        if let Ok(files) = std::fs::read_dir(source.path().join("native")) {
            found.extend(files.flatten().map(|f| f.path().strip_prefix(&root).unwrap().into()));
        }
    }
    found.sort();
    let covered = [
        "mini-swe-agent/native/pvlib-1072-deepseek-chat.openai-chat.json",
        "moatless/native/django__django-15819.anthropic.json",
        "swe-agent/native/marshmallow-1867-function-calling.openai-chat.json",
    ];
    assert_eq!(found, covered.map(PathBuf::from));
}
