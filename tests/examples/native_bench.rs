//! Native half of `pkg-tests/bench/run.mjs`: times the core on the same generated session the
//! Node benchmark uses, and prints one `key=value` line per figure.
//!
//! `cargo run --release -p contextfold-conformance --example native_bench -- SESSION.jsonl CONTEXT_WINDOW`
//!
//! Parsing is a UTF-8 check, then the core's JSONL parser (`RuntimeEvent::parse_jsonl_lines`),
//! line by line: the code Node's `digestPrefix(bytes)` runs after its own UTF-8 check.
//!
//! - `parse_digest_ms`: JSONL bytes → events → source digest (what `digestPrefix` does in Node);
//! - `digest_ms`: the digest alone, over parsed events;
//! - `parse_project_ms`: JSONL bytes → events → projection → AI SDK `ModelMessage[]` as JSON text
//!   (what `project({ format: "ai-sdk" })` does in Node);
//! - `project_ms`: projection and mapping alone; `core_project_ms`: the neutral projection alone;
//! - `digest=` and `messages=`: the results, which the Node side checks against its own.

use std::time::{Duration, Instant};

use contextfold_core::RuntimeEvent;
use contextfold_core::binding::into_model_messages;
use contextfold_core::budget::{CharEstimator, ModelFacts};
use contextfold_core::digest::digest_prefix;
use contextfold_core::projection::{ProjectInput, project};

/// Milliseconds per run of `f`, after one warm-up run, over at least `min` (and 3 runs).
fn time_ms<T>(min: Duration, mut f: impl FnMut() -> T) -> f64 {
    std::hint::black_box(f());
    let start = Instant::now();
    let mut runs = 0u32;
    while start.elapsed() < min || runs < 3 {
        std::hint::black_box(f());
        runs += 1;
    }
    start.elapsed().as_secs_f64() * 1000.0 / f64::from(runs)
}

fn parse(bytes: &[u8]) -> Vec<RuntimeEvent> {
    let text = std::str::from_utf8(bytes).expect("UTF-8 JSONL");
    RuntimeEvent::parse_jsonl_lines(text).expect("valid JSONL events").0
}

/// The projection as AI SDK messages: their count and their JSON text.
fn project_to_json(events: &[RuntimeEvent], model: &ModelFacts) -> (usize, String) {
    let input = ProjectInput {
        events,
        current_turn_id: None,
        checkpoint: None,
        model,
        provider: None,
        fail_open: false,
    };
    let projection = project(&input, &CharEstimator).expect("projects");
    let messages = into_model_messages(projection.messages);
    (messages.len(), serde_json::to_string(&messages).expect("serializable"))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: native_bench SESSION.jsonl CONTEXT_WINDOW");
    let window: u64 = args.next().and_then(|w| w.parse().ok()).expect("a context window");
    let bytes = std::fs::read(&path).expect("session readable");
    let events = parse(&bytes);
    let model = ModelFacts { context_window: Some(window), ..ModelFacts::default() };
    let min = Duration::from_millis(1500);

    println!("events={}", events.len());
    println!("digest={}", digest_prefix(&events));
    println!("messages={}", project_to_json(&events, &model).0);
    println!("parse_digest_ms={:.3}", time_ms(min, || digest_prefix(&parse(&bytes))));
    println!("digest_ms={:.3}", time_ms(min, || digest_prefix(&events)));
    println!(
        "parse_project_ms={:.3}",
        time_ms(min, || project_to_json(&parse(&bytes), &model).1.len())
    );
    println!("project_ms={:.3}", time_ms(min, || project_to_json(&events, &model).1.len()));
    let input = ProjectInput {
        events: &events,
        current_turn_id: None,
        checkpoint: None,
        model: &model,
        provider: None,
        fail_open: false,
    };
    println!(
        "core_project_ms={:.3}",
        time_ms(min, || project(&input, &CharEstimator).expect("projects").messages.len())
    );
}
