//! Tool-result pruning: deterministic, non-LLM rewrites of the current request.
//!
//! None creates a checkpoint or changes a canonical event; all keep every call/result pair.
//!
//! - Request pruning ([`prune_request`]) replaces oversized results of older turns in the
//!   uncovered remainder, and older observations anywhere after the live head (results followed
//!   by [`KEPT_RECENT_RESULTS`] newer ones that fill [`KEPT_RECENT_RESULTS_SHARE_PERCENT`] of the
//!   budget, current turn included: observation masking), with a
//!   placeholder saying the result remains in the event log, and old attachments with their
//!   archive address. The policies only name candidates; one epoch rule ([`close_epochs`])
//!   decides which are pruned, so the pruned set changes only when it frees at least
//!   [`epoch_minimum`] of the budget ([`PRUNE_EPOCH_MIN_FREED_TOKENS`] in large windows) and a
//!   provider's prompt cache survives every other request. It runs after checkpoint matching, so it never changes the bytes a
//!   checkpoint digest covers.
//! - Active pruning ([`archive_tool_result`], [`placeholder_for`]) replaces a result of the
//!   current turn with a placeholder carrying a bounded [`ArchiveAddress`]; the model reads the
//!   body back through the `archive_read` tool ([`read_archive_slice`]), which validates session,
//!   hash and size and returns a bounded slice.

mod active;
mod address;
mod archive_read;
mod attachments;
mod candidate;
mod epochs;
mod request;
mod stale;

pub use active::{
    ActivePrune, archive_read_input_schema, archive_tool_result, placeholder_for, result_body,
};
pub use address::{ArchiveAddress, ArchiveError, MAX_ARCHIVE_BYTES};
pub use archive_read::{
    ArchiveMatch, ArchiveReadMode, ArchiveReadRequest, ArchiveSlice, MAX_INSPECT_BYTES,
    MAX_MATCH_LINE_BYTES, MAX_PATTERN_BYTES, MAX_QUERY_MATCHES, read_archive_slice,
};

pub use attachments::PrunedAttachment;
pub use epochs::{
    EpochCut, PRUNE_EPOCH_MIN_FREED_SHARE_PERCENT, PRUNE_EPOCH_MIN_FREED_TOKENS, close_epochs,
    close_epochs_at, epoch_minimum,
};
pub use request::{RequestPrune, prune_request, prune_request_within};
pub use stale::{
    KEPT_RECENT_RESULTS, KEPT_RECENT_RESULTS_SHARE_PERCENT, MASKED_RESULT_MIN_TOKENS, PrunedResult,
    STALE_RESULT_MIN_TOKENS, stale_result_placeholder,
};
