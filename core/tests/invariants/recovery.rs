//! Invariant 8 (the projection is rebuildable from the canonical ledger).

use contextfold_core::checkpoint::{RecordedCheckpointEvent, select_recovered_checkpoint};
use proptest::prelude::*;
use serde_json::json;

use crate::scenario::{Driver, scenario};

/// Invariant 8: The current checkpoint is a function of the AgentRun ledger alone: recovery from the
/// ledger in any order, with damaged records (unparseable, foreign session, truncated
/// JSON) mixed in, selects the same checkpoint the live projection used.
#[test]
fn invariant_08_projection_is_rebuildable() {
    crate::check(
        "invariant_08_projection_is_rebuildable",
        (scenario(), any::<u64>()),
        |(case, shuffle)| {
            let trace = Driver::run(case);
            for record in &trace.compactions {
                let live = select_recovered_checkpoint("sim", &record.ledger_after).selected;
                if let Some(cp) = &record.outcome.checkpoint {
                    prop_assert_eq!(
                        live.as_ref(),
                        Some(cp),
                        "recovery disagrees with the accepted checkpoint"
                    );
                }
                let mut damaged = record.ledger_after.clone();
                damaged.push(RecordedCheckpointEvent {
                    event_id: "junk-1".into(),
                    session_id: "sim".into(),
                    recorded_at_ms: 1,
                    payload: json!({"checkpointId": "junk", "coverage": "truncated"}),
                });
                if let Some(first) = record.ledger_after.first() {
                    let mut foreign = first.clone();
                    foreign.event_id = "junk-2".into();
                    foreign.payload["sessionId"] = json!("another-session");
                    foreign.payload["coverage"]["eventCount"] = json!(1_000_000);
                    damaged.push(foreign);
                }
                let mut rotated = damaged.clone();
                let n = rotated.len().max(1);
                rotated.rotate_left(shuffle as usize % n);
                let recovery = select_recovered_checkpoint("sim", &rotated);
                prop_assert_eq!(
                    &recovery.selected,
                    &live,
                    "damaged or reordered ledger changed the tip"
                );
                prop_assert!(
                    !recovery.diagnostics().is_empty(),
                    "skipped records left no diagnostic"
                );
            }
            Ok(())
        },
    )
}
