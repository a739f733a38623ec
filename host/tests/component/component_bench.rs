//! Component/native time ratio on the same golden vectors (goal: at most 2×).
//!
//! Both sides replay every vector of `tests/vectors/` JSON in, JSON out: the native side with
//! the conformance reference (`contextfold_conformance::ops::evaluate`, digests with
//! `prefix_digests`), the component side through the real component in wasmtime
//! (`component_support::evaluate`, the mapping the conformance test uses). Each round replays
//! all vectors on both sides and checks the component's answers; one warm-up round is not
//! timed. Prints per-op times and `component/native ratio: X.XX (goal <= 2.0; ...)`: the median
//! over the rounds of each round's component/native ratio.
//!
//! Run it with `bench/component.sh` (builds the component, then runs this ignored test with
//! the core optimized like a release build).

use crate::component_support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use component_support::{compactor_plugin, evaluate, vectors};
use contextfold_core::RuntimeEvent;
use contextfold_core::digest::prefix_digests;
use contextfold_host::component::{MemoryLedger, Plugin};
use serde_json::Value;

/// Timed rounds (after one warm-up round).
const ROUNDS: u32 = 9;

/// One vector: its op (`digest` for digest vectors), input and expected output.
struct Vector {
    op: String,
    input: Value,
    expected: Value,
}

fn all_vectors() -> Vec<Vector> {
    let mut all: Vec<Vector> = vectors("digest.json")["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|case| Vector {
            op: "digest".into(),
            input: case["events"].clone(),
            expected: case["prefixDigests"].clone(),
        })
        .collect();
    for file in ["projection.json", "compaction.json"] {
        for case in vectors(file)["cases"].as_array().expect("cases") {
            all.push(Vector {
                op: case["op"].as_str().expect("op").into(),
                input: case["input"].clone(),
                expected: case["expected"].clone(),
            });
        }
    }
    all
}

fn native(vector: &Vector) -> Value {
    if vector.op == "digest" {
        let events: Vec<RuntimeEvent> =
            serde_json::from_value(vector.input.clone()).expect("events");
        return Value::from(prefix_digests(&events));
    }
    contextfold_conformance::ops::evaluate(&vector.op, &vector.input)
}

fn component(plugin: &mut Plugin, vector: &Vector) -> Value {
    if vector.op == "digest" {
        let text = serde_json::to_string(&vector.input).expect("events");
        return Value::from(plugin.prefix_digests(&text).expect("prefix-digests"));
    }
    evaluate(plugin, &vector.op, &vector.input)
}

/// Replays every vector once on one side, adding the time spent per op to `times`; returns
/// the round's total.
fn round(
    vectors: &[Vector],
    mut run: impl FnMut(&Vector) -> Value,
    times: &mut BTreeMap<String, Duration>,
) -> Duration {
    let mut total = Duration::ZERO;
    for vector in vectors {
        let started = Instant::now();
        let got = std::hint::black_box(run(vector));
        let elapsed = started.elapsed();
        *times.entry(vector.op.clone()).or_default() += elapsed;
        total += elapsed;
        assert_eq!(got, vector.expected, "{} vector differs", vector.op);
    }
    total
}

#[test]
#[ignore = "benchmark: run bench/component.sh"]
fn component_native_time_ratio() {
    let vectors = all_vectors();
    let mut plugin = compactor_plugin(MemoryLedger::default());
    let (mut warm_native, mut warm_component) = (BTreeMap::new(), BTreeMap::new());
    round(&vectors, native, &mut warm_native);
    round(&vectors, |v| component(&mut plugin, v), &mut warm_component);

    // Paired rounds: each round's ratio compares the two sides under the same conditions (a
    // shared VM's neighbours change between rounds); the median of the rounds is the result.
    let (mut native_times, mut component_times) = (BTreeMap::new(), BTreeMap::new());
    let mut round_ratios = Vec::new();
    for _ in 0..ROUNDS {
        let native_round = round(&vectors, native, &mut native_times);
        let component_round = round(&vectors, |v| component(&mut plugin, v), &mut component_times);
        round_ratios.push(component_round.as_secs_f64() / native_round.as_secs_f64().max(1e-9));
    }
    round_ratios.sort_by(f64::total_cmp);
    assert_eq!(plugin.traps(), 0, "the benchmark trapped the plugin");

    let ms = |d: &Duration| d.as_secs_f64() * 1e3 / f64::from(ROUNDS);
    println!("bench: {} vectors, {ROUNDS} rounds; mean ms per round:", vectors.len());
    for (op, native_time) in &native_times {
        let component_time = &component_times[op];
        println!(
            "  {op:<20} native {:>8.2}  component {:>8.2}  ratio {:.2}",
            ms(native_time),
            ms(component_time),
            component_time.as_secs_f64() / native_time.as_secs_f64().max(1e-9)
        );
    }
    let native_total: Duration = native_times.values().sum();
    let component_total: Duration = component_times.values().sum();
    println!(
        "  {:<20} native {:>8.2}  component {:>8.2}",
        "total",
        ms(&native_total),
        ms(&component_total)
    );
    let of_sums = component_total.as_secs_f64() / native_total.as_secs_f64().max(1e-9);
    let median = round_ratios[round_ratios.len() / 2];
    let (low, high) = (round_ratios[0], round_ratios[round_ratios.len() - 1]);
    println!(
        "component/native ratio: {median:.2} (goal <= 2.0; median of {ROUNDS} paired rounds, \
         min {low:.2}, max {high:.2}; ratio of the totals {of_sums:.2})"
    );
}
