//! [`Chain`]: the records of one run (the main conversation or one sidechain) as events and
//! usage facts, by the rules of the parent module.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use super::fields::{blocks, counts, from_block, joined_text, message, pairing, str_at};
use super::{Record, shape};
use crate::agent_files::usage::{Counts, UsageTrail};
use crate::agent_files::{FileDiagnostic, SessionFileError};
use crate::attachment::Attachment;
use crate::calibration::UsageFact;
use crate::event::{EventContent, RuntimeEvent};
use crate::projection::ImportContext;
use crate::projection::anthropic::{block_attachment, plain_assistant_block, result_content};
use crate::projection::import_state::ImportState;

/// `system` subtypes shown in the terminal and never sent to the model.
const SKIPPED_SYSTEM_SUBTYPES: &[&str] =
    &["local_command", "stop_hook_summary", "turn_duration", "api_error", "informational"];

/// Prefixes of user text Claude Code wrote itself (a local command's output).
const SYSTEM_TEXT_PREFIXES: &[&str] =
    &["<local-command-stdout>", "<local-command-stderr>", "<local-command-caveat>"];

/// The model Claude Code names on messages it made up itself.
const SYNTHETIC_MODEL: &str = "<synthetic>";

/// The assistant message being read (its lines may not have all come yet).
struct OpenMessage {
    /// Its `message.id`.
    id: String,
    /// The response id of its events.
    response_id: String,
    /// Index of the first event imported for it (the request carried the events before).
    start: usize,
    /// `message.model`.
    model: String,
    /// The `message.usage` of its last line.
    usage: Option<Counts>,
    /// Ids of the calls it made.
    calls: HashSet<String>,
}

/// One run being imported.
pub(super) struct Chain<'a> {
    /// Events, turns and call pairing; keeps each call's tool name and whether it is hosted.
    state: ImportState<'a, (String, bool)>,
    trail: UsageTrail,
    /// The response id of every `message.id` seen.
    responses: HashMap<String, String>,
    /// The `message.id`s whose usage was recorded.
    recorded: HashSet<String>,
    open: Option<OpenMessage>,
    /// Lines of results for calls of the open message, imported after it.
    held: Vec<Record>,
}

impl<'a> Chain<'a> {
    /// Imports the records of one run, numbered from `ids`; skipped records are added to
    /// `diagnostics`.
    pub(super) fn import(
        ids: &'a ImportContext,
        records: Vec<Record>,
        diagnostics: &mut Vec<FileDiagnostic>,
    ) -> Result<(Vec<RuntimeEvent>, Vec<UsageFact>), SessionFileError> {
        let mut chain = Chain {
            state: ImportState::new(ids),
            trail: UsageTrail::new("anthropic"),
            responses: HashMap::new(),
            recorded: HashSet::new(),
            open: None,
            held: Vec::new(),
        };
        for record in records {
            chain.record(record, diagnostics)?;
        }
        chain.close()?;
        Ok((chain.state.into_events(), chain.trail.finish()))
    }

    fn record(
        &mut self,
        record: Record,
        diagnostics: &mut Vec<FileDiagnostic>,
    ) -> Result<(), SessionFileError> {
        let skip =
            |code: &'static str, detail: String| FileDiagnostic { line: record.line, code, detail };
        match record.kind.as_str() {
            "assistant" => self.assistant(&record)?,
            "user" if self.answers_open_message(&record) => self.held.push(record),
            "user" => {
                self.close()?;
                self.user(&record)?;
            }
            "system" => {
                let subtype = record.fields.get("subtype").and_then(Value::as_str).unwrap_or("");
                if subtype == "compact_boundary" {
                    self.close()?;
                    self.boundary(&record);
                } else if SKIPPED_SYSTEM_SUBTYPES.contains(&subtype) {
                    let detail = format!("system `{subtype}` record (not sent to the model)");
                    diagnostics.push(skip("claude_code_system_record_skipped", detail));
                } else {
                    let kind = format!("system/{subtype}");
                    return Err(SessionFileError::Unsupported { line: record.line, kind });
                }
            }
            "summary" => {
                self.close()?;
                let text = str_at(&record, "summary")?;
                let content =
                    EventContent::RuntimeNote { code: "claude_code_summary".into(), text };
                self.state.emit(content, None);
            }
            "progress" => {
                let kind = record.fields.get("data").and_then(|d| d.get("type"));
                let kind = kind.and_then(Value::as_str).unwrap_or("untyped");
                let detail = format!("progress `{kind}` (UI only)");
                diagnostics.push(skip("claude_code_progress_skipped", detail));
            }
            "file-history-snapshot" => {
                let detail = "file backups for undo".to_owned();
                diagnostics.push(skip("claude_code_file_snapshot_skipped", detail));
            }
            "queue-operation" => {
                let operation = record.fields.get("operation").and_then(Value::as_str);
                let detail = format!("queued input `{}`", operation.unwrap_or("untyped"));
                diagnostics.push(skip("claude_code_queue_operation_skipped", detail));
            }
            other => {
                let kind = other.to_owned();
                return Err(SessionFileError::Unsupported { line: record.line, kind });
            }
        }
        Ok(())
    }

    /// A `user` line made only of results for calls of the open assistant message.
    fn answers_open_message(&self, record: &Record) -> bool {
        let Some(open) = &self.open else { return false };
        let Some(Value::Array(blocks)) = message(record).and_then(|m| m.get("content")) else {
            return false;
        };
        !blocks.is_empty()
            && blocks.iter().all(|block| {
                block.get("type").and_then(Value::as_str) == Some("tool_result")
                    && block
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .is_some_and(|id| open.calls.contains(id))
            })
    }

    /// Ends the open assistant message: records its usage, then imports the held results.
    fn close(&mut self) -> Result<(), SessionFileError> {
        let Some(open) = self.open.take() else { return Ok(()) };
        if let Some(usage) = open.usage
            && open.model != SYNTHETIC_MODEL
            && self.recorded.insert(open.id)
        {
            self.trail.record(&self.state.events()[..open.start], &open.model, usage);
        }
        for record in std::mem::take(&mut self.held) {
            self.user(&record)?;
        }
        Ok(())
    }

    fn boundary(&mut self, record: &Record) {
        let text = record.fields.get("content").and_then(Value::as_str);
        let mut text = text.unwrap_or("Conversation compacted").to_owned();
        if let Some(meta) = record.fields.get("compactMetadata") {
            let trigger = meta.get("trigger").and_then(Value::as_str);
            let tokens = meta.get("preTokens").and_then(Value::as_u64);
            if let (Some(trigger), Some(tokens)) = (trigger, tokens) {
                text = format!("{text} ({trigger}, {tokens} tokens before)");
            }
        }
        let code = "claude_code_compact_boundary".to_owned();
        self.state.emit(EventContent::RuntimeNote { code, text }, None);
        self.trail.restart_at(self.state.events().len());
    }

    fn assistant(&mut self, record: &Record) -> Result<(), SessionFileError> {
        let line = record.line;
        let message = message(record).ok_or_else(|| shape(line, "message", "an object"))?;
        let id = message
            .get("id")
            .or_else(|| record.fields.get("uuid"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("line-{line}"));
        if self.open.as_ref().is_none_or(|open| open.id != id) {
            self.close()?;
            let next = self.state.next_response_id();
            let response_id = self.responses.entry(id.clone()).or_insert(next).clone();
            let model = message.get("model").and_then(Value::as_str).unwrap_or("").to_owned();
            let start = self.state.events().len();
            let calls = HashSet::new();
            self.open = Some(OpenMessage { id, response_id, start, model, usage: None, calls });
        }
        let Some(open) = self.open.as_mut() else { return Ok(()) };
        if let Some(usage) = message.get("usage").filter(|usage| usage.is_object()) {
            open.usage = Some(counts(usage));
        }
        let synthetic = open.model == SYNTHETIC_MODEL;
        let response = Some(open.response_id.clone());
        for (i, block) in blocks(message, line)?.iter().enumerate() {
            let at = format!("message.content[{i}]");
            let content =
                match plain_assistant_block(block, &at).map_err(|e| from_block(line, e))? {
                    Some(EventContent::AssistantText { text }) if synthetic => {
                        let code = "claude_code_synthetic_message".to_owned();
                        self.state.emit(EventContent::RuntimeNote { code, text }, None);
                        continue;
                    }
                    Some(content) => content,
                    None => self.assistant_call_block(block, &at, line)?,
                };
            self.state.emit(content, response.clone());
        }
        Ok(())
    }

    /// A `tool_use`, `server_tool_use` or `*_tool_result` block of an assistant message.
    fn assistant_call_block(
        &mut self,
        block: &Value,
        at: &str,
        line: usize,
    ) -> Result<EventContent, SessionFileError> {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or_default();
        let field = |key: &str| -> Result<String, SessionFileError> {
            block
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| shape(line, format!("{at}.{key}"), "a string"))
        };
        match kind {
            "tool_use" | "server_tool_use" => {
                let (call_id, tool_name) = (field("id")?, field("name")?);
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                let hosted = kind == "server_tool_use";
                self.state
                    .call(&call_id, (tool_name.clone(), hosted))
                    .map_err(|error| pairing(line, &call_id, error))?;
                if let Some(open) = self.open.as_mut() {
                    open.calls.insert(call_id.clone());
                }
                Ok(if hosted {
                    EventContent::HostedToolCall { call_id, tool_name, input }
                } else {
                    EventContent::ToolCall { call_id, tool_name, input }
                })
            }
            kind if kind.ends_with("_tool_result") => {
                let call_id = field("tool_use_id")?;
                let tool_name = self.answer(&call_id, true, line)?;
                let output = block.get("content").cloned().unwrap_or(Value::Null);
                Ok(EventContent::HostedToolResult { call_id, tool_name, output, is_error: false })
            }
            other => Err(SessionFileError::Unsupported { line, kind: other.to_owned() }),
        }
    }

    /// The tool name of the call `call_id` a result answers, recording the answer.
    fn answer(
        &mut self,
        call_id: &str,
        hosted: bool,
        line: usize,
    ) -> Result<String, SessionFileError> {
        match self.state.answer(call_id, |(_, server)| *server == hosted) {
            Ok((tool_name, _)) => Ok(tool_name.clone()),
            Err(error) => Err(pairing(line, call_id, error)),
        }
    }

    fn user(&mut self, record: &Record) -> Result<(), SessionFileError> {
        let line = record.line;
        let message = message(record).ok_or_else(|| shape(line, "message", "an object"))?;
        let flag = |key: &str| record.fields.get(key).and_then(Value::as_bool) == Some(true);
        if flag("isCompactSummary") {
            let text = joined_text(message, line)?;
            let code = "claude_code_compact_summary".to_owned();
            self.state.emit(EventContent::RuntimeNote { code, text }, None);
            return Ok(());
        }
        let meta = flag("isMeta");
        let mut opened = false;
        // The text being built: `image` / `document` blocks join the text before them.
        let mut pending: Option<(String, Vec<Attachment>)> = None;
        for (i, block) in blocks(message, line)?.iter().enumerate() {
            let at = format!("message.content[{i}]");
            let kind = block.get("type").and_then(Value::as_str);
            let kind = kind.ok_or_else(|| shape(line, format!("{at}.type"), "a string"))?;
            match kind {
                "text" => {
                    self.flush_text(&mut pending, meta, &mut opened);
                    let text = block.get("text").and_then(Value::as_str);
                    let text = text.ok_or_else(|| shape(line, format!("{at}.text"), "a string"))?;
                    pending = Some((text.to_owned(), Vec::new()));
                }
                "image" | "document" => {
                    let attachment =
                        block_attachment(block, &at).map_err(|e| from_block(line, e))?;
                    pending.get_or_insert_with(Default::default).1.push(attachment);
                }
                "tool_result" => {
                    self.flush_text(&mut pending, meta, &mut opened);
                    let id = block.get("tool_use_id").and_then(Value::as_str);
                    let call_id = id
                        .ok_or_else(|| shape(line, format!("{at}.tool_use_id"), "a string"))?
                        .to_owned();
                    let tool_name = self.answer(&call_id, false, line)?;
                    let (output, attachments) =
                        result_content(block, &at).map_err(|e| from_block(line, e))?;
                    let is_error = block.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                    let content = EventContent::ToolResult {
                        call_id,
                        tool_name,
                        output,
                        is_error,
                        attachments,
                    };
                    self.state.emit(content, None);
                }
                other => return Err(SessionFileError::Unsupported { line, kind: other.into() }),
            }
        }
        self.flush_text(&mut pending, meta, &mut opened);
        Ok(())
    }

    /// Emits the text being built: a `system_note` when Claude Code wrote it (`meta`, or a local
    /// command's output) and it has no attachments, else a `user_text` (opening the line's turn
    /// once).
    fn flush_text(
        &mut self,
        pending: &mut Option<(String, Vec<Attachment>)>,
        meta: bool,
        opened: &mut bool,
    ) {
        let Some((text, attachments)) = pending.take() else { return };
        let system = meta || SYSTEM_TEXT_PREFIXES.iter().any(|p| text.trim_start().starts_with(p));
        if system && attachments.is_empty() {
            self.state.emit(EventContent::SystemNote { text }, None);
            return;
        }
        if !system && !*opened {
            self.state.open_user_turn();
            *opened = true;
        }
        self.state.emit(EventContent::UserText { text, attachments }, None);
    }
}
