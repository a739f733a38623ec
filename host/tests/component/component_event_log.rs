//! The component's `event-log` resource: a host that appends each agent step's events to a log
//! held in the plugin, and projects it, gets what `projection.project` gives over the whole log,
//! while sending only the new events; a refused append changes nothing; the digest is the core's.
//! Needs the built component: run `scripts/test-component.sh`.

use crate::component_support;

use component_support::compactor_plugin;
use contextfold_core::checkpoint::{
    CheckpointProjection, HighWater, HistoryCompactCheckpoint, coverage_of,
};
use contextfold_core::digest::digest_prefix;
use contextfold_core::{LogBuilder, RuntimeEvent};
use contextfold_host::component::MemoryLedger;
use contextfold_host::component::bindings::contextfold::compaction::types::ModelFacts;
use contextfold_host::component::bindings::exports::contextfold::compaction::projection::ProjectRequest;
use serde_json::json;

fn checkpoint(prefix: &[RuntimeEvent]) -> String {
    let checkpoint = HistoryCompactCheckpoint {
        checkpoint_id: format!("cp-{}", prefix.len()),
        session_id: "s".into(),
        created_at_ms: 1,
        high_water: HighWater { name: "manual".into(), seq: 0 },
        coverage: coverage_of(prefix).expect("a non-empty prefix"),
        projection: CheckpointProjection::Summary("## Goal\nFix the build.".into()),
        limitations: vec![],
        estimated_tokens: 10,
        previous_checkpoint_id: None,
        produced_by: None,
        manifest: None,
    };
    serde_json::to_string(&checkpoint).expect("checkpoint JSON")
}

fn request(events: String, checkpoint: Option<String>) -> ProjectRequest {
    ProjectRequest {
        events,
        current_turn: Some("t-live".into()),
        checkpoint,
        model: ModelFacts {
            context_window: Some(200_000),
            fixed_overhead_tokens: 0,
            prepare_at_percent: None,
        },
        provider: None,
        fail_open: false,
        calibration_json: None,
    }
}

#[test]
#[ignore = "needs the built component: scripts/test-component.sh runs it"]
fn a_log_in_the_plugin_projects_what_the_whole_log_projects() {
    let mut plugin = compactor_plugin(MemoryLedger::default());
    let mut builder = LogBuilder::new("s");
    for turn in 0..30 {
        builder.turn(&format!("t{turn}")).user(&format!("fix test {turn}"));
        builder.tool_call(&format!("c{turn}"), "shell", json!({"cmd": "cargo test"}));
        builder.tool_result(&format!("c{turn}"), "shell", json!("ok ".repeat(200)));
        builder.assistant("fixed");
    }
    let history = builder.clone().build();
    let cp = checkpoint(&history);
    let log = plugin.new_event_log().expect("a log");
    let sent = serde_json::to_string(&history).expect("events");
    assert_eq!(plugin.append_to_log(&log, &sent).expect("append"), history.len() as u64);

    builder.turn("t-live").user("now the docs");
    let mut events = builder.clone().build();
    for step in 0..25 {
        let before = plugin.log_length(&log).expect("length") as usize;
        let new = &events[before..];
        let sent = serde_json::to_string(new).expect("the new events");
        plugin.append_to_log(&log, &sent).expect("append");
        let from_log = plugin.project_log(&log, &request("[]".into(), Some(cp.clone())));
        let whole = plugin
            .project(&request(serde_json::to_string(&events).expect("events"), Some(cp.clone())));
        let from_log = from_log.expect("projects the log");
        assert_eq!(from_log, whole.expect("projects the events"), "step {step}");
        assert!(from_log.contains("cp-120"), "the checkpoint is replayed");
        assert_eq!(plugin.log_digest(&log).expect("digest"), digest_prefix(&events));
        builder.tool_call(&format!("live{step}"), "shell", json!({"cmd": "ls"}));
        builder.tool_result(&format!("live{step}"), "shell", json!("src docs"));
        events = builder.clone().build();
    }

    // A refused append (a repeated event) changes nothing; events given to project are refused.
    let length = plugin.log_length(&log).expect("length");
    let repeat = serde_json::to_string(&events[..1]).expect("events");
    let error = plugin.append_to_log(&log, &repeat).expect_err("a repeated event");
    assert!(format!("{error:?}").contains("seq_not_increasing"), "{error:?}");
    assert_eq!(plugin.log_length(&log).expect("length"), length);
    let error = plugin.project_log(&log, &request(repeat, None)).expect_err("events given");
    assert!(format!("{error:?}").contains("events_given"), "{error:?}");
    plugin.drop_event_log(log).expect("drops the log");
    assert_eq!(plugin.traps(), 0);
}
