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
pub struct GateOutcome {
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
    pub fn detail(&self) -> String {
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

/// Scores `summary` against the artifacts of `fold` and, below the threshold, appends the lost
/// ones (by class priority, newest first) while the result stays within `target_tokens`.
pub fn gate_summary(
    summary: &str,
    fold: &[RuntimeEvent],
    target_tokens: u64,
    estimator: &dyn TokenEstimator,
) -> GateOutcome {
    let artifacts = extract_artifacts(fold);
    let before = Retention::measure(&artifacts, summary);
    let overall = before.overall();
    let below = u64::from(overall.kept) * 100
        < u64::from(overall.total) * u64::from(RETENTION_THRESHOLD_PERCENT);
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
    let after = Retention::measure(&artifacts, &text);
    GateOutcome { text, before, after, appended }
}

/// `lost` in class priority order, newest first within a class.
fn by_priority(lost: &[Artifact]) -> Vec<&Artifact> {
    let mut ordered: Vec<&Artifact> = lost.iter().collect();
    ordered.sort_by_key(|a| (a.class, std::cmp::Reverse(a.last_seen)));
    ordered
}

/// Closes `text` with a plain line when its last line, copied from the source, ends like a cut
/// (an ellipsis, a truncation marker, a trailing backslash), so the summary is never mistaken
/// for a truncated one.
pub fn end_cleanly(text: &mut String) {
    let end = text.trim_end().to_ascii_lowercase();
    if TRUNCATION_MARKERS.iter().any(|marker| end.ends_with(marker)) || end.ends_with('\\') {
        text.push_str("- (end of the list)\n");
    }
}
