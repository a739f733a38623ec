//! Cold-start recovery: choosing the current checkpoint from the AgentRun ledger.
//!
//! When the bounded checkpoint projection is missing or damaged, the host scans the session's
//! `history_compact_checkpoint_recorded` events and calls [`select_recovered_checkpoint`]:
//!
//! 1. Only schema-valid events count. A payload that does not parse, an unsupported schema
//!    version, an event of another session, or a payload whose `sessionId` differs from its
//!    event's is listed in [`Recovery::skipped`] with a reason, never dropped silently. A repeated
//!    `checkpointId` keeps its earliest record; later repeats are skipped.
//! 2. The largest `coverage.eventCount` wins, not the latest write with stale coverage.
//! 3. Among checkpoints with equal coverage (same counts, through-boundary and digest), the
//!    previousCheckpointId chains are followed and their tip chosen. A predecessor's legitimate
//!    successor is its earliest-recorded valid successor ([`is_valid_successor`]): once it was
//!    written the predecessor stopped being current, so a later write naming the same predecessor
//!    lost the compare-and-swap and is skipped as `successor_conflict`, with its descendants.
//! 4. Remaining ties (several chains, or forks) go to the larger `recorded_at_ms`, then the larger
//!    event id, then the larger checkpoint id: the latest write wins.
//! 5. Two different coverages at the largest event count are a fork (the ledger disagrees with
//!    itself about the source). The tie rules pick one; every event of the losing coverage is
//!    skipped as `checkpoint_fork` so the host can report it. Recovery never sees the canonical
//!    RuntimeEvents: the prefix match run afterwards remains the authority on which one is true.
//!
//! The result does not depend on the order of `events` (only the order of `skipped` does).

mod retraction;
mod successor;

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::checkpoint::{CheckpointParseError, Coverage, HistoryCompactCheckpoint};
use crate::diagnostics::{Diagnostic, ReasonCode};

pub use retraction::{RetractionEvent, RetractionPayload};
pub use successor::{SuccessorError, is_valid_successor};

/// One `history_compact_checkpoint_recorded` event of the AgentRun ledger (other keys are
/// ignored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedCheckpointEvent {
    /// Id of the AgentRun event.
    pub event_id: String,
    /// Session the event was recorded for.
    pub session_id: String,
    /// When the event was recorded, in milliseconds since the Unix epoch (host clock).
    pub recorded_at_ms: u64,
    /// The checkpoint JSON ([`HistoryCompactCheckpoint::from_value`]). A JSON string is read as
    /// checkpoint JSON text, for ledgers that store the payload as text.
    pub payload: Value,
}

/// Why a recorded checkpoint event was not selected as valid. Serialized as its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SkipReason {
    /// The payload is text that is not JSON (`checkpoint_syntax`).
    PayloadSyntax,
    /// The payload has no `schemaVersion` (`checkpoint_missing_schema_version`).
    MissingSchemaVersion,
    /// The payload's schema version is not understood (`checkpoint_schema_unsupported`).
    SchemaUnsupported,
    /// The payload does not have the checkpoint shape (`checkpoint_invalid`).
    PayloadInvalid,
    /// The event was recorded for another session (`session_mismatch`).
    WrongSession,
    /// The payload's `sessionId` differs from its event's (`checkpoint_session_mismatch`).
    PayloadSessionMismatch,
    /// An earlier record already carries this `checkpointId` (`checkpoint_id_duplicate`).
    DuplicateCheckpointId,
    /// The checkpoint names a predecessor that already had an earlier successor, or descends
    /// from one that did, or sits on a lineage cycle (`successor_conflict`).
    SuccessorConflict,
    /// Another coverage at the same largest event count was selected (`checkpoint_fork`).
    Fork,
    /// A `checkpoint_retracted` event took it back, or it was built on one that was
    /// (`checkpoint_retracted`).
    Retracted,
}

impl SkipReason {
    /// The stable snake_case code.
    pub fn code(self) -> &'static str {
        match self {
            SkipReason::PayloadSyntax => "checkpoint_syntax",
            SkipReason::MissingSchemaVersion => "checkpoint_missing_schema_version",
            SkipReason::SchemaUnsupported => "checkpoint_schema_unsupported",
            SkipReason::PayloadInvalid => "checkpoint_invalid",
            SkipReason::WrongSession => "session_mismatch",
            SkipReason::PayloadSessionMismatch => "checkpoint_session_mismatch",
            SkipReason::DuplicateCheckpointId => "checkpoint_id_duplicate",
            SkipReason::SuccessorConflict => "successor_conflict",
            SkipReason::Fork => "checkpoint_fork",
            SkipReason::Retracted => "checkpoint_retracted",
        }
    }

    /// The diagnostic code: [`ReasonCode::CheckpointFork`] for a fork, otherwise
    /// [`ReasonCode::RecoveryEventSkipped`].
    pub fn reason_code(self) -> ReasonCode {
        match self {
            SkipReason::Fork => ReasonCode::CheckpointFork,
            _ => ReasonCode::RecoveryEventSkipped,
        }
    }

    fn from_parse_error(error: &CheckpointParseError) -> Self {
        match error {
            CheckpointParseError::Syntax(_) => SkipReason::PayloadSyntax,
            CheckpointParseError::MissingSchemaVersion => SkipReason::MissingSchemaVersion,
            CheckpointParseError::UnsupportedSchemaVersion(_) => SkipReason::SchemaUnsupported,
            _ => SkipReason::PayloadInvalid,
        }
    }
}

impl Serialize for SkipReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.code())
    }
}

/// A recorded checkpoint event that recovery did not accept, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkippedCheckpoint {
    /// Id of the AgentRun event.
    pub event_id: String,
    /// Why it was skipped.
    pub reason: SkipReason,
    /// Human-readable detail.
    pub detail: String,
}

impl SkippedCheckpoint {
    /// The skip as a diagnostic (see [`SkipReason::reason_code`]).
    pub fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic::new(
            self.reason.reason_code(),
            format!("event `{}` skipped ({}): {}", self.event_id, self.reason.code(), self.detail),
        )
    }
}

/// The outcome of [`select_recovered_checkpoint`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Recovery {
    /// The recovered current checkpoint, if any valid one exists.
    pub selected: Option<HistoryCompactCheckpoint>,
    /// Id of the AgentRun event that recorded it.
    pub selected_event_id: Option<String>,
    /// Every event that was not accepted, in input order.
    pub skipped: Vec<SkippedCheckpoint>,
}

impl Recovery {
    /// One diagnostic per skipped event.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        self.skipped.iter().map(SkippedCheckpoint::to_diagnostic).collect()
    }
}

/// A schema-valid record.
struct Candidate<'a> {
    index: usize,
    event: &'a RecordedCheckpointEvent,
    checkpoint: HistoryCompactCheckpoint,
}

impl Candidate<'_> {
    /// Record order: recorded time, then event id, then checkpoint id (a total order on distinct
    /// checkpoints; later compares greater).
    fn record_order(&self, other: &Self) -> Ordering {
        (self.event.recorded_at_ms, &self.event.event_id, &self.checkpoint.checkpoint_id).cmp(&(
            other.event.recorded_at_ms,
            &other.event.event_id,
            &other.checkpoint.checkpoint_id,
        ))
    }
}

/// Selects the current checkpoint of `session_id` from its recorded checkpoint events (see the
/// module docs for the rules).
pub fn select_recovered_checkpoint(
    session_id: &str,
    events: &[RecordedCheckpointEvent],
) -> Recovery {
    select_recovered_checkpoint_with(session_id, events, &[])
}

/// [`select_recovered_checkpoint`] honouring the session's `checkpoint_retracted` events: a
/// retracted checkpoint, and every checkpoint built on it, is skipped (`checkpoint_retracted`)
/// before any other rule, so the previous valid checkpoint is selected, or none.
pub fn select_recovered_checkpoint_with(
    session_id: &str,
    events: &[RecordedCheckpointEvent],
    retractions: &[RetractionEvent],
) -> Recovery {
    let mut skipped: Vec<(usize, SkippedCheckpoint)> = Vec::new();
    let mut candidates = admit_valid(session_id, events, &mut skipped);
    drop_duplicate_ids(&mut candidates, &mut skipped);
    drop_retracted(session_id, &mut candidates, retractions, &mut skipped);

    // Largest coverage first; a coverage level whose checkpoints all sit on lineage cycles has
    // no tip, and the next lower level is tried.
    let mut counts: Vec<u64> =
        candidates.iter().map(|c| c.checkpoint.coverage.event_count).collect();
    crate::sort::sort_by(&mut counts, |a, b| b.cmp(a));
    counts.dedup();
    for count in counts {
        let level: Vec<&Candidate<'_>> =
            candidates.iter().filter(|c| c.checkpoint.coverage.event_count == count).collect();
        if let Some(winner) = select_at_level(&level, &mut skipped) {
            return finish(Some(winner), skipped);
        }
    }
    finish(None, skipped)
}

/// Selects among checkpoints of one event count: groups them by coverage, takes each group's
/// chain tip, picks the latest tip and records the other coverages as forks.
fn select_at_level<'c, 'a>(
    level: &[&'c Candidate<'a>],
    skipped: &mut Vec<(usize, SkippedCheckpoint)>,
) -> Option<&'c Candidate<'a>> {
    let mut groups: Vec<(&Coverage, Vec<&'c Candidate<'a>>)> = Vec::new();
    for &candidate in level {
        let coverage = &candidate.checkpoint.coverage;
        match groups.iter_mut().find(|(key, _)| *key == coverage) {
            Some((_, members)) => members.push(candidate),
            None => groups.push((coverage, vec![candidate])),
        }
    }
    let mut tips: Vec<(usize, &'c Candidate<'a>)> = Vec::new();
    for (group, (_, members)) in groups.iter().enumerate() {
        if let Some(tip) = chain_tip(members, skipped) {
            tips.push((group, tip));
        }
    }
    let (winning_group, winner) = tips.into_iter().max_by(|a, b| a.1.record_order(b.1))?;
    let already: HashSet<usize> = skipped.iter().map(|(index, _)| *index).collect();
    for (group, (coverage, members)) in groups.iter().enumerate() {
        if group == winning_group {
            continue;
        }
        for member in members.iter().filter(|m| !already.contains(&m.index)) {
            skipped.push(skip(
                member,
                SkipReason::Fork,
                format!(
                    "coverage of {} events through `{}` with digest {} conflicts with selected \
                     checkpoint `{}` (digest {})",
                    coverage.event_count,
                    coverage.through.runtime_event_id,
                    coverage.source_digest,
                    winner.checkpoint.checkpoint_id,
                    winner.checkpoint.coverage.source_digest
                ),
            ));
        }
    }
    Some(winner)
}

fn finish(
    winner: Option<&Candidate<'_>>,
    mut skipped: Vec<(usize, SkippedCheckpoint)>,
) -> Recovery {
    crate::sort::sort_by_key(&mut skipped, |(index, _)| *index);
    Recovery {
        selected: winner.map(|w| w.checkpoint.clone()),
        selected_event_id: winner.map(|w| w.event.event_id.clone()),
        skipped: skipped.into_iter().map(|(_, s)| s).collect(),
    }
}

fn skip(
    candidate: &Candidate<'_>,
    reason: SkipReason,
    detail: String,
) -> (usize, SkippedCheckpoint) {
    let event_id = candidate.event.event_id.clone();
    (candidate.index, SkippedCheckpoint { event_id, reason, detail })
}

/// Parses every event, keeping the schema-valid ones of `session_id`.
fn admit_valid<'a>(
    session_id: &str,
    events: &'a [RecordedCheckpointEvent],
    skipped: &mut Vec<(usize, SkippedCheckpoint)>,
) -> Vec<Candidate<'a>> {
    let mut candidates = Vec::new();
    for (index, event) in events.iter().enumerate() {
        let mut reject = |reason, detail| {
            let event_id = event.event_id.clone();
            skipped.push((index, SkippedCheckpoint { event_id, reason, detail }));
        };
        if event.session_id != session_id {
            let detail = format!("recorded for session `{}`, not `{session_id}`", event.session_id);
            reject(SkipReason::WrongSession, detail);
            continue;
        }
        let parsed = match &event.payload {
            Value::String(text) => HistoryCompactCheckpoint::from_json(text),
            other => HistoryCompactCheckpoint::from_value(other.clone()),
        };
        match parsed {
            Err(error) => reject(SkipReason::from_parse_error(&error), error.to_string()),
            Ok(checkpoint) if checkpoint.session_id != event.session_id => {
                let detail = format!(
                    "payload names session `{}` but the event was recorded for `{}`",
                    checkpoint.session_id, event.session_id
                );
                reject(SkipReason::PayloadSessionMismatch, detail);
            }
            Ok(checkpoint) => candidates.push(Candidate { index, event, checkpoint }),
        }
    }
    candidates
}

/// Keeps the earliest record of each checkpoint id; later repeats are skipped.
fn drop_duplicate_ids(
    candidates: &mut Vec<Candidate<'_>>,
    skipped: &mut Vec<(usize, SkippedCheckpoint)>,
) {
    let mut earliest: HashMap<&str, usize> = HashMap::new();
    for (position, candidate) in candidates.iter().enumerate() {
        let id = candidate.checkpoint.checkpoint_id.as_str();
        match earliest.get(id) {
            Some(&kept) if earlier_record(&candidates[kept], candidate) => {}
            _ => {
                earliest.insert(id, position);
            }
        }
    }
    let keep: Vec<bool> = (0..candidates.len())
        .map(|position| {
            earliest.get(candidates[position].checkpoint.checkpoint_id.as_str()) == Some(&position)
        })
        .collect();
    let mut kept = Vec::with_capacity(candidates.len());
    for (candidate, keep) in std::mem::take(candidates).into_iter().zip(keep) {
        if keep {
            kept.push(candidate);
        } else {
            let id = &candidate.checkpoint.checkpoint_id;
            let detail = format!("checkpoint `{id}` was already recorded by an earlier event");
            skipped.push(skip(&candidate, SkipReason::DuplicateCheckpointId, detail));
        }
    }
    *candidates = kept;
}

/// Skips every retracted candidate ([`retraction::retracted_positions`]).
fn drop_retracted(
    session_id: &str,
    candidates: &mut Vec<Candidate<'_>>,
    retractions: &[RetractionEvent],
    skipped: &mut Vec<(usize, SkippedCheckpoint)>,
) {
    if retractions.is_empty() {
        return;
    }
    let lineage: Vec<(&str, Option<&str>)> = candidates
        .iter()
        .map(|c| {
            (c.checkpoint.checkpoint_id.as_str(), c.checkpoint.previous_checkpoint_id.as_deref())
        })
        .collect();
    let mut taken = retraction::retracted_positions(session_id, &lineage, retractions);
    if taken.is_empty() {
        return;
    }
    let mut kept = Vec::with_capacity(candidates.len());
    for (position, candidate) in std::mem::take(candidates).into_iter().enumerate() {
        match taken.remove(&position) {
            Some(detail) => skipped.push(skip(&candidate, SkipReason::Retracted, detail)),
            None => kept.push(candidate),
        }
    }
    *candidates = kept;
}

/// Whether `a` was recorded before `b` (time, event id, then payload text for a total order).
fn earlier_record(a: &Candidate<'_>, b: &Candidate<'_>) -> bool {
    (a.event.recorded_at_ms, &a.event.event_id, a.checkpoint.to_json())
        <= (b.event.recorded_at_ms, &b.event.event_id, b.checkpoint.to_json())
}

/// The tip of the equal-coverage group's successor chains; conflicting branches are skipped.
fn chain_tip<'c, 'a>(
    members: &[&'c Candidate<'a>],
    skipped: &mut Vec<(usize, SkippedCheckpoint)>,
) -> Option<&'c Candidate<'a>> {
    let by_id: HashMap<&str, usize> =
        members.iter().enumerate().map(|(i, m)| (m.checkpoint.checkpoint_id.as_str(), i)).collect();
    // Valid predecessor (within the group) of each member, and the successors of each member in
    // record order; the first successor is the legitimate one.
    let mut predecessor: Vec<Option<usize>> = vec![None; members.len()];
    let mut successors: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, member) in members.iter().enumerate() {
        let named = member.checkpoint.previous_checkpoint_id.as_deref();
        if let Some(&p) = named.and_then(|id| by_id.get(id))
            && is_valid_successor(Some(&members[p].checkpoint), &member.checkpoint).is_ok()
        {
            predecessor[i] = Some(p);
            successors.entry(p).or_default().push(i);
        }
    }
    let mut next: Vec<Option<usize>> = vec![None; members.len()];
    for (p, list) in &mut successors {
        crate::sort::sort_by(list, |&a, &b| members[a].record_order(members[b]));
        next[*p] = list.first().copied();
    }
    // Walk every chain from its root; whatever is not reached lost a compare-and-swap (or sits
    // on a lineage cycle).
    let mut reached = vec![false; members.len()];
    let mut tips = Vec::new();
    for root in (0..members.len()).filter(|&i| predecessor[i].is_none()) {
        let mut at = root;
        reached[at] = true;
        while let Some(n) = next[at] {
            at = n;
            reached[at] = true;
        }
        tips.push(members[at]);
    }
    for (i, member) in members.iter().enumerate().filter(|(i, _)| !reached[*i]) {
        let detail = match predecessor[i].and_then(|p| next[p].filter(|&n| n != i).map(|n| (p, n)))
        {
            Some((p, n)) => format!(
                "names `{}`, whose successor `{}` was recorded first",
                members[p].checkpoint.checkpoint_id, members[n].checkpoint.checkpoint_id
            ),
            None => "descends from a conflicting successor or sits on a lineage cycle".to_owned(),
        };
        skipped.push(skip(member, SkipReason::SuccessorConflict, detail));
    }
    tips.into_iter().max_by(|a, b| a.record_order(b))
}
