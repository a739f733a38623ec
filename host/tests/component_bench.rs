//! Component/native time ratio on the same vectors (goal: at most 2×). Run with
//! `cargo test -p contextfold-host --test component_bench -- --ignored --nocapture` after
//! `scripts/test-component.sh` built the component; use `--release` for a fair native side
//! (the dev profile builds the core at opt-level 1, the component is always a release build).

mod component_support;

use std::time::{Duration, Instant};

use component_support::{compactor_plugin, evaluate, vectors};
use contextfold_core::compaction::summary_validation::{FinishReason, validate_summary};
use contextfold_core::digest::prefix_digests;
use contextfold_core::projection::{ProjectInput, project};
use contextfold_core::{CharEstimator, HistoryCompactCheckpoint, ModelFacts, RuntimeEvent};
use contextfold_host::component::MemoryLedger;
use serde_json::Value;

const ROUNDS: u32 = 3;

fn events(value: &Value) -> Vec<RuntimeEvent> {
    serde_json::from_value(value.clone()).expect("events")
}

/// The native side of one op, with the same JSON parsing the component does.
fn native(op: &str, input: &Value) {
    match op {
        "project" => {
            let events = events(&input["events"]);
            let checkpoint = (!input["checkpoint"].is_null()).then(|| {
                HistoryCompactCheckpoint::from_value(input["checkpoint"].clone()).expect("cp")
            });
            let model: ModelFacts = serde_json::from_value(input["model"].clone()).expect("model");
            let provider = serde_json::from_value(input["provider"].clone()).ok();
            let request = ProjectInput {
                events: &events,
                current_turn_id: input["currentTurnId"].as_str(),
                checkpoint: checkpoint.as_ref(),
                model: &model,
                provider: provider.as_ref(),
                fail_open: input["failOpen"].as_bool().unwrap_or(false),
            };
            let projection = project(&request, &CharEstimator).expect("projects");
            std::hint::black_box(serde_json::to_string(&projection).expect("serializes"));
        }
        "validate_summary" => {
            let finish = FinishReason::parse(input["finish"].as_str().unwrap_or_default());
            let text = input["text"].as_str().unwrap_or_default();
            let fold = input["foldTokens"].as_u64().unwrap_or(0);
            let _ = std::hint::black_box(validate_summary(text, finish, fold, &CharEstimator));
        }
        other => panic!("no native bench for {other}"),
    }
}

#[test]
#[ignore = "benchmark: needs the built component"]
fn component_native_time_ratio() {
    let projection = vectors("projection.json");
    let cases: Vec<&Value> = projection["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter(|c| matches!(c["op"].as_str(), Some("project" | "validate_summary")))
        .collect();
    let digest = vectors("digest.json");
    let digest_cases = digest["cases"].as_array().expect("cases");
    let mut plugin = compactor_plugin(MemoryLedger::default());
    // Warm up the instance (first instantiation, page faults).
    let _ = plugin.digest_prefix("[]");
    let (mut native_time, mut component_time) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..ROUNDS {
        let started = Instant::now();
        for case in &cases {
            native(case["op"].as_str().expect("op"), &case["input"]);
        }
        for case in digest_cases {
            let text = serde_json::to_string(&case["events"]).expect("events");
            let parsed: Vec<RuntimeEvent> = serde_json::from_str(&text).expect("events");
            std::hint::black_box(prefix_digests(&parsed));
        }
        native_time += started.elapsed();
        let started = Instant::now();
        for case in &cases {
            let out = evaluate(&mut plugin, case["op"].as_str().expect("op"), &case["input"]);
            assert_eq!(out, case["expected"], "{}", case["name"]);
        }
        for case in digest_cases {
            let text = serde_json::to_string(&case["events"]).expect("events");
            std::hint::black_box(plugin.prefix_digests(&text).expect("digests"));
        }
        component_time += started.elapsed();
    }
    let n = cases.len() + digest_cases.len();
    let ratio = component_time.as_secs_f64() / native_time.as_secs_f64().max(1e-9);
    println!(
        "bench: {n} vectors x {ROUNDS} rounds: native {:.1} ms, component {:.1} ms",
        native_time.as_secs_f64() * 1e3,
        component_time.as_secs_f64() * 1e3
    );
    println!("component/native time ratio: {ratio:.2}x (goal: at most 2x)");
}
