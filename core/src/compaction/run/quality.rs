//! What a text step does with a valid summary: the source-bearing quality gate, the one repair
//! request that names what an LLM summary left out, the projection manifest, and the decay
//! trigger that re-compacts a rolling chain from the start of the log.
//!
//! # Re-compaction on decay
//!
//! Each text checkpoint's manifest records `covered`, the retention of the artifacts of its
//! whole covered prefix (the newest [`crate::quality::COVERED_SCORE_WINDOW`] events), and
//! `chainBestPercent`, the best such figure since the chain's last full compaction. An LLM's
//! rolling summary rewritten many times drifts: when the latest checkpoint's covered percent
//! has fallen [`RECOMPACT_DECAY_POINTS`] or more below the chain's best and below the gate's
//! threshold,
//! the next compaction folds the log again from its start (the earliest high water) with no
//! previous summary, so what the chain dropped can come back from the source. It does so only
//! when that whole prefix fits one summarizer request; otherwise it rolls on as before and says
//! why. The re-compacted checkpoint starts a new chain (its own covered score is the new best),
//! so a re-compaction that cannot do better is not repeated.

use super::{Phase, Run, TextAttempt};
use crate::budget::TokenEstimator;
use crate::checkpoint::{CheckpointProjection, MANIFEST_VERSION, ProjectionManifest};
use crate::compaction::extractive::EXTRACTIVE_PRODUCER;
use crate::compaction::summary_request::{
    SummaryPurpose, SummaryRequest, build_retention_repair_request, build_summary_request,
    request_shape_hash,
};
use crate::compaction::summary_template::SUMMARY_PROMPT_VERSION;
use crate::diagnostics::{Diagnostic, ReasonCode};
use crate::quality::gate::{RETENTION_THRESHOLD_PERCENT, by_priority};
use crate::quality::{GateOutcome, covered_score, gate_summary};

/// Points of covered retention a rolling chain may lose below its best before the next
/// compaction re-compacts from the start of the log.
pub(crate) const RECOMPACT_DECAY_POINTS: u32 = 20;

impl<E: TokenEstimator> Run<'_, E> {
    /// Whether this step re-compacts from the start of the log, and why: the usable checkpoint
    /// is over the current budget with nothing new to fold ([`ReasonCode::RecompressForBudget`],
    /// every summarizer), or its chain decayed (see the module docs). Only the first step of a
    /// transaction is considered.
    pub(super) fn recompaction_due(&self) -> Option<(ReasonCode, String)> {
        if !self.recorded.is_empty() || self.recompaction_refused {
            return None;
        }
        if self.recompressing() {
            let why = "the checkpoint does not fit the current budget";
            return Some((ReasonCode::RecompressForBudget, why.into()));
        }
        // The extractive summarizer's chain does not drift: it re-selects by rule from what it
        // kept, and re-compacting it from the start measured worse (docs/performance.md).
        if self.input.summarizer_label.as_deref() == Some(EXTRACTIVE_PRODUCER) {
            return None;
        }
        let checkpoint = &self.usable.as_ref()?.checkpoint;
        checkpoint.summary()?;
        let quality = checkpoint.manifest.as_ref()?.quality.as_ref()?;
        let covered = quality.covered.percent();
        let decayed = covered + RECOMPACT_DECAY_POINTS <= quality.chain_best_percent
            && covered < RETENTION_THRESHOLD_PERCENT;
        decayed.then(|| {
            let why = format!(
                "checkpoint {} keeps {covered}% of what its chain covers, {} points below the \
                 chain's best of {}%",
                checkpoint.checkpoint_id,
                quality.chain_best_percent - covered,
                quality.chain_best_percent
            );
            (ReasonCode::QualityRecompaction, why)
        })
    }

    /// Whether a re-compaction (`code`) folds from the start of the log, given the request
    /// for that (`None`: the whole prefix does not fit one request). Recompressing for a smaller
    /// window prefers the source verbatim, then the old summary alone (a fresh fold with outputs
    /// left out loses what that summary was made from), then the fresh fold with outputs left
    /// out (when the old summary itself is too large to send).
    pub(super) fn fold_from_start(
        &self,
        code: ReasonCode,
        fresh: Option<&SummaryRequest>,
        previous_summary: Option<&str>,
        fold_start: usize,
    ) -> bool {
        let Some(fresh) = fresh else { return false };
        let verbatim = fresh.omitted_tool_results == 0 && fresh.omitted_payloads.is_empty();
        if code != ReasonCode::RecompressForBudget || verbatim || previous_summary.is_none() {
            return true;
        }
        let carried = self.summarized(fold_start, fold_start, true);
        build_summary_request(previous_summary, &carried, self.input_window(), &self.estimator)
            .is_err()
    }

    /// A re-compaction's summary was refused: the step starts again, rolling on the latest
    /// summary as it would have without the trigger, so the trigger never costs a compaction.
    pub(super) fn roll_on_instead(&mut self, why: String) {
        self.diagnostics.push(Diagnostic::new(
            ReasonCode::QualityRecompaction,
            format!("the re-compaction's summary was refused ({why}); rolling on instead"),
        ));
        self.recompaction_refused = true;
        self.set_attempt_result(ReasonCode::QualityRecompaction);
        self.text = None;
        self.start_text();
    }

    /// The manifest of a provider-native checkpoint: identity only, no gate (opaque state).
    pub(super) fn native_manifest(&self) -> ProjectionManifest {
        ProjectionManifest {
            version: MANIFEST_VERSION,
            summarizer: format!("openai-codex:{}", self.input.provider.model_id),
            prompt_version: None,
            request_shape: crate::digest::sha256_text(b"openai_codex_remote_v2"),
            estimator: self.estimator.name(),
            quality: None,
        }
    }

    /// Handles a valid summary: after a retention repair, keeps whichever of the two keeps
    /// more; otherwise gates it and, for an LLM summary still below the threshold with the
    /// exact-artifacts list appended (the target had no room for enough of it), sends the one
    /// repair request naming what is still missing.
    pub(super) fn on_valid_summary(&mut self, text: &mut TextAttempt, summary: &str) {
        let end = self.prefix_end();
        let fold = self.summarized(text.fold_start, end, text.previous_summary.is_some());
        let replayed = self.replayed_text(end);
        let gated = gate_summary(summary, &fold, &replayed, self.summary_target(), &self.estimator);
        if let Some(first) = text.before_repair.take() {
            let better = if gated.after.overall().kept >= first.after.overall().kept {
                gated
            } else {
                first
            };
            self.accept_summary(text, better);
            return;
        }
        let llm = self.input.summarizer_label.as_deref() != Some(EXTRACTIVE_PRODUCER);
        // A repair asks for a longer summary: only worth it when this one kept to its target.
        let within_target = self.estimator.estimate_text(&gated.text) <= self.summary_target();
        if llm && within_target && gated.still_below_threshold() && !text.repaired {
            let missing = gated.after.lost.len();
            let ordered = by_priority(&gated.after.lost);
            let window = self.input_window();
            let repair =
                build_retention_repair_request(&text.request, &ordered, window, &self.estimator);
            if let Some((request, listed)) = repair {
                text.repaired = true;
                let overall = gated.after.overall();
                self.diagnostics.push(Diagnostic::new(
                    ReasonCode::SummaryRetentionRepair,
                    format!(
                        "the summary keeps {}/{} folded artifacts verbatim, below {}% even with \
                         the exact-artifacts list; one repair request names {} of the {} missing",
                        overall.kept, overall.total, RETENTION_THRESHOLD_PERCENT, listed, missing
                    ),
                ));
                text.request = request.clone();
                let effect =
                    self.summarize_effect(request, &text.previous_summary, text.fold_start);
                self.phase = Phase::Ready(effect);
                text.before_repair = Some(gated);
                return;
            }
        }
        self.accept_summary(text, gated);
    }

    /// The repair request failed (invalid answer, provider error): the first summary stands.
    pub(super) fn accept_first_summary(&mut self, text: &mut TextAttempt, why: String) {
        let Some(first) = text.before_repair.take() else { return };
        self.diagnostics.push(Diagnostic::new(
            ReasonCode::SummaryRetentionRepair,
            format!("the repair request failed ({why}); the first summary stands"),
        ));
        self.accept_summary(text, first);
    }

    /// Reports the gate's scores and builds the checkpoint with its manifest.
    fn accept_summary(&mut self, text: &TextAttempt, gated: GateOutcome) {
        self.diagnostics.push(Diagnostic::new(ReasonCode::SummaryRetention, gated.detail()));
        let end = self.prefix_end();
        let covered =
            covered_score(&self.input.events[..end], &gated.text, &self.replayed_text(end));
        let chain_best = match (&text.previous_summary, text.recompacted) {
            (Some(_), false) => self
                .usable
                .as_ref()
                .and_then(|u| u.checkpoint.manifest.as_ref())
                .and_then(|m| m.quality.as_ref())
                .map(|q| q.chain_best_percent),
            _ => None,
        };
        let repair_requested = text.request.purpose == SummaryPurpose::RetentionRepair;
        let record = gated.record(covered, chain_best, repair_requested, text.recompacted);
        let manifest = ProjectionManifest {
            version: MANIFEST_VERSION,
            summarizer: self.producer(),
            prompt_version: Some(SUMMARY_PROMPT_VERSION),
            request_shape: request_shape_hash(&text.request),
            estimator: self.estimator.name(),
            quality: Some(record),
        };
        self.build_checkpoint(CheckpointProjection::Summary(gated.text), Some(manifest));
    }
}
