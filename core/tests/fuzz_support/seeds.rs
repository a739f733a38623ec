//! The generator of the committed corpus seeds: valid documents built by the core itself,
//! plus a few hand-picked edge cases.

use contextfold_core::compaction::{
    CompactInput, Compaction, Compactor, EXTRACTIVE_PRODUCER, Effect, FinishReason,
    MalformedInputCircuit, OPENAI_CODEX_PROVIDER, ProviderIdentity, Step, SummaryResponse, Trigger,
    extractive_summary,
};
use contextfold_core::projection::{ProjectInput, archive_tool_result, project, to_openai_chat};
use contextfold_core::{
    CharEstimator, HistoryCompactCheckpoint, LogBuilder, ModelFacts, RuntimeEvent,
};
use serde_json::{Value, json};

use crate::fuzz_support::corpus_root;

fn session() -> Vec<RuntimeEvent> {
    let mut log = LogBuilder::new("s");
    for turn in 0..3 {
        log.turn(&format!("t{turn}")).user(&format!("fix the failing test {turn} — héllo 世界"));
        log.response(Some(&format!("r{turn}"))).reasoning("look at src/lib.rs first");
        log.tool_call(
            &format!("c{turn}"),
            "shell",
            json!({"cmd": "cargo test", "n": [1, 2.5, -0.0]}),
        );
        log.response(None);
        log.tool_result(
            &format!("c{turn}"),
            "shell",
            json!("test lib::case ... FAILED\n".repeat(400)),
        );
        log.response(Some(&format!("r{turn}b"))).assistant("Fixed the off-by-one in parse_header.");
        log.response(None);
    }
    log.build()
}

fn checkpoint(native: bool) -> HistoryCompactCheckpoint {
    let events = session();
    let mut tx = Compaction::start(CompactInput {
        trigger: Trigger::Manual,
        events: events.as_slice().into(),
        current_turn_id: None,
        checkpoint: None,
        model: ModelFacts { context_window: Some(16_000), ..Default::default() },
        provider: ProviderIdentity {
            provider: OPENAI_CODEX_PROVIDER.into(),
            connection_slug: "c".into(),
            model_id: "m".into(),
        },
        compactor: if native { Compactor::OpenaiCodexNative } else { Compactor::TextSummary },
        new_checkpoint_id: "cp-seed".into(),
        now_ms: 1_800_000_000_000,
        provider_options: None,
        summarizer_label: Some(EXTRACTIVE_PRODUCER.into()),
        circuit: MalformedInputCircuit::new(),
        prepared: None,
    })
    .expect("valid");
    loop {
        match tx.poll().expect("order") {
            Step::Effect(Effect::Summarize(e)) => {
                let text =
                    extractive_summary(None, &events[e.fold.start..e.fold.end], e.target_tokens);
                tx.handle_summary(Ok(SummaryResponse { text, finish_reason: FinishReason::Stop }))
                    .expect("summary");
            }
            Step::Effect(Effect::CompactNatively(_)) => {
                let item =
                    json!({"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA-seed"});
                tx.handle_native(Ok(vec![item])).expect("native");
            }
            Step::Effect(Effect::AppendCheckpoint(cp)) => {
                let cp = (*cp).clone();
                tx.handle_append(Ok(())).expect("append");
                return cp;
            }
            Step::Done(o) => panic!("no checkpoint: {o:?}"),
        }
    }
}

fn write(target: &str, name: &str, bytes: &[u8]) {
    let dir = corpus_root().join(target);
    std::fs::create_dir_all(&dir).expect("corpus dir");
    std::fs::write(dir.join(name), bytes).expect("seed");
}

pub(crate) fn write_all() {
    let events = session();
    let jsonl: String =
        events.iter().map(|e| format!("{}\n", serde_json::to_string(e).expect("json"))).collect();
    write("events_jsonl", "session.jsonl", jsonl.as_bytes());
    write(
        "events_jsonl",
        "one-event.jsonl",
        format!("{}\n", serde_json::to_string(&events[2]).expect("json")).as_bytes(),
    );

    for (name, native) in [("v2.json", false), ("v3.json", true)] {
        write("checkpoint", name, checkpoint(native).to_json().as_bytes());
    }

    let projection = project(
        &ProjectInput {
            events: &events,
            current_turn_id: None,
            checkpoint: None,
            model: &ModelFacts { context_window: Some(128_000), ..Default::default() },
            provider: None,
            fail_open: false,
        },
        &CharEstimator,
    )
    .expect("projection");
    let chat = to_openai_chat(&projection.messages).expect("chat");
    write(
        "openai_chat",
        "projected.json",
        serde_json::to_string_pretty(&chat).expect("json").as_bytes(),
    );
    let handwritten = json!([
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{\"path\": \".\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.rs"},
        {"role": "assistant", "content": "done"}
    ]);
    write("openai_chat", "handwritten.json", handwritten.to_string().as_bytes());

    let anthropic = json!({"system": "s", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "tool_use", "id": "t", "name": "ls", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "a"}]}]},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]}
    ]});
    write("anthropic", "conversation.json", anthropic.to_string().as_bytes());

    let summary = extractive_summary(None, &events, 2_000);
    write("summary", "extractive.md", summary.as_bytes());
    write("summary", "open-fence.md", format!("{summary}\n```rust\nfn cut(").as_bytes());
    write("summary", "error-text.md", b"Error: rate limit exceeded, please retry");

    let item = json!({"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA-seed"});
    write(
        "native_output",
        "one.json",
        json!([{"type": "reasoning", "id": "rs_1"}, item]).to_string().as_bytes(),
    );
    write("native_output", "two.json", json!([item, item]).to_string().as_bytes());
    write("native_output", "zero.json", b"[]");

    let result = events
        .iter()
        .find(|e| matches!(e.content, contextfold_core::EventContent::ToolResult { .. }))
        .expect("a tool result");
    let prune = archive_tool_result(result, &CharEstimator).expect("archivable").expect("large");
    let uri = prune.address.to_uri();
    write("archive_address", "address.txt", uri.as_bytes());
    let inspect: Value = json!({"address": uri, "mode": "inspect", "offset": 3, "length": 40});
    let query: Value =
        json!({"address": uri, "mode": "query", "pattern": "FAILED", "maxMatches": 3});
    write("archive_read", "inspect.json", inspect.to_string().as_bytes());
    write("archive_read", "query.json", query.to_string().as_bytes());
}
