//! [`PrefixSweep`]: every checkpoint of a session checked in one pass over its log.
//!
//! Checking checkpoints one by one with [`super::match_checkpoint_prefix`] hashes the shared
//! prefix once per checkpoint: with 88 checkpoints over a long session that is dozens of
//! passes over the same bytes. The sweep feeds each event to one hasher, in order, and when the
//! event count reaches a checkpoint's claimed count it checks that checkpoint's boundary, turn
//! count and digest (a snapshot of the running hash), so the whole log is hashed once. It is
//! sans-IO: the caller pushes events as it reads them (from memory or row by row from a
//! store) and can stop reading as soon as [`PrefixSweep::is_done`]. Each result equals what
//! `match_checkpoint_prefix` gives for that checkpoint over the same log.

use std::collections::HashSet;

use crate::checkpoint::HistoryCompactCheckpoint;
use crate::digest::{HashEngine, PrefixHasher, Sha2Engine};
use crate::event::RuntimeEvent;

use super::{PrefixMatch, PrefixMismatch};

/// The key fields of one event, as a store keeps them beside its canonical bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventKeys<'a> {
    /// The event's session.
    pub session_id: &'a str,
    /// The event's id.
    pub runtime_event_id: &'a str,
    /// The event's turn.
    pub turn_id: &'a str,
    /// The event's Run.
    pub run_id: &'a str,
}

/// The result of one checkpoint of a sweep.
pub type SweepResult = Result<PrefixMatch, PrefixMismatch>;

/// Checks many checkpoints against one log in a single pass (module docs). `E` is the SHA-256
/// engine.
///
/// ```
/// use contextfold_core::checkpoint::{CheckpointProjection, HighWater, HistoryCompactCheckpoint};
/// use contextfold_core::checkpoint::{PrefixSweep, coverage_of};
/// use contextfold_core::{LogBuilder, RuntimeEvent};
///
/// fn checkpoint(prefix: &[RuntimeEvent]) -> HistoryCompactCheckpoint {
///     HistoryCompactCheckpoint {
///         checkpoint_id: format!("cp{}", prefix.len()),
///         session_id: "s".into(),
///         created_at_ms: 1,
///         high_water: HighWater { name: "manual".into(), seq: 0 },
///         coverage: coverage_of(prefix).expect("non-empty"),
///         projection: CheckpointProjection::Summary("## Goal\nx".into()),
///         limitations: vec![],
///         estimated_tokens: 10,
///         previous_checkpoint_id: None,
///         produced_by: None,
///         manifest: None,
///     }
/// }
/// let mut log = LogBuilder::new("s");
/// log.turn("t1").user("first");
/// log.turn("t2").user("second");
/// let events = log.build();
/// let checkpoints = [checkpoint(&events), checkpoint(&events[..1])];
/// let mut sweep = PrefixSweep::new(&checkpoints);
/// for event in &events {
///     sweep.push(event);
/// }
/// let results = sweep.finish();
/// let covered: Vec<usize> = results.into_iter().map(|r| r.expect("matches").covered).collect();
/// assert_eq!(covered, [2, 1]);
/// ```
pub struct PrefixSweep<'a, E: HashEngine = Sha2Engine> {
    checkpoints: &'a [HistoryCompactCheckpoint],
    /// Indices into `checkpoints`, by claimed event count.
    order: Vec<usize>,
    /// Position in `order` of the next checkpoint to decide.
    next: usize,
    results: Vec<Option<SweepResult>>,
    hasher: PrefixHasher<E>,
    turns: HashSet<String>,
    previous_turn: Option<String>,
    seen: usize,
}

impl<E: HashEngine> std::fmt::Debug for PrefixSweep<'_, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrefixSweep")
            .field("checkpoints", &self.checkpoints.len())
            .field("decided", &self.results.iter().filter(|r| r.is_some()).count())
            .field("events_seen", &self.seen)
            .finish_non_exhaustive()
    }
}

impl<'a> PrefixSweep<'a> {
    /// A sweep over `checkpoints` with the default SHA-256 engine.
    pub fn new(checkpoints: &'a [HistoryCompactCheckpoint]) -> Self {
        Self::with_engine(checkpoints)
    }
}

impl<'a, E: HashEngine> PrefixSweep<'a, E> {
    /// A sweep over `checkpoints` hashing with a fresh engine `E`.
    pub fn with_engine(checkpoints: &'a [HistoryCompactCheckpoint]) -> Self {
        let mut order: Vec<usize> = (0..checkpoints.len()).collect();
        crate::sort::sort_by_key(&mut order, |&index| checkpoints[index].coverage.event_count);
        let mut sweep = Self {
            checkpoints,
            order,
            next: 0,
            results: vec![None; checkpoints.len()],
            hasher: PrefixHasher::with_engine(E::default()),
            turns: HashSet::new(),
            previous_turn: None,
            seen: 0,
        };
        // A checkpoint that claims no events never matches; it waits for `finish` to learn
        // how many events the log has.
        while sweep.peek_count() == Some(0) {
            sweep.next += 1;
        }
        sweep
    }

    /// Whether no checkpoint is left that a later event could decide (the caller may stop
    /// reading; [`Self::finish_with_total`] then needs the log's length).
    pub fn is_done(&self) -> bool {
        self.next == self.order.len()
    }

    /// Events pushed so far.
    pub fn events_seen(&self) -> usize {
        self.seen
    }

    fn peek_count(&self) -> Option<u64> {
        self.order.get(self.next).map(|&i| self.checkpoints[i].coverage.event_count)
    }

    /// Feeds the next event of the log (events must come in log order, from the first).
    pub fn push(&mut self, event: &RuntimeEvent) {
        let row = EventKeys {
            session_id: &event.session_id,
            runtime_event_id: &event.runtime_event_id,
            turn_id: &event.turn_id,
            run_id: &event.run_id,
        };
        self.advance(row, |hasher| hasher.push(event));
    }

    /// Feeds the next event as a store keeps it: its key fields and its canonical JSON
    /// ([`crate::digest::canonical_event_json`]), hashed without parsing
    /// ([`PrefixHasher::push_canonical`]). Results equal [`Self::push`]'s for the event those
    /// bytes are the canonical form of; other bytes fail the digest check.
    pub fn push_canonical(&mut self, keys: EventKeys<'_>, canonical: &[u8]) {
        self.advance(keys, |hasher| hasher.push_canonical(canonical));
    }

    fn advance(&mut self, event: EventKeys<'_>, hash: impl FnOnce(&mut PrefixHasher<E>)) {
        if self.seen == 0 {
            for (index, checkpoint) in self.checkpoints.iter().enumerate() {
                if checkpoint.session_id != event.session_id {
                    self.results[index] = Some(Err(PrefixMismatch::Session {
                        checkpoint: checkpoint.session_id.clone(),
                        log: event.session_id.to_owned(),
                    }));
                }
            }
        }
        if self.is_done() {
            self.seen += 1;
            return;
        }
        hash(&mut self.hasher);
        if self.previous_turn.as_deref() != Some(event.turn_id) {
            self.turns.insert(event.turn_id.to_owned());
            self.previous_turn = Some(event.turn_id.to_owned());
        }
        self.seen += 1;
        while self.peek_count() == Some(self.seen as u64) {
            let index = self.order[self.next];
            self.next += 1;
            if self.results[index].is_none() {
                self.results[index] = Some(self.check(&self.checkpoints[index], event));
            }
        }
    }

    /// The checks of [`super::match_checkpoint_prefix`] at the checkpoint's last event.
    fn check(&self, checkpoint: &HistoryCompactCheckpoint, last: EventKeys<'_>) -> SweepResult {
        let through = &checkpoint.coverage.through;
        if last.runtime_event_id != through.runtime_event_id
            || last.turn_id != through.turn_id
            || last.run_id != through.run_id
        {
            return Err(PrefixMismatch::BoundaryMismatch { index: self.seen - 1 });
        }
        let actual = self.turns.len() as u64;
        if actual != checkpoint.coverage.turn_count {
            return Err(PrefixMismatch::TurnCountMismatch {
                claimed: checkpoint.coverage.turn_count,
                actual,
            });
        }
        let digest = self.hasher.digest();
        if digest != checkpoint.coverage.source_digest {
            return Err(PrefixMismatch::SourceHash {
                expected: checkpoint.coverage.source_digest.clone(),
                actual: digest,
            });
        }
        Ok(PrefixMatch { covered: self.seen })
    }

    /// Ends the sweep after the log's last event (`total` events in all: pass
    /// [`Self::events_seen`] when every event was pushed, or the log's length when reading
    /// stopped early at [`Self::is_done`]). Results come in the order of the checkpoints given.
    pub fn finish_with_total(self, total: usize) -> Vec<SweepResult> {
        self.results
            .into_iter()
            .zip(self.checkpoints)
            .map(|(result, checkpoint)| {
                result.unwrap_or(Err(PrefixMismatch::NotEnoughEvents {
                    claimed: checkpoint.coverage.event_count,
                    available: total,
                }))
            })
            .collect()
    }

    /// Ends the sweep after every event of the log was pushed.
    pub fn finish(self) -> Vec<SweepResult> {
        let total = self.seen;
        self.finish_with_total(total)
    }
}
