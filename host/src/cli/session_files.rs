//! `import --format claude-code | codex-rollout | cline | auto`: the session files agents leave
//! on disk, read by the core's readers (`contextfold_core::projection::import_session_file`,
//! shared with the npm package) and appended with everything they carry: the main conversation,
//! each linked session (Claude Code's subagents and sidechains, `<session>/<agent id>`) and the
//! provider-reported usage as usage facts, which calibrate the estimator.

use contextfold_core::RuntimeEvent;
use contextfold_core::budget::UsageFact;
use contextfold_core::projection::{ImportContext, SessionFormat, import_session_file};
use serde_json::json;

use super::{CliError, Output, Target};
use crate::ledger::SharedLedger;

/// The run id of the usage facts an import records.
const IMPORT_RUN_ID: &str = "import";

/// Reads `text` as `format` (detected when `None`) and appends what it holds to the target.
pub(crate) async fn import(
    target: &Target,
    format: Option<SessionFormat>,
    text: &str,
) -> Result<Output, CliError> {
    let ledger = target.open_or_create().await?;
    let existing = ledger.load_events(&target.session).await?;
    let mut ids = ImportContext::new(&target.session);
    ids.first_seq = existing.last().map_or(1, |e| e.seq + 1);
    ids.first_turn = contextfold_core::checkpoint::turn_count(&existing);
    let session = import_session_file(format, text, &ids)
        .map_err(|error| CliError::Import { code: error.code(), detail: error.to_string() })?;
    let linked_events: usize = session.linked.iter().map(|l| l.events.len()).sum();
    if session.events.is_empty() && linked_events == 0 {
        return Err(CliError::Import {
            code: "import_empty",
            detail: "the file holds no conversation".into(),
        });
    }
    let imported = session.events.len();
    let mut usage_facts = session.usage.len();
    append(&ledger, &target.session, session.events, session.usage).await?;
    let mut linked = Vec::new();
    for run in session.linked {
        usage_facts += run.usage.len();
        linked.push(json!({"session": run.session_id, "imported": run.events.len()}));
        append(&ledger, &run.session_id, run.events, run.usage).await?;
    }
    let name = session.format.name();
    let json = json!({
        "session": target.session,
        "format": name,
        "imported": imported,
        "totalEvents": existing.len() + imported,
        "linked": linked,
        "usageFacts": usage_facts,
        "diagnostics": session.diagnostics,
    });
    let text = format!(
        "imported {imported} events into session {} from a {name} file ({} linked sessions, \
         {usage_facts} usage facts, {} records skipped)\n",
        target.session,
        linked.len(),
        session.diagnostics.len()
    );
    Ok(Output { json, text, exit: 0 })
}

/// Appends one session's events and then its usage facts.
async fn append(
    ledger: &SharedLedger,
    session: &str,
    events: Vec<RuntimeEvent>,
    usage: Vec<UsageFact>,
) -> Result<(), CliError> {
    let first_seq = events.first().map_or(0, |e| e.seq);
    if !events.is_empty() {
        ledger.append_events(session, events).await?;
    }
    for (n, fact) in usage.into_iter().enumerate() {
        let event_id = format!("usage-import-{first_seq}-{n}");
        ledger.append_usage_fact(session, IMPORT_RUN_ID, &event_id, 0, fact).await?;
    }
    Ok(())
}
