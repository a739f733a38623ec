//! Prefix matching: the proof that a checkpoint still describes the start of the log.
//!
//! A checkpoint may replace history only if the log still holds the exact prefix it claims:
//! enough events, the same through-boundary, the same turn count and the same SHA-256 digest
//! over the stable serialization. Resemblance is never enough; a mismatch is reported with the
//! design's reason codes (`coverage_miss`, `source_hash_mismatch`, `session_mismatch`).

use crate::checkpoint::{Coverage, HistoryCompactCheckpoint};
use crate::diagnostics::ReasonCode;
use crate::digest::{HashEngine, PrefixHasher, Sha2Engine};
use crate::event::RuntimeEvent;
use crate::safe_prefix::turn_count;

mod sweep;

pub use sweep::{EventKeys, PrefixSweep, SweepResult};

/// A successful match: the checkpoint covers `events[..covered]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefixMatch {
    /// Number of covered events.
    pub covered: usize,
}

/// Why a checkpoint does not match the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PrefixMismatch {
    /// The checkpoint belongs to another session.
    #[error("checkpoint is for session `{checkpoint}`, log is session `{log}`")]
    Session {
        /// Session of the checkpoint.
        checkpoint: String,
        /// Session of the log.
        log: String,
    },
    /// The log has fewer events than the checkpoint covers.
    #[error("checkpoint covers {claimed} events but only {available} are available")]
    NotEnoughEvents {
        /// Events the checkpoint claims.
        claimed: u64,
        /// Events available.
        available: usize,
    },
    /// The last covered event is not the claimed through-boundary.
    #[error("event {index} is not the checkpoint's through-boundary")]
    BoundaryMismatch {
        /// Index of the event found at the boundary.
        index: usize,
    },
    /// The covered prefix touches a different number of turns.
    #[error("checkpoint claims {claimed} turns, prefix has {actual}")]
    TurnCountMismatch {
        /// Turns the checkpoint claims.
        claimed: u64,
        /// Turns in the prefix.
        actual: u64,
    },
    /// The covered prefix does not hash to the checkpoint's digest.
    #[error("source digest mismatch: checkpoint {expected}, log {actual}")]
    SourceHash {
        /// Digest in the checkpoint.
        expected: String,
        /// Digest of the log prefix.
        actual: String,
    },
}

impl PrefixMismatch {
    /// Stable reason code.
    pub fn code(&self) -> ReasonCode {
        match self {
            PrefixMismatch::Session { .. } => ReasonCode::SessionMismatch,
            PrefixMismatch::NotEnoughEvents { .. }
            | PrefixMismatch::BoundaryMismatch { .. }
            | PrefixMismatch::TurnCountMismatch { .. } => ReasonCode::CoverageMiss,
            PrefixMismatch::SourceHash { .. } => ReasonCode::SourceHashMismatch,
        }
    }
}

/// Checks that `events` starts with exactly the prefix `checkpoint` covers.
///
/// Cheap checks run first (session, count, boundary, turns); the digest is computed last, over
/// the covered prefix only.
pub fn match_checkpoint_prefix(
    checkpoint: &HistoryCompactCheckpoint,
    events: &[RuntimeEvent],
) -> Result<PrefixMatch, PrefixMismatch> {
    match_checkpoint_prefix_with::<Sha2Engine>(checkpoint, events)
}

/// [`match_checkpoint_prefix`] hashing with the SHA-256 engine `E`.
pub fn match_checkpoint_prefix_with<E: HashEngine>(
    checkpoint: &HistoryCompactCheckpoint,
    events: &[RuntimeEvent],
) -> Result<PrefixMatch, PrefixMismatch> {
    match_checkpoint_prefix_each::<E>(checkpoint, events, |_| {})
}

/// [`match_checkpoint_prefix_with`] that also calls `each` on every covered event right after
/// hashing it, while its bytes are still in cache (and, with an engine that hashes on another
/// thread, while the hash of the previous bytes runs). `each` sees the covered events in order
/// even when the digest then does not match.
pub(crate) fn match_checkpoint_prefix_each<E: HashEngine>(
    checkpoint: &HistoryCompactCheckpoint,
    events: &[RuntimeEvent],
    mut each: impl FnMut(&RuntimeEvent),
) -> Result<PrefixMatch, PrefixMismatch> {
    let covered = check_shape(checkpoint, events, None)?;
    let mut hasher = PrefixHasher::with_engine(E::default());
    for event in &events[..covered] {
        hasher.push(event);
        each(event);
    }
    check_digest(checkpoint, &hasher)?;
    Ok(PrefixMatch { covered })
}

/// Like [`match_checkpoint_prefix`], but reuses a hasher that already holds a prefix of
/// `events` (e.g. from a verified-digest cache): only the missing events are hashed.
/// The hasher must have been fed `events[..hasher.event_count()]`, in order. When the caller
/// already knows the number of distinct turns in the covered prefix (`turn_count`), it is used
/// instead of a scan.
pub fn match_checkpoint_prefix_from<E: HashEngine>(
    checkpoint: &HistoryCompactCheckpoint,
    events: &[RuntimeEvent],
    mut hasher: PrefixHasher<E>,
    turn_count: Option<u64>,
) -> Result<PrefixMatch, PrefixMismatch> {
    let known_turns =
        turn_count.filter(|_| hasher.event_count() == checkpoint.coverage.event_count);
    let covered = check_shape(checkpoint, events, known_turns)?;
    let already = usize::try_from(hasher.event_count()).unwrap_or(usize::MAX);
    if already > covered {
        return match_checkpoint_prefix_with::<E>(checkpoint, events);
    }
    for event in &events[already..covered] {
        hasher.push(event);
    }
    check_digest(checkpoint, &hasher)?;
    Ok(PrefixMatch { covered })
}

fn check_shape(
    checkpoint: &HistoryCompactCheckpoint,
    events: &[RuntimeEvent],
    known_turns: Option<u64>,
) -> Result<usize, PrefixMismatch> {
    if let Some(first) = events.first()
        && first.session_id != checkpoint.session_id
    {
        return Err(PrefixMismatch::Session {
            checkpoint: checkpoint.session_id.clone(),
            log: first.session_id.clone(),
        });
    }
    let claimed = checkpoint.coverage.event_count;
    let covered = usize::try_from(claimed).unwrap_or(usize::MAX);
    if claimed == 0 || covered > events.len() {
        return Err(PrefixMismatch::NotEnoughEvents { claimed, available: events.len() });
    }
    let last = &events[covered - 1];
    let through = &checkpoint.coverage.through;
    if last.runtime_event_id != through.runtime_event_id
        || last.turn_id != through.turn_id
        || last.run_id != through.run_id
    {
        return Err(PrefixMismatch::BoundaryMismatch { index: covered - 1 });
    }
    let actual = known_turns.unwrap_or_else(|| turn_count(&events[..covered]));
    if actual != checkpoint.coverage.turn_count {
        return Err(PrefixMismatch::TurnCountMismatch {
            claimed: checkpoint.coverage.turn_count,
            actual,
        });
    }
    Ok(covered)
}

fn check_digest<E: HashEngine>(
    checkpoint: &HistoryCompactCheckpoint,
    hasher: &PrefixHasher<E>,
) -> Result<(), PrefixMismatch> {
    let actual = hasher.digest();
    if actual != checkpoint.coverage.source_digest {
        return Err(PrefixMismatch::SourceHash {
            expected: checkpoint.coverage.source_digest.clone(),
            actual,
        });
    }
    Ok(())
}

/// The coverage a checkpoint over `prefix` must claim: counts, through-boundary and digest.
/// `None` for an empty prefix (a checkpoint always covers at least one event).
pub fn coverage_of(prefix: &[RuntimeEvent]) -> Option<Coverage> {
    coverage_and_bytes(prefix).map(|(coverage, _)| coverage)
}

/// [`coverage_of`] and the number of bytes its digest is taken over
/// ([`PrefixHasher::byte_count`]).
pub(crate) fn coverage_and_bytes(prefix: &[RuntimeEvent]) -> Option<(Coverage, u64)> {
    let last = prefix.last()?;
    let mut hasher = PrefixHasher::new();
    for event in prefix {
        hasher.push(event);
    }
    let coverage = Coverage {
        event_count: prefix.len() as u64,
        turn_count: turn_count(prefix),
        through: last.boundary(),
        source_digest: hasher.digest(),
    };
    Some((coverage, hasher.byte_count()))
}
