//! Invariant 11 (tool pairing survives compaction): checked on the provider-neutral messages
//! of every projection, independently of the safe-cut rules the core uses to choose folds.

use std::collections::{BTreeMap, BTreeSet};

use contextfold_core::EventContent;
use contextfold_core::projection::{Message, Part, Role, interrupted_output};
use proptest::prelude::*;

use crate::scenario::{Driver, scenario};

/// What is wrong with the pairing of one request, if anything.
fn pairing_problem(messages: &[Message]) -> Option<String> {
    let mut seen_calls = BTreeSet::new();
    // Ordinary calls of the last assistant message still waiting for their result.
    let mut open: Vec<String> = Vec::new();
    let mut answered: BTreeMap<String, usize> = BTreeMap::new();
    for (index, message) in messages.iter().enumerate() {
        if message.role != Role::Tool {
            if let Some(id) = open.iter().find(|id| answered.get(*id) != Some(&1)) {
                return Some(format!("call {id} has no single result before message {index}"));
            }
            open.clear();
            answered.clear();
        }
        let mut hosted_open: Vec<&str> = Vec::new();
        for part in &message.parts {
            match part {
                Part::ToolCall { call_id, hosted, .. } => {
                    if message.role != Role::Assistant {
                        return Some(format!("call {call_id} outside an assistant message"));
                    }
                    if !seen_calls.insert(call_id.clone()) {
                        return Some(format!("call id {call_id} used twice in one request"));
                    }
                    if *hosted {
                        hosted_open.push(call_id);
                    } else {
                        open.push(call_id.clone());
                    }
                }
                Part::ToolResult { call_id, hosted: true, .. } => {
                    let Some(at) = hosted_open.iter().position(|id| id == call_id) else {
                        return Some(format!("hosted result {call_id} without its call before it"));
                    };
                    hosted_open.remove(at);
                }
                Part::ToolResult { call_id, .. } => {
                    if message.role != Role::Tool || !open.contains(call_id) {
                        return Some(format!("result {call_id} does not follow its call"));
                    }
                    *answered.entry(call_id.clone()).or_default() += 1;
                }
                _ => {}
            }
        }
        if let Some(id) = hosted_open.first() {
            return Some(format!("hosted call {id} unanswered in its own message"));
        }
    }
    open.iter()
        .find(|id| answered.get(*id) != Some(&1))
        .map(|id| format!("call {id} has no single result at the end of the request"))
}

/// Invariant 11: Tool pairing survives compaction: in every request, each ordinary call is followed,
/// before the next non-tool message, by exactly one result with its id; each hosted call is
/// answered inside its own message; call ids are unique; and no call whose result is recorded
/// in the log is answered with the synthesized "interrupted" result (a fold never separates a
/// call from its result).
#[test]
fn invariant_11_tool_pairing_survives_compaction() {
    crate::check("invariant_11_tool_pairing_survives_compaction", scenario(), |case| {
        let trace = Driver::run(case);
        for p in &trace.projections {
            let problem = pairing_problem(&p.projection.messages);
            prop_assert!(problem.is_none(), "{}", problem.unwrap_or_default());
            let recorded: BTreeSet<&str> = p
                .events
                .iter()
                .filter_map(|e| match &e.content {
                    EventContent::ToolResult { call_id, .. } => Some(call_id.as_str()),
                    _ => None,
                })
                .collect();
            let synthesized = interrupted_output();
            for part in p.projection.messages.iter().flat_map(|m| m.parts.iter()) {
                if let Part::ToolResult { call_id, output, .. } = part {
                    prop_assert!(
                        !(output == &synthesized && recorded.contains(call_id.as_str())),
                        "call {} answered as interrupted although its result is recorded",
                        call_id
                    );
                }
            }
        }
        Ok(())
    });
}

/// The check itself fails on the breakages it exists for.
#[test]
fn pairing_check_rejects_broken_requests() {
    use serde_json::json;
    let call = |id: &str| Part::ToolCall {
        call_id: id.into(),
        tool_name: "shell".into(),
        input: json!({}),
        hosted: false,
    };
    let result = |id: &str| Part::ToolResult {
        call_id: id.into(),
        tool_name: "shell".into(),
        output: json!("ok"),
        is_error: false,
        hosted: false,
        attachments: Vec::new(),
    };
    let msg = |role, parts| Message { role, parts };
    let good = vec![
        msg(Role::Assistant, vec![call("a"), call("b")]),
        msg(Role::Tool, vec![result("b"), result("a")]),
    ];
    assert_eq!(pairing_problem(&good), None);
    let missing =
        vec![msg(Role::Assistant, vec![call("a"), call("b")]), msg(Role::Tool, vec![result("a")])];
    assert!(pairing_problem(&missing).is_some());
    let twice = vec![
        msg(Role::Assistant, vec![call("a")]),
        msg(Role::Tool, vec![result("a"), result("a")]),
    ];
    assert!(pairing_problem(&twice).is_some());
    let orphan = vec![
        msg(Role::User, vec![Part::Text { text: "hi".into() }]),
        msg(Role::Tool, vec![result("a")]),
    ];
    assert!(pairing_problem(&orphan).is_some());
    let late = vec![
        msg(Role::Assistant, vec![call("a")]),
        msg(Role::User, vec![Part::Text { text: "hi".into() }]),
        msg(Role::Tool, vec![result("a")]),
    ];
    assert!(pairing_problem(&late).is_some());
    let reused = vec![
        msg(Role::Assistant, vec![call("a")]),
        msg(Role::Tool, vec![result("a")]),
        msg(Role::Assistant, vec![call("a")]),
        msg(Role::Tool, vec![result("a")]),
    ];
    assert!(pairing_problem(&reused).is_some());
}
