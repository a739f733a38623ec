//! Cached tokens at each provider's granularity.

use contextfold_host::simulator::WireShape;
use serde_json::json;

use super::simulator_support::*;

#[tokio::test]
async fn openai_caches_whole_blocks_of_long_common_prefixes() {
    let sim = start(100_000).await;
    let system = "You are a careful coding agent.";
    let u1 = long_text("alpha", 300);
    let a1 = long_text("beta", 400);
    let u2 = long_text("gamma", 400);
    let a2 = "Done with the first part.";
    let u3 = long_text("delta", 50);
    let cached = |answer: &serde_json::Value| {
        answer["usage"]["prompt_tokens_details"]["cached_tokens"].clone()
    };

    // Under 1,024 tokens: never cached, not even when repeated.
    let short = [("system", system), ("user", u1.as_str())];
    assert!(chat_tokens(&short) < 1024);
    for _ in 0..2 {
        let (_, answer) = post_json(&sim, WireShape::OpenAiChat, &chat(&short)).await;
        assert_eq!(cached(&answer), json!(0));
    }
    // Longer, but its match with the short one is under 1,024: nothing.
    let second = [("system", system), ("user", &u1), ("assistant", &a1), ("user", &u2)];
    assert!(chat_tokens(&second) > 1024);
    let (_, answer) = post_json(&sim, WireShape::OpenAiChat, &chat(&second)).await;
    assert_eq!(cached(&answer), json!(0));
    // The previous request plus one exchange: its length, rounded down to 128.
    let third = [second[0], second[1], second[2], second[3], ("assistant", a2), ("user", &u3)];
    let (_, answer) = post_json(&sim, WireShape::OpenAiChat, &chat(&third)).await;
    let previous = chat_tokens(&second);
    assert_eq!(cached(&answer), json!(previous / 128 * 128));
    assert!(previous / 128 * 128 >= 1024);
    assert_eq!(answer["usage"]["prompt_tokens"], json!(chat_tokens(&third)));
    // A changed early message: nothing before it reaches 1,024.
    let changed_u1 = long_text("ALPHA", 300);
    let early = [third[0], ("user", &changed_u1), third[2], third[3], third[4], third[5]];
    let (_, answer) = post_json(&sim, WireShape::OpenAiChat, &chat(&early)).await;
    assert_eq!(cached(&answer), json!(0));
    // A changed last message: the prefix before its text, rounded down to 128.
    let changed_u3 = long_text("DELTA", 50);
    let late = [third[0], third[1], third[2], third[3], third[4], ("user", &changed_u3)];
    let (_, answer) = post_json(&sim, WireShape::OpenAiChat, &chat(&late)).await;
    let before = chat_tokens(&third) - o200k(&u3);
    assert_eq!(cached(&answer), json!(before / 128 * 128));
    // Another `prompt_cache_key` is another cache.
    let mut keyed = chat(&third);
    keyed["prompt_cache_key"] = json!("session-2");
    let (_, answer) = post_json(&sim, WireShape::OpenAiChat, &keyed).await;
    assert_eq!(cached(&answer), json!(0));
    let (_, answer) = post_json(&sim, WireShape::OpenAiChat, &keyed).await;
    assert_eq!(cached(&answer), json!(chat_tokens(&third) / 128 * 128));

    // The Responses API caches by the same rule and reports it in its own field.
    let body = json!({"model": "gpt-5", "input": [
        {"role": "user", "content": u1}, {"role": "assistant", "content": a1}, {"role": "user", "content": u2}]});
    post_json(&sim, WireShape::OpenAiResponses, &body).await;
    let (_, answer) = post_json(&sim, WireShape::OpenAiResponses, &body).await;
    let total = answer["usage"]["input_tokens"].as_u64().expect("count");
    assert_eq!(answer["usage"]["input_tokens_details"]["cached_tokens"], json!(total / 128 * 128));
    let records = sim.records();
    assert_eq!(records.last().map(|r| r.cached_tokens), Some(total / 128 * 128));
}

#[tokio::test]
async fn anthropic_reads_and_writes_at_breakpoints() {
    let sim = start(200_000).await;
    let system_text = long_text("rule", 700);
    let system =
        json!([{"type": "text", "text": system_text, "cache_control": {"type": "ephemeral"}}]);
    let request = |messages: serde_json::Value| json!({"model": "claude-sonnet-4-5", "max_tokens": 512, "system": system, "messages": messages});
    let system_prefix = message("system", &system_text);
    assert!(system_prefix >= 1024);
    let usage = |answer: &serde_json::Value| {
        let u = &answer["usage"];
        (
            u["cache_read_input_tokens"].clone(),
            u["cache_creation_input_tokens"].clone(),
            u["input_tokens"].clone(),
        )
    };

    // The first request writes the system prefix.
    let first = request(json!([{"role": "user", "content": "Question one?"}]));
    let (_, answer) = post_json(&sim, WireShape::AnthropicMessages, &first).await;
    let rest = message("user", "Question one?");
    assert_eq!(usage(&answer), (json!(0), json!(system_prefix), json!(rest)));
    // Another question reads it.
    let second = request(json!([{"role": "user", "content": "Question two?"}]));
    let (_, answer) = post_json(&sim, WireShape::AnthropicMessages, &second).await;
    assert_eq!(
        usage(&answer),
        (json!(system_prefix), json!(0), json!(message("user", "Question two?")))
    );
    // A breakpoint on a long user block: read the system, write up to the new breakpoint.
    let document = long_text("page", 600);
    let third = request(json!([{"role": "user", "content": [
        {"type": "text", "text": document, "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Summarize it."}]}]));
    let (_, answer) = post_json(&sim, WireShape::AnthropicMessages, &third).await;
    let written = 3 + o200k("user") + o200k(&document);
    assert_eq!(
        usage(&answer),
        (json!(system_prefix), json!(written), json!(o200k("Summarize it.")))
    );
    let record = sim.records().pop().expect("a record");
    assert_eq!((record.cached_tokens, record.cache_write_tokens), (system_prefix, written));
    // A breakpoint under the minimum writes nothing.
    let small = json!({"model": "claude-sonnet-4-5", "max_tokens": 512, "messages": [{"role": "user",
        "content": [{"type": "text", "text": "short", "cache_control": {"type": "ephemeral"}}]}]});
    let (_, answer) = post_json(&sim, WireShape::AnthropicMessages, &small).await;
    assert_eq!(usage(&answer), (json!(0), json!(0), json!(message("user", "short"))));
}
