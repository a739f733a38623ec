//! Pruning epochs: when a request may change what it prunes.
//!
//! Providers bill a cached request prefix at about a tenth of the input price, and every change
//! to an earlier part of a request re-bills everything after it. Pruning is such a change, so it
//! decides in epochs, the way Anthropic's context editing asks for `clear_at_least` ("clear
//! enough tokens to make the cache invalidation worthwhile"):
//!
//! - the candidates (stale oversized tool results, old attachments) are listed in the order they
//!   became prunable ([`super::request`]); as the log grows the list only grows at its end;
//! - walking the list, a running sum of freed tokens (the candidate's estimate minus its
//!   placeholder's) closes an epoch each time it reaches the minimum ([`epoch_minimum`]:
//!   [`PRUNE_EPOCH_MIN_FREED_TOKENS`], or [`PRUNE_EPOCH_MIN_FREED_SHARE_PERCENT`] of the history
//!   budget when that is less), and the sum restarts after the boundary;
//! - every candidate up to the last boundary is pruned; the candidates after it keep their
//!   bytes until their own epoch closes.
//!
//! Invariant 1: a boundary depends only on the candidates before it (and the session's budget),
//! so appending candidates never moves a closed boundary. Invariant 2: the pruned set changes only when a new boundary
//! closes, and the candidates it adds free at least the minimum together. Between those
//! moments, the request for step n+1 is the request for step n plus what was appended.

use serde::Serialize;

/// The least an epoch frees, in estimated tokens: twice [`super::STALE_RESULT_MIN_TOKENS`].
///
/// Anthropic's context editing leaves the choice of `clear_at_least` to the caller, with the
/// advice to clear enough to make the cache invalidation worthwhile. 8,192 means every epoch
/// removes at least two minimal oversized results (each above 4,096 tokens), or five to ten
/// screenshots (765 to 1,600 tokens each), so a cache break is always paid for by a large cut;
/// and the backlog that still keeps its bytes stays below 8,192 tokens plus one candidate
/// (about 4% of a 200,000-token window, a sixth of a 50,000-token history budget), which bounds
/// what the budget pays for cache stability. A larger minimum would break the cache more rarely
/// but hold more stale bytes in small windows.
pub const PRUNE_EPOCH_MIN_FREED_TOKENS: u64 = 8_192;

/// Share of the history budget, in percent, that also closes an epoch when it is less than
/// [`PRUNE_EPOCH_MIN_FREED_TOKENS`] (budgets under 32,768 tokens).
///
/// In a small window 8,192 freed tokens are more than the whole request: an 8k window's history
/// budget is 6,000, so no epoch could ever close and masked observations (results above
/// [`MASKED_RESULT_MIN_TOKENS`](super::MASKED_RESULT_MIN_TOKENS))
/// would never leave the request; compaction (a full cache break plus a summary call) would come
/// first, every few steps. A quarter of the budget is still a large cut for that request (the
/// break re-bills at most one budget), it leaves at most a quarter of the budget in the backlog
/// that keeps its bytes, and it closes an epoch every few steps of a long turn, far more rarely
/// than a compaction would come without it.
pub const PRUNE_EPOCH_MIN_FREED_SHARE_PERCENT: u64 = 25;

/// The least an epoch frees for a history budget of `history_budget` tokens:
/// [`PRUNE_EPOCH_MIN_FREED_TOKENS`], or [`PRUNE_EPOCH_MIN_FREED_SHARE_PERCENT`] of the budget
/// when that is less (at least one token).
///
/// ```
/// use contextfold_core::projection::{PRUNE_EPOCH_MIN_FREED_TOKENS, epoch_minimum};
/// assert_eq!(epoch_minimum(6_000), 1_500);
/// assert_eq!(epoch_minimum(150_000), PRUNE_EPOCH_MIN_FREED_TOKENS);
/// assert_eq!(epoch_minimum(u64::MAX), PRUNE_EPOCH_MIN_FREED_TOKENS);
/// ```
pub fn epoch_minimum(history_budget: u64) -> u64 {
    (history_budget.saturating_mul(PRUNE_EPOCH_MIN_FREED_SHARE_PERCENT) / 100)
        .clamp(1, PRUNE_EPOCH_MIN_FREED_TOKENS)
}

/// Where the epochs over a candidate list end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EpochCut {
    /// Candidates pruned: the list's prefix up to the last closed boundary.
    pub pruned: usize,
    /// Closed epochs (boundaries).
    pub epochs: usize,
    /// Tokens freed by the pruned candidates.
    pub freed_tokens: u64,
}

/// Closes the epochs over the freed tokens of each candidate, in candidate order, at the
/// unbudgeted minimum [`PRUNE_EPOCH_MIN_FREED_TOKENS`] (see the module docs).
///
/// ```
/// use contextfold_core::projection::{PRUNE_EPOCH_MIN_FREED_TOKENS, close_epochs};
/// let half = PRUNE_EPOCH_MIN_FREED_TOKENS / 2;
/// let cut = close_epochs([half, half, half]);
/// assert_eq!((cut.pruned, cut.epochs), (2, 1));
/// ```
pub fn close_epochs(freed: impl IntoIterator<Item = u64>) -> EpochCut {
    close_epochs_at(freed, PRUNE_EPOCH_MIN_FREED_TOKENS)
}

/// [`close_epochs`] with a given minimum per epoch (see [`epoch_minimum`]).
pub fn close_epochs_at(freed: impl IntoIterator<Item = u64>, minimum: u64) -> EpochCut {
    let mut cut = EpochCut::default();
    let (mut seen, mut running, mut total) = (0usize, 0u64, 0u64);
    for tokens in freed {
        seen += 1;
        running = running.saturating_add(tokens);
        total = total.saturating_add(tokens);
        if running >= minimum.max(1) {
            cut = EpochCut { pruned: seen, epochs: cut.epochs + 1, freed_tokens: total };
            running = 0;
        }
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: u64 = PRUNE_EPOCH_MIN_FREED_TOKENS;

    /// Every boundary of `freed`: the candidate count pruned after each epoch.
    fn boundaries(freed: &[u64]) -> Vec<usize> {
        (1..=freed.len())
            .map(|len| close_epochs(freed[..len].iter().copied()))
            .filter(|cut| cut.pruned > 0)
            .map(|cut| cut.pruned)
            .fold(Vec::new(), |mut all, pruned| {
                if all.last() != Some(&pruned) {
                    all.push(pruned);
                }
                all
            })
    }

    #[test]
    fn nothing_is_pruned_below_the_minimum() {
        assert_eq!(close_epochs([]), EpochCut::default());
        assert_eq!(close_epochs([MIN - 1]).pruned, 0);
        assert_eq!(close_epochs([MIN / 4, MIN / 4, MIN / 4]).pruned, 0);
        assert_eq!(close_epochs([MIN]), EpochCut { pruned: 1, epochs: 1, freed_tokens: MIN });
        assert_eq!(close_epochs([0, 0, 0]).pruned, 0, "free candidates never close an epoch");
    }

    #[test]
    fn candidates_after_the_last_boundary_keep_their_bytes() {
        let cut = close_epochs([MIN / 2, MIN / 2, MIN / 2, MIN * 3, 10, 10]);
        assert_eq!(cut, EpochCut { pruned: 4, epochs: 2, freed_tokens: MIN * 9 / 2 });
    }

    #[test]
    fn boundaries_never_move_as_candidates_are_appended() {
        // A deterministic pseudo-random list of freed amounts around the minimum.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let freed: Vec<u64> = (0..400)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state % (MIN * 3 / 2)
            })
            .collect();
        let mut previous = Vec::new();
        for len in 0..=freed.len() {
            let now = boundaries(&freed[..len]);
            assert_eq!(&now[..previous.len()], &previous[..], "an earlier boundary moved");
            assert!(now.len() <= previous.len() + 1, "one append closes at most one epoch");
            previous = now;
        }
        // Each epoch frees at least the minimum.
        let mut start = 0;
        for end in previous {
            assert!(freed[start..end].iter().sum::<u64>() >= MIN);
            start = end;
        }
    }
}
