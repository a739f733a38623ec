//! Native half of `pkg-tests/bench/digest-bench.js`: digests every case of
//! `tests/vectors/digest.json` repeatedly and prints `digest_ms=<ms per pass>`.
//!
//! `cargo build --release -p contextfold-wasm --example native_digest_bench`

use std::time::{Duration, Instant};

use contextfold_core::RuntimeEvent;
use contextfold_core::digest::digest_prefix;
use serde_json::Value;

fn main() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/vectors/digest.json");
    let text = std::fs::read_to_string(path).expect("vectors readable");
    let vectors: Value = serde_json::from_str(&text).expect("vectors are JSON");
    let cases: Vec<Vec<RuntimeEvent>> = vectors["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|case| {
            case["events"]
                .as_array()
                .expect("events")
                .iter()
                .map(|e| RuntimeEvent::from_value(e.clone()).expect("valid event"))
                .collect()
        })
        .collect();
    let pass = || cases.iter().map(|events| digest_prefix(events).len()).sum::<usize>();
    let mut runs = 0u32;
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(400) {
        std::hint::black_box(pass());
        runs += 1;
    }
    let ms = start.elapsed().as_secs_f64() * 1000.0 / f64::from(runs);
    println!("digest_ms={ms:.4}");
}
