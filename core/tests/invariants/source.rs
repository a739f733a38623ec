//! Invariants 1 (source immutability) and 2 (projection coverage).

use contextfold_core::HistoryCompactCheckpoint;
use contextfold_core::checkpoint::match_checkpoint_prefix;
use contextfold_core::digest::digest_prefix;
use proptest::prelude::*;

use crate::scenario::{Driver, scenario};

/// Invariant 1: Compaction never modifies or deletes a canonical event: the log after every compaction
/// (with what its outcome handed back applied, as a host applies it) is the log before it
/// plus at most its failure note, and every earlier log is a byte-identical prefix of the
/// final one with the same digest.
#[test]
fn invariant_01_source_immutability() {
    crate::check("invariant_01_source_immutability", scenario(), |case| {
        let trace = Driver::run(case);
        for record in &trace.compactions {
            // The only event an outcome hands back is its failure note, appended after the log.
            let n = record.log_before.len();
            prop_assert_eq!(
                &record.log_after[..n],
                &record.log_before[..],
                "compaction changed the log"
            );
            let note = record.outcome.failure_note.as_ref();
            prop_assert_eq!(record.log_after.len(), n + usize::from(note.is_some()));
            if let Some(note) = note {
                prop_assert_eq!(&record.log_after[n].content, note);
            }
            prop_assert!(trace.final_log.len() >= n);
            prop_assert_eq!(&trace.final_log[..n], &record.log_before[..]);
            prop_assert_eq!(
                digest_prefix(&trace.final_log[..n]),
                digest_prefix(&record.log_before)
            );
        }
        Ok(())
    })
}

/// Invariant 2: Every recorded checkpoint binds to an ordered prefix of the log: its event count,
/// its through boundary (the last covered event's ids) and the SHA-256 digest of that
/// prefix; and it still matches the final log.
#[test]
fn invariant_02_projection_coverage() {
    crate::check("invariant_02_projection_coverage", scenario(), |case| {
        let trace = Driver::run(case);
        for record in &trace.compactions {
            for recorded in record.ledger_after.iter().skip(record.ledger_before.len()) {
                let cp = HistoryCompactCheckpoint::from_value(recorded.payload.clone())
                    .expect("recorded checkpoints are schema-valid");
                let n = cp.coverage.event_count as usize;
                prop_assert!(n > 0 && n <= record.log_before.len(), "coverage past the log");
                let last = &record.log_before[n - 1];
                prop_assert_eq!(&cp.coverage.through.runtime_event_id, &last.runtime_event_id);
                prop_assert_eq!(&cp.coverage.through.turn_id, &last.turn_id);
                prop_assert_eq!(&cp.coverage.through.run_id, &last.run_id);
                prop_assert_eq!(
                    &cp.coverage.source_digest,
                    &digest_prefix(&record.log_before[..n])
                );
            }
        }
        for recorded in &trace.final_ledger {
            let cp = HistoryCompactCheckpoint::from_value(recorded.payload.clone()).expect("valid");
            prop_assert!(
                match_checkpoint_prefix(&cp, &trace.final_log).is_ok(),
                "{} lost its prefix",
                cp.checkpoint_id
            );
        }
        Ok(())
    })
}
