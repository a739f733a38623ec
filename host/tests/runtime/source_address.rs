//! A summary checkpoint names the archive address of exactly what it covers (its limitations),
//! and the store serves that address from the session's log, so what the summary left out for
//! room can be read back with `archive_read`.

use std::path::Path;

use contextfold_core::compaction::{
    ArtifactClass, CompactInput, Compaction, Compactor, Effect, FinishReason,
    MalformedInputCircuit, Step, SummaryResponse, Trigger, extract_artifacts,
    extractive_summary_for,
};
use contextfold_core::{
    CheckpointProjection, HistoryCompactCheckpoint, ModelFacts, ProviderIdentity, RuntimeEvent,
};
use contextfold_host::storage::Store;
use serde_json::json;

/// One manual compaction of `events` at an 8k window with the extractive summarizer.
fn compacted(events: &[RuntimeEvent]) -> HistoryCompactCheckpoint {
    let mut tx = Compaction::start(CompactInput {
        trigger: Trigger::Manual,
        events: events.into(),
        current_turn_id: None,
        checkpoint: None,
        model: ModelFacts { context_window: Some(8_000), ..Default::default() },
        provider: ProviderIdentity {
            provider: "local".into(),
            connection_slug: "c".into(),
            model_id: "m".into(),
        },
        compactor: Compactor::TextSummary,
        new_checkpoint_id: "cp-1".into(),
        now_ms: 1_800_000_000_000,
        provider_options: None,
        summarizer_label: Some("extractive".into()),
        circuit: MalformedInputCircuit::new(),
        prepared: None,
    })
    .expect("valid log");
    let mut recorded = None;
    loop {
        match tx.poll().expect("driver order") {
            Step::Effect(Effect::Summarize(effect)) => {
                let text = extractive_summary_for(events, &effect);
                let answer = SummaryResponse { text, finish_reason: FinishReason::Stop };
                tx.handle_summary(Ok(answer)).expect("summary awaited");
            }
            Step::Effect(Effect::AppendCheckpoint(checkpoint)) => {
                recorded = Some(*checkpoint);
                tx.handle_append(Ok(())).expect("append awaited");
            }
            Step::Effect(other) => panic!("unexpected effect {other:?}"),
            Step::Done(_) => return recorded.expect("a checkpoint"),
        }
    }
}

#[test]
fn what_a_summary_left_out_is_read_back_by_the_address_it_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("ledger.sqlite")).expect("store");
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/trajectories/mini-swe-agent/astroid-1333-deepseek-chat.jsonl");
    let text = std::fs::read_to_string(path).expect("committed trajectory");
    let events = RuntimeEvent::parse_jsonl(&text).expect("valid JSONL");
    let session = events[0].session_id.clone();
    store.append_events(&session, &events).expect("append");

    let checkpoint = compacted(&events);
    let CheckpointProjection::Summary(summary) = &checkpoint.projection else {
        panic!("a text checkpoint");
    };
    assert!(summary.contains("Left out for room ("), "{summary}");
    let uri = checkpoint
        .limitations
        .iter()
        .flat_map(|line| line.split_whitespace())
        .find(|word| word.starts_with("contextfold://archive/"))
        .expect("the limitations name the covered events' address");
    // A command the summary had no room for is in the covered source, exactly (one with no
    // character JSON escapes: the source is the events' canonical JSON Lines).
    let left_out = extract_artifacts(&events)
        .into_iter()
        .filter(|a| !a.text.contains(['"', '\\']))
        .find(|a| a.class == ArtifactClass::Command && !summary.contains(a.text.as_str()))
        .expect("a command left out at 8k");
    let query = json!({"address": uri, "mode": "query", "pattern": left_out.text});
    let slice = store.archive_read(&session, &query).expect("served from the log");
    let value = serde_json::to_value(&slice).expect("json");
    assert!(value["matches"].as_array().is_some_and(|m| !m.is_empty()), "{value}");
    let inspect = json!({"address": uri, "mode": "inspect", "length": 64});
    let head = serde_json::to_value(store.archive_read(&session, &inspect).expect("inspect"))
        .expect("json");
    assert!(head["text"].as_str().is_some_and(|t| t.starts_with("contextfold-source-v1\n")));
}
