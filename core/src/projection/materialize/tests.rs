//! Unit tests of grouping, pairing repairs and checkpoint rendering.

use serde_json::json;

use super::checkpoint_text::render_checkpoint_text;
use super::*;
use crate::checkpoint::{Boundary, Coverage, HighWater, ProviderState};
use crate::log_builder::LogBuilder;

fn roles(messages: &[Message]) -> Vec<Role> {
    messages.iter().map(|m| m.role).collect()
}

fn codes(repairs: &[Repair]) -> Vec<&'static str> {
    repairs.iter().map(Repair::code).collect()
}

fn text(t: &str) -> Part {
    Part::Text { text: t.into() }
}

fn call(id: &str, hosted: bool) -> Part {
    Part::ToolCall { call_id: id.into(), tool_name: "t".into(), input: json!({"n": 1}), hosted }
}

fn result(id: &str, output: Value, is_error: bool, hosted: bool) -> Part {
    Part::ToolResult {
        call_id: id.into(),
        tool_name: "t".into(),
        output,
        is_error,
        hosted,
        attachments: Vec::new(),
    }
}

fn hosted_call(log: &mut LogBuilder, id: &str) {
    log.push(EventContent::HostedToolCall {
        call_id: id.into(),
        tool_name: "t".into(),
        input: json!({"n": 1}),
    });
}

fn hosted_result(log: &mut LogBuilder, id: &str) {
    log.push(EventContent::HostedToolResult {
        call_id: id.into(),
        tool_name: "t".into(),
        output: json!("found"),
        is_error: false,
    });
}

fn checkpoint(
    projection: CheckpointProjection,
    limitations: Vec<String>,
) -> HistoryCompactCheckpoint {
    HistoryCompactCheckpoint {
        checkpoint_id: "cp-1".into(),
        session_id: "s".into(),
        created_at_ms: 1,
        high_water: HighWater { name: "pre_turn".into(), seq: 12 },
        coverage: Coverage {
            event_count: 12,
            turn_count: 3,
            through: Boundary {
                run_id: "run-t2".into(),
                turn_id: "t2".into(),
                runtime_event_id: "e12".into(),
            },
            source_digest: format!("sha256:{}", "ab".repeat(32)),
        },
        projection,
        limitations,
        estimated_tokens: 40,
        previous_checkpoint_id: None,
        produced_by: None,
        manifest: None,
    }
}

use crate::checkpoint::CheckpointProjection;

#[test]
fn one_step_groups_reasoning_and_parallel_calls_with_results_after() {
    let mut log = LogBuilder::new("s");
    log.user("go").response(Some("r1")).reasoning("plan").tool_call("c1", "t", json!({"n": 1}));
    log.tool_call("c2", "t", json!({"n": 1})).response(None);
    log.tool_result("c2", "t", json!("two")).tool_result("c1", "t", json!("one"));
    log.response(Some("r2")).assistant("done");
    let out = materialize(None, log.events(), &[]);
    assert!(out.repairs.is_empty());
    assert_eq!(roles(&out.messages), [Role::User, Role::Assistant, Role::Tool, Role::Assistant]);
    assert_eq!(
        out.messages[1].parts,
        [
            Part::Reasoning { text: "plan".into(), provider_data: None },
            call("c1", false),
            call("c2", false)
        ]
    );
    // Results keep the order they were recorded in.
    assert_eq!(
        out.messages[2].parts,
        [result("c2", json!("two"), false, false), result("c1", json!("one"), false, false)]
    );
    assert_eq!(out.messages[3].parts, [text("done")]);
}

#[test]
fn shared_response_id_spans_interleaved_results_but_not_turns() {
    let mut log = LogBuilder::new("s");
    log.user("a").response(Some("r1")).tool_call("c1", "t", json!({"n": 1})).response(None);
    log.tool_result("c1", "t", json!(1)).response(Some("r1")).tool_call("c2", "t", json!({"n": 1}));
    log.response(None).tool_result("c2", "t", json!(2)).response(Some("r1")).assistant("same step");
    log.turn("t1").response(Some("r1")).assistant("next turn");
    let out = materialize(None, log.events(), &[]);
    assert!(out.repairs.is_empty(), "{:?}", out.repairs);
    assert_eq!(roles(&out.messages), [Role::User, Role::Assistant, Role::Tool, Role::Assistant]);
    assert_eq!(out.messages[1].parts, [call("c1", false), call("c2", false), text("same step")]);
    assert_eq!(out.messages[3].parts, [text("next turn")]);
}

#[test]
fn without_response_id_only_consecutive_events_group() {
    let mut log = LogBuilder::new("s");
    log.user("a").reasoning("r").assistant("x").tool_call("c1", "t", json!({"n": 1}));
    log.tool_result("c1", "t", json!(1)).assistant("y").assistant("z");
    let out = materialize(None, log.events(), &[]);
    assert_eq!(roles(&out.messages), [Role::User, Role::Assistant, Role::Tool, Role::Assistant]);
    assert_eq!(out.messages[1].parts.len(), 3);
    assert_eq!(out.messages[3].parts, [text("y"), text("z")]);
}

#[test]
fn notes_become_system_text() {
    let mut log = LogBuilder::new("s");
    log.push(EventContent::SystemNote { text: "be brief".into() });
    log.push(EventContent::RuntimeNote {
        code: "context_compaction_failed_open".into(),
        text: "kept raw".into(),
    });
    let out = materialize(None, log.events(), &[]);
    assert_eq!(out.messages[0], Message::text(Role::System, "be brief"));
    assert_eq!(
        out.messages[1],
        Message::text(Role::System, "[runtime:context_compaction_failed_open] kept raw")
    );
}

#[test]
fn interrupted_call_gets_error_result_and_log_is_untouched() {
    let mut log = LogBuilder::new("s");
    log.user("a").response(Some("r1")).tool_call("c1", "t", json!({"n": 1}));
    log.tool_call("c2", "t", json!({"n": 1})).response(None).tool_result("c2", "t", json!("ok"));
    log.user("b");
    let events = log.build();
    let before = events.clone();
    let out = materialize(None, &events, &[]);
    assert_eq!(events, before);
    assert_eq!(codes(&out.repairs), ["tool_call_interrupted"]);
    assert_eq!(out.repairs[0].call_id(), "c1");
    assert_eq!(out.repairs[0].runtime_event_id(), "e2");
    assert_eq!(
        out.messages[2].parts,
        [
            result("c2", json!("ok"), false, false),
            result(
                "c1",
                json!({"error": "tool call interrupted: no result was recorded"}),
                true,
                false
            )
        ]
    );
    assert_eq!(out.messages[3].role, Role::User);
}

#[test]
fn duplicate_result_keeps_the_first() {
    let mut log = LogBuilder::new("s");
    log.user("a").tool_call("c1", "t", json!({"n": 1})).tool_result("c1", "t", json!("first"));
    log.tool_result("c1", "t", json!("second"));
    let out = materialize(None, log.events(), &[]);
    assert_eq!(codes(&out.repairs), ["duplicate_tool_result_dropped"]);
    assert_eq!(out.repairs[0].runtime_event_id(), "e4");
    assert_eq!(out.messages[2].parts, [result("c1", json!("first"), false, false)]);
}

#[test]
fn orphan_results_are_dropped_including_results_before_their_call() {
    let mut log = LogBuilder::new("s");
    log.user("a").tool_result("ghost", "t", json!("?")).tool_result("c1", "t", json!("early"));
    log.tool_call("c1", "t", json!({"n": 1}));
    let out = materialize(None, log.events(), &[]);
    assert_eq!(
        codes(&out.repairs),
        ["orphan_tool_result_dropped", "orphan_tool_result_dropped", "tool_call_interrupted"]
    );
    assert_eq!(roles(&out.messages), [Role::User, Role::Assistant, Role::Tool]);
    assert!(matches!(&out.messages[2].parts[0], Part::ToolResult { is_error: true, .. }));
}

#[test]
fn late_result_moves_up_to_follow_its_call() {
    let mut log = LogBuilder::new("s");
    log.user("a").tool_call("c1", "t", json!({"n": 1}));
    log.push(EventContent::RuntimeNote { code: "note".into(), text: "meanwhile".into() });
    log.user("b").tool_result("c1", "t", json!("late"));
    let out = materialize(None, log.events(), &[]);
    assert_eq!(codes(&out.repairs), ["tool_result_moved"]);
    assert_eq!(out.repairs[0].runtime_event_id(), "e5");
    assert_eq!(
        roles(&out.messages),
        [Role::User, Role::Assistant, Role::Tool, Role::System, Role::User]
    );
    assert_eq!(out.messages[2].parts, [result("c1", json!("late"), false, false)]);
}

#[test]
fn reused_id_of_an_answered_call_is_renamed_and_both_exchanges_kept() {
    let mut log = LogBuilder::new("s");
    log.user("a").tool_call("c1", "t", json!({"n": 1})).tool_result("c1", "t", json!(1));
    log.user("b").tool_call("c1", "t", json!({"n": 1})).tool_result("c1", "t", json!(2));
    log.user("c").tool_call("c1", "t", json!({"n": 1})).tool_result("c1", "t", json!(3));
    let out = materialize(None, log.events(), &[]);
    assert_eq!(codes(&out.repairs), ["tool_call_id_renamed", "tool_call_id_renamed"]);
    assert_eq!(roles(&out.messages), [Role::User, Role::Assistant, Role::Tool].repeat(3),);
    assert_eq!(out.messages[1].parts, [call("c1", false)]);
    assert_eq!(out.messages[2].parts, [result("c1", json!(1), false, false)]);
    assert_eq!(out.messages[4].parts, [call("c1_r2", false)]);
    assert_eq!(out.messages[5].parts, [result("c1_r2", json!(2), false, false)]);
    assert_eq!(out.messages[7].parts, [call("c1_r3", false)]);
    assert_eq!(out.messages[8].parts, [result("c1_r3", json!(3), false, false)]);
    let Repair::ToolCallIdRenamed { call_id, projected_call_id, .. } = &out.repairs[1] else {
        panic!("expected a rename, got {:?}", out.repairs[1]);
    };
    assert_eq!((call_id.as_str(), projected_call_id.as_str()), ("c1", "c1_r3"));
}

#[test]
fn reused_id_of_an_unanswered_call_is_dropped() {
    let mut log = LogBuilder::new("s");
    log.user("a").tool_call("c1", "t", json!({"n": 1}));
    log.tool_call("c1", "t", json!({"n": 2})).tool_result("c1", "t", json!(1));
    let out = materialize(None, log.events(), &[]);
    assert_eq!(codes(&out.repairs), ["duplicate_tool_call_dropped"]);
    assert_eq!(roles(&out.messages), [Role::User, Role::Assistant, Role::Tool]);
    assert_eq!(out.messages[1].parts, [call("c1", false)]);
    assert_eq!(out.messages[2].parts, [result("c1", json!(1), false, false)]);
}

#[test]
fn hosted_pairs_stay_inside_the_assistant_message() {
    let mut log = LogBuilder::new("s");
    log.user("search").response(Some("r1")).assistant("looking");
    hosted_call(&mut log, "h1");
    hosted_result(&mut log, "h1");
    log.assistant("found it");
    let out = materialize(None, log.events(), &[]);
    assert!(out.repairs.is_empty());
    assert_eq!(roles(&out.messages), [Role::User, Role::Assistant]);
    assert_eq!(
        out.messages[1].parts,
        [
            text("looking"),
            call("h1", true),
            result("h1", json!("found"), false, true),
            text("found it")
        ]
    );
}

#[test]
fn hosted_repairs_place_results_right_after_the_call_part() {
    let mut log = LogBuilder::new("s");
    log.user("a").response(Some("r1"));
    hosted_call(&mut log, "h1");
    hosted_call(&mut log, "h2");
    log.assistant("text");
    log.response(Some("r2"));
    hosted_result(&mut log, "h2"); // other step: moved into r1's message
    log.tool_result("h1", "t", json!("wrong kind")); // ordinary result for a hosted call: orphan
    let out = materialize(None, log.events(), &[]);
    assert_eq!(
        codes(&out.repairs),
        ["tool_result_moved", "orphan_tool_result_dropped", "tool_call_interrupted"]
    );
    assert_eq!(roles(&out.messages), [Role::User, Role::Assistant]);
    assert_eq!(
        out.messages[1].parts,
        [
            call("h1", true),
            result("h1", interrupted_output(), true, true),
            call("h2", true),
            result("h2", json!("found"), false, true),
            text("text"),
        ]
    );
}

#[test]
fn v2_checkpoint_renders_one_system_block_first() {
    let cp = checkpoint(
        CheckpointProjection::Summary("## Goal\nship it".into()),
        vec!["extractive\nsummary".into(), REPLAY_LIMITATION.into()],
    );
    let expected = format!(
        "<contextfold_checkpoint id=\"cp-1\" session=\"s\" events=\"12\" turns=\"3\" \
         through=\"run-t2/t2/e12\" digest=\"sha256:{}\">\nsummary:\n## Goal\nship it\n\
         coverage: the first 12 events (3 turns) of session s, through run run-t2, turn t2, event e12; \
         high water pre_turn at seq 12\nlimitations:\n- This is a replay-time summary of a covered \
         RuntimeEvent prefix; exact wording remains in the RuntimeEvent log.\n- extractive summary\n\
         </contextfold_checkpoint>",
        "ab".repeat(32)
    );
    assert_eq!(render_checkpoint_text(&cp).as_deref(), Some(expected.as_str()));
    let mut log = LogBuilder::new("s");
    log.user("next");
    let out = materialize(Some(&cp), &[], log.events());
    assert_eq!(
        out.messages,
        [Message::text(Role::System, expected), Message::text(Role::User, "next")]
    );
}

#[test]
fn checkpoint_attributes_are_escaped() {
    let mut cp = checkpoint(CheckpointProjection::Summary("s\n".into()), Vec::new());
    cp.checkpoint_id = "a\"<b>&".into();
    let text = render_checkpoint_text(&cp).unwrap_or_default();
    assert!(text.starts_with("<contextfold_checkpoint id=\"a&quot;&lt;b&gt;&amp;\" session="));
    assert!(text.contains("summary:\ns\ncoverage:"), "{text}");
}

#[test]
fn v3_checkpoint_is_one_provider_state_part_never_text() {
    let state = ProviderState::OpenaiCodexRemoteV2 {
        connection_slug: "codex".into(),
        model_id: "gpt-5".into(),
        item_id: "item-1".into(),
        encrypted_content: "SECRET".into(),
    };
    let cp = checkpoint(CheckpointProjection::ProviderState(state.clone()), vec!["opaque".into()]);
    assert_eq!(render_checkpoint_text(&cp), None);
    let mut log = LogBuilder::new("s");
    log.user("next");
    let out = materialize(Some(&cp), log.events(), &[]);
    assert_eq!(
        out.messages[0],
        Message { role: Role::Assistant, parts: vec![Part::ProviderState { state }] }
    );
    assert_eq!(out.messages.len(), 2);
    assert!(
        !out.messages
            .iter()
            .flat_map(|m| &m.parts)
            .any(|p| matches!(p, Part::Text { text } if text.contains("SECRET")))
    );
}

#[test]
fn split_between_tail_and_current_does_not_matter() {
    let mut log = LogBuilder::new("s");
    log.user("a").response(Some("r1")).tool_call("c1", "t", json!({"n": 1})).response(None);
    log.turn("t1").tool_result("c1", "t", json!(1)).user("b").assistant("c");
    let events = log.build();
    let whole = materialize(None, &events, &[]);
    for cut in 0..=events.len() {
        assert_eq!(materialize(None, &events[..cut], &events[cut..]), whole, "cut {cut}");
    }
    let bytes = serde_json::to_string(&whole.messages).unwrap_or_default();
    assert_eq!(
        serde_json::to_string(&materialize(None, &events, &[]).messages).unwrap_or_default(),
        bytes
    );
}

#[test]
fn repair_codes_match_the_reason_table_and_serialize() {
    let repair = Repair::ToolResultMoved {
        call_id: "c".into(),
        runtime_event_id: "e".into(),
        hosted: false,
    };
    assert_eq!(repair.code(), "tool_result_moved");
    assert_eq!(crate::diagnostics::ReasonCode::parse(repair.code()), Some(repair.reason()));
    assert_eq!(repair.to_diagnostic().code, repair.reason());
    assert_eq!(
        serde_json::to_value(&repair).unwrap_or_default(),
        json!({"code": "tool_result_moved", "callId": "c", "runtimeEventId": "e", "hosted": false})
    );
}
