//! Every trigger through the session runtime on a real SQLite file, with the real provider
//! clients talking HTTP to the loopback server: pre-turn (Chat Completions), mid-turn
//! (Anthropic), provider overflow (Codex native, V3), manual (Codex fallback), a stopped manual
//! compaction, and a failed durable append.

use crate::providers;
use crate::runtime_support;

use std::time::Duration;

use contextfold_core::compaction::{
    Compactor, OPENAI_CODEX_PROVIDER, OutcomeKind, ProviderIdentity, Trigger,
};
use contextfold_core::projection::Part;
use contextfold_core::{CheckpointProjection, ProviderState};
use contextfold_host::runtime::{NoNativeCompactor, StopSignal};
use contextfold_host::storage::{Store, agent_run_kind};
use providers::fixtures::{
    CODEX_MODEL, NEW_STATE, SLOW, anthropic_client, anthropic_message, chat_client,
    chat_completion, codex_client, compaction_item, responses_stream,
};
use providers::server::{LoopbackServer, Reply, StreamEnd};
use runtime_support::{
    RECORDED_RUN, append_step, config, config_for, history, run_kinds, runtime_with, start_turn,
};
use serde_json::json;

/// A complete structured summary, large enough for any fold of these tests.
fn summary() -> String {
    let mut text = String::from(
        "## Goal\nFix the failing tests in src/lib.rs, one per turn.\n\n\
         ## Done and In Progress\nEvery turn ran `cargo test`; lib::case FAILED each time and \
         the turn fixed src/lib.rs.\n\n## Key Decisions\nFix the library, not the tests.\n\n\
         ## Next Steps\nContinue with the next failure.\n\n## Critical Context\n",
    );
    for turn in 0..10 {
        text.push_str(&format!(
            "- turn t{turn}: `cargo test` (call c{turn}) printed 240 lines of \
             `test lib::case ... FAILED`; fixed src/lib.rs.\n"
        ));
    }
    text
}

fn codex_identity() -> ProviderIdentity {
    ProviderIdentity {
        provider: OPENAI_CODEX_PROVIDER.into(),
        connection_slug: "codex-loopback".into(),
        model_id: CODEX_MODEL.into(),
    }
}

fn checkpoint_kinds(store: &Store) -> Vec<String> {
    store.agent_run_events("s").expect("ledger").into_iter().map(|r| r.kind).collect()
}

#[tokio::test]
async fn pre_turn_compacts_through_chat_completions() {
    let server = LoopbackServer::start().await;
    server.script(Reply::ok(chat_completion(&summary(), "stop")));
    let (_dir, store, runtime) = runtime_with(config(), chat_client(&server), NoNativeCompactor);
    let mut builder = history(8);
    runtime.append(builder.events().to_vec()).await.expect("append");
    start_turn(&runtime, &mut builder, "t-now").await;
    let report = runtime.evaluate_pre_turn().await.expect("evaluate").expect("over capacity");
    assert_eq!(report.trigger, Trigger::PreTurn);
    assert_eq!(report.outcome.outcome, OutcomeKind::Recorded, "{:?}", report.outcome);
    let received = server.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].path, "/v1/chat/completions");
    let stored = store.current_checkpoint("s").expect("lookup").checkpoint.expect("stored");
    assert!(matches!(&stored.projection, CheckpointProjection::Summary(s) if *s == summary()));
    assert!(runtime.project(false).await.expect("project").projection.fits);
    assert_eq!(
        checkpoint_kinds(&store),
        [agent_run_kind::CHECKPOINT_RECORDED, agent_run_kind::COMPACTION_OUTCOME]
    );
}

#[tokio::test]
async fn mid_turn_compacts_through_anthropic_messages() {
    let server = LoopbackServer::start().await;
    server.script(Reply::ok(anthropic_message(&summary(), "end_turn")));
    let (_dir, store, runtime) =
        runtime_with(config(), anthropic_client(&server), NoNativeCompactor);
    let mut builder = history(3);
    runtime.append(builder.events().to_vec()).await.expect("append");
    start_turn(&runtime, &mut builder, "t-now").await;
    assert!(runtime.evaluate_pre_turn().await.expect("evaluate").is_none(), "fits before");
    assert!(server.received().is_empty());
    append_step(&runtime, &store, 12_000).await;
    let report = runtime.evaluate_mid_turn().await.expect("evaluate").expect("over capacity");
    assert_eq!(report.trigger, Trigger::MidTurn);
    assert!(
        matches!(report.outcome.outcome, OutcomeKind::Recorded | OutcomeKind::Exhausted),
        "{:?}",
        report.outcome
    );
    assert!(report.outcome.checkpoint.is_some());
    let received = server.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].path, "/v1/messages");
    let transcript = received[0].body.to_string();
    assert!(transcript.contains("fix the failing test number 2"), "the fold was sent");
    // Active-turn folding: the settled step of the current turn is folded too.
    assert!(transcript.contains("cat big.log"), "the current turn's settled step is folded");
    let next = runtime.project(false).await.expect("project").projection;
    assert!(next.checkpoint.is_some());
    let replayed = serde_json::to_string(&next.messages).expect("json");
    assert!(replayed.contains("continue with the next failure"), "the task is replayed verbatim");
}

#[tokio::test]
async fn overflow_compacts_natively_and_the_state_replays_as_a_provider_part() {
    let server = LoopbackServer::start().await;
    let items = [compaction_item("cmp_rt", NEW_STATE)];
    server.script(Reply::sse(&responses_stream(&items), StreamEnd::Clean));
    let codex = codex_client(&server);
    let config = config_for(codex_identity(), Compactor::OpenaiCodexNative);
    let (_dir, store, runtime) = runtime_with(config, codex.clone(), codex);
    let mut builder = history(4);
    runtime.append(builder.events().to_vec()).await.expect("append");
    start_turn(&runtime, &mut builder, "t-now").await;
    let report = runtime.recover_from_overflow().await.expect("overflow");
    assert_eq!(report.trigger, Trigger::Overflow);
    assert_eq!(report.outcome.outcome, OutcomeKind::Recorded, "{:?}", report.outcome);
    let checkpoint = store.current_checkpoint("s").expect("lookup").checkpoint.expect("stored");
    assert!(matches!(
        &checkpoint.projection,
        CheckpointProjection::ProviderState(ProviderState::OpenaiCodexRemoteV2 { item_id, .. })
            if item_id == "cmp_rt"
    ));
    let received = server.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].path, "/v1/responses");
    let projection = runtime.project(false).await.expect("project").projection;
    let has_state = projection
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .any(|part| matches!(part, Part::ProviderState { .. }));
    assert!(has_state, "{:?}", projection.messages);
    // The outcome fact never holds the opaque state.
    let outcomes: Vec<String> = store
        .agent_run_events("s")
        .expect("ledger")
        .into_iter()
        .filter(|r| r.kind == agent_run_kind::COMPACTION_OUTCOME)
        .map(|r| r.payload.to_string())
        .collect();
    assert_eq!(outcomes.len(), 1);
    assert!(!outcomes[0].contains(NEW_STATE), "{}", outcomes[0]);
}

#[tokio::test]
async fn manual_compaction_falls_back_once_over_the_codex_connection() {
    let server = LoopbackServer::start().await;
    // Zero compaction items: the core tries its one text summary, over the same connection.
    server.script(Reply::sse(
        &responses_stream(&[json!({"type": "reasoning", "id": "rs_1", "summary": []})]),
        StreamEnd::Clean,
    ));
    let message = json!({"type": "message", "id": "msg_1", "role": "assistant",
        "content": [{"type": "output_text", "text": summary()}]});
    server.script(Reply::sse(&responses_stream(&[message]), StreamEnd::Clean));
    let codex = codex_client(&server);
    let config = config_for(codex_identity(), Compactor::OpenaiCodexNative);
    let (_dir, store, runtime) = runtime_with(config, codex.clone(), codex);
    let builder = history(6);
    runtime.append(builder.events().to_vec()).await.expect("append");
    let report = runtime.compact_manually(&StopSignal::new()).await.expect("manual");
    assert_eq!(report.trigger, Trigger::Manual);
    assert_eq!(report.outcome.outcome, OutcomeKind::Recorded, "{:?}", report.outcome);
    assert_eq!(report.outcome.checkpoint.as_ref().map(|c| c.schema_version()), Some(2));
    assert_eq!(server.received().len(), 2);
    assert_eq!(store.load_events("s").expect("load").len(), builder.events().len());
    assert_eq!(run_kinds(&store, &report.run_id), RECORDED_RUN);
}

#[tokio::test]
async fn stopping_a_manual_compaction_aborts_the_request_and_persists_nothing() {
    let server = LoopbackServer::start().await;
    server.script(Reply::ok(chat_completion(&summary(), "stop")).delayed(SLOW));
    server.script(Reply::ok(chat_completion(&summary(), "stop")));
    let (_dir, store, runtime) = runtime_with(config(), chat_client(&server), NoNativeCompactor);
    let mut builder = history(6);
    runtime.append(builder.events().to_vec()).await.expect("append");
    let stop = StopSignal::new();
    let stopper = {
        let stop = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            stop.stop();
        })
    };
    let started = std::time::Instant::now();
    let report = runtime.compact_manually(&stop).await.expect("manual");
    stopper.await.expect("stopper");
    assert!(started.elapsed() < Duration::from_secs(5), "the slow request was abandoned");
    assert_eq!(report.outcome.outcome, OutcomeKind::Cancelled);
    assert!(store.recorded_checkpoints("s").expect("records").is_empty());
    assert_eq!(store.load_events("s").expect("load").len(), builder.events().len());
    assert_eq!(
        checkpoint_kinds(&store),
        [agent_run_kind::RUN_STARTED, agent_run_kind::RUN_CANCELLED]
    );
    // The next turn and the next compaction are not poisoned.
    start_turn(&runtime, &mut builder, "t-after").await;
    runtime.end_turn().expect("end");
    let report = runtime.compact_manually(&StopSignal::new()).await.expect("manual again");
    assert_eq!(report.outcome.outcome, OutcomeKind::Recorded, "{:?}", report.outcome);
}

#[tokio::test]
async fn a_failed_durable_append_records_no_checkpoint() {
    let server = LoopbackServer::start().await;
    server.script(Reply::ok(chat_completion(&summary(), "stop")));
    let (_dir, store, runtime) = runtime_with(config(), chat_client(&server), NoNativeCompactor);
    let builder = history(6);
    runtime.append(builder.events().to_vec()).await.expect("append");
    // The disk refuses checkpoint events (another connection installs a failing trigger).
    let raw = rusqlite::Connection::open(store.path()).expect("raw");
    raw.execute_batch(
        "CREATE TRIGGER refuse_checkpoints BEFORE INSERT ON agent_run_events \
         WHEN NEW.kind = 'history_compact_checkpoint_recorded' \
         BEGIN SELECT RAISE(ABORT, 'injected: disk full'); END;",
    )
    .expect("inject");
    let report = runtime.compact_manually(&StopSignal::new()).await.expect("manual");
    assert_eq!(report.outcome.outcome, OutcomeKind::FailedOpen, "{:?}", report.outcome);
    assert_eq!(report.outcome.reason.as_str(), "append_failed");
    assert!(report.outcome.checkpoint.is_none());
    assert!(store.recorded_checkpoints("s").expect("records").is_empty());
    assert!(store.current_checkpoint("s").expect("lookup").checkpoint.is_none());
    let events = store.load_events("s").expect("load");
    assert_eq!(events[..builder.events().len()], builder.events()[..], "source unchanged");
}
