//! The envelope of a summary checkpoint: the tag, the coverage line and the limitations around
//! its summary.
//!
//! A summary checkpoint's limitations name the archive address of exactly what it covers (the
//! bytes its source digest is taken over: a `contextfold-source-v1` line, then each covered
//! event's canonical JSON on its own line), so whatever the summary left out can be read back
//! with `archive_read`; a store serves that address from the log. The envelope's size depends
//! on the session's and the checkpoint's ids, so the summary's target is what the request
//! leaves beside the envelope measured for this checkpoint, not a fixed reserve.

use crate::budget::TokenEstimator;
use crate::checkpoint::{CheckpointProjection, Coverage, HighWater, HistoryCompactCheckpoint};
use crate::event::RuntimeEvent;
use crate::projection::materialize::REPLAY_LIMITATION;
use crate::prune::{ArchiveAddress, MAX_ARCHIVE_BYTES};
use crate::replay::checkpoint_tokens;

/// How a summary checkpoint's limitations introduce the archive address of the events it
/// covers.
pub(crate) const SOURCE_ADDRESS_LINE: &str =
    "Every covered event, exact (canonical JSON Lines), for archive_read:";

/// The limitation an extractive summary adds.
const EXTRACTIVE_LIMITATION: &str = "Extractive: excerpts copied from the covered events, not a \
                                     semantic summary; older items may have been dropped to fit.";

/// The limitations of a summary checkpoint: the replay limitation, the extractive one when the
/// summarizer is extractive, and `source`, the address of the covered events, when it has one
/// (a session id an address cannot carry, or a source over 1 GiB, has none).
pub(crate) fn summary_limitations(
    extractive: bool,
    source: Option<&ArchiveAddress>,
) -> Vec<String> {
    let mut limitations = vec![REPLAY_LIMITATION.to_owned()];
    if extractive {
        limitations.push(EXTRACTIVE_LIMITATION.to_owned());
    }
    if let Some(source) = source {
        limitations.push(format!("{SOURCE_ADDRESS_LINE} {}", source.to_uri()));
    }
    limitations
}

/// Estimated tokens of the envelope of summary checkpoint `checkpoint_id` over `events[..end]`,
/// recorded with high water `high_water`: that checkpoint rendered with an empty summary and a
/// digest of the same length, its source address at its longest, plus a margin.
pub(crate) fn envelope_tokens(
    events: &[RuntimeEvent],
    end: usize,
    checkpoint_id: &str,
    high_water: &str,
    extractive: bool,
    estimator: &dyn TokenEstimator,
) -> u64 {
    let Some(last) = events[..end.min(events.len())].last() else { return 0 };
    let coverage = Coverage {
        event_count: end as u64,
        turn_count: end as u64,
        through: last.boundary(),
        // A hex digest as digests read (their pieces vary a little: see the margin).
        source_digest: crate::digest::sha256_text(last.session_id.as_bytes()),
    };
    let source = ArchiveAddress::for_source_digest(
        &last.session_id,
        &coverage.source_digest,
        MAX_ARCHIVE_BYTES,
    );
    let checkpoint = HistoryCompactCheckpoint {
        // Ids made of a clock and a random suffix vary by a few pieces from one run to the
        // next; measured as at least `ID_RESERVE_CHARS` digits, the same log gets the same target.
        checkpoint_id: match checkpoint_id.len() < ID_RESERVE_CHARS {
            true => "0".repeat(ID_RESERVE_CHARS),
            false => checkpoint_id.to_owned(),
        },
        session_id: last.session_id.clone(),
        created_at_ms: 0,
        high_water: HighWater { name: high_water.to_owned(), seq: last.seq },
        coverage,
        projection: CheckpointProjection::Summary(String::new()),
        limitations: summary_limitations(extractive, source.ok().as_ref()),
        estimated_tokens: 0,
        previous_checkpoint_id: None,
        produced_by: None,
        manifest: None,
    };
    checkpoint_tokens(&checkpoint, estimator) + DIGEST_MARGIN_TOKENS
}

/// A checkpoint id is measured as at least this many digits (ids such as
/// `cp-00002-1796482491377-3606.1` take fewer pieces).
const ID_RESERVE_CHARS: usize = 40;

/// Added to the measured envelope: the two 64-digit hex digests it names (the tag's and the
/// source address's) take a few more or fewer pieces from one digest to the next.
const DIGEST_MARGIN_TOKENS: u64 = 12;
