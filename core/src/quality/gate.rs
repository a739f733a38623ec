//! The source-bearing quality gate: after every text summary, LLM or extractive, it measures
//! which artifacts of the newly folded events the summary keeps verbatim; below
//! [`RETENTION_THRESHOLD_PERCENT`] it appends the lost ones, copied exactly from the source, as
//! an exact-artifacts list at the end of the summary (inside its last section, Critical
//! Context) while the summary stays within its target. It never rewrites what the summarizer
//! wrote and never adds anything the folded events do not contain, so the summary does not
//! become a new source of truth; the scores before and after are reported to the host.

use super::artifacts::{Artifact, ArtifactClass, extract_artifacts};
use super::retention::Retention;
use crate::budget::TokenEstimator;
use crate::checkpoint::{MAX_LOST_LISTED, QualityRecord, Score};
use crate::compaction::summary_validation::TRUNCATION_MARKERS;
use crate::event::RuntimeEvent;

/// Version of the gate's rules (artifact classes, threshold, list format), reported with its
/// scores.
pub const QUALITY_GATE_VERSION: u32 = 1;

/// Pooled share of the folded artifacts, in percent, below which the gate appends the lost
/// ones.
pub const RETENTION_THRESHOLD_PERCENT: u32 = 80;

/// The heading line of the appended list (a list item, so the summary keeps its sections).
pub const EXACT_ARTIFACTS_LINE: &str =
    "- Exact artifacts of the covered events (copied from the log by the quality gate):";

/// What the gate measured and did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GateOutcome {
    /// The summary, with the exact-artifacts list when one was appended.
    pub text: String,
    /// Retention of the summarizer's own text.
    pub before: Retention,
    /// Retention of [`GateOutcome::text`].
    pub after: Retention,
    /// Artifacts appended.
    pub appended: usize,
}

impl GateOutcome {
    /// A one-line report: the gate version, overall and per-class scores before and after.
    pub(crate) fn detail(&self) -> String {
        let classes = |r: &Retention| {
            ArtifactClass::ALL
                .iter()
                .filter(|c| r.class(**c).total > 0)
                .map(|c| format!("{} {}/{}", c.name(), r.class(*c).kept, r.class(*c).total))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (before, after) = (self.before.overall(), self.after.overall());
        format!(
            "quality gate v{QUALITY_GATE_VERSION}: the summary keeps {}/{} folded artifacts \
             verbatim ({}); {} appended from the log, now {}/{} ({}); {} still lost",
            before.kept,
            before.total,
            classes(&self.before),
            self.appended,
            after.kept,
            after.total,
            classes(&self.after),
            self.after.lost.len()
        )
    }
}

impl GateOutcome {
    /// The manifest's record of this outcome. `covered` is the recorded summary's retention of
    /// the whole covered prefix ([`covered_score`]), `chain_best_percent` the high water of the
    /// chain it continues (`None` when it starts one).
    pub(crate) fn record(
        &self,
        covered: Score,
        chain_best_percent: Option<u32>,
        repair_requested: bool,
        recompacted: bool,
    ) -> QualityRecord {
        let lost = by_priority(&self.after.lost)
            .into_iter()
            .take(MAX_LOST_LISTED)
            .map(|a| format!("{}: {}", a.class.name(), a.text))
            .collect();
        QualityRecord {
            gate_version: QUALITY_GATE_VERSION,
            threshold_percent: RETENTION_THRESHOLD_PERCENT,
            before: self.before.scores(),
            after: self.after.scores(),
            covered,
            chain_best_percent: chain_best_percent.unwrap_or(0).max(covered.percent()),
            lost,
            appended: u32::try_from(self.appended).unwrap_or(u32::MAX),
            repair_requested,
            recompacted,
        }
    }

    /// Whether the gated text (the exact-artifacts list appended) still keeps less than
    /// [`RETENTION_THRESHOLD_PERCENT`]: the target had no room for enough of the list.
    pub(crate) fn still_below_threshold(&self) -> bool {
        is_below(&self.after)
    }
}

/// Retention of the artifacts of `prefix` (its newest [`COVERED_SCORE_WINDOW`] events) in
/// `summary` and the live head `replayed` beside it: what a checkpoint over `prefix` still
/// knows of all it covers.
pub(crate) fn covered_score(prefix: &[RuntimeEvent], summary: &str, replayed: &str) -> Score {
    let newest = &prefix[prefix.len().saturating_sub(COVERED_SCORE_WINDOW)..];
    let seen = format!("{summary}\n{replayed}");
    let overall = Retention::measure(&extract_artifacts(newest), &seen).overall();
    Score { kept: overall.kept, total: overall.total }
}

/// The covered score looks at this many newest covered events at most, so its cost stays
/// bounded on long logs.
pub(crate) const COVERED_SCORE_WINDOW: usize = 2_000;

fn is_below(retention: &Retention) -> bool {
    let overall = retention.overall();
    u64::from(overall.kept) * 100
        < u64::from(overall.total) * u64::from(RETENTION_THRESHOLD_PERCENT)
}

/// Scores `summary` against the artifacts of `fold` and, below the threshold, appends the lost
/// ones (by class priority, newest first) while the result stays within `target_tokens`. What
/// the live head `replayed` beside the checkpoint quotes counts as kept.
pub(crate) fn gate_summary(
    summary: &str,
    fold: &[RuntimeEvent],
    replayed: &str,
    target_tokens: u64,
    estimator: &dyn TokenEstimator,
) -> GateOutcome {
    let artifacts = extract_artifacts(fold);
    let seen = |text: &str| format!("{text}\n{replayed}");
    let before = Retention::measure(&artifacts, &seen(summary));
    let below = is_below(&before);
    let mut text = summary.trim_end().to_owned();
    let mut appended = 0;
    if below {
        let header = format!("\n{EXACT_ARTIFACTS_LINE}");
        let mut used = estimator.estimate_text(&text) + estimator.estimate_text(&header);
        let mut lines = String::new();
        for artifact in by_priority(&before.lost) {
            if lines.contains(artifact.text.as_str()) {
                continue;
            }
            let line = format!("\n- {}: {}", artifact.class.name(), artifact.text);
            let cost = estimator.estimate_text(&line) + 1;
            if used + cost <= target_tokens {
                used += cost;
                lines.push_str(&line);
                appended += 1;
            }
        }
        if appended > 0 {
            text.push_str(&header);
            text.push_str(&lines);
        }
    }
    text.push('\n');
    end_cleanly(&mut text);
    let after = Retention::measure(&artifacts, &seen(&text));
    GateOutcome { text, before, after, appended }
}

/// Tokens the exact artifacts of `fold` take, each listed once as the gate lists them: what a
/// summary needs room for to keep them all verbatim.
pub(crate) fn listed_artifact_tokens(fold: &[RuntimeEvent], estimator: &dyn TokenEstimator) -> u64 {
    let mut seen = std::collections::HashSet::new();
    extract_artifacts(fold)
        .iter()
        .filter(|artifact| seen.insert(artifact.text.as_str()))
        .map(|artifact| {
            estimator.estimate_text(&format!("\n- {}: {}", artifact.class.name(), artifact.text))
                + 1
        })
        .sum()
}

/// `lost` in class priority order, newest first within a class.
pub(crate) fn by_priority(lost: &[Artifact]) -> Vec<&Artifact> {
    let mut ordered: Vec<&Artifact> = lost.iter().collect();
    crate::sort::sort_by_key(&mut ordered, |a| (a.class, std::cmp::Reverse(a.last_seen)));
    ordered
}

/// Closes `text` with a plain line when its last line, copied from the source, ends like a cut
/// (an ellipsis, a truncation marker, a trailing backslash), so the summary is never mistaken
/// for a truncated one.
pub(crate) fn end_cleanly(text: &mut String) {
    let end = text.trim_end().to_ascii_lowercase();
    if TRUNCATION_MARKERS.iter().any(|marker| end.ends_with(marker)) || end.ends_with('\\') {
        text.push_str("- (end of the list)\n");
    }
}
