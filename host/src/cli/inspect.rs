//! `checkpoints`, `verify`, `recover` and `export`: read the ledgers, check them, rebuild the
//! projection.

use std::collections::HashMap;

use contextfold_core::HistoryCompactCheckpoint;
use contextfold_core::checkpoint::{Recovery, SkipReason};
use serde_json::{Value, json};

use super::{CliError, Output, Target};
use crate::ledger::SharedLedger;
use crate::storage::LookupSource;

/// `checkpoints`: every recorded checkpoint event, and which one is current.
pub(crate) async fn checkpoints(target: &Target) -> Result<Output, CliError> {
    let ledger = target.open_session().await?;
    checkpoints_of(&ledger, &target.session).await
}

/// What `checkpoints` prints for `session` of `ledger` (also served by `contextfold inspect`).
pub(crate) async fn checkpoints_of(
    ledger: &SharedLedger,
    session: &str,
) -> Result<Output, CliError> {
    let lookup = ledger.current_checkpoint(session).await?;
    let current = lookup.checkpoint.as_ref().map(|c| c.checkpoint_id.clone());
    let records = ledger.checkpoint_records(session).await?;
    let recovery = records.recover(session);
    let retracted = retracted_by_event(&recovery);
    let mut rows = Vec::new();
    let mut text = String::new();
    for record in &records.recorded {
        let row = match HistoryCompactCheckpoint::from_value(record.payload.clone()) {
            Ok(cp) => {
                let is_current = current.as_deref() == Some(cp.checkpoint_id.as_str());
                let taken_back = retracted.get(record.event_id.as_str());
                text.push_str(&format!(
                    "{}{} v{} covers {} events / {} turns, {} tokens, by {}, after {}{}\n",
                    match (is_current, taken_back) {
                        (true, _) => "* ",
                        (false, Some(_)) => "x ",
                        (false, None) => "  ",
                    },
                    cp.checkpoint_id,
                    cp.schema_version(),
                    cp.coverage.event_count,
                    cp.coverage.turn_count,
                    cp.estimated_tokens,
                    cp.produced_by.as_deref().unwrap_or("-"),
                    cp.previous_checkpoint_id.as_deref().unwrap_or("-"),
                    taken_back.map(|why| format!(" ({why})")).unwrap_or_default(),
                ));
                json!({
                    "eventId": record.event_id,
                    "recordedAtMs": record.recorded_at_ms,
                    "checkpointId": cp.checkpoint_id,
                    "schemaVersion": cp.schema_version(),
                    "eventCount": cp.coverage.event_count,
                    "turnCount": cp.coverage.turn_count,
                    "sourceDigest": cp.coverage.source_digest,
                    "estimatedTokens": cp.estimated_tokens,
                    "previousCheckpointId": cp.previous_checkpoint_id,
                    "producedBy": cp.produced_by,
                    "highWater": cp.high_water,
                    "current": is_current,
                    "retracted": taken_back,
                })
            }
            Err(error) => {
                text.push_str(&format!("  {} unreadable: {error}\n", record.event_id));
                json!({"eventId": record.event_id, "error": {"code": error.code(), "message": error.to_string()}})
            }
        };
        rows.push(row);
    }
    if rows.is_empty() {
        text.push_str("no checkpoints recorded\n");
    }
    let json = json!({
        "session": session,
        "current": current,
        "source": lookup.source,
        "checkpoints": rows,
        "retractions": records.retractions,
        "lookupNotes": lookup.notes,
    });
    Ok(Output { json, text, exit: 0 })
}

/// `checkpoints --retract ID --reason TEXT`: takes the checkpoint back (with every checkpoint
/// built on it), then lists the checkpoints as `checkpoints` does, with `retracted` naming it.
pub(crate) async fn retract(
    target: &Target,
    checkpoint_id: &str,
    reason: &str,
) -> Result<Output, CliError> {
    let ledger = target.open_session().await?;
    retract_in(&ledger, &target.session, checkpoint_id, reason).await
}

/// What `checkpoints --retract` does and prints for `session` of `ledger` (also the inspector's
/// retract button).
pub(crate) async fn retract_in(
    ledger: &SharedLedger,
    session: &str,
    checkpoint_id: &str,
    reason: &str,
) -> Result<Output, CliError> {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as u64);
    let event_id = format!("retract-{checkpoint_id}-{now_ms}");
    ledger.retract_checkpoint(session, &event_id, now_ms, checkpoint_id, reason).await?;
    let mut listed = checkpoints_of(ledger, session).await?;
    listed.json["retracted"] = json!(checkpoint_id);
    let current = listed.json["current"].as_str().unwrap_or("none (the raw source)").to_owned();
    listed.text = format!("retracted {checkpoint_id}; current: {current}\n{}", listed.text);
    Ok(listed)
}

/// Why each retracted checkpoint record was taken back, by AgentRun event id.
fn retracted_by_event(recovery: &Recovery) -> HashMap<&str, &str> {
    recovery
        .skipped
        .iter()
        .filter(|skip| skip.reason == SkipReason::Retracted)
        .map(|skip| (skip.event_id.as_str(), skip.detail.as_str()))
        .collect()
}

/// `verify`: each recorded checkpoint against the canonical ledger (prefix, boundary, turns,
/// digest), and the projection row against ledger recovery.
pub(crate) async fn verify(target: &Target, deep: bool) -> Result<Output, CliError> {
    let ledger = target.open_session().await?;
    let (json, failures) = verify_report(&ledger, &target.session, deep).await?;
    if !failures.is_empty() {
        eprintln!("{}", serde_json::to_string_pretty(&json).unwrap_or_default());
        return Err(CliError::VerifyFailed { failures: failures.len(), codes: failures.join(",") });
    }
    let mut text = format!(
        "ok: {} checkpoint(s) match the {} canonical events; projection at {}\n",
        json["verified"],
        json["events"],
        json["projection"]["checkpointId"].as_str().unwrap_or("none")
    );
    if let Some(rows) = json["rows"].as_object() {
        text.push_str(&format!(
            "ok: {} row(s) parsed, {} stored in canonical form, derived columns all match\n",
            rows["checked"], rows["canonical"]
        ));
    }
    Ok(Output { json, text, exit: 0 })
}

/// What `verify` computes for `session` of `ledger`: its `--json` document, and the failure
/// codes (none when it passes). Also served by `contextfold inspect`.
pub(crate) async fn verify_report(
    ledger: &SharedLedger,
    session: &str,
    deep: bool,
) -> Result<(Value, Vec<&'static str>), CliError> {
    let checkpoint_records = ledger.checkpoint_records(session).await?;
    let recovery = checkpoint_records.recover(session);
    let retracted = retracted_by_event(&recovery);
    let records = &checkpoint_records.recorded;
    let mut results: Vec<Option<Value>> = Vec::new();
    let mut parsed = Vec::new();
    let mut failures: Vec<&'static str> = Vec::new();
    for record in records {
        match HistoryCompactCheckpoint::from_value(record.payload.clone()) {
            Err(error) => {
                failures.push(error.code());
                results.push(Some(json!({"eventId": record.event_id, "ok": false, "code": error.code(), "detail": error.to_string()})));
            }
            Ok(cp) => {
                results.push(None);
                parsed.push((record.event_id.clone(), cp));
            }
        }
    }
    // Every checkpoint in one streamed pass over the ledger.
    let checkpoints: Vec<HistoryCompactCheckpoint> =
        parsed.iter().map(|(_, cp)| cp.clone()).collect();
    let sweep = ledger.verify_checkpoints(session, checkpoints).await?;
    let mut swept = parsed.iter().zip(&sweep.results);
    for slot in results.iter_mut().filter(|slot| slot.is_none()) {
        let Some(((event_id, cp), result)) = swept.next() else { break };
        *slot = Some(match result {
            Ok(_) => {
                json!({"eventId": event_id, "checkpointId": cp.checkpoint_id, "ok": true, "coveredEvents": cp.coverage.event_count})
            }
            Err(mismatch) => {
                failures.push(mismatch.code().as_str());
                json!({"eventId": event_id, "checkpointId": cp.checkpoint_id, "ok": false, "code": mismatch.code(), "detail": mismatch.to_string()})
            }
        });
    }
    let mut results: Vec<Value> = results.into_iter().flatten().collect();
    for result in &mut results {
        if let Some(why) = result["eventId"].as_str().and_then(|id| retracted.get(id)) {
            result["retracted"] = json!(why);
        }
    }
    let recovered = recovery.selected.as_ref().map(|c| c.checkpoint_id.clone());
    let lookup = ledger.current_checkpoint(session).await?;
    let projection_id = lookup.checkpoint.as_ref().map(|c| c.checkpoint_id.clone());
    let projection_ok = lookup.source != LookupSource::Recovered && projection_id == recovered;
    if !projection_ok {
        failures.push("projection_mismatch");
    }
    let rows = if deep { Some(ledger.check_rows(session).await?) } else { None };
    if rows.as_ref().is_some_and(|rows| !rows.mismatched.is_empty()) {
        failures.push("derived_column_mismatch");
    }
    let verified = results.iter().filter(|r| r["ok"] == Value::Bool(true)).count();
    let json = json!({
        "rows": rows.as_ref().map(|rows| json!({"checked": rows.rows, "canonical": rows.canonical_rows, "mismatchedSeqs": rows.mismatched})),
        "session": session,
        "events": sweep.events,
        "checkpoints": results,
        "verified": verified,
        "retractions": checkpoint_records.retractions,
        "projection": {"ok": projection_ok, "checkpointId": projection_id, "recoveredTip": recovered, "notes": lookup.notes},
        "ok": failures.is_empty(),
    });
    Ok((json, failures))
}

/// `recover`: rebuilds the projection row from the AgentRun ledger.
pub(crate) async fn recover(target: &Target) -> Result<Output, CliError> {
    let ledger = target.open_session().await?;
    let lookup = ledger.rebuild_projection(&target.session).await?;
    let rebuilt = ledger.rebuild_derived(&target.session).await?;
    let id = lookup.checkpoint.as_ref().map(|c| c.checkpoint_id.clone());
    let text = format!(
        "projection of {} rebuilt: {} ({} recovery note(s)); derived columns of {rebuilt} row(s) rebuilt\n",
        target.session,
        id.as_deref().unwrap_or("no checkpoint"),
        lookup.notes.len()
    );
    let json = json!({"session": target.session, "checkpointId": id, "eventId": lookup.agent_run_event_id, "notes": lookup.notes, "derivedRowsRebuilt": rebuilt});
    Ok(Output { json, text, exit: 0 })
}

/// `export`: the canonical events (JSON Lines; with `--json`, one document with the events and
/// the AgentRun ledger).
pub(crate) async fn export(target: &Target) -> Result<Output, CliError> {
    let ledger = target.open_session().await?;
    let events = ledger.load_events(&target.session).await?;
    let agent_run = ledger.agent_run_events(&target.session).await?;
    let mut text = String::new();
    for event in &events {
        text.push_str(&serde_json::to_string(event).unwrap_or_default());
        text.push('\n');
    }
    let mut json =
        json!({"session": target.session, "events": events, "agentRunEvents": agent_run});
    // Exports leave the machine: provider state stays in the ledger (design: redacted from
    // captures, omitted from copies).
    contextfold_core::compaction::redact_provider_state(&mut json);
    Ok(Output { json, text, exit: 0 })
}
