//! The inspector's JSON: what the page shows, computed from the ledger by the same functions
//! as the CLI (`checkpoints --json` and `verify --json` come from [`super::super::inspect`]),
//! so the page's figures are the CLI's. Served by the routes of [`super::server`] and embedded
//! whole by `--out`.

use contextfold_core::budget::{CharEstimator, estimate_event};
use contextfold_core::{HistoryCompactCheckpoint, RuntimeEvent};
use serde_json::{Value, json};

use super::super::CliError;
use super::super::inspect::{checkpoints_of, verify_report};
use crate::ledger::SharedLedger;
use crate::storage::{StoreError, agent_run_kind};

/// Events per page when the page does not ask for another size.
pub(crate) const DEFAULT_PAGE: usize = 200;

/// The largest page served (a bigger `limit` is cut to this).
pub(crate) const MAX_PAGE: usize = 2000;

/// Characters of an event's text shown in the timeline.
const PREVIEW_CHARS: usize = 120;

/// Events read per query when `--out` embeds a whole session.
const EMBED_BATCH: usize = 5000;

/// `{"sessions": [{"session", "events"}]}`: every session of the database with its event count.
pub(crate) async fn sessions(ledger: &SharedLedger) -> Result<Value, CliError> {
    let rows = ledger.session_counts().await?;
    let sessions: Vec<Value> = rows
        .into_iter()
        .map(|(session, events)| json!({"session": session, "events": events}))
        .collect();
    Ok(json!({ "sessions": sessions }))
}

/// Everything the page shows of `session` except its events: the event axis, `checkpoints
/// --json`, `verify --json` (with its failure codes), each checkpoint's summary and quality
/// record, and the usage facts with the compaction outcomes between them.
pub(crate) async fn overview(ledger: &SharedLedger, session: &str) -> Result<Value, CliError> {
    let Some(last_seq) = ledger.last_seq(session).await? else {
        return Err(StoreError::UnknownSession { session_id: session.to_owned() }.into());
    };
    let event_count = ledger.event_count(session).await?;
    let checkpoints = checkpoints_of(ledger, session).await?.json;
    let (mut verify, failures) = verify_report(ledger, session, false).await?;
    verify["failures"] = json!(failures);
    let records = ledger.checkpoint_records(session).await?;
    let mut details = Vec::new();
    let mut high_water = std::collections::HashMap::new();
    for record in &records.recorded {
        let Ok(cp) = HistoryCompactCheckpoint::from_value(record.payload.clone()) else {
            continue;
        };
        // A rolling checkpoint folds the events after its predecessor's; a recompression (the
        // same events again, for a smaller window) and a first checkpoint fold all they cover.
        let folded_from = cp
            .previous_checkpoint_id
            .as_deref()
            .and_then(|previous| high_water.get(previous))
            .filter(|&&seq| seq < cp.high_water.seq)
            .map_or(1, |seq: &u64| seq + 1);
        high_water.insert(cp.checkpoint_id.clone(), cp.high_water.seq);
        let manifest = cp.manifest.as_ref();
        details.push(json!({
            "eventId": record.event_id,
            "checkpointId": cp.checkpoint_id,
            "highWaterSeq": cp.high_water.seq,
            "trigger": cp.high_water.name,
            "foldedFromSeq": folded_from,
            "summary": cp.summary(),
            "summarizer": manifest.map(|m| m.summarizer.clone()),
            "quality": manifest.and_then(|m| m.quality.as_ref()),
            "limitations": cp.limitations,
        }));
    }
    Ok(json!({
        "session": session,
        "eventCount": event_count,
        "lastSeq": last_seq,
        "checkpoints": checkpoints,
        "verify": verify,
        "details": details,
        "usage": usage(ledger, session).await?,
    }))
}

/// `{"requests": [...], "outcomes": [...]}`: every usage fact (`Ledger::usage_facts`, in record
/// order, numbered from 1) and every `compaction_outcome_recorded` event with its token figures
/// and the number of requests recorded before it.
async fn usage(ledger: &SharedLedger, session: &str) -> Result<Value, CliError> {
    let facts = ledger.usage_facts(session).await?;
    let requests: Vec<Value> = facts
        .iter()
        .enumerate()
        .map(|(index, fact)| {
            let mut row = serde_json::to_value(fact).unwrap_or(Value::Null);
            row["index"] = json!(index + 1);
            row
        })
        .collect();
    let mut outcomes = Vec::new();
    let mut seen = 0u64;
    for record in ledger.agent_run_events(session).await? {
        match record.kind.as_str() {
            agent_run_kind::USAGE_RECORDED => seen += 1,
            agent_run_kind::COMPACTION_OUTCOME => outcomes.push(json!({
                "afterRequests": seen,
                "trigger": record.payload["trigger"],
                "outcome": record.payload["outcome"],
                "reason": record.payload["reason"],
                "checkpointId": record.payload["checkpointId"],
                "tokens": record.payload["tokens"],
            })),
            _ => {}
        }
    }
    Ok(json!({ "requests": requests, "outcomes": outcomes }))
}

/// One timeline row: seq, ids, kind, the core's per-event estimate (`estimate_event` with
/// `CharEstimator`) and the start of its text. A row that does not parse is kind `unreadable`.
fn event_row(seq: u64, id: &str, json_text: &str) -> Value {
    let Ok(event) = RuntimeEvent::from_json(json_text) else {
        return json!({"seq": seq, "id": id, "kind": "unreadable", "tokens": null, "preview": ""});
    };
    let tokens = estimate_event(&CharEstimator, &event);
    let content = serde_json::to_value(&event.content).unwrap_or(Value::Null);
    let kind = content["type"].as_str().unwrap_or("?").to_owned();
    let text = match content.get("text").and_then(Value::as_str) {
        Some(text) => text.to_owned(),
        None => {
            let mut rest = content.clone();
            if let Value::Object(map) = &mut rest {
                map.remove("type");
            }
            rest.to_string()
        }
    };
    let mut preview: String = text.chars().take(PREVIEW_CHARS).collect();
    if preview.len() < text.len() {
        preview.push('…');
    }
    json!({
        "seq": seq,
        "id": id,
        "turnId": event.turn_id,
        "runId": event.run_id,
        "kind": kind,
        "tokens": tokens,
        "preview": preview,
    })
}

/// `{"session", "after", "events": [...], "lastSeq"}`: up to `limit` events with `seq` above
/// `after`, read with one bounded query (a 90,000-event session opens as fast as a small one).
pub(crate) async fn events_page(
    ledger: &SharedLedger,
    session: &str,
    after: u64,
    limit: usize,
) -> Result<Value, CliError> {
    let Some(last_seq) = ledger.last_seq(session).await? else {
        return Err(StoreError::UnknownSession { session_id: session.to_owned() }.into());
    };
    let limit = limit.clamp(1, MAX_PAGE);
    let rows = ledger.stored_rows(session, Some(after), limit).await?;
    let events: Vec<Value> =
        rows.iter().map(|row| event_row(row.seq, &row.runtime_event_id, &row.event_json)).collect();
    Ok(json!({"session": session, "after": after, "events": events, "lastSeq": last_seq}))
}

/// Every timeline row of `session`, read in bounded batches (`--out` embeds them; the page
/// still shows one page at a time).
pub(crate) async fn all_events(
    ledger: &SharedLedger,
    session: &str,
) -> Result<Vec<Value>, CliError> {
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let rows = ledger.stored_rows(session, after, EMBED_BATCH).await?;
        let Some(last) = rows.last() else { return Ok(out) };
        after = Some(last.seq);
        out.extend(
            rows.iter().map(|row| event_row(row.seq, &row.runtime_event_id, &row.event_json)),
        );
    }
}
