//! The fast path: writes a [`RuntimeEvent`] in canonical form field by field.
//!
//! The known fields are written in their fixed JCS order (keys sorted by UTF-16 code units; all
//! are ASCII, so this is plain byte order). Only the free-form JSON values (tool input and
//! output, `providerData`, `metadata`) go through the generic sorter in [`super::jcs`].
//!
//! The result must equal JCS applied to the event's serde JSON form; the property tests in
//! `digest/property_tests.rs` check that against the independent [`super::canonical_json`].

use super::jcs::{CanonicalSink, write_object, write_string, write_u64, write_value};
use crate::attachment::Attachment;
use crate::event::{EventContent, RuntimeEvent};
use serde_json::Value;

/// Writes `event` as canonical JSON (no trailing newline).
///
/// Top-level key order: `content`, `createdAtMs`, `metadata`, `partial`, `pinned`,
/// `responseId`, `runId`, `runtimeEventId`, `seq`, `sessionId`, `turnId`. Absent optionals and
/// false flags are omitted, as in the serde form.
pub(crate) fn write_event<S: CanonicalSink>(sink: &mut S, event: &RuntimeEvent) {
    sink.write_str("{\"content\":");
    write_content(sink, &event.content);
    if let Some(created_at_ms) = event.created_at_ms {
        sink.write_str(",\"createdAtMs\":");
        write_u64(sink, created_at_ms);
    }
    if let Some(metadata) = &event.metadata {
        sink.write_str(",\"metadata\":");
        write_object(sink, metadata);
    }
    if event.partial {
        sink.write_str(",\"partial\":true");
    }
    if event.pinned {
        sink.write_str(",\"pinned\":true");
    }
    if let Some(response_id) = &event.response_id {
        sink.write_str(",\"responseId\":");
        write_string(sink, response_id);
    }
    sink.write_str(",\"runId\":");
    write_string(sink, &event.run_id);
    sink.write_str(",\"runtimeEventId\":");
    write_string(sink, &event.runtime_event_id);
    sink.write_str(",\"seq\":");
    write_u64(sink, event.seq);
    sink.write_str(",\"sessionId\":");
    write_string(sink, &event.session_id);
    sink.write_str(",\"turnId\":");
    write_string(sink, &event.turn_id);
    sink.write_str("}");
}

/// Writes the `content` object: its fields in sorted order, `type` last (it sorts after every
/// other field name used by any kind).
fn write_content<S: CanonicalSink>(sink: &mut S, content: &EventContent) {
    match content {
        EventContent::UserText { text, attachments } => {
            open_with_attachments(sink, attachments);
            sink.write_str("\"text\":");
            write_string(sink, text);
        }
        EventContent::AssistantText { text } | EventContent::SystemNote { text } => {
            sink.write_str("{\"text\":");
            write_string(sink, text);
        }
        EventContent::Reasoning { text, provider_data } => {
            sink.write_str("{");
            // A null providerData parses back as absent, so it is digested as absent: the
            // digest of an event equals the digest of its JSON round trip.
            if let Some(data) = provider_data.as_ref().filter(|data| !data.is_null()) {
                sink.write_str("\"providerData\":");
                write_value(sink, data);
                sink.write_str(",");
            }
            sink.write_str("\"text\":");
            write_string(sink, text);
        }
        EventContent::ToolCall { call_id, tool_name, input }
        | EventContent::HostedToolCall { call_id, tool_name, input } => {
            sink.write_str("{");
            write_call_fields(sink, call_id, "input", input, false, tool_name);
        }
        EventContent::ToolResult { call_id, tool_name, output, is_error, attachments } => {
            open_with_attachments(sink, attachments);
            write_call_fields(sink, call_id, "output", output, *is_error, tool_name);
        }
        EventContent::HostedToolResult { call_id, tool_name, output, is_error } => {
            sink.write_str("{");
            write_call_fields(sink, call_id, "output", output, *is_error, tool_name);
        }
        EventContent::RuntimeNote { code, text } => {
            sink.write_str("{\"code\":");
            write_string(sink, code);
            sink.write_str(",\"text\":");
            write_string(sink, text);
        }
    }
    sink.write_str(",\"type\":\"");
    sink.write_str(content.kind_name());
    sink.write_str("\"}");
}

/// Opens the content object and writes `attachments` (the first key in sorted order) when
/// there are any. Attachments are rare, so they take the generic canonical writer.
fn open_with_attachments<S: CanonicalSink>(sink: &mut S, attachments: &[Attachment]) {
    sink.write_str("{");
    if !attachments.is_empty() {
        sink.write_str("\"attachments\":");
        let value = crate::json_read::text::to_value(attachments).unwrap_or(Value::Null);
        write_value(sink, &value);
        sink.write_str(",");
    }
}

/// Writes `callId`, `isError` (only when true), the payload (`input` or `output`) and
/// `toolName`, in that order (the kind's `type` follows), after the opening brace.
fn write_call_fields<S: CanonicalSink>(
    sink: &mut S,
    call_id: &str,
    payload_key: &str,
    payload: &Value,
    is_error: bool,
    tool_name: &str,
) {
    sink.write_str("\"callId\":");
    write_string(sink, call_id);
    if is_error {
        sink.write_str(",\"isError\":true");
    }
    sink.write_str(",\"");
    sink.write_str(payload_key);
    sink.write_str("\":");
    write_value(sink, payload);
    sink.write_str(",\"toolName\":");
    write_string(sink, tool_name);
}
