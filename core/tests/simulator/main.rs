//! Deterministic simulation of whole sessions through many compactions.
//!
//! A seeded session generator appends turns (large tool outputs, parallel batches, interrupted
//! calls, model switches); a scripted summarizer, native compactor and in-memory ledger answer
//! the transaction's effects with injected faults; after every step the design's ten
//! invariants are checked. Seeds: `CONTEXTFOLD_SIM_SEED=<n>` replays one seed, otherwise a
//! fixed list runs; `CONTEXTFOLD_SIM_STEPS` sets the steps per session.

mod invariants;
mod world;

use world::{Sim, SimConfig};

fn seeds() -> Vec<u64> {
    match std::env::var("CONTEXTFOLD_SIM_SEED") {
        Ok(seed) => vec![seed.parse().expect("CONTEXTFOLD_SIM_SEED must be a number")],
        Err(_) => (1..=12).collect(),
    }
}

fn steps() -> usize {
    std::env::var("CONTEXTFOLD_SIM_STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(50)
}

#[test]
fn text_summary_sessions_keep_every_invariant() {
    let mut totals = world::Stats::default();
    for seed in seeds() {
        let mut sim = Sim::new(seed, SimConfig { native: false });
        sim.run(steps());
        totals.add(&sim.stats);
    }
    eprintln!("text-summary simulation: {totals}");
    assert!(totals.recorded > 0, "no checkpoint was ever recorded: {totals}");
    assert!(totals.failed_open + totals.exhausted > 0, "no failure path was exercised: {totals}");
    assert!(totals.rolling > 0, "no rolling update happened: {totals}");
}

#[test]
fn native_sessions_keep_every_invariant() {
    let mut totals = world::Stats::default();
    for seed in seeds() {
        let mut sim = Sim::new(seed.wrapping_mul(7919), SimConfig { native: true });
        sim.run(steps());
        totals.add(&sim.stats);
    }
    eprintln!("native simulation: {totals}");
    assert!(totals.recorded_v3 > 0, "no native checkpoint was recorded: {totals}");
    assert!(totals.native_fallbacks > 0, "the text fallback never ran: {totals}");
}

mod props {
    use super::world::{Sim, SimConfig};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        #[test]
        fn any_seed_keeps_every_invariant(seed in any::<u64>(), native in any::<bool>()) {
            let mut sim = Sim::new(seed, SimConfig { native });
            sim.run(25);
        }
    }
}
