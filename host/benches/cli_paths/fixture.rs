//! The fixture of the whole-process bench: a long session built from the real agent
//! trajectories of `tests/trajectories/` (four agents, MIT), copied until it reaches the target
//! number of events, with checkpoints recorded through the store along the way.
//!
//! Each copy of each trajectory becomes one turn of session `bench` (turn, run and event ids
//! made unique per copy, `seq` renumbered; call and response ids kept, so they repeat across
//! copies as they do in real logs), until the session has at least the target number of
//! events. After the first turn that crosses each of `checkpoints - 1` evenly spaced event
//! counts a checkpoint over everything so far is appended with `Store::append_checkpoint`, each
//! naming the previous one; the last covers all but the final turn, so `project` replays it
//! plus a short raw tail.

use std::path::Path;

use contextfold_core::RuntimeEvent;
use contextfold_host::storage::Store;

use crate::support::{CoverageBuilder, SESSION};

/// What was written.
pub(crate) struct Fixture {
    pub(crate) events: u64,
    pub(crate) turns: u64,
    pub(crate) checkpoints: u64,
    /// Bytes of the export (one event JSON per line).
    pub(crate) export_bytes: u64,
}

fn trajectories() -> Vec<Vec<RuntimeEvent>> {
    contextfold_conformance::trajectories::all().into_iter().map(|t| t.events).collect()
}

/// Writes the fixture into a new store at `db` and its export to `export`.
pub(crate) fn write(db: &Path, export: &Path, target_events: u64, checkpoints: u64) -> Fixture {
    let sources = trajectories();
    // The turns, in order: copies of every trajectory until the target is reached.
    let mut plan: Vec<(usize, usize)> = Vec::new();
    let mut total = 0u64;
    'copies: for copy in 0.. {
        for (file, source) in sources.iter().enumerate() {
            if total >= target_events {
                break 'copies;
            }
            plan.push((copy, file));
            total += source.len() as u64;
        }
    }
    let final_turn_len = plan.last().map_or(0, |&(_, file)| sources[file].len() as u64);
    let store = Store::open(db).expect("a new store");
    let mut out = std::io::BufWriter::new(std::fs::File::create(export).expect("export file"));
    let mut coverage = CoverageBuilder::default();
    let (mut seq, mut turns, mut recorded) = (0u64, 0u64, 0u64);
    let mut previous: Option<String> = None;
    let step = (total / checkpoints).max(1);
    for &(copy, file) in &plan {
        let turn = format!("c{copy}-f{file}");
        let events: Vec<RuntimeEvent> = sources[file]
            .iter()
            .map(|event| {
                seq += 1;
                let mut event = event.clone();
                event.session_id = SESSION.into();
                event.seq = seq;
                event.runtime_event_id = format!("{turn}-{}", event.runtime_event_id);
                event.turn_id = turn.clone();
                event.run_id = format!("run-{turn}");
                event
            })
            .collect();
        store.append_events(SESSION, &events).expect("append");
        for event in &events {
            coverage.push(event);
            serde_json::to_writer(&mut out, event).expect("export line");
            std::io::Write::write_all(&mut out, b"\n").expect("export line");
        }
        turns += 1;
        let before_final_turn = seq == total - final_turn_len;
        let crossed = seq >= step * (recorded + 1) && recorded + 1 < checkpoints;
        if crossed || before_final_turn {
            let id = format!("cp-{recorded:03}");
            let checkpoint = coverage.checkpoint(&id, previous.as_deref());
            store
                .append_checkpoint(&format!("ev-{id}"), "run-bench", seq, &checkpoint)
                .expect("a valid successor");
            previous = Some(id);
            recorded += 1;
        }
    }
    std::io::Write::flush(&mut out).expect("export flushed");
    let export_bytes = std::fs::metadata(export).map(|m| m.len()).unwrap_or(0);
    Fixture { events: seq, turns, checkpoints: recorded, export_bytes }
}
