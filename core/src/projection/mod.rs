//! Projection: checkpoint + uncovered raw tail + current turn, as provider-neutral messages,
//! and their mapping to provider wire formats.

pub(crate) mod ai_sdk;
pub(crate) mod ai_sdk_import;
pub(crate) mod anthropic;
mod calibrated;
#[cfg(test)]
mod import_reuse_tests;
pub(crate) mod import_state;
pub(crate) mod live_head;
pub(crate) mod materialize;
pub(crate) mod message;
pub(crate) mod openai_chat;
pub(crate) mod openai_responses;
mod options;
mod output_format;
pub(crate) mod project;

pub use ai_sdk::{ModelMessageImportError, import_model_messages, to_model_messages};
pub use anthropic::{
    AnthropicHistory, AnthropicImportError, AnthropicMappingError, import_anthropic, to_anthropic,
};
pub use calibrated::{CalibratedProjection, calibrated_estimator, project_calibrated};
pub use live_head::{Remainder, is_live_head_kind};
pub use materialize::{
    Materialized, Repair, estimate_message, estimate_messages, interrupted_output, materialize,
};
pub use message::{Message, Part, Role};
pub use openai_chat::{
    ChatImportError, ChatMappingError, ImportContext, import_openai_chat, to_openai_chat,
};
pub use openai_responses::{ResponsesImportError, import_openai_responses, to_openai_responses};
pub use options::{ImportOptions, ProjectOptions};
pub use output_format::{FormattedMessages, OutputFormat, OutputFormatError};
pub use project::{ProjectInput, Projection, ReplayedCheckpoint, project, project_with};

// The session files agents leave on disk, re-exported here.
pub use crate::agent_files::{
    FileDiagnostic, ImportedSession, LinkedSession, SessionFileError, SessionFileOptions,
    SessionFormat, detect_session_format, import_session_file,
};

// Tool-result pruning and the archive, re-exported here.
pub use crate::prune::{
    ActivePrune, ArchiveAddress, ArchiveError, ArchiveMatch, ArchiveReadMode, ArchiveReadRequest,
    ArchiveSlice, EpochCut, KEPT_RECENT_RESULTS, KEPT_RECENT_RESULTS_SHARE_PERCENT,
    MASKED_RESULT_MIN_TOKENS, MAX_ARCHIVE_BYTES, MAX_INSPECT_BYTES, MAX_MATCH_LINE_BYTES,
    MAX_PATTERN_BYTES, MAX_QUERY_MATCHES, PRUNE_EPOCH_MIN_FREED_SHARE_PERCENT,
    PRUNE_EPOCH_MIN_FREED_TOKENS, PrunedAttachment, PrunedResult, RequestPrune,
    STALE_RESULT_MIN_TOKENS, archive_read_input_schema, archive_tool_result, close_epochs,
    close_epochs_at, epoch_minimum, placeholder_for, prune_request, prune_request_within,
    read_archive_slice, result_body, stale_result_placeholder,
};
