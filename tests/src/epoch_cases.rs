//! Projection vectors of pruning epochs: the same session at two lengths, before and after an
//! epoch closes, so every runtime prunes the same candidates at the same moment and writes the
//! same placeholder bytes.

use contextfold_core::{EventContent, LogBuilder, RuntimeEvent};
use serde_json::{Value, json};

use crate::ops;

fn case(name: &str, events: &[RuntimeEvent], current: &str) -> Value {
    let values: Vec<Value> =
        events.iter().map(|e| serde_json::to_value(e).expect("events serialize")).collect();
    let input = json!({"events": values, "currentTurnId": current,
        "model": {"contextWindow": 400_000}, "failOpen": false});
    let expected = ops::evaluate("project", &input);
    json!({ "name": name, "op": "project", "input": input, "expected": expected })
}

/// Turns with one 5,000-token result and, from turn 3 on, three archived 1280x800 screenshots.
/// At turn 3 one result is stale, too little for an epoch: nothing is pruned. At turn 5 two
/// epochs have closed (t0 and t1's results; t3's screenshots and t2's result) and t4's
/// screenshots, old but short of the minimum, keep their bytes.
pub(crate) fn epoch_cases() -> Vec<Value> {
    let mut log = LogBuilder::new("s-epochs");
    let mut cases = Vec::new();
    let mut shot = 0u64;
    for turn in 0..6 {
        let current = format!("t{turn}");
        log.turn(&current).user("next step");
        let call = format!("c{turn}");
        log.response(Some(&format!("r{turn}"))).tool_call(&call, "shell", json!({"n": turn}));
        log.response(None).tool_result(&call, "shell", json!("log line\n".repeat(2_223)));
        for _ in 0..(if turn >= 3 { 3 } else { 0 }) {
            shot += 1;
            let call = format!("shot-{shot}");
            log.response(Some(&format!("r{turn}-{shot}"))).tool_call(&call, "screen", json!({}));
            let attachment = serde_json::from_value(json!({
                "mediaType": "image/png", "byteLength": 40_000 + shot, "width": 1280,
                "height": 800, "sha256": format!("{:064x}", 0xe90c_u64 * shot),
            }))
            .expect("a valid archived attachment");
            log.response(None).push(EventContent::ToolResult {
                call_id: call,
                tool_name: "screen".into(),
                output: json!("captured"),
                is_error: false,
                attachments: vec![attachment],
            });
        }
        if turn == 3 || turn == 5 {
            cases.push(case(&format!("epochs_project_at_turn_{turn}"), log.events(), &current));
        }
    }
    cases
}
