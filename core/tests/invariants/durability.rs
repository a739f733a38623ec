//! Invariants 3 (no durability, no replacement), 4 (monotonic high water) and 7 (no false
//! coverage).

use contextfold_core::HistoryCompactCheckpoint;
use contextfold_core::checkpoint::{safe_boundaries, select_recovered_checkpoint};
use contextfold_core::compaction::OutcomeKind;
use proptest::prelude::*;

use crate::scenario::{AppendScript, Driver, scenario};

fn parse(payload: &serde_json::Value) -> HistoryCompactCheckpoint {
    HistoryCompactCheckpoint::from_value(payload.clone()).expect("recorded checkpoints are valid")
}

/// Invariant 3: A checkpoint replaces history only after its durable append returned: an outcome
/// carries a checkpoint only if that exact checkpoint was appended; a failed append leaves
/// the ledger as it was; the tip a host takes from the outcomes is the one its ledger
/// recovers; and no projection ever replays a checkpoint missing from the ledger.
#[test]
fn invariant_03_no_durability_no_replacement() {
    crate::check("invariant_03_no_durability_no_replacement", scenario(), |case| {
        let trace = Driver::run(case);
        for record in &trace.compactions {
            let durable: Vec<_> = record
                .offered
                .iter()
                .zip(&record.append_results)
                .filter(|(_, r)| **r == AppendScript::Durable)
                .map(|(c, _)| c)
                .collect();
            match &record.outcome.checkpoint {
                Some(cp) => {
                    prop_assert!(
                        durable.contains(&cp),
                        "outcome checkpoint was never made durable"
                    );
                    prop_assert!(matches!(
                        record.outcome.outcome,
                        OutcomeKind::Recorded | OutcomeKind::Exhausted
                    ));
                }
                None => prop_assert_ne!(record.outcome.outcome, OutcomeKind::Recorded),
            }
            prop_assert_eq!(record.ledger_after.len(), record.ledger_before.len() + durable.len());
        }
        for p in &trace.projections {
            // The tip the driver holds in memory (from the outcomes) is the one the ledger recovers.
            prop_assert_eq!(&p.checkpoint, &select_recovered_checkpoint("sim", &p.ledger).selected);
            if let Some(replayed) = &p.projection.checkpoint {
                prop_assert!(
                    p.ledger
                        .iter()
                        .any(|r| r.payload["checkpointId"] == replayed.checkpoint_id.as_str()),
                    "replayed {} which is not in the ledger",
                    replayed.checkpoint_id
                );
            }
        }
        Ok(())
    })
}

/// Invariant 4: High water only moves forward: each new tip covers at least as many events as the
/// previous tip and names it as its predecessor; an equal-coverage rewrite keeps the same
/// digest and boundary.
#[test]
fn invariant_04_monotonic_high_water() {
    crate::check("invariant_04_monotonic_high_water", scenario(), |case| {
        let trace = Driver::run(case);
        let mut tip: Option<HistoryCompactCheckpoint> = None;
        for recorded in &trace.final_ledger {
            let cp = parse(&recorded.payload);
            if let Some(prev) = &tip {
                prop_assert!(
                    cp.coverage.event_count >= prev.coverage.event_count,
                    "high water regressed"
                );
                prop_assert_eq!(
                    cp.previous_checkpoint_id.as_deref(),
                    Some(prev.checkpoint_id.as_str())
                );
                if cp.coverage.event_count == prev.coverage.event_count {
                    prop_assert_eq!(&cp.coverage.source_digest, &prev.coverage.source_digest);
                    prop_assert_eq!(&cp.coverage.through, &prev.coverage.through);
                }
            } else {
                prop_assert!(cp.previous_checkpoint_id.is_none());
            }
            tip = Some(cp);
        }
        prop_assert_eq!(select_recovered_checkpoint("sim", &trace.final_ledger).selected, tip);
        Ok(())
    })
}

/// Invariant 7: A failed compaction never moves coverage, and every checkpoint covers exactly a safe
/// prefix of the log it was made from: it ends at a turn end or after a settled step (of
/// the active turn too), splits no call/result pair or response batch and passes no live
/// event; so it never covers events that did not exist when it was recorded.
#[test]
fn invariant_07_no_false_coverage() {
    crate::check("invariant_07_no_false_coverage", scenario(), |case| {
        let trace = Driver::run(case);
        for record in &trace.compactions {
            let after = select_recovered_checkpoint("sim", &record.ledger_after).selected;
            if record.outcome.checkpoint.is_none() {
                prop_assert_eq!(&after, &record.previous, "coverage moved on a failed compaction");
            }
            let cuts = safe_boundaries(&record.log_before, record.current_turn.as_deref())
                .expect("current turn is a suffix");
            for cp in record.offered.iter().chain(after.iter()) {
                let covered = cp.coverage.event_count as usize;
                prop_assert!(
                    cuts.contains(&covered) || record.previous.as_ref() == Some(cp),
                    "checkpoint covers {} events, not a safe cut of {:?}",
                    covered,
                    cuts
                );
            }
        }
        Ok(())
    })
}
