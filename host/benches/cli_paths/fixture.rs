//! The fixture of the whole-process bench: a long session built from the real agent
//! trajectories of `tests/trajectories/` (four agents, MIT), copied until it reaches the target
//! number of events, with checkpoints recorded through the store along the way.
//!
//! Each copy of each trajectory becomes one turn of session `bench` (turn, run and event ids
//! made unique per copy, `seq` renumbered; call and response ids kept, so they repeat across
//! copies as they do in real logs), until the session has at least the target number of
//! events. After the first turn that crosses each of `checkpoints - 1` evenly spaced event
//! counts a checkpoint over everything so far is appended with `append_checkpoint`, each
//! naming the previous one; the last covers all but the final turn, so `project` replays it
//! plus a short raw tail. [`build`] yields these writes in order for any backend (the
//! PostgreSQL bench `ledger_pg.rs` appends them through the `Ledger` trait); [`write`] puts
//! them into a SQLite [`Store`] with the export beside it.

use std::path::Path;

use contextfold_core::{HistoryCompactCheckpoint, RuntimeEvent};
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

/// One write of the fixture, in order: a turn's events, or a checkpoint over everything so far.
pub(crate) enum Step {
    /// The events of one turn, appended in one transaction.
    Events(Vec<RuntimeEvent>),
    /// A checkpoint, appended with `append_checkpoint(event_id, "run-bench", recorded_at_ms, ..)`.
    Checkpoint { event_id: String, recorded_at_ms: u64, checkpoint: Box<HistoryCompactCheckpoint> },
}

/// Writes the fixture into a new store at `db` and its export to `export`.
pub(crate) fn write(db: &Path, export: &Path, target_events: u64, checkpoints: u64) -> Fixture {
    let store = Store::open(db).expect("a new store");
    let mut out = std::io::BufWriter::new(std::fs::File::create(export).expect("export file"));
    let mut fixture = build(target_events, checkpoints, |step| match step {
        Step::Events(events) => {
            store.append_events(SESSION, &events).expect("append");
            for event in &events {
                serde_json::to_writer(&mut out, event).expect("export line");
                std::io::Write::write_all(&mut out, b"\n").expect("export line");
            }
        }
        Step::Checkpoint { event_id, recorded_at_ms, checkpoint } => store
            .append_checkpoint(&event_id, "run-bench", recorded_at_ms, &checkpoint)
            .expect("a valid successor"),
    });
    std::io::Write::flush(&mut out).expect("export flushed");
    fixture.export_bytes = std::fs::metadata(export).map(|m| m.len()).unwrap_or(0);
    fixture
}

/// Produces the fixture's writes in order into `sink` (any backend); `export_bytes` is 0.
pub(crate) fn build(target_events: u64, checkpoints: u64, mut sink: impl FnMut(Step)) -> Fixture {
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
        for event in &events {
            coverage.push(event);
        }
        sink(Step::Events(events));
        turns += 1;
        let before_final_turn = seq == total - final_turn_len;
        let crossed = seq >= step * (recorded + 1) && recorded + 1 < checkpoints;
        if crossed || before_final_turn {
            let id = format!("cp-{recorded:03}");
            let checkpoint = Box::new(coverage.checkpoint(&id, previous.as_deref()));
            sink(Step::Checkpoint {
                event_id: format!("ev-{id}"),
                recorded_at_ms: seq,
                checkpoint,
            });
            previous = Some(id);
            recorded += 1;
        }
    }
    Fixture { events: seq, turns, checkpoints: recorded, export_bytes: 0 }
}
