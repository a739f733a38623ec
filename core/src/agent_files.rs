//! The session files agents leave on disk, read as they are: Claude Code transcripts
//! (`~/.claude/projects/<project>/<session>.jsonl`), Codex CLI rollouts
//! (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) and Cline / Roo Code histories
//! (`api_conversation_history.json`).
//!
//! Each reader turns one file into an [`ImportedSession`]: the main conversation as
//! [`RuntimeEvent`]s (ids from the [`ImportContext`], as every other import), the runs the agent
//! kept apart from it (Claude Code's subagents and sidechains) as linked sessions, the
//! provider-reported usage of each request as [`UsageFact`]s (they calibrate the estimator), and a
//! [`FileDiagnostic`] for every record it skipped on purpose. A record it cannot read is a
//! [`SessionFileError`] naming the line; nothing is dropped silently. The agent's own compaction
//! records (summaries, boundaries, `compacted` items) become `runtime_note`s, never contextfold
//! checkpoints: a checkpoint is only ever made, proven and recorded by contextfold.
//!
//! [`import_session_file`] reads one format, or detects it ([`detect_session_format`]) and says
//! which it read.

mod claude_code;
mod cline;
mod codex_rollout;
mod usage;

use serde::{Deserialize, Serialize};

use crate::attachment::AttachmentError;
use crate::calibration::UsageFact;
use crate::event::RuntimeEvent;
use crate::projection::{ImportContext, ImportOptions};

/// A session file format read as the agent wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum SessionFormat {
    /// Claude Code's `<session>.jsonl` (one JSON record per line, one line per content block).
    ClaudeCode,
    /// Codex CLI's `rollout-*.jsonl` (`session_meta`, `response_item`, `event_msg`, …).
    CodexRollout,
    /// Cline's or Roo Code's `api_conversation_history.json` (Anthropic messages).
    Cline,
}

impl SessionFormat {
    /// Every format, in the order [`detect_session_format`] tries them.
    pub const ALL: [SessionFormat; 3] =
        [SessionFormat::ClaudeCode, SessionFormat::CodexRollout, SessionFormat::Cline];

    /// The format's name, as `--format` and the npm package spell it.
    pub fn name(self) -> &'static str {
        match self {
            SessionFormat::ClaudeCode => "claude-code",
            SessionFormat::CodexRollout => "codex-rollout",
            SessionFormat::Cline => "cline",
        }
    }

    /// The format named `name` ([`SessionFormat::name`]).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|format| format.name() == name)
    }
}

/// The options of a session-file import as JSON (the npm package's `importSessionFile`): the
/// id options of every importer ([`ImportOptions`]) and `format`: a [`SessionFormat::name`], or
/// `"auto"`, `null` or left out to detect it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SessionFileOptions {
    /// The format to read; `None`: detect it.
    pub format: Option<SessionFormat>,
    /// The ids of the imported events.
    pub ids: ImportContext,
}

impl SessionFileOptions {
    /// Reads `{ format?, sessionId, ...ImportOptions }`; the error says what does not read (an
    /// unknown format, a field no importer knows, a missing `sessionId`).
    pub fn from_json(mut options: serde_json::Value) -> Result<Self, String> {
        use serde_json::Value;
        let format = match options.as_object_mut().and_then(|object| object.shift_remove("format"))
        {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) if name == "auto" => None,
            Some(Value::String(name)) => {
                Some(SessionFormat::from_name(&name).ok_or_else(|| {
                    format!("format `{name}` is not auto, claude-code, codex-rollout or cline")
                })?)
            }
            Some(other) => return Err(format!("format must be a string, not {other}")),
        };
        let ids = serde_json::from_value::<ImportOptions>(options).map_err(|e| e.to_string())?;
        Ok(Self { format, ids: ImportContext::from(ids) })
    }
}

/// One session file in the event model. Its JSON (camelCase) is what the npm package's
/// `importSessionFile` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ImportedSession {
    /// The format that was read (detected, or the one asked for).
    pub format: SessionFormat,
    /// The main conversation, numbered from the [`ImportContext`].
    pub events: Vec<RuntimeEvent>,
    /// Usage the provider reported for requests of the main conversation, in order.
    pub usage: Vec<UsageFact>,
    /// Runs the agent kept out of the main conversation (subagents, sidechains), each its own
    /// session.
    pub linked: Vec<LinkedSession>,
    /// Records skipped on purpose, with why.
    pub diagnostics: Vec<FileDiagnostic>,
}

/// A run kept apart from the main conversation (a Claude Code subagent or sidechain), imported
/// as its own session `<main session id>/<name>`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LinkedSession {
    /// Its session id: the main session's id, `/`, and the agent's own id for the run.
    pub session_id: String,
    /// Its events, numbered from seq 1.
    pub events: Vec<RuntimeEvent>,
    /// Usage the provider reported for its requests.
    pub usage: Vec<UsageFact>,
}

/// A record an importer skipped on purpose (a snapshot that is not conversation, a record kind
/// that carries no history).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileDiagnostic {
    /// 1-based line of the record (for a JSON document: 1-based index of the message).
    pub line: usize,
    /// Stable snake_case code (`codex_ghost_snapshot_skipped`, …).
    pub code: &'static str,
    /// What was skipped.
    pub detail: String,
}

/// Why a session file cannot be imported. Every variant but `UnknownFormat` names the record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionFileError {
    /// A line (or the document) is not JSON.
    #[error("line {line}: not JSON: {detail}")]
    Syntax {
        /// 1-based line (1 for a JSON document).
        line: usize,
        /// The parser's message.
        detail: String,
    },
    /// A record does not have the shape its format gives it.
    #[error("line {line}: {path}: expected {expected}")]
    Shape {
        /// 1-based line (for a JSON document: 1-based message index).
        line: usize,
        /// JSON path inside the record.
        path: String,
        /// What was expected.
        expected: &'static str,
    },
    /// A record kind or content block the reader does not know.
    #[error("line {line}: `{kind}` cannot be imported")]
    Unsupported {
        /// 1-based line (for a JSON document: 1-based message index).
        line: usize,
        /// The record's or block's type.
        kind: String,
    },
    /// A tool result that answers no open call, or a call id reused while its call is open.
    #[error("line {line}: call `{call_id}`: {problem}")]
    CallPairing {
        /// 1-based line (for a JSON document: 1-based message index).
        line: usize,
        /// The call id.
        call_id: String,
        /// What is wrong (`result for no open call`, `id reused while open`, …).
        problem: &'static str,
    },
    /// An image or file that cannot be accepted.
    #[error("line {line}: {source}")]
    Attachment {
        /// 1-based line (for a JSON document: 1-based message index).
        line: usize,
        /// What is wrong with it.
        source: AttachmentError,
    },
    /// No reader recognizes the file (auto detection).
    #[error("not a session file contextfold reads ({detail})")]
    UnknownFormat {
        /// What was looked at.
        detail: String,
    },
}

impl SessionFileError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Syntax { .. } => "session_file_syntax",
            Self::Shape { .. } => "session_file_shape",
            Self::Unsupported { .. } => "session_file_unsupported",
            Self::CallPairing { .. } => "session_file_call_pairing",
            Self::Attachment { .. } => "session_file_attachment",
            Self::UnknownFormat { .. } => "session_file_unknown_format",
        }
    }

    /// The 1-based line the error names, if it names one.
    pub fn line(&self) -> Option<usize> {
        match self {
            Self::Syntax { line, .. }
            | Self::Shape { line, .. }
            | Self::Unsupported { line, .. }
            | Self::CallPairing { line, .. }
            | Self::Attachment { line, .. } => Some(*line),
            Self::UnknownFormat { .. } => None,
        }
    }
}

/// One JSON value of a session file (a line, or a whole Cline history), read by the core's own
/// JSON text reader: serde_json's text parser stays out of the npm module, where it would add
/// about 16 KB gzipped (docs/performance.md, "npm package").
fn parse_json(text: &str) -> Result<serde_json::Value, crate::json_read::text::JsonSyntaxError> {
    crate::json_read::text::value_from_text(text)
}

/// The format of a session file, judged from its first records; `None` when no reader
/// recognizes it.
pub fn detect_session_format(text: &str) -> Option<SessionFormat> {
    SessionFormat::ALL.into_iter().find(|format| match format {
        SessionFormat::ClaudeCode => claude_code::looks_like(text),
        SessionFormat::CodexRollout => codex_rollout::looks_like(text),
        SessionFormat::Cline => cline::looks_like(text),
    })
}

/// Reads a session file of `format`, or of the detected format when `format` is `None`.
pub fn import_session_file(
    format: Option<SessionFormat>,
    text: &str,
    ids: &ImportContext,
) -> Result<ImportedSession, SessionFileError> {
    if text.trim().is_empty() {
        return Err(SessionFileError::UnknownFormat { detail: "the file is empty".into() });
    }
    let format = match format {
        Some(format) => format,
        None => detect_session_format(text).ok_or_else(|| SessionFileError::UnknownFormat {
            detail: "neither a Claude Code transcript, a Codex rollout nor a Cline history".into(),
        })?,
    };
    match format {
        SessionFormat::ClaudeCode => claude_code::import(text, ids),
        SessionFormat::CodexRollout => codex_rollout::import(text, ids),
        SessionFormat::Cline => cline::import(text, ids),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A Codex rollout of one user message and one answer.
    const ROLLOUT: &str = concat!(
        r#"{"timestamp":"2025-01-01T00:00:00Z","type":"session_meta","payload":{"id":"r1","cwd":"/w"}}"#,
        "\n",
        r#"{"timestamp":"2025-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]}}"#,
        "\n",
        r#"{"timestamp":"2025-01-01T00:00:02Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}"#,
        "\n",
    );

    /// `importSessionFile(text, options)` as the binding runs it: `ok`, the core's code, or
    /// `options` for options that do not read.
    fn outcome(text: &str, options: serde_json::Value) -> Result<ImportedSession, &'static str> {
        let options = SessionFileOptions::from_json(options).map_err(|_| "options")?;
        import_session_file(options.format, text, &options.ids).map_err(|e| e.code())
    }

    #[test]
    fn the_format_is_detected_or_named() {
        for options in [
            json!({ "sessionId": "s" }),
            json!({ "sessionId": "s", "format": "auto" }),
            json!({ "sessionId": "s", "format": null }),
            json!({ "sessionId": "s", "format": "codex-rollout", "firstSeq": 5 }),
        ] {
            let first_seq =
                options.get("firstSeq").and_then(serde_json::Value::as_u64).unwrap_or(1);
            let imported = outcome(ROLLOUT, options).expect("a rollout");
            assert_eq!(imported.format, SessionFormat::CodexRollout);
            assert_eq!(imported.events.len(), 2);
            assert_eq!(imported.events[0].seq, first_seq);
            assert_eq!(imported.events[0].session_id, "s");
        }
    }

    #[test]
    fn options_that_do_not_read_and_files_that_do_not_import_say_why() {
        let code = |text: &str, options| outcome(text, options).map(|_| "ok").unwrap_or_else(|c| c);
        let named = |format: &str| json!({ "sessionId": "s", "format": format });
        assert_eq!(code(ROLLOUT, named("gemini")), "options");
        assert_eq!(code(ROLLOUT, json!({ "sessionId": "s", "format": 3 })), "options");
        assert_eq!(code(ROLLOUT, json!({ "sessionId": "s", "formats": "auto" })), "options");
        assert_eq!(code(ROLLOUT, json!({})), "options");
        assert_eq!(code("", json!({ "sessionId": "s" })), "session_file_unknown_format");
        assert_eq!(code("{\"a\":1}\n", json!({ "sessionId": "s" })), "session_file_unknown_format");
        assert_eq!(code(ROLLOUT, named("claude-code")), "session_file_unsupported");
    }
}
