//! The canonical log model: [`RuntimeEvent`] and its kinds.
//!
//! The RuntimeEvent log is the only truth. Nothing in this crate mutates an event once it has
//! been handed in; checkpoints and provider messages are projections computed from slices of
//! events. Times and ids are inputs: the core never generates either.
//!
//! The JSON form (camelCase, `content.type` in snake_case) is documented in `docs/events.md`.

// The log's neighbours, re-exported here: attachments, the ledger row and the builder.
pub use crate::attachment::{
    Attachment, AttachmentError, MAX_ATTACHMENT_BYTES, anthropic_image_tokens, attachment_tokens,
    encode_base64, openai_image_tokens,
};
pub use crate::ledger_row::{LEDGER_TOKENS_ESTIMATOR, LedgerRow, LedgerRowError};
pub use crate::log_builder::LogBuilder;

mod json;
mod validator;

pub use validator::LogValidator;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One ordered, immutable fact of a session: something the user, the model, a tool or the
/// runtime produced.
///
/// Its JSON is read by serde's derive; [`RuntimeEvent::read_text`] reads the fields every
/// writer writes straight from the text and hands anything else to the derive, so a new field
/// is declared here (with its default in [`RuntimeEvent::new`]) and nowhere else.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuntimeEvent {
    /// Session this event belongs to.
    pub session_id: String,
    /// Run (one execution of the agent loop, or one manual compaction) that produced it.
    pub run_id: String,
    /// Turn (one user request and everything done to answer it).
    pub turn_id: String,
    /// Unique id of this event within the session.
    pub runtime_event_id: String,
    /// Position in the session log, strictly increasing.
    pub seq: u64,
    /// Wall-clock time in milliseconds since the Unix epoch, supplied by the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at_ms: Option<u64>,
    /// Id of the model response that produced this event. Events sharing one response id form
    /// one step (e.g. reasoning followed by parallel tool calls) and are never split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// The event is still being produced (a streaming step); it can never be compacted.
    #[serde(default, skip_serializing_if = "is_false")]
    pub partial: bool,
    /// The event is part of the live head and must stay raw; no prefix may cover it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub pinned: bool,
    /// What happened.
    pub content: EventContent,
    /// Free-form host metadata (provider options, UI hints). Preserved verbatim and digested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// The payload of a [`RuntimeEvent`], tagged by `type`. Read by hand (`event/json.rs`),
/// accepting exactly what the derive of this enum would.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum EventContent {
    /// Text the user wrote, with the images and files sent beside it (after the text).
    UserText {
        /// The text (may be empty when the message is only attachments).
        text: String,
        /// Images and files of the message, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<Attachment>,
    },
    /// Text the model produced for the user.
    AssistantText {
        /// The text.
        text: String,
    },
    /// Model reasoning ("thinking"). Kept in the log and replayed to the same provider where it
    /// is accepted, but never sent to a summarizer.
    Reasoning {
        /// The reasoning text (may be empty when only an opaque signature exists).
        text: String,
        /// Provider data needed to replay the block (signatures, encrypted reasoning).
        #[serde(default, rename = "providerData", skip_serializing_if = "Option::is_none")]
        provider_data: Option<Value>,
    },
    /// A tool call requested by the model and executed by the agent.
    #[serde(rename_all = "camelCase")]
    ToolCall {
        /// Provider call id linking the call to its result.
        call_id: String,
        /// Name of the tool.
        tool_name: String,
        /// Arguments, as JSON.
        input: Value,
    },
    /// The result of a [`EventContent::ToolCall`].
    #[serde(rename_all = "camelCase")]
    ToolResult {
        /// Call id of the matching tool call.
        call_id: String,
        /// Name of the tool.
        tool_name: String,
        /// Output: a string or any JSON value.
        output: Value,
        /// The tool failed; `output` describes the error.
        #[serde(default, skip_serializing_if = "is_false")]
        is_error: bool,
        /// Images and files the tool returned (screenshots…), after `output`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<Attachment>,
    },
    /// A tool call executed by the provider itself (web search, code interpreter…).
    #[serde(rename_all = "camelCase")]
    HostedToolCall {
        /// Provider call id.
        call_id: String,
        /// Name of the hosted tool.
        tool_name: String,
        /// Arguments, as JSON.
        input: Value,
    },
    /// The result of a [`EventContent::HostedToolCall`].
    #[serde(rename_all = "camelCase")]
    HostedToolResult {
        /// Call id of the matching hosted call.
        call_id: String,
        /// Name of the hosted tool.
        tool_name: String,
        /// Output: a string or any JSON value.
        output: Value,
        /// The hosted tool failed.
        #[serde(default, skip_serializing_if = "is_false")]
        is_error: bool,
    },
    /// System-authored text that is part of the conversation (not the system prompt).
    SystemNote {
        /// The text.
        text: String,
    },
    /// A runtime fact (e.g. `context_compaction_failed_open`), shown to the model as a system
    /// note so it knows what the runtime did.
    RuntimeNote {
        /// Stable machine-readable code.
        code: String,
        /// Human-readable text.
        text: String,
    },
}

/// The stable `type` names of every [`EventContent`] kind, in declaration order.
pub const EVENT_KINDS: &[&str] = &[
    "user_text",
    "assistant_text",
    "reasoning",
    "tool_call",
    "tool_result",
    "hosted_tool_call",
    "hosted_tool_result",
    "system_note",
    "runtime_note",
];

impl EventContent {
    /// A `user_text` without attachments.
    pub fn user_text(text: impl Into<String>) -> Self {
        EventContent::UserText { text: text.into(), attachments: Vec::new() }
    }

    /// A `tool_result` without attachments.
    pub fn tool_result(
        call_id: impl Into<String>,
        tool_name: impl Into<String>,
        output: Value,
        is_error: bool,
    ) -> Self {
        EventContent::ToolResult {
            call_id: call_id.into(),
            tool_name: tool_name.into(),
            output,
            is_error,
            attachments: Vec::new(),
        }
    }

    /// This result (ordinary or hosted) with `output` in place of its own, everything else
    /// kept (pruning replaces large outputs this way); `None` for other kinds.
    pub fn with_output(&self, output: Value) -> Option<Self> {
        Some(match self {
            EventContent::ToolResult { call_id, tool_name, is_error, attachments, .. } => {
                EventContent::ToolResult {
                    call_id: call_id.clone(),
                    tool_name: tool_name.clone(),
                    output,
                    is_error: *is_error,
                    attachments: attachments.clone(),
                }
            }
            EventContent::HostedToolResult { call_id, tool_name, is_error, .. } => {
                EventContent::HostedToolResult {
                    call_id: call_id.clone(),
                    tool_name: tool_name.clone(),
                    output,
                    is_error: *is_error,
                }
            }
            _ => return None,
        })
    }

    /// This `user_text` or `tool_result` with `attachments` in place of its own; other kinds
    /// (which hold none) unchanged.
    pub fn with_attachments(&self, attachments: Vec<Attachment>) -> Self {
        let mut content = self.clone();
        if let EventContent::UserText { attachments: own, .. }
        | EventContent::ToolResult { attachments: own, .. } = &mut content
        {
            *own = attachments;
        }
        content
    }

    /// The stable `type` name of this kind.
    pub fn kind_name(&self) -> &'static str {
        match self {
            EventContent::UserText { .. } => "user_text",
            EventContent::AssistantText { .. } => "assistant_text",
            EventContent::Reasoning { .. } => "reasoning",
            EventContent::ToolCall { .. } => "tool_call",
            EventContent::ToolResult { .. } => "tool_result",
            EventContent::HostedToolCall { .. } => "hosted_tool_call",
            EventContent::HostedToolResult { .. } => "hosted_tool_result",
            EventContent::SystemNote { .. } => "system_note",
            EventContent::RuntimeNote { .. } => "runtime_note",
        }
    }

    /// The call id if this is a call (ordinary or hosted).
    pub fn call_id(&self) -> Option<&str> {
        match self {
            EventContent::ToolCall { call_id, .. }
            | EventContent::HostedToolCall { call_id, .. } => Some(call_id),
            _ => None,
        }
    }

    /// The call id if this is a result (ordinary or hosted).
    pub fn result_call_id(&self) -> Option<&str> {
        match self {
            EventContent::ToolResult { call_id, .. }
            | EventContent::HostedToolResult { call_id, .. } => Some(call_id),
            _ => None,
        }
    }
}

impl RuntimeEvent {
    /// An event of `content` with its envelope; the optional fields empty (no time, no response
    /// id, not partial, not pinned, no metadata): set them after, or with struct update syntax.
    ///
    /// ```
    /// use contextfold_core::{EventContent, RuntimeEvent};
    /// let event = RuntimeEvent {
    ///     created_at_ms: Some(1_700_000_000_000),
    ///     ..RuntimeEvent::new("s".into(), "r".into(), "t".into(), "e1".into(), 1, EventContent::user_text("hi"))
    /// };
    /// assert_eq!((event.seq, event.partial, event.response_id), (1, false, None));
    /// ```
    pub fn new(
        session_id: String,
        run_id: String,
        turn_id: String,
        runtime_event_id: String,
        seq: u64,
        content: EventContent,
    ) -> Self {
        RuntimeEvent {
            session_id,
            run_id,
            turn_id,
            runtime_event_id,
            seq,
            created_at_ms: None,
            response_id: None,
            partial: false,
            pinned: false,
            content,
            metadata: None,
        }
    }

    /// This event with `content` in place of its own: the envelope (ids, seq, flags, metadata)
    /// is copied, the old content is not (pruning replaces large outputs this way).
    ///
    /// ```
    /// use contextfold_core::LogBuilder;
    /// use contextfold_core::event::EventContent;
    /// let mut log = LogBuilder::new("s");
    /// log.user("a long question");
    /// let event = &log.events()[0];
    /// let short = event.with_content(EventContent::user_text("q"));
    /// assert_eq!((short.seq, &short.runtime_event_id), (event.seq, &event.runtime_event_id));
    /// assert_eq!(short.content, EventContent::user_text("q"));
    /// ```
    pub fn with_content(&self, content: EventContent) -> RuntimeEvent {
        RuntimeEvent {
            session_id: self.session_id.clone(),
            run_id: self.run_id.clone(),
            turn_id: self.turn_id.clone(),
            runtime_event_id: self.runtime_event_id.clone(),
            seq: self.seq,
            created_at_ms: self.created_at_ms,
            response_id: self.response_id.clone(),
            partial: self.partial,
            pinned: self.pinned,
            content,
            metadata: self.metadata.clone(),
        }
    }

    /// The boundary that identifies this event in a checkpoint's `through` field.
    pub fn boundary(&self) -> crate::checkpoint::Boundary {
        crate::checkpoint::Boundary {
            run_id: self.run_id.clone(),
            turn_id: self.turn_id.clone(),
            runtime_event_id: self.runtime_event_id.clone(),
        }
    }

    /// Parses one event from JSON, with a typed error for unknown kinds and fields: straight from
    /// the text ([`Self::read_text`]) when it is an event as every writer writes one, else as
    /// [`Self::from_value`] reads the text's value (which decides every result and error).
    pub fn from_json(json: &str) -> Result<Self, EventParseError> {
        let mut reader = crate::json_read::text::TextReader::new(json);
        if let Some(event) = Self::read_text(&mut reader)
            && reader.finish().is_ok()
        {
            return Ok(event);
        }
        let value = crate::json_read::text::value_from_text(json)
            .map_err(|e| EventParseError::Syntax(e.to_string()))?;
        Self::from_value(value)
    }

    /// Parses one event from a JSON value, with a typed error for unknown kinds and fields.
    pub fn from_value(value: Value) -> Result<Self, EventParseError> {
        let kind = value
            .get("content")
            .and_then(|c| c.get("type"))
            .and_then(Value::as_str)
            .ok_or(EventParseError::MissingKind)?;
        if !EVENT_KINDS.contains(&kind) {
            return Err(EventParseError::UnknownKind(kind.to_owned()));
        }
        // `content.type` was found: `value` is an object (the derive would also take an array
        // of the fields' values, which no event writer writes and this never passes it).
        serde_json::from_value(value).map_err(|error: serde_json::Error| {
            let message = error.to_string();
            if message.starts_with("unknown field") {
                EventParseError::UnknownField(message)
            } else if message.starts_with(crate::attachment::INVALID_ATTACHMENT_PREFIX) {
                EventParseError::InvalidAttachment(message)
            } else {
                EventParseError::Invalid(message)
            }
        })
    }

    /// The attachments of this event (of a `user_text` or `tool_result`), in order.
    pub fn attachments(&self) -> &[Attachment] {
        match &self.content {
            EventContent::UserText { attachments, .. }
            | EventContent::ToolResult { attachments, .. } => attachments,
            _ => &[],
        }
    }

    /// Parses a JSON Lines document (one event per non-empty line). The first bad line stops
    /// parsing; its 1-based line number is reported.
    pub fn parse_jsonl(text: &str) -> Result<Vec<Self>, EventLineError> {
        Self::parse_jsonl_lines(text).map(|(events, _)| events)
    }

    /// [`Self::parse_jsonl`], with the 1-based line each event came from (`lines[i]` is the
    /// line of `events[i]`), to locate a log rule an event breaks later. Lines split as
    /// `str::lines` does (`\r\n` ends a line too); blank lines are skipped.
    pub fn parse_jsonl_lines(text: &str) -> Result<(Vec<Self>, Vec<usize>), EventLineError> {
        let mut events = Vec::with_capacity(text.len() / 512);
        let mut lines = Vec::with_capacity(text.len() / 512);
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let event = Self::from_json(line)
                .map_err(|source| EventLineError { line: index + 1, source })?;
            events.push(event);
            lines.push(index + 1);
        }
        Ok((events, lines))
    }
}

/// Why an event could not be parsed. Nothing is ever silently dropped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EventParseError {
    /// The text is not JSON.
    #[error("event is not valid JSON: {0}")]
    Syntax(String),
    /// `content.type` is missing.
    #[error("event has no content.type")]
    MissingKind,
    /// `content.type` names a kind this version does not know.
    #[error("unknown event kind `{0}`")]
    UnknownKind(String),
    /// A field this version does not know (would otherwise be dropped).
    #[error("{0}")]
    UnknownField(String),
    /// A field is missing or has the wrong type.
    #[error("invalid event: {0}")]
    Invalid(String),
    /// An attachment breaks the rules of [`Attachment::verify`] (the message names its
    /// `attachment_*` code).
    #[error("{0}")]
    InvalidAttachment(String),
}

impl EventParseError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            EventParseError::Syntax(_) => "event_syntax",
            EventParseError::MissingKind => "event_missing_kind",
            EventParseError::UnknownKind(_) => "event_unknown_kind",
            EventParseError::UnknownField(_) => "event_unknown_field",
            EventParseError::Invalid(_) => "event_invalid",
            EventParseError::InvalidAttachment(_) => "event_invalid_attachment",
        }
    }
}

/// An [`EventParseError`] located on one line of a JSON Lines document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {source}")]
pub struct EventLineError {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong with it.
    pub source: EventParseError,
}

/// Checks the structural rules of a session log: one session id, strictly increasing `seq`,
/// unique event ids. Projection and compaction refuse logs that break them.
pub fn validate_log(events: &[RuntimeEvent]) -> Result<(), LogError> {
    let mut ids = std::collections::HashSet::with_capacity(events.len());
    for (index, event) in events.iter().enumerate() {
        if let Some(first) = events.first()
            && event.session_id != first.session_id
        {
            return Err(LogError::MixedSessions { index });
        }
        if index > 0 && event.seq <= events[index - 1].seq {
            return Err(LogError::SeqNotIncreasing { index });
        }
        if !ids.insert(event.runtime_event_id.as_str()) {
            return Err(LogError::DuplicateEventId { index });
        }
    }
    Ok(())
}

/// A structural defect of a session log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// Events of more than one session were passed together.
    #[error("event {index} belongs to another session")]
    MixedSessions {
        /// Index of the offending event.
        index: usize,
    },
    /// `seq` does not strictly increase.
    #[error("event {index} has a seq not greater than its predecessor")]
    SeqNotIncreasing {
        /// Index of the offending event.
        index: usize,
    },
    /// Two events share a `runtimeEventId`.
    #[error("event {index} repeats an earlier runtimeEventId")]
    DuplicateEventId {
        /// Index of the offending event.
        index: usize,
    },
    /// Events of the current turn are not a contiguous suffix of the log.
    #[error("events of the current turn are not a suffix of the log (event {index})")]
    CurrentTurnNotSuffix {
        /// Index of the first prior event after a current-turn event.
        index: usize,
    },
}

impl LogError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            LogError::MixedSessions { .. } => "log_mixed_sessions",
            LogError::SeqNotIncreasing { .. } => "log_seq_not_increasing",
            LogError::DuplicateEventId { .. } => "log_duplicate_event_id",
            LogError::CurrentTurnNotSuffix { .. } => "log_current_turn_not_suffix",
        }
    }

    /// Index (in the events passed) of the event the defect was found at.
    pub fn index(&self) -> usize {
        match self {
            LogError::MixedSessions { index }
            | LogError::SeqNotIncreasing { index }
            | LogError::DuplicateEventId { index }
            | LogError::CurrentTurnNotSuffix { index } => *index,
        }
    }
}
