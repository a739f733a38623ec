//! Verifying a checkpoint's prefix: from scratch every time, or incrementally with a
//! per-session cache so that steady-state projection costs O(uncovered tail), not O(history).
//!
//! [`FullVerification`] re-validates the whole log and re-hashes the covered prefix on every
//! request. [`VerifiedPrefix`] remembers what an earlier verification established (event count,
//! the last event's boundary and `seq`, the SHA-256 state after that many events, the event
//! and turn ids seen, the token estimate) and only processes events it has not seen.
//!
//! The cache is an optimization only. It is keyed by the identity of the last event it covers:
//! if the log no longer holds that event at that position (a different session, a shorter or
//! rewritten log), the cache starts over and the next request is a full verification. A cold
//! start is always a full verification, and [`crate::prefix_match::match_checkpoint_prefix`]
//! stays available to re-verify any checkpoint from scratch (the CLI's `verify`). The hash state
//! cannot be rewound: a checkpoint covering fewer events than the cache is verified from scratch
//! without disturbing the cache.

use std::collections::HashSet;
use std::marker::PhantomData;

use crate::budget::{TokenEstimator, estimate_event};
use crate::checkpoint::HistoryCompactCheckpoint;
use crate::digest::{HashEngine, PrefixHasher, Sha2Engine};
use crate::event::{LogError, LogValidator, RuntimeEvent, validate_log};
use crate::prefix_match::{
    PrefixMismatch, match_checkpoint_prefix_each, match_checkpoint_prefix_from,
};
use crate::safe_prefix::split_current_turn;

/// A verified coverage: the checkpoint replaces `prior[..covered]`, whose raw events estimate
/// at `source_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifiedCoverage {
    /// Number of covered events.
    pub covered: usize,
    /// Estimated tokens of the covered raw events.
    pub source_tokens: u64,
}

/// How a projection validates the log and proves a checkpoint's coverage.
pub trait PrefixVerifier {
    /// Checks the log's structure ([`validate_log`]) and splits off the current turn
    /// ([`split_current_turn`]); returns `prior_end`.
    fn check_log(
        &mut self,
        events: &[RuntimeEvent],
        current_turn_id: Option<&str>,
    ) -> Result<usize, LogError>;

    /// Proves that `prior` starts with exactly the prefix `checkpoint` covers.
    fn verify(
        &mut self,
        checkpoint: &HistoryCompactCheckpoint,
        prior: &[RuntimeEvent],
        estimator: &dyn TokenEstimator,
    ) -> Result<VerifiedCoverage, PrefixMismatch>;
}

/// Verification from scratch on every call, O(history), with the default SHA-256 engine.
pub type FullVerification = FullVerificationWith<Sha2Engine>;

/// Verification from scratch on every call (O(history)), hashing with the SHA-256 engine `E` (see [`HashEngine`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FullVerificationWith<E: HashEngine>(PhantomData<E>);

impl<E: HashEngine> Default for FullVerificationWith<E> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<E: HashEngine> PrefixVerifier for FullVerificationWith<E> {
    fn check_log(
        &mut self,
        events: &[RuntimeEvent],
        current_turn_id: Option<&str>,
    ) -> Result<usize, LogError> {
        check_whole_log(events, current_turn_id)
    }

    fn verify(
        &mut self,
        checkpoint: &HistoryCompactCheckpoint,
        prior: &[RuntimeEvent],
        estimator: &dyn TokenEstimator,
    ) -> Result<VerifiedCoverage, PrefixMismatch> {
        verify_from_scratch::<E>(checkpoint, prior, estimator)
    }
}

fn check_whole_log(
    events: &[RuntimeEvent],
    current_turn_id: Option<&str>,
) -> Result<usize, LogError> {
    validate_log(events)?;
    split_current_turn(events, current_turn_id)
}

fn verify_from_scratch<E: HashEngine>(
    checkpoint: &HistoryCompactCheckpoint,
    prior: &[RuntimeEvent],
    estimator: &dyn TokenEstimator,
) -> Result<VerifiedCoverage, PrefixMismatch> {
    // Estimating each event right after hashing it reads its text while it is in cache. The
    // tally is in base units, scaled once ([`crate::budget::source_tokens`]).
    let base = estimator.tally_base().unwrap_or(estimator);
    let mut tally = 0;
    let matched = match_checkpoint_prefix_each::<E>(checkpoint, prior, |event| {
        tally += estimate_event(base, event);
    })?;
    Ok(VerifiedCoverage { covered: matched.covered, source_tokens: estimator.scale_tally(tally) })
}

/// The per-session verified-digest cache. Use one per session with one base estimator: its
/// token tally is kept in the units of the estimator's [`TokenEstimator::tally_base`], so a
/// calibrated estimator whose ratio changes keeps the cache valid. `E` is the SHA-256 engine
/// (see [`HashEngine`]).
#[derive(Debug, Clone)]
pub struct VerifiedPrefix<E: HashEngine = Sha2Engine> {
    hasher: PrefixHasher<E>,
    /// `(seq, runtime_event_id)` of the last cached event: the cache key.
    last: Option<(u64, String)>,
    /// The structural rules of the cached prefix (session, `seq` order, unique ids).
    validator: LogValidator,
    turn_ids: HashSet<String>,
    tokens: u64,
}

impl Default for VerifiedPrefix {
    fn default() -> Self {
        Self::new()
    }
}

impl VerifiedPrefix {
    /// An empty cache (the first use is a full verification).
    pub fn new() -> Self {
        Self::with_engine()
    }
}

impl<E: HashEngine> VerifiedPrefix<E> {
    /// An empty cache hashing with a fresh engine `E`.
    pub fn with_engine() -> Self {
        Self {
            hasher: PrefixHasher::with_engine(E::default()),
            last: None,
            validator: LogValidator::default(),
            turn_ids: HashSet::new(),
            tokens: 0,
        }
    }

    /// Number of events the cache covers.
    pub fn len(&self) -> usize {
        usize::try_from(self.hasher.event_count()).unwrap_or(usize::MAX)
    }

    /// Whether the cache covers nothing yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops the cache if `events` no longer holds its last event at its position.
    fn revalidate_key(&mut self, events: &[RuntimeEvent]) {
        let len = self.len();
        let still_there = match &self.last {
            None => true,
            Some((seq, id)) => events
                .get(len.wrapping_sub(1))
                .is_some_and(|e| e.seq == *seq && &e.runtime_event_id == id),
        };
        if !still_there {
            *self = Self::with_engine();
        }
    }

    /// Checks `events[self.len()..end]` against the cached prefix's structure.
    fn check_new(&self, events: &[RuntimeEvent], end: usize) -> Result<(), LogError> {
        self.validator.check(&events[self.len()..end])
    }

    /// Extends the cache to cover `events[..end]` (which must already pass [`Self::check_new`]).
    fn advance(&mut self, events: &[RuntimeEvent], end: usize, estimator: &dyn TokenEstimator) {
        let new = &events[self.len()..end];
        self.validator.accept(new);
        for event in new {
            self.hasher.push(event);
            self.turn_ids.insert(event.turn_id.clone());
            self.tokens += estimate_event(estimator.tally_base().unwrap_or(estimator), event);
            self.last = Some((event.seq, event.runtime_event_id.clone()));
        }
    }
}

impl<E: HashEngine> PrefixVerifier for VerifiedPrefix<E> {
    fn check_log(
        &mut self,
        events: &[RuntimeEvent],
        current_turn_id: Option<&str>,
    ) -> Result<usize, LogError> {
        self.revalidate_key(events);
        self.check_new(events, events.len())?;
        let Some(current) = current_turn_id else { return Ok(events.len()) };
        // The current turn is a suffix: find its start from the end, then make sure no earlier
        // event (cached or not) belongs to it.
        let start = events.iter().rposition(|e| e.turn_id != current).map_or(0, |i| i + 1);
        let cached_end = self.len().min(start);
        let earlier = if self.turn_ids.contains(current) {
            events[..cached_end].iter().position(|e| e.turn_id == current)
        } else {
            None
        }
        .or_else(|| {
            events[cached_end..start]
                .iter()
                .position(|e| e.turn_id == current)
                .map(|i| cached_end + i)
        });
        match earlier {
            Some(first) => {
                let index = events[first..]
                    .iter()
                    .position(|e| e.turn_id != current)
                    .map_or(first, |i| first + i);
                Err(LogError::CurrentTurnNotSuffix { index })
            }
            None => Ok(start),
        }
    }

    fn verify(
        &mut self,
        checkpoint: &HistoryCompactCheckpoint,
        prior: &[RuntimeEvent],
        estimator: &dyn TokenEstimator,
    ) -> Result<VerifiedCoverage, PrefixMismatch> {
        let claimed = usize::try_from(checkpoint.coverage.event_count).unwrap_or(usize::MAX);
        if claimed < self.len() || claimed > prior.len() || self.check_new(prior, claimed).is_err()
        {
            // Cannot rewind the hash state, or nothing to extend: verify from scratch.
            return verify_from_scratch::<E>(checkpoint, prior, estimator);
        }
        // Hashing `prior[..claimed]` is a fact about the log, whatever the checkpoint claims,
        // so the cache keeps it even if the checkpoint then fails to match.
        self.advance(prior, claimed, estimator);
        let matched = match_checkpoint_prefix_from(
            checkpoint,
            prior,
            self.hasher.clone(),
            Some(self.turn_ids.len() as u64),
        )?;
        Ok(VerifiedCoverage {
            covered: matched.covered,
            source_tokens: estimator.scale_tally(self.tokens),
        })
    }
}

/// The verifier of a log whose rules were checked as it grew (an append-only log that runs a
/// [`LogValidator`] on every append, as the npm package's `EventLog` does): a projection only
/// splits off the current turn instead of validating the whole log again, and the wrapped
/// [`VerifiedPrefix`] proves checkpoint prefixes.
#[derive(Debug)]
pub struct CheckedLog<'a, E: HashEngine>(pub &'a mut VerifiedPrefix<E>);

impl<E: HashEngine> PrefixVerifier for CheckedLog<'_, E> {
    fn check_log(
        &mut self,
        events: &[RuntimeEvent],
        current_turn_id: Option<&str>,
    ) -> Result<usize, LogError> {
        split_current_turn(events, current_turn_id)
    }

    fn verify(
        &mut self,
        checkpoint: &HistoryCompactCheckpoint,
        prior: &[RuntimeEvent],
        estimator: &dyn TokenEstimator,
    ) -> Result<VerifiedCoverage, PrefixMismatch> {
        self.0.verify(checkpoint, prior, estimator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventContent;

    fn log(turns: &[&str]) -> Vec<RuntimeEvent> {
        let event = |(seq, turn): (usize, &&str)| {
            let content = EventContent::user_text(format!("event {seq}"));
            let (session, run, turn) = ("s".to_owned(), "r".to_owned(), (*turn).to_owned());
            RuntimeEvent::new(session, run, turn, format!("e{seq}"), seq as u64 + 1, content)
        };
        turns.iter().enumerate().map(event).collect()
    }

    #[test]
    fn a_checked_log_splits_the_current_turn_as_a_full_check_does() {
        let mut cache = VerifiedPrefix::new();
        for (turns, current) in [
            (&["a", "a", "b", "b"][..], Some("b")),
            (&["a", "b", "a"][..], Some("a")),
            (&["a", "b"][..], None),
            (&["a", "b"][..], Some("c")),
        ] {
            let events = log(turns);
            let full = FullVerification::default().check_log(&events, current);
            assert_eq!(CheckedLog(&mut cache).check_log(&events, current), full, "{turns:?}");
        }
    }
}
