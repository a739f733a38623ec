//! Replays every shared vector (`tests/vectors/*.json`) through the component in wasmtime and
//! prints `component (wasmtime): N/N vectors passed`. Any difference from the native expectation fails.
//! Needs the built component: run `scripts/test-component.sh`.

use crate::component_support;

use component_support::{compactor_plugin, evaluate, vectors};
use contextfold_host::component::MemoryLedger;
use serde_json::Value;

#[test]
#[ignore = "needs the built component: scripts/test-component.sh runs it"]
fn component_replays_every_vector() {
    let mut plugin = compactor_plugin(MemoryLedger::default());
    let mut total = 0usize;
    let mut failed = Vec::new();
    let digest = vectors("digest.json");
    for case in digest["cases"].as_array().expect("cases") {
        total += 1;
        let events = serde_json::to_string(&case["events"]).expect("events");
        let digests = plugin.prefix_digests(&events).expect("prefix-digests");
        if Value::from(digests) != case["prefixDigests"] {
            failed.push(format!("digest {}", case["name"]));
        }
    }
    for file in ["projection.json", "compaction.json"] {
        for case in vectors(file)["cases"].as_array().expect("cases") {
            total += 1;
            let op = case["op"].as_str().expect("op");
            let got = evaluate(&mut plugin, op, &case["input"]);
            if got != case["expected"] {
                failed.push(format!("{op} {}", case["name"]));
                if failed.len() == 1 {
                    eprintln!(
                        "first mismatch {}:\n got {got}\n expected {}",
                        case["name"], case["expected"]
                    );
                }
            }
        }
    }
    println!("component (wasmtime): {}/{total} vectors passed", total - failed.len());
    assert_eq!(plugin.traps(), 0, "no vector may trap the plugin");
    assert!(total > 200, "only {total} vectors");
    assert!(failed.is_empty(), "component mismatches: {failed:?}");
}
