//! Claude Code transcripts (`~/.claude/projects/<project>/<session>.jsonl`, and the subagent
//! files `<session>/subagents/agent-<id>.jsonl`): one JSON record per line, `type` `user`,
//! `assistant`, `system`, `summary`, `progress`, `file-history-snapshot` or `queue-operation`.
//!
//! **Runs.** A record with `isSidechain: true` belongs to a subagent or sidechain, never to the
//! main conversation: every such run becomes its own [`LinkedSession`] named
//! `<ids.session_id>/<run>`, where `<run>` is the record's `agentId` or, for sidechains written
//! without one (older versions), `sidechain-<uuid>` of the run's first record (a record whose
//! `parentUuid` is a sidechain record joins that record's run). A linked session takes every id
//! prefix and the first turn from the [`ImportContext`] but its own session id and seq from 1:
//! it is a separate log, imported and compacted on its own. A subagent file holds only sidechain
//! records, so its main conversation is empty and its run is the one linked session.
//!
//! **Assistant lines.** Claude Code writes one line per content block; lines sharing
//! `message.id` are one assistant message and share one response id (`<prefix><seq of its first
//! event>`). Claude Code runs tools while the message still streams, so a `user` line of
//! `tool_result`s answering calls of the open message may come before the message's last
//! block: such lines are held and imported right after the message, so the events of one
//! response stay together and every result follows its call. Blocks map as the Anthropic
//! Messages import maps them: `text` → `assistant_text`, `thinking` → `reasoning` with
//! `providerData: {signature}`, `redacted_thinking` → `reasoning` with `{redactedData}`,
//! `tool_use` → `tool_call`, `server_tool_use` → `hosted_tool_call`, `*_tool_result` →
//! `hosted_tool_result`. A `<synthetic>` message (Claude Code's own stand-in for an API error or
//! an interrupted request, never model output) becomes `runtime_note`s
//! `claude_code_synthetic_message`.
//!
//! **User lines.** `text` → `user_text` (one turn per line with text), `image` and `document`
//! blocks → attachments of the text before them, `tool_result` → `tool_result` (`is_error`
//! kept; the record's `toolUseResult`, Claude Code's structured copy of the output for its UI,
//! is ignored). Text Claude Code wrote itself and sent to the model becomes `system_note` and
//! opens no turn: lines with `isMeta: true` (the local-command caveat, slash-command and skill
//! expansions, hook feedback) and `<local-command-stdout>` / `<local-command-stderr>` output. A
//! `/command` the user typed (`<command-name>…`) is the user's request and stays `user_text`.
//!
//! **Claude Code's compaction.** A `system` line with subtype `compact_boundary` becomes a
//! `runtime_note` `claude_code_compact_boundary`; the `user` line with `isCompactSummary` that
//! follows it (the summary the model continues from) a `runtime_note`
//! `claude_code_compact_summary`; a `summary` line (Claude Code's summary of the branch ending at
//! `leafUuid`) a `runtime_note` `claude_code_summary`. None is a contextfold checkpoint. After a
//! boundary, usage facts count only what follows it ([`UsageTrail::restart_at`]).
//!
//! **Usage.** Each `message.id` gives one usage fact (provider `anthropic`, model
//! `message.model`) from the `message.usage` of its last line: input is `input_tokens` +
//! `cache_read_input_tokens` + `cache_creation_input_tokens`, output `output_tokens`.
//!
//! **Skipped records** (each a [`FileDiagnostic`] with its line): `progress`
//! (`claude_code_progress_skipped`: hook, tool and subagent progress for the UI; a subagent's
//! messages it copies are in the subagent's own records), `file-history-snapshot`
//! (`claude_code_file_snapshot_skipped`: file backups for undo), `queue-operation`
//! (`claude_code_queue_operation_skipped`: input typed while the model worked; what reached the
//! model is in a later `user` line), and `system` lines of subtype `local_command`,
//! `stop_hook_summary`, `turn_duration`, `api_error` or `informational`
//! (`claude_code_system_record_skipped`: shown in the terminal, never sent to the model). Any
//! other record type, system subtype or content block is a [`SessionFileError`] naming its line.

mod chain;
mod fields;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::{FileDiagnostic, ImportedSession, LinkedSession, SessionFileError, SessionFormat};
use crate::projection::ImportContext;
use chain::Chain;

/// Record types of a Claude Code transcript.
const RECORD_TYPES: &[&str] = &[
    "user",
    "assistant",
    "system",
    "summary",
    "progress",
    "file-history-snapshot",
    "queue-operation",
];

/// How many non-empty lines [`looks_like`] reads.
const LINES_LOOKED_AT: usize = 5;

/// The file is a Claude Code transcript: its first non-empty lines are JSON objects of a Claude
/// Code record type, each with a field only Claude Code writes (`sessionId`, `uuid`,
/// `parentUuid`, `message`, `leafUuid`, `snapshot`) and no Codex `payload`.
pub(super) fn looks_like(text: &str) -> bool {
    let mut lines = text.lines().map(str::trim).filter(|line| !line.is_empty()).peekable();
    if lines.peek().is_none() {
        return false;
    }
    lines.take(LINES_LOOKED_AT).all(|line| {
        let Ok(Value::Object(record)) = super::parse_json(line) else {
            return false;
        };
        let known = record
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|kind| RECORD_TYPES.contains(&kind));
        let ours = ["sessionId", "uuid", "parentUuid", "message", "leafUuid", "snapshot"]
            .iter()
            .any(|field| record.contains_key(*field));
        known && ours && !record.contains_key("payload")
    })
}

/// One record of the file.
struct Record {
    /// 1-based line.
    line: usize,
    /// Its `type`.
    kind: String,
    /// The record.
    fields: Map<String, Value>,
}

/// Reads a Claude Code transcript (see the module docs for the rules).
pub(super) fn import(text: &str, ids: &ImportContext) -> Result<ImportedSession, SessionFileError> {
    let (runs, names) = split_runs(text)?;
    let mut diagnostics = Vec::new();
    let mut runs = runs.into_iter();
    let main_records = runs.next().unwrap_or_default();
    let (events, usage) = Chain::import(ids, main_records, &mut diagnostics)?;
    let mut linked = Vec::with_capacity(names.len());
    for (name, records) in names.into_iter().zip(runs) {
        let run_ids = ImportContext {
            session_id: format!("{}/{name}", ids.session_id),
            first_seq: 1,
            ..ids.clone()
        };
        let (events, usage) = Chain::import(&run_ids, records, &mut diagnostics)?;
        linked.push(LinkedSession { session_id: run_ids.session_id, events, usage });
    }
    diagnostics.sort_by_key(|diagnostic: &FileDiagnostic| diagnostic.line);
    Ok(ImportedSession { format: SessionFormat::ClaudeCode, events, usage, linked, diagnostics })
}

/// The records of each run: the main conversation first, then every sidechain run in the order
/// its first record appears, with the runs' names.
type Runs = (Vec<Vec<Record>>, Vec<String>);

/// Parses every line and puts each record in its run (see "Runs" in the module docs).
fn split_runs(text: &str) -> Result<Runs, SessionFileError> {
    let mut runs: Vec<Vec<Record>> = vec![Vec::new()];
    let mut names: Vec<String> = Vec::new();
    let mut run_of_name: HashMap<String, usize> = HashMap::new();
    let mut run_of_uuid: HashMap<String, usize> = HashMap::new();
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = super::parse_json(line)
            .map_err(|e| SessionFileError::Syntax { line: line_no, detail: e.to_string() })?;
        let Value::Object(fields) = value else {
            return Err(shape(line_no, "$", "a JSON object"));
        };
        let kind = fields
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| shape(line_no, "type", "a string"))?
            .to_owned();
        let text_field = |key: &str| fields.get(key).and_then(Value::as_str).map(str::to_owned);
        let uuid = text_field("uuid");
        let run = if fields.get("isSidechain").and_then(Value::as_bool) == Some(true) {
            let parent_run = text_field("parentUuid")
                .and_then(|parent| run_of_uuid.get(&parent).copied())
                .filter(|run| *run != 0);
            let name = match (text_field("agentId"), parent_run) {
                (Some(agent), _) => agent,
                (None, Some(run)) => names[run - 1].clone(),
                (None, None) => match &uuid {
                    Some(uuid) => format!("sidechain-{uuid}"),
                    None => return Err(shape(line_no, "uuid", "a string (a sidechain record)")),
                },
            };
            *run_of_name.entry(name.clone()).or_insert_with(|| {
                names.push(name);
                runs.push(Vec::new());
                runs.len() - 1
            })
        } else {
            0
        };
        if let Some(uuid) = uuid {
            run_of_uuid.insert(uuid, run);
        }
        runs[run].push(Record { line: line_no, kind, fields });
    }
    Ok((runs, names))
}

/// A [`SessionFileError::Shape`] at `line`.
fn shape(line: usize, path: impl Into<String>, expected: &'static str) -> SessionFileError {
    SessionFileError::Shape { line, path: path.into(), expected }
}
