//! The cost of background preparation (issue 39), counted the same way by every runtime of
//! this crate: the native [`crate::runtime::SessionRuntime`] and the component host
//! ([`crate::component::Plugin`]). Each preparation ends one [`Fate`]; [`PreparationStats`]
//! counts them with the summarizer tokens they spent.

use contextfold_core::{HistoryCompactCheckpoint, ReasonCode};
use serde::Serialize;

/// Preparations of one runtime (native: one session runtime; component: one session of a
/// plugin), by how they ended, with the summarizer tokens they spent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreparationStats {
    /// Preparations started.
    pub started: u64,
    /// Preparations that built a checkpoint.
    pub prepared: u64,
    /// Prepared checkpoints a compaction adopted.
    pub used: u64,
    /// Preparations replaced by a newer one or by a checkpoint recorded in the foreground
    /// (aborted in flight, or dropped while held).
    pub superseded: u64,
    /// Prepared checkpoints that were not used: rejected when needed, or superseded.
    pub wasted: u64,
    /// Preparations that ended without a checkpoint (a provider failure, a malformed summary).
    pub failed: u64,
    /// Prepared checkpoints still held, not yet needed.
    pub held: u64,
    /// Summarizer tokens of every preparation (each request's estimated input and its answer).
    pub tokens: u64,
    /// Of them, those of the preparations that were used.
    pub used_tokens: u64,
    /// Of them, those of the preparations that bought nothing: wasted, superseded after they
    /// finished, or failed.
    pub wasted_tokens: u64,
    /// Of them, those of the checkpoints still held.
    pub held_tokens: u64,
}

/// How a preparation ended, as counted and recorded (`preparation_settled`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    /// A compaction adopted its checkpoint.
    Used,
    /// Replaced before it was needed (in flight or held).
    Superseded,
    /// Built, then refused when needed.
    Wasted,
    /// Ended without a checkpoint.
    Failed,
}

impl Fate {
    /// How a compaction that was handed a prepared checkpoint settled it, read from its
    /// diagnostics' codes: `used` (`prepared_checkpoint_used`), `wasted`
    /// (`prepared_checkpoint_rejected`), or `None` when it did not judge it.
    pub(crate) fn of_adoption<'a>(codes: impl IntoIterator<Item = &'a str>) -> Option<Fate> {
        let mut fate = None;
        for code in codes {
            if code == ReasonCode::PreparedCheckpointUsed.as_str() {
                return Some(Fate::Used);
            }
            if code == ReasonCode::PreparedCheckpointRejected.as_str() {
                fate = Some(Fate::Wasted);
            }
        }
        fate
    }

    /// The snake_case name recorded in the `preparation_settled` event.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Fate::Used => "used",
            Fate::Superseded => "superseded",
            Fate::Wasted => "wasted",
            Fate::Failed => "failed",
        }
    }
}

/// A prepared checkpoint, held until a compaction needs it, with what it cost.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    /// The unrecorded checkpoint.
    pub(crate) checkpoint: HistoryCompactCheckpoint,
    /// The summarizer tokens of the preparation that built it.
    pub(crate) tokens: u64,
}

impl PreparationStats {
    /// A preparation built a checkpoint that cost `tokens`; it is held until needed.
    pub(crate) fn hold(&mut self, tokens: u64) {
        self.prepared += 1;
        self.tokens += tokens;
        self.held += 1;
        self.held_tokens += tokens;
    }

    /// The held checkpoint that cost `tokens` leaves the hold (to be used, refused or
    /// superseded: [`PreparationStats::settle`] counts which).
    pub(crate) fn release(&mut self, tokens: u64) {
        self.held -= 1;
        self.held_tokens -= tokens;
    }

    /// Counts one preparation's end: `tokens` it spent, `built` whether it had built a
    /// checkpoint (a superseded one that had counts as wasted too).
    pub(crate) fn settle(&mut self, fate: Fate, tokens: u64, built: bool) {
        match fate {
            Fate::Used => {
                self.used += 1;
                self.used_tokens += tokens;
            }
            Fate::Superseded => {
                self.superseded += 1;
                self.wasted_tokens += tokens;
                if built {
                    self.wasted += 1;
                }
            }
            Fate::Wasted => {
                self.wasted += 1;
                self.wasted_tokens += tokens;
            }
            Fate::Failed => {
                self.failed += 1;
                self.wasted_tokens += tokens;
            }
        }
    }
}
