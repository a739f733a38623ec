//! The deterministic transcript of folded events sent to the summarizer.
//!
//! One entry per event, entries separated by a blank line, in log order. Reasoning events are
//! left out entirely (neither their text nor their provider data appear). Formats:
//!
//! ```text
//! [user]                                   [assistant]
//! <text>                                   <text>
//! [tool call <callId>] <toolName> <compact JSON input>
//! [tool result <callId>] <toolName>:       (or `<toolName> (error):`)
//! <output: a string verbatim, anything else as compact JSON>
//! [hosted tool call <callId>] …            [hosted tool result <callId>] …
//! [system note]                            [runtime note <code>]
//! <text>                                   <text>
//! ```
//!
//! The notes a failed compaction leaves in the log (runtime notes with code
//! `context_compaction_failed_open`) are left out too: they are about contextfold, not the
//! task, and leaving them out keeps an input that failed byte-identical when it is tried again,
//! so the malformed-input circuit recognizes it ([`is_compaction_failure_note`]).
//!
//! Every entry is a head and a payload (the text, the call input, the result output). A payload
//! may be replaced by an omission marker to fit the request: tool-result outputs first (the
//! fixed [`super::TOOL_RESULT_OMISSION_MARKER`]), and, only when one event alone is larger than
//! the summarizer's window, any other payload, with a marker that names its archive address
//! ([`payload_marker`]).

use crate::json_text::json_text;
use serde_json::Value;

use crate::attachment::Attachment;
use crate::diagnostics::ReasonCode;
use crate::event::{EventContent, RuntimeEvent};
use crate::prune::ArchiveAddress;

/// What kind of payload an entry carries: decides its omission order and marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PayloadKind {
    /// A (hosted) tool-result output: omitted first, oldest first, with the fixed marker.
    ToolResult,
    /// Anything else (user or assistant text, a call input, a note): omitted only as the last
    /// resort, largest first, with a marker carrying its archive address.
    Other(&'static str),
}

/// One rendered event.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    /// The event's position in the fold.
    pub(super) index: usize,
    /// The first line, up to the payload.
    pub(super) head: String,
    /// Between head and payload: a newline, or a space for a call's input.
    joiner: &'static str,
    /// The payload, as sent when not omitted (its bytes are what an archive address names).
    pub(super) payload: String,
    /// Decides the omission order and marker.
    pub(super) kind: PayloadKind,
    /// The marker that replaced the payload, once omitted.
    pub(super) omitted: Option<String>,
}

impl Entry {
    fn new(
        index: usize,
        head: String,
        joiner: &'static str,
        payload: String,
        kind: PayloadKind,
    ) -> Self {
        Entry { index, head, joiner, payload, kind, omitted: None }
    }

    /// The entry as it appears in the transcript.
    pub(super) fn render(&self) -> String {
        let body = self.omitted.as_deref().unwrap_or(&self.payload);
        format!("{}{}{body}", self.head, self.joiner)
    }

    /// The entry as it would appear with `marker` in place of its payload.
    pub(super) fn render_with(&self, marker: &str) -> String {
        format!("{}\n{marker}", self.head)
    }
}

/// The marker for an omitted non-tool-result payload: what it was, its size and the archive
/// address of its exact bytes (`contextfold://archive/<session>/<sha256>/<bytes>`), so the
/// summary can point at it and a host that archives it can serve it back through
/// `archive_read`. `None` when no address can be formed (an invalid session id, a payload over
/// the archive's size bound): such a payload is never omitted.
pub(super) fn payload_marker(
    what: &str,
    session_id: &str,
    payload: &str,
) -> Option<(String, String)> {
    let address = ArchiveAddress::for_content(session_id, payload.as_bytes()).ok()?.to_uri();
    let marker = format!(
        "[{what} omitted to fit the compaction request: {} bytes, archived at {address}; the \
         full text remains in the event log]",
        payload.len()
    );
    Some((marker, address))
}

/// Renders a JSON value: strings verbatim, anything else as compact JSON.
fn render_value(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => json_text(other),
    }
}

fn result_head(kind: &str, call_id: &str, tool_name: &str, is_error: bool) -> String {
    let error = if is_error { " (error)" } else { "" };
    format!("[{kind} {call_id}] {tool_name}{error}:")
}

/// The payload of `event` exactly as the transcript sends it, the bytes an omission marker's
/// archive address names; `None` for reasoning (never sent).
pub fn summary_payload(event: &RuntimeEvent) -> Option<String> {
    entry(0, event).map(|entry| entry.payload)
}

/// Whether `event` is the note a failed compaction appended (never part of a transcript).
pub(crate) fn is_compaction_failure_note(event: &RuntimeEvent) -> bool {
    matches!(&event.content, EventContent::RuntimeNote { code, .. }
        if code == ReasonCode::ContextCompactionFailedOpen.as_str())
}

/// `text` followed by one line per attachment: its short textual stand-in (media type, name,
/// size, archive address), never its bytes.
fn with_stand_ins(mut text: String, attachments: &[Attachment], session_id: &str) -> String {
    for attachment in attachments {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&attachment.stand_in(session_id));
    }
    text
}

fn entry(index: usize, event: &RuntimeEvent) -> Option<Entry> {
    use PayloadKind::{Other, ToolResult};
    if is_compaction_failure_note(event) {
        return None;
    }
    let entry = match &event.content {
        EventContent::UserText { text, attachments } => Entry::new(
            index,
            "[user]".into(),
            "\n",
            with_stand_ins(text.clone(), attachments, &event.session_id),
            Other("user text"),
        ),
        EventContent::AssistantText { text } => {
            Entry::new(index, "[assistant]".into(), "\n", text.clone(), Other("assistant text"))
        }
        EventContent::Reasoning { .. } => return None,
        EventContent::ToolCall { call_id, tool_name, input } => Entry::new(
            index,
            format!("[tool call {call_id}] {tool_name}"),
            " ",
            json_text(input),
            Other("tool-call input"),
        ),
        EventContent::HostedToolCall { call_id, tool_name, input } => Entry::new(
            index,
            format!("[hosted tool call {call_id}] {tool_name}"),
            " ",
            json_text(input),
            Other("hosted tool-call input"),
        ),
        EventContent::ToolResult { call_id, tool_name, output, is_error, attachments } => {
            Entry::new(
                index,
                result_head("tool result", call_id, tool_name, *is_error),
                "\n",
                with_stand_ins(render_value(output), attachments, &event.session_id),
                ToolResult,
            )
        }
        EventContent::HostedToolResult { call_id, tool_name, output, is_error } => Entry::new(
            index,
            result_head("hosted tool result", call_id, tool_name, *is_error),
            "\n",
            render_value(output),
            ToolResult,
        ),
        EventContent::SystemNote { text } => {
            Entry::new(index, "[system note]".into(), "\n", text.clone(), Other("system note"))
        }
        EventContent::RuntimeNote { code, text } => Entry::new(
            index,
            format!("[runtime note {code}]"),
            "\n",
            text.clone(),
            Other("runtime note"),
        ),
    };
    Some(entry)
}

/// One entry per non-reasoning event, in order.
pub(super) fn entries(fold: &[RuntimeEvent]) -> Vec<Entry> {
    fold.iter().enumerate().filter_map(|(index, event)| entry(index, event)).collect()
}

/// Separator between entries.
pub(super) const ENTRY_SEPARATOR: &str = "\n\n";

/// The whole transcript.
pub(super) fn render(entries: &[Entry]) -> String {
    let rendered: Vec<String> = entries.iter().map(Entry::render).collect();
    rendered.join(ENTRY_SEPARATOR)
}
