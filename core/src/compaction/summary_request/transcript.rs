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

use serde_json::Value;

use crate::event::{EventContent, RuntimeEvent};

/// One rendered event. A tool result keeps its payload separately so it can be omitted.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    /// The first line (and, for text events, the whole entry).
    pub(super) head: String,
    /// The tool-result payload, when this entry is a (hosted) tool result.
    pub(super) payload: Option<String>,
    /// The payload has been replaced by the omission marker.
    pub(super) omitted: bool,
}

impl Entry {
    fn text(head: String) -> Self {
        Entry { head, payload: None, omitted: false }
    }

    /// The entry as it appears in the transcript, with `marker` in place of an omitted payload.
    pub(super) fn render(&self, marker: &str) -> String {
        match (&self.payload, self.omitted) {
            (None, _) => self.head.clone(),
            (Some(_), true) => format!("{}\n{marker}", self.head),
            (Some(payload), false) => format!("{}\n{payload}", self.head),
        }
    }
}

/// Renders a JSON value: strings verbatim, anything else as compact JSON.
fn render_value(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn result_head(kind: &str, call_id: &str, tool_name: &str, is_error: bool) -> String {
    let error = if is_error { " (error)" } else { "" };
    format!("[{kind} {call_id}] {tool_name}{error}:")
}

/// One entry per non-reasoning event, in order.
pub(super) fn entries(fold: &[RuntimeEvent]) -> Vec<Entry> {
    let mut out = Vec::with_capacity(fold.len());
    for event in fold {
        let entry = match &event.content {
            EventContent::UserText { text } => Entry::text(format!("[user]\n{text}")),
            EventContent::AssistantText { text } => Entry::text(format!("[assistant]\n{text}")),
            EventContent::Reasoning { .. } => continue,
            EventContent::ToolCall { call_id, tool_name, input } => {
                Entry::text(format!("[tool call {call_id}] {tool_name} {input}"))
            }
            EventContent::HostedToolCall { call_id, tool_name, input } => {
                Entry::text(format!("[hosted tool call {call_id}] {tool_name} {input}"))
            }
            EventContent::ToolResult { call_id, tool_name, output, is_error } => Entry {
                head: result_head("tool result", call_id, tool_name, *is_error),
                payload: Some(render_value(output)),
                omitted: false,
            },
            EventContent::HostedToolResult { call_id, tool_name, output, is_error } => Entry {
                head: result_head("hosted tool result", call_id, tool_name, *is_error),
                payload: Some(render_value(output)),
                omitted: false,
            },
            EventContent::SystemNote { text } => Entry::text(format!("[system note]\n{text}")),
            EventContent::RuntimeNote { code, text } => {
                Entry::text(format!("[runtime note {code}]\n{text}"))
            }
        };
        out.push(entry);
    }
    out
}

/// Separator between entries.
pub(super) const ENTRY_SEPARATOR: &str = "\n\n";

/// The whole transcript.
pub(super) fn render(entries: &[Entry], marker: &str) -> String {
    let rendered: Vec<String> = entries.iter().map(|entry| entry.render(marker)).collect();
    rendered.join(ENTRY_SEPARATOR)
}
