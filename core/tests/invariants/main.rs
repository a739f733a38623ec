//! The design's ten architectural invariants, each as its own property test over generated
//! sessions (turns, parallel tool calls, interrupted calls, large results, model-window and
//! provider switches, manual compactions) and scripted provider behaviour (good, malformed,
//! truncated, length-finished, empty and refused summaries; every provider failure class;
//! zero, one or two native compaction items; cancellation; failed durable appends).
//!
//! The session world is the simulator's ([`world::Sim`], `core/tests/simulator/world.rs`);
//! [`scenario::Driver`] feeds it the generated plan instead of its own seeded random choices.
//! Cases per property: `CONTEXTFOLD_PROPTEST_CASES` (default 128; the reliability script
//! runs 10,000).

#[allow(dead_code)]
#[path = "../simulator/invariants.rs"]
mod invariants;
#[allow(dead_code)]
#[path = "../simulator/world.rs"]
mod world;

mod durability;
mod observability;
mod policy;
mod recovery;
mod scenario;
mod source;

/// The proptest configuration shared by the ten properties.
pub(crate) fn config() -> proptest::prelude::ProptestConfig {
    proptest::prelude::ProptestConfig {
        cases: scenario::cases(),
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    }
}

/// The generated cases are not vacuous: across a sample they record text and native
/// checkpoints, roll them, fail open, fail appends, cancel, and fall back from native to text.
#[test]
fn generated_cases_exercise_every_path() {
    use contextfold_core::compaction::OutcomeKind;
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::TestRunner;
    use std::collections::BTreeMap;

    let mut runner = TestRunner::deterministic();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for _ in 0..64 {
        let case = scenario::scenario().new_tree(&mut runner).expect("strategy").current();
        let trace = scenario::Driver::run(case);
        *counts.entry("projections".into()).or_default() += trace.projections.len() as u64;
        for record in &trace.compactions {
            let o = &record.outcome;
            *counts.entry(format!("{:?}", o.outcome)).or_default() += 1;
            if let Some(cp) = &o.checkpoint {
                *counts.entry(format!("v{}", cp.schema_version())).or_default() += 1;
                if cp.previous_checkpoint_id.is_some() {
                    *counts.entry("rolling".into()).or_default() += 1;
                }
            }
            if record.append_results.contains(&scenario::AppendScript::Fails) {
                *counts.entry("append_failed".into()).or_default() += 1;
            }
            if o.attempts.len() > 1 {
                *counts.entry("native_fallback".into()).or_default() += 1;
            }
            if o.outcome == OutcomeKind::Cancelled {
                *counts.entry("cancelled".into()).or_default() += 1;
            }
        }
    }
    eprintln!("generated-case coverage: {counts:?}");
    for key in [
        "Recorded",
        "FailedOpen",
        "v2",
        "v3",
        "rolling",
        "append_failed",
        "native_fallback",
        "cancelled",
    ] {
        assert!(counts.get(key).copied().unwrap_or(0) > 0, "no case reached {key}: {counts:?}");
    }
}
