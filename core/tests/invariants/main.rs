//! The design's ten architectural invariants and tool pairing, each as its own property test
//! over generated sessions (see [`scenario`]: parallel, interrupted, failed, late and hosted
//! calls, notes, pinned and partial events, window and provider switches, manual and overflow
//! compactions, a clock going backwards) and scripted provider behaviour (good, malformed,
//! truncated, length-finished, empty and refused summaries; every provider failure class;
//! zero, one or two native compaction items; cancellation; failed and lost appends).
//!
//! The session world is the simulator's ([`world::Sim`], `core/tests/simulator/world.rs`);
//! [`driver::Driver`] feeds it the generated plan instead of its own seeded random choices.
//! Cases per property: `CONTEXTFOLD_PROPTEST_CASES` (default 128; the reliability script
//! runs 10,000).

#[allow(dead_code)]
#[path = "../simulator/invariants.rs"]
mod invariants;
#[allow(dead_code)]
#[path = "../simulator/world.rs"]
mod world;

mod driver;
mod durability;
mod observability;
mod pairing;
mod policy;
mod recovery;
mod scenario;
mod source;

/// The proptest configuration shared by the properties.
pub(crate) fn config() -> proptest::prelude::ProptestConfig {
    proptest::prelude::ProptestConfig {
        cases: scenario::cases(),
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    }
}

/// Runs one invariant as a property over `strategy` and prints how many generated cases it
/// actually checked (`INVARIANT-CASES name=<n> cases=<c> passed=<p>`, counted here, not derived
/// from the configuration), which the reliability summary adds up.
pub(crate) fn check<S: proptest::strategy::Strategy>(
    name: &str,
    strategy: S,
    property: impl Fn(S::Value) -> Result<(), proptest::test_runner::TestCaseError>,
) {
    use std::cell::Cell;
    let (cases, passed) = (Cell::new(0u64), Cell::new(0u64));
    let mut runner = proptest::test_runner::TestRunner::new(config());
    let result = runner.run(&strategy, |value| {
        cases.set(cases.get() + 1);
        let verdict = property(value);
        if verdict.is_ok() {
            passed.set(passed.get() + 1);
        }
        verdict
    });
    eprintln!("INVARIANT-CASES name={name} cases={} passed={}", cases.get(), passed.get());
    if let Err(failure) = result {
        panic!("{name}: {failure}");
    }
}

/// The generated cases are not vacuous: across a sample they record text and native
/// checkpoints, roll them, fail open, fail and lose appends, cancel, fall back from native to
/// text, compact on overflow, apply failure notes, and cover (and leave raw) every kind of
/// event the generator makes.
#[test]
fn generated_cases_exercise_every_path() {
    use contextfold_core::EventContent;
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
            if record.append_results.contains(&scenario::AppendScript::Conflict) {
                *counts.entry("append_conflict".into()).or_default() += 1;
            }
            if record.trigger == contextfold_core::compaction::Trigger::Overflow {
                *counts.entry("overflow_trigger".into()).or_default() += 1;
            }
            if record.log_after.len() > record.log_before.len() {
                *counts.entry("failure_note_applied".into()).or_default() += 1;
            }
        }
        // What the recorded checkpoints covered, and what the log carried.
        let covered = trace
            .final_ledger
            .iter()
            .filter_map(|r| r.payload["coverage"]["eventCount"].as_u64())
            .max()
            .unwrap_or(0) as usize;
        for (index, event) in trace.final_log.iter().enumerate() {
            let place = if index < covered { "covered" } else { "raw" };
            for (flag, kind) in [
                (event.partial, "partial"),
                (event.pinned, "pinned"),
                (matches!(event.content, EventContent::HostedToolCall { .. }), "hosted"),
                (matches!(event.content, EventContent::SystemNote { .. }), "system_note"),
                (matches!(event.content, EventContent::RuntimeNote { .. }), "runtime_note"),
                (
                    matches!(event.content, EventContent::ToolResult { is_error: true, .. }),
                    "error_result",
                ),
                (late_result(&trace.final_log, index), "late_result"),
                (
                    index > 0 && event.created_at_ms < trace.final_log[index - 1].created_at_ms,
                    "clock_back",
                ),
            ] {
                if flag {
                    *counts.entry(format!("{kind}_{place}")).or_default() += 1;
                }
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
        "append_conflict",
        "overflow_trigger",
        "failure_note_applied",
        "partial_covered",
        "pinned_covered",
        "pinned_raw",
        "hosted_covered",
        "system_note_covered",
        "runtime_note_covered",
        "error_result_covered",
        "late_result_covered",
        "late_result_raw",
        "clock_back_covered",
    ] {
        assert!(counts.get(key).copied().unwrap_or(0) > 0, "no case reached {key}: {counts:?}");
    }
}

/// The tool result at `index` was recorded in a later turn than its call.
fn late_result(log: &[contextfold_core::RuntimeEvent], index: usize) -> bool {
    use contextfold_core::EventContent;
    let EventContent::ToolResult { call_id, .. } = &log[index].content else { return false };
    log[..index].iter().any(|e| {
        matches!(&e.content, EventContent::ToolCall { call_id: c, .. } if c == call_id)
            && e.turn_id != log[index].turn_id
    })
}
