//! Active tool-result pruning: replacing a result in the current request with an archive
//! placeholder.
//!
//! The host archives the raw result first (content-addressed, per session), then sends the
//! placeholder instead of the result. The placeholder carries the bounded [`ArchiveAddress`] and
//! tells the model how to read the body back with the `archive_read` tool; the body is never
//! expanded eagerly. The canonical event is unchanged, later history compaction reads the
//! canonical events (never placeholders), and checkpoints carry no archive roots.

use crate::json_text::json_text;
use serde_json::{Value, json};

use super::address::{ArchiveAddress, ArchiveError};
use super::archive_read::{MAX_INSPECT_BYTES, MAX_QUERY_MATCHES};
use super::stale::quote;
use crate::budget::{TokenEstimator, estimate_value};
use crate::event::{EventContent, RuntimeEvent};

/// Name of the tool a host exposes for reading archived results.
pub(crate) const ARCHIVE_READ_TOOL_NAME: &str = "archive_read";

/// The text that replaces an archived result in the current request.
pub fn placeholder_for(
    address: &ArchiveAddress,
    tool_name: &str,
    call_id: &str,
    original_tokens: u64,
) -> String {
    let uri = address.to_uri();
    let inspect =
        json!({"address": uri, "mode": "inspect", "offset": 0, "length": MAX_INSPECT_BYTES});
    let query = json!({"address": uri, "mode": "query", "pattern": "<text to find>",
        "maxMatches": MAX_QUERY_MATCHES});
    format!(
        "[tool result archived: tool {tool} call {call}, {bytes} bytes, about {original_tokens} \
         estimated tokens]\n\
         The full result is not included in this request; it is stored at {uri}.\n\
         To read part of it, call the `{ARCHIVE_READ_TOOL_NAME}` tool with {inspect} (at most \
         {MAX_INSPECT_BYTES} bytes per call; continue from the returned nextOffset), or with \
         {query} to list up to {MAX_QUERY_MATCHES} lines that contain the text.",
        tool = quote(tool_name),
        call = quote(call_id),
        bytes = address.byte_size(),
    )
}

/// The bytes a tool result's output is archived as: a string's UTF-8 bytes, anything else as
/// compact JSON text. Active pruning stores these, and the addresses in masked and stale
/// placeholders hash them, so a host can find the body in the log by its address.
pub fn result_body(output: &Value) -> Vec<u8> {
    match output {
        Value::String(text) => text.as_bytes().to_vec(),
        other => json_text(other).into_bytes(),
    }
}

/// The JSON Schema of the `archive_read` tool's input, for hosts that expose it to a model.
pub fn archive_read_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "address": {"type": "string", "description": "The contextfold://archive/... address from the placeholder."},
            "mode": {"type": "string", "enum": ["inspect", "query"]},
            "offset": {"type": "integer", "minimum": 0, "description": "inspect: byte offset to start at."},
            "length": {"type": "integer", "minimum": 1, "maximum": MAX_INSPECT_BYTES, "description": "inspect: bytes to read."},
            "pattern": {"type": "string", "minLength": 1, "description": "query: text to find (case-sensitive)."},
            "maxMatches": {"type": "integer", "minimum": 1, "maximum": MAX_QUERY_MATCHES, "description": "query: most matching lines to return."}
        },
        "required": ["address", "mode"],
        "additionalProperties": false
    })
}

/// The pieces of one active prune. Store `archive_bytes` under `address` durably, and only then
/// send `replacement` in place of the original event.
#[derive(Debug, Clone, PartialEq)]
pub struct ActivePrune {
    /// Where the raw result is archived.
    pub address: ArchiveAddress,
    /// The raw result: the output string's UTF-8 bytes, or the output's compact JSON text.
    pub archive_bytes: Vec<u8>,
    /// A copy of the event whose output is the placeholder (call id, tool name kept).
    pub replacement: RuntimeEvent,
    /// Estimated tokens of the original output.
    pub original_tokens: u64,
}

/// Prepares an active prune of a tool result (ordinary or hosted); `Ok(None)` for any other
/// event. Which results to prune is the host's decision; this only builds the archive body, its
/// address and the placeholder event.
pub fn archive_tool_result(
    event: &RuntimeEvent,
    estimator: &dyn TokenEstimator,
) -> Result<Option<ActivePrune>, ArchiveError> {
    let (EventContent::ToolResult { call_id, tool_name, output, .. }
    | EventContent::HostedToolResult { call_id, tool_name, output, .. }) = &event.content
    else {
        return Ok(None);
    };
    let archive_bytes = result_body(output);
    let address = ArchiveAddress::for_content(&event.session_id, &archive_bytes)?;
    let original_tokens = estimate_value(estimator, output);
    let placeholder = Value::String(placeholder_for(&address, tool_name, call_id, original_tokens));
    let Some(content) = event.content.with_output(placeholder) else { return Ok(None) };
    Ok(Some(ActivePrune {
        address,
        archive_bytes,
        replacement: event.with_content(content),
        original_tokens,
    }))
}
