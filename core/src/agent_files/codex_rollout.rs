//! Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) read as events.
//!
//! A rollout is JSON Lines. Since Codex 0.3x every line is `{"timestamp", "type", "payload"}`:
//!
//! - `session_meta` (first line): nothing becomes an event. Its `instructions` are the user's
//!   AGENTS.md, which the rollout repeats as an injected user message (below); a `model` in it,
//!   when present, is the model of usage reported before the first `turn_context`.
//! - `turn_context`: its `model` is the model of the usage reported after it.
//! - `response_item`: the Responses API items Codex sent and received, read by the core's
//!   Responses import ([`crate::projection::import_openai_responses`]'s item mapping: `message`,
//!   `reasoning` with its summary text and `providerData.encrypted_content`, `function_call`,
//!   `function_call_output`, one response id per run of model items), plus the items only a
//!   rollout holds:
//!   - a `user` message Codex injects rather than the user typing it (its first text starts
//!     with `<environment_context>`, `<user_instructions>` or `# AGENTS.md instructions`) →
//!     `system_note` (it opens no turn; real rollouts carry one at the start of each session,
//!     and Codex never echoes them as an `event_msg` `user_message`, unlike what the user typed);
//!   - `custom_tool_call` (Codex's freeform `apply_patch`) → `tool_call` whose `input` is the raw
//!     input as a JSON string; `custom_tool_call_output` → its `tool_result`;
//!   - `local_shell_call` → `tool_call` `local_shell` with the `action` as input (its output is a
//!     `function_call_output` with the same call id);
//!   - `web_search_call` → `hosted_tool_call` `web_search` (`action` as input; call id its `id`,
//!     or `web_search_<line>`), and, when it carries a `status`, a `hosted_tool_result`
//!     `{"status"}` (`isError` for `failed`); without one the projection repairs the pair;
//!   - `ghost_snapshot` (a git snapshot for `/undo`, not conversation) → skipped, diagnostic
//!     `codex_ghost_snapshot_skipped`.
//! - `event_msg`: `token_count` → a usage fact ([`UsageTrail`], provider `openai`) from
//!   `info.last_token_usage` (`input_tokens`, cached included; `cached_input_tokens`;
//!   `output_tokens`); a null `info`, and a repeat of the previous count (same
//!   `total_token_usage`), are skipped. A `token_count` also ends the response in progress.
//!   Every other kind (`user_message`, `agent_message`, `agent_reasoning`, …) repeats a
//!   response item or carries no history: skipped, one `codex_event_msg_skipped` diagnostic per
//!   kind (at its first line).
//! - `compacted` (Codex's own compaction) → `runtime_note` `codex_compacted` whose text is its
//!   `message` — never a contextfold checkpoint — after which usage counts only the note and what
//!   follows ([`UsageTrail::restart_at`]). Its `replacement_history` repeats earlier items and is
//!   not imported (diagnostic `codex_replacement_history_skipped`).
//!
//! Older rollouts start with a bare meta line `{"id", "timestamp", "instructions", …}` followed
//! by bare response items and `{"record_type": "state"}` lines (skipped, one
//! `codex_state_record_skipped` diagnostic). Any other record or item kind is
//! [`SessionFileError::Unsupported`] naming its 1-based line. Line timestamps are not kept.

mod fields;
#[cfg(test)]
mod tests;

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::usage::{Counts, UsageTrail};
use super::{FileDiagnostic, ImportedSession, SessionFileError, SessionFormat};
use crate::event::EventContent;
use crate::projection::ImportContext;
use crate::projection::openai_responses::ResponsesItems;
use fields::{injected_text, responses_error, shape, str_field};

/// The `type`s of a rollout line (since Codex 0.3x).
const RECORD_KINDS: [&str; 5] =
    ["session_meta", "turn_context", "response_item", "event_msg", "compacted"];

/// Whether `text` starts like a rollout: its first non-empty line is a `{"type", "payload"}`
/// record of a rollout kind, or an older rollout's bare meta line.
pub(super) fn looks_like(text: &str) -> bool {
    let Some(first) = text.lines().find(|line| !line.trim().is_empty()) else {
        return false;
    };
    let Ok(Value::Object(record)) = super::parse_json(first) else {
        return false;
    };
    match record.get("type") {
        Some(Value::String(kind)) => {
            RECORD_KINDS.contains(&kind.as_str())
                && record.get("payload").is_some_and(Value::is_object)
        }
        Some(_) => false,
        None => is_legacy_meta(&record),
    }
}

/// An older rollout's first line: `{"id", "timestamp", …}` with no `type` and no `role`.
fn is_legacy_meta(record: &Map<String, Value>) -> bool {
    record.get("id").is_some_and(Value::is_string)
        && record.get("timestamp").is_some_and(Value::is_string)
        && !record.contains_key("type")
        && !record.contains_key("role")
}

/// Reads a rollout (see the module docs for the rules).
pub(super) fn import(text: &str, ids: &ImportContext) -> Result<ImportedSession, SessionFileError> {
    let mut reader = Reader::new(ids);
    let mut legacy = None;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let record = super::parse_json(raw)
            .map_err(|error| SessionFileError::Syntax { line, detail: error.to_string() })?;
        let Value::Object(record) = record else {
            return Err(shape(line, "$", "a JSON object"));
        };
        match legacy {
            None if is_legacy_meta(&record) => legacy = Some(true),
            None => {
                legacy = Some(false);
                reader.record(line, &record)?;
            }
            Some(true) => reader.legacy_line(line, &record)?,
            Some(false) => reader.record(line, &record)?,
        }
    }
    Ok(reader.finish())
}

/// The state of one rollout being read.
struct Reader<'a> {
    /// The conversation so far (numbering, turns, call pairing, response runs).
    items: ResponsesItems<'a>,
    usage: UsageTrail,
    /// The model of the latest `turn_context` (or of `session_meta`).
    model: Option<String>,
    /// `total_token_usage` of the last usage recorded (a repeat is skipped).
    last_total: Option<Value>,
    diagnostics: Vec<FileDiagnostic>,
    /// Kinds already reported by a once-per-kind diagnostic.
    reported: HashSet<String>,
}

impl<'a> Reader<'a> {
    /// Nothing read yet; ids from `ids`.
    fn new(ids: &'a ImportContext) -> Self {
        Self {
            items: ResponsesItems::new(ids),
            usage: UsageTrail::new("openai"),
            model: None,
            last_total: None,
            diagnostics: Vec::new(),
            reported: HashSet::new(),
        }
    }

    /// The session read.
    fn finish(self) -> ImportedSession {
        ImportedSession {
            format: SessionFormat::CodexRollout,
            events: self.items.into_events(),
            usage: self.usage.finish(),
            linked: Vec::new(),
            diagnostics: self.diagnostics,
        }
    }

    /// Reports a record skipped on purpose.
    fn diagnose(&mut self, line: usize, code: &'static str, detail: String) {
        self.diagnostics.push(FileDiagnostic { line, code, detail });
    }

    /// Reports `code` for `kind` at its first occurrence only.
    fn diagnose_once(&mut self, line: usize, code: &'static str, kind: &str, detail: String) {
        if self.reported.insert(format!("{code}:{kind}")) {
            self.diagnose(line, code, detail);
        }
    }

    /// One `{"timestamp", "type", "payload"}` line.
    fn record(&mut self, line: usize, record: &Map<String, Value>) -> Result<(), SessionFileError> {
        let kind = record.get("type").and_then(Value::as_str);
        let kind = kind.ok_or_else(|| shape(line, "type", "a string"))?;
        let payload = match record.get("payload") {
            Some(Value::Object(payload)) => payload,
            _ if RECORD_KINDS.contains(&kind) => return Err(shape(line, "payload", "an object")),
            _ => return Err(SessionFileError::Unsupported { line, kind: kind.to_owned() }),
        };
        match kind {
            "session_meta" => {
                if self.model.is_none() {
                    self.model = payload.get("model").and_then(Value::as_str).map(str::to_owned);
                }
                Ok(())
            }
            "turn_context" => {
                if let Some(model) = payload.get("model").and_then(Value::as_str) {
                    self.model = Some(model.to_owned());
                }
                Ok(())
            }
            "response_item" => self.item(line, payload),
            "event_msg" => {
                self.event_msg(line, payload);
                Ok(())
            }
            "compacted" => {
                self.compacted(line, payload);
                Ok(())
            }
            other => Err(SessionFileError::Unsupported { line, kind: other.to_owned() }),
        }
    }

    /// A line of an older rollout after its meta line: a state record or a bare item.
    fn legacy_line(
        &mut self,
        line: usize,
        record: &Map<String, Value>,
    ) -> Result<(), SessionFileError> {
        if let Some(kind) = record.get("record_type") {
            let kind = kind.as_str().unwrap_or("?").to_owned();
            let detail = format!("`record_type: {kind}` lines (session state, not history)");
            self.diagnose_once(line, "codex_state_record_skipped", &kind, detail);
            return Ok(());
        }
        self.item(line, record)
    }

    /// One response item (the payload of a `response_item` line, or a bare legacy line).
    fn item(&mut self, line: usize, item: &Map<String, Value>) -> Result<(), SessionFileError> {
        let kind = match item.get("type") {
            Some(Value::String(kind)) => kind.as_str(),
            None if item.contains_key("role") => "message",
            _ => return Err(shape(line, "payload.type", "a string")),
        };
        match kind {
            "message" => match injected_text(item) {
                Some(text) => {
                    self.items.other_event(EventContent::SystemNote { text });
                    Ok(())
                }
                None => self.responses_item(line, item),
            },
            "reasoning" | "function_call" | "function_call_output" => {
                self.responses_item(line, item)
            }
            "custom_tool_call" => {
                let call_id = str_field(line, item, "call_id")?;
                let tool_name = str_field(line, item, "name")?;
                let input = match item.get("input") {
                    Some(Value::String(input)) => Value::String(input.clone()),
                    _ => return Err(shape(line, "payload.input", "a string")),
                };
                self.call(line, call_id, tool_name, input)
            }
            "local_shell_call" => {
                let call_id = match (item.get("call_id"), item.get("id")) {
                    (Some(Value::String(id)), _) | (_, Some(Value::String(id))) => id.clone(),
                    _ => return Err(shape(line, "payload.call_id", "a string")),
                };
                let input = item.get("action").cloned().unwrap_or(Value::Null);
                self.call(line, call_id, "local_shell".to_owned(), input)
            }
            "custom_tool_call_output" => {
                let call_id = str_field(line, item, "call_id")?;
                let Some(tool_name) = self.items.answer_call(&call_id) else {
                    let problem = "result for no open call";
                    return Err(SessionFileError::CallPairing { line, call_id, problem });
                };
                let output = item.get("output").cloned().unwrap_or(Value::Null);
                self.items
                    .other_event(EventContent::tool_result(call_id, tool_name, output, false));
                Ok(())
            }
            "web_search_call" => {
                self.web_search(line, item);
                Ok(())
            }
            "ghost_snapshot" => {
                let commit =
                    item.get("ghost_commit").and_then(|c| c.get("id")).and_then(Value::as_str);
                let detail = format!("git snapshot {} (for /undo)", commit.unwrap_or("?"));
                self.diagnose(line, "codex_ghost_snapshot_skipped", detail);
                Ok(())
            }
            other => Err(SessionFileError::Unsupported { line, kind: other.to_owned() }),
        }
    }

    /// An item the core's Responses import reads.
    fn responses_item(
        &mut self,
        line: usize,
        item: &Map<String, Value>,
    ) -> Result<(), SessionFileError> {
        // The importer takes a value; the item is cloned once (a rollout line is read once).
        let value = Value::Object(item.clone());
        self.items.item(line, &value).map_err(|error| responses_error(line, error))
    }

    /// A call of `tool_name` the agent executes.
    fn call(
        &mut self,
        line: usize,
        call_id: String,
        tool_name: String,
        input: Value,
    ) -> Result<(), SessionFileError> {
        if !self.items.open_call(&call_id, &tool_name) {
            let problem = "id reused while open";
            return Err(SessionFileError::CallPairing { line, call_id, problem });
        }
        self.items.model_event(EventContent::ToolCall { call_id, tool_name, input });
        Ok(())
    }

    /// A `web_search_call`: a hosted call, and its result when it has a status.
    fn web_search(&mut self, line: usize, item: &Map<String, Value>) {
        let call_id = match item.get("id") {
            Some(Value::String(id)) => id.clone(),
            _ => format!("web_search_{line}"),
        };
        let tool_name = "web_search".to_owned();
        let input = item.get("action").cloned().unwrap_or(Value::Null);
        let (id, name) = (call_id.clone(), tool_name.clone());
        self.items.model_event(EventContent::HostedToolCall { call_id, tool_name, input });
        if let Some(Value::String(status)) = item.get("status") {
            let is_error = status == "failed";
            let output = json!({ "status": status });
            let content =
                EventContent::HostedToolResult { call_id: id, tool_name: name, output, is_error };
            self.items.model_event(content);
        }
    }

    /// An `event_msg` line: usage, or a skipped kind.
    fn event_msg(&mut self, line: usize, payload: &Map<String, Value>) {
        let kind = payload.get("type").and_then(Value::as_str).unwrap_or("?");
        if kind == "token_count" {
            self.token_count(payload);
            return;
        }
        let detail = format!("`event_msg` `{kind}` (repeats response items or holds no history)");
        self.diagnose_once(line, "codex_event_msg_skipped", kind, detail);
    }

    /// A `token_count`: the usage of the response just read.
    fn token_count(&mut self, payload: &Map<String, Value>) {
        let Some(info) = payload.get("info").filter(|info| info.is_object()) else {
            return;
        };
        let Some(last) = info.get("last_token_usage").filter(|last| last.is_object()) else {
            return;
        };
        let total = info.get("total_token_usage").cloned();
        if total.is_some() && total == self.last_total {
            return;
        }
        self.last_total = total;
        let count = |key: &str| last.get(key).and_then(Value::as_u64).unwrap_or(0);
        let counts = Counts {
            input_tokens: count("input_tokens"),
            cached_input_tokens: count("cached_input_tokens"),
            cache_write_tokens: 0,
            output_tokens: count("output_tokens"),
        };
        let model = self.model.as_deref().unwrap_or("unknown");
        self.usage.record(self.items.events(), model, counts);
        self.items.end_response();
    }

    /// A `compacted` line: Codex compacted its context.
    fn compacted(&mut self, line: usize, payload: &Map<String, Value>) {
        let message = payload.get("message").and_then(Value::as_str).unwrap_or_default();
        let text = if message.is_empty() {
            "Codex compacted its context (no summary text recorded).".to_owned()
        } else {
            message.to_owned()
        };
        let code = "codex_compacted".to_owned();
        self.items.other_event(EventContent::RuntimeNote { code, text });
        self.usage.restart_at(self.items.events().len() - 1);
        if let Some(Value::Array(history)) = payload.get("replacement_history")
            && !history.is_empty()
        {
            let detail =
                format!("{} replacement_history items (copies of the history)", history.len());
            self.diagnose(line, "codex_replacement_history_skipped", detail);
        }
    }
}
