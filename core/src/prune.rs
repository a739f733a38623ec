//! Tool-result pruning: two deterministic, non-LLM rewrites of the current request.
//!
//! Neither creates a checkpoint or changes a canonical event; both keep every call/result pair.
//!
//! - Stale pruning ([`prune_stale_tool_results`]) replaces oversized results of older turns in
//!   the uncovered remainder with a placeholder saying the result remains in the event log. It
//!   runs after checkpoint matching, so it never changes the bytes a checkpoint digest covers.
//! - Active pruning ([`archive_tool_result`], [`placeholder_for`]) replaces a result of the
//!   current turn with a placeholder carrying a bounded [`ArchiveAddress`]; the model reads the
//!   body back through the `archive_read` tool ([`read_archive_slice`]), which validates session,
//!   hash and size and returns a bounded slice.

mod active;
mod address;
mod archive_read;
mod attachments;
mod stale;

pub use active::{
    ARCHIVE_READ_TOOL_NAME, ActivePrune, archive_read_input_schema, archive_tool_result,
    placeholder_for,
};
pub use address::{
    ARCHIVE_URI_PREFIX, ArchiveAddress, ArchiveError, MAX_ARCHIVE_BYTES, MAX_SESSION_ID_LEN,
};
pub use archive_read::{
    ArchiveMatch, ArchiveReadMode, ArchiveReadRequest, ArchiveSlice, MATCH_CONTEXT_BEFORE,
    MAX_INSPECT_BYTES, MAX_MATCH_LINE_BYTES, MAX_PATTERN_BYTES, MAX_QUERY_MATCHES,
    read_archive_slice,
};
pub use attachments::{
    KEPT_RECENT_ATTACHMENTS, PrunedAttachment, attachment_diagnostic, prune_old_attachments,
    stale_attachment_placeholder,
};
pub use stale::{
    PROTECTED_COMPLETED_TURNS, PrunedResult, STALE_RESULT_MIN_TOKENS, StalePrune,
    prune_stale_tool_results, stale_result_placeholder,
};
