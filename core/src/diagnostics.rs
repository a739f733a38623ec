//! Stable reason codes and diagnostics.
//!
//! Every decision the runtime makes about history (skip, fail open, reject a checkpoint, keep a
//! tail) is reported as data: a [`Diagnostic`] with a stable snake_case [`ReasonCode`], a human
//! detail and the token figures behind it. Codes are part of the public contract: hosts, the
//! CLI's `--json` output and the npm package expose them unchanged.

use serde::{Deserialize, Serialize};

macro_rules! reason_codes {
    ($( $(#[$doc:meta])* $variant:ident = $code:literal, )*) => {
        /// A stable, machine-readable reason code. The string form never changes once released.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum ReasonCode {
            $( $(#[$doc])* $variant, )*
        }

        impl ReasonCode {
            /// Every code, in table order.
            pub const ALL: &'static [ReasonCode] = &[ $( ReasonCode::$variant, )* ];

            /// The stable snake_case string.
            pub fn as_str(self) -> &'static str {
                match self { $( ReasonCode::$variant => $code, )* }
            }

            /// Parses the stable string.
            pub fn parse(code: &str) -> Option<Self> {
                match code { $( $code => Some(ReasonCode::$variant), )* _ => None }
            }
        }
    };
}

reason_codes! {
    // Checkpoint matching and replay.
    /// The log has fewer events than claimed, or the through-boundary differs.
    CoverageMiss = "coverage_miss",
    /// The covered prefix does not hash to the checkpoint's source digest.
    SourceHashMismatch = "source_hash_mismatch",
    /// The checkpoint belongs to another session.
    SessionMismatch = "session_mismatch",
    /// The checkpoint's schema version is not understood; raw history is used.
    CheckpointSchemaUnsupported = "checkpoint_schema_unsupported",
    /// A V3 checkpoint was produced by another provider, connection or model.
    ProviderMismatch = "provider_mismatch",
    /// Checkpoint plus tail does not fit the current history budget.
    CheckpointOverBudget = "checkpoint_over_budget",
    /// The replacement is not strictly smaller than the source it replaces.
    ReplacementNotSmaller = "replacement_not_smaller",
    /// A candidate does not legitimately succeed the current checkpoint.
    SuccessorConflict = "successor_conflict",
    /// A source-matched checkpoint was replayed.
    CheckpointReplayed = "checkpoint_replayed",
    /// The projection is over the history budget: sent as it is, a provider is likely to
    /// refuse it. Reported on every projection that does not fit (`fits: false`).
    ProjectionOverBudget = "projection_over_budget",
    // Planning.
    /// History fits the budget; nothing was compacted.
    BelowHighWater = "below_high_water",
    /// A background preparation found the history below the model's soft threshold.
    BelowSoftThreshold = "below_soft_threshold",
    /// A background preparation ended before its summarizer call: its summary target cannot
    /// hold the exact artifacts of the events it would fold, so the foreground compaction at
    /// the hard trigger decides.
    PreparationTooSmall = "preparation_too_small",
    /// A background preparation built a checkpoint; it is recorded only when adopted.
    CheckpointPrepared = "checkpoint_prepared",
    /// A compaction adopted the prepared checkpoint instead of calling the summarizer.
    PreparedCheckpointUsed = "prepared_checkpoint_used",
    /// The prepared checkpoint could not serve this request (another checkpoint was recorded
    /// since, its source no longer matches, or it does not fit the current budget or
    /// provider); the compaction ran in the foreground.
    PreparedCheckpointRejected = "prepared_checkpoint_rejected",
    /// No safe completed prefix exists (pinned head, partial or unpaired events).
    NoSafePrefix = "no_safe_prefix",
    /// The current checkpoint already covers the whole safe prefix.
    AlreadyCovered = "already_covered",
    /// The pinned tail plus the current turn alone exceed the history budget.
    MinimumContextExceedsBudget = "minimum_context_exceeds_budget",
    /// Automatic compaction failed and the remaining history still exceeds the budget.
    ContextBudgetExhausted = "context_budget_exhausted",
    /// Manual compaction failed; the session continues on source-derived context.
    ContextCompactionFailedOpen = "context_compaction_failed_open",
    /// A new checkpoint was durably recorded.
    CheckpointRecorded = "checkpoint_recorded",
    /// Older tool-result payloads were replaced by the omission marker to fit a request.
    ToolResultsOmitted = "tool_results_omitted",
    /// Stale oversized tool results in the uncovered remainder were pruned for this request.
    StaleToolResultsPruned = "stale_tool_results_pruned",
    /// Attachments of stale turns in the uncovered remainder were replaced by their archive
    /// address for this request.
    StaleAttachmentsPruned = "stale_attachments_pruned",
    /// A rolling failure reused the previous checkpoint without widening its coverage.
    PreviousCheckpointReused = "previous_checkpoint_reused",
    /// The compactor input for the whole fold cannot fit, so a rolling step folded the largest
    /// safe prefix whose input fits; later steps continue from its checkpoint.
    FoldSplit = "fold_split",
    /// Partial events (a step still streaming, or one abandoned mid-stream) were left out of the
    /// request: they are never replayed as if they were complete.
    PartialEventsLeftOut = "partial_events_left_out",
    /// One event alone was larger than the compactor's window: its payload reached the
    /// summarizer as a marker naming its archive address (never silently dropped).
    EventPayloadsOmitted = "event_payloads_omitted",
    // Summaries.
    /// The summarizer returned no text.
    EmptySummary = "empty_summary",
    /// A required section is missing.
    MalformedSummaryMissingSection = "malformed_summary_missing_section",
    /// Required sections are out of order.
    MalformedSummarySectionOrder = "malformed_summary_section_order",
    /// A required section has no substantive content.
    MalformedSummaryEmptySection = "malformed_summary_empty_section",
    /// The summary ends inside an open code fence.
    MalformedSummaryOpenFence = "malformed_summary_open_fence",
    /// The summary ends with a truncation marker.
    MalformedSummaryTruncated = "malformed_summary_truncated",
    /// The provider stopped on its output-length limit.
    MalformedSummaryLengthFinish = "malformed_summary_length_finish",
    /// The summary is disproportionately small for a large fold.
    MalformedSummaryTooSmall = "malformed_summary_too_small",
    /// The summary looks like a provider or tool error message, not a summary.
    MalformedSummaryErrorText = "malformed_summary_error_text",
    /// The quality gate's scores of a summary: which folded artifacts it keeps verbatim, and
    /// how many the gate appended from the log (see `quality::gate`).
    SummaryRetention = "summary_retention",
    /// A valid LLM summary kept less than the gate's threshold: one repair request naming the
    /// missing artifacts was sent.
    SummaryRetentionRepair = "summary_retention_repair",
    /// The rolling chain's covered retention decayed past the trigger: this compaction folds
    /// the log again from its start instead of rolling on the latest summary.
    QualityRecompaction = "quality_recompaction",
    /// The current checkpoint covers the whole safe prefix but does not fit the current budget
    /// (the window shrank): this compaction replaces it with a smaller one over the same events,
    /// folded again from the start of the log when that fits one summarizer request, else from
    /// its summary.
    RecompressForBudget = "recompress_for_budget",
    /// This exact input already failed as malformed; it is not dispatched again.
    MalformedSummaryCircuitOpen = "malformed_summary_circuit_open",
    /// The summarizer request cannot fit the history-input budget, even with omissions.
    SummaryInputCannotFit = "summary_input_cannot_fit",
    // Provider-native state.
    /// The native compactor returned zero or several compaction items, or an incomplete one.
    NativeNoUniqueItem = "native_no_unique_item",
    /// The native request cannot fit its budget after bounded tool-result omission.
    NativeInputCannotFit = "native_input_cannot_fit",
    // Provider and host failures.
    /// The provider rejected the request as malformed (non-retryable protocol error).
    ProviderRejected = "provider_rejected",
    /// The provider reported a context overflow.
    ProviderOverflow = "provider_overflow",
    /// Authentication failed.
    ProviderAuth = "provider_auth",
    /// Billing or quota failure.
    ProviderBilling = "provider_billing",
    /// Rate limited.
    ProviderRateLimited = "provider_rate_limited",
    /// The provider is unavailable or timed out.
    ProviderUnavailable = "provider_unavailable",
    /// The durable checkpoint append failed.
    AppendFailed = "append_failed",
    /// The operation was cancelled; nothing was persisted.
    Cancelled = "cancelled",
    // Recovery and archives.
    /// A recorded checkpoint event was skipped during recovery.
    RecoveryEventSkipped = "recovery_event_skipped",
    /// An archive address or read request is invalid.
    ArchiveAddressInvalid = "archive_address_invalid",
    /// The native compaction fold is not a validated safe prefix (unpaired result, repeated
    /// call id); nothing is dispatched.
    NativeInputInvalid = "native_input_invalid",
    // Projection pairing repairs (the log is unchanged; only the projection is repaired).
    /// A tool call had no result; the projection carries an explicit error result.
    ToolCallInterrupted = "tool_call_interrupted",
    /// A second result for one call id was left out of the projection.
    DuplicateToolResultDropped = "duplicate_tool_result_dropped",
    /// A result whose call is not in the projection was left out of it.
    OrphanToolResultDropped = "orphan_tool_result_dropped",
    /// A result recorded after later messages was moved up to follow its call.
    ToolResultMoved = "tool_result_moved",
    /// A second call reusing an earlier call id was left out of the projection.
    DuplicateToolCallDropped = "duplicate_tool_call_dropped",
    /// A call reusing the id of an earlier, answered call was given a unique id in the
    /// projection (`<id>_r<n>`, its results follow it), so both exchanges are kept.
    ToolCallIdRenamed = "tool_call_id_renamed",
    /// Two recorded checkpoints claim different coverage at the same largest event count.
    CheckpointFork = "checkpoint_fork",
    /// An archive read named a session other than the one it was made in.
    ArchiveSessionMismatch = "archive_session_mismatch",
    /// The stored archive body does not hash to the address's SHA-256.
    ArchiveHashMismatch = "archive_hash_mismatch",
    /// The stored archive body does not have the address's byte size.
    ArchiveSizeMismatch = "archive_size_mismatch",
    /// An archive read request has invalid parameters (offset, length, pattern, match count).
    ArchiveReadInvalid = "archive_read_invalid",
}

impl std::fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ReasonCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ReasonCode {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let code = String::deserialize(deserializer)?;
        ReasonCode::parse(&code)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown reason code `{code}`")))
    }
}

/// One observable decision, with the token figures behind it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnostic {
    /// Stable reason code.
    pub code: ReasonCode,
    /// Human-readable detail (never contains provider state or keys).
    pub detail: String,
    /// Token figures relevant to the decision, when there are any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenFigures>,
}

/// Token figures attached to a diagnostic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenFigures {
    /// Estimated tokens before the decision (e.g. the raw source).
    pub before: u64,
    /// Estimated tokens after it (e.g. checkpoint + tail).
    pub after: u64,
    /// The history budget in force.
    pub budget: u64,
}

impl Diagnostic {
    /// A diagnostic without token figures.
    pub fn new(code: ReasonCode, detail: impl Into<String>) -> Self {
        Self { code, detail: detail.into(), tokens: None }
    }

    /// A diagnostic with token figures.
    pub fn with_tokens(code: ReasonCode, detail: impl Into<String>, tokens: TokenFigures) -> Self {
        Self { code, detail: detail.into(), tokens: Some(tokens) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for code in ReasonCode::ALL {
            assert!(seen.insert(code.as_str()), "duplicate {code}");
            assert_eq!(ReasonCode::parse(code.as_str()), Some(*code));
            assert!(code.as_str().chars().all(|c| c.is_ascii_lowercase() || c == '_'));
        }
        assert_eq!(ReasonCode::parse("nope"), None);
    }
}
