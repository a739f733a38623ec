//! Taking a compaction back without touching history: a `checkpoint_retracted` event of the
//! AgentRun ledger names a recorded checkpoint, and recovery selects as if it (and every
//! checkpoint built on it) had never been recorded. The RuntimeEvent log is never changed, the
//! retracted checkpoint's own record stays in the ledger, and the next projection uses the
//! previous valid checkpoint, or the raw source when none is left.
//!
//! A checkpoint built on a retracted one (its `previousCheckpointId` chain passes through it)
//! carries what was taken back (a rolling summary starts from its predecessor's), so it is
//! retracted with it.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// One `checkpoint_retracted` event of the AgentRun ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetractionEvent {
    /// Id of the AgentRun event.
    pub event_id: String,
    /// Session the event was recorded for.
    pub session_id: String,
    /// When the event was recorded, in milliseconds since the Unix epoch (host clock).
    pub recorded_at_ms: u64,
    /// The checkpoint taken back.
    pub checkpoint_id: String,
    /// Why, as the user gave it.
    pub reason: String,
}

/// The payload of a `checkpoint_retracted` AgentRun event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetractionPayload {
    /// The checkpoint taken back.
    pub checkpoint_id: String,
    /// Why, as the user gave it.
    pub reason: String,
}

/// Which of `checkpoints` (`(checkpoint id, previous checkpoint id)`, any order) the retractions
/// of `session_id` take back, by position, with why: named by a retraction, or built on one
/// that is.
pub(crate) fn retracted_positions(
    session_id: &str,
    checkpoints: &[(&str, Option<&str>)],
    retractions: &[RetractionEvent],
) -> HashMap<usize, String> {
    let mut why: HashMap<&str, String> = HashMap::new();
    for retraction in retractions.iter().filter(|r| r.session_id == session_id) {
        why.entry(retraction.checkpoint_id.as_str()).or_insert_with(|| {
            format!("retracted by event `{}`: {}", retraction.event_id, retraction.reason)
        });
    }
    // Descendants, to a fixed point (a lineage is a short chain; cycles end it).
    loop {
        let mut grew = false;
        for &(id, previous) in checkpoints {
            if why.contains_key(id) {
                continue;
            }
            if let Some(previous) = previous.filter(|p| why.contains_key(p)) {
                why.insert(id, format!("built on retracted checkpoint `{previous}`"));
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    checkpoints
        .iter()
        .enumerate()
        .filter_map(|(position, (id, _))| why.get(id).map(|detail| (position, detail.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retraction(checkpoint_id: &str) -> RetractionEvent {
        RetractionEvent {
            event_id: format!("r-{checkpoint_id}"),
            session_id: "s".into(),
            recorded_at_ms: 1,
            checkpoint_id: checkpoint_id.into(),
            reason: "lost the task".into(),
        }
    }

    #[test]
    fn a_retraction_takes_back_its_checkpoint_and_what_was_built_on_it() {
        let chain = [("a", None), ("b", Some("a")), ("c", Some("b")), ("d", Some("a"))];
        let taken = retracted_positions("s", &chain, &[retraction("b")]);
        let mut positions: Vec<usize> = taken.keys().copied().collect();
        positions.sort_unstable();
        assert_eq!(positions, [1, 2]);
        assert!(taken[&1].contains("lost the task"));
        assert!(taken[&2].contains("built on retracted checkpoint `b`"));
    }

    #[test]
    fn another_session_s_retraction_changes_nothing() {
        let mut other = retraction("a");
        other.session_id = "t".into();
        assert!(retracted_positions("s", &[("a", None)], &[other]).is_empty());
    }
}
