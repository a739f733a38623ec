//! The live head beside a text summary.
//!
//! A checkpoint that ends inside a turn is replayed with that turn's user messages and notes
//! verbatim right after it (its live head, [`crate::projection::Remainder`]). The summary need
//! not repeat them: the effect names them ([`SummarizeEffect::replayed_head`]), the extractive
//! summarizer points at them instead of quoting them, and the quality gate counts what they
//! carry as kept. When a later rolling step folds into a later turn, that head is no longer
//! replayed: the step takes those events back in ([`SummarizeEffect::carried`]), so a task
//! the previous summary only pointed at is quoted again.
//!
//! [`SummarizeEffect::replayed_head`]: crate::compaction::SummarizeEffect::replayed_head
//! [`SummarizeEffect::carried`]: crate::compaction::SummarizeEffect::carried

use std::borrow::Cow;

use super::Run;
use crate::budget::TokenEstimator;
use crate::event::{EventContent, RuntimeEvent};
use crate::projection::live_head::live_head_indexes;

impl<E: TokenEstimator> Run<'_, E> {
    /// Indexes of the events replayed verbatim beside a checkpoint over `events[..end]`.
    pub(super) fn replayed_head(&self, end: usize) -> Vec<usize> {
        live_head_indexes(&self.input.events, self.sizes.prior_end, end)
    }

    /// Indexes of the events the previous checkpoint left to its live head that a checkpoint
    /// over `events[..end]` no longer replays; none unless the step rolls the previous summary
    /// forward (`rolled`).
    pub(super) fn carried(&self, end: usize, rolled: bool) -> Vec<usize> {
        let Some(usable) = self.usable.as_ref().filter(|_| rolled) else {
            return Vec::new();
        };
        let kept = self.replayed_head(end);
        self.replayed_head(usable.covered).into_iter().filter(|i| !kept.contains(i)).collect()
    }

    /// What a text summary over `events[fold_start..end]` takes in: the carried events, then
    /// the fold (borrowed when nothing is carried, which is every step but the first one past
    /// a turn the previous checkpoint split).
    pub(super) fn summarized(
        &self,
        fold_start: usize,
        end: usize,
        rolled: bool,
    ) -> Cow<'_, [RuntimeEvent]> {
        let fold = &self.input.events[fold_start..end];
        let carried = self.carried(end, rolled);
        if carried.is_empty() {
            return Cow::Borrowed(fold);
        }
        let carried = carried.iter().map(|&i| self.input.events[i].clone());
        Cow::Owned(carried.chain(fold.iter().cloned()).collect())
    }

    /// The text of the live head replayed beside a checkpoint over `events[..end]`: what the
    /// quality gate counts as kept besides the summary.
    pub(super) fn replayed_text(&self, end: usize) -> String {
        let mut text = String::new();
        for index in self.replayed_head(end) {
            if let Some(line) = head_text(&self.input.events[index].content) {
                text.push_str(line);
                text.push('\n');
            }
        }
        text
    }
}

/// The text a live-head event shows the model.
fn head_text(content: &EventContent) -> Option<&str> {
    match content {
        EventContent::UserText { text, .. }
        | EventContent::SystemNote { text }
        | EventContent::RuntimeNote { text, .. } => Some(text),
        _ => None,
    }
}
