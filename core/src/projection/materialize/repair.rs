//! [`Repair`]: one pairing repair applied to a projection (never to the log).

use serde::Serialize;

use crate::diagnostics::{Diagnostic, ReasonCode};

/// One pairing repair. The log keeps the events as they are; only the projected messages
/// differ. Serialized as `{"code": "<reason code>", "callId", "runtimeEventId", "hosted"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "code", rename_all = "snake_case", rename_all_fields = "camelCase")]
#[non_exhaustive]
pub enum Repair {
    /// The call has no result anywhere in tail + current; an error result was synthesized.
    ToolCallInterrupted {
        /// The unanswered call.
        call_id: String,
        /// The event holding the call.
        runtime_event_id: String,
        /// The call is provider-executed.
        hosted: bool,
    },
    /// A second (or later) result for one call id was dropped; the first is kept.
    DuplicateToolResultDropped {
        /// The call answered twice.
        call_id: String,
        /// The dropped result event.
        runtime_event_id: String,
        /// The result is provider-executed.
        hosted: bool,
    },
    /// A result with no earlier call of its kind in the projection was dropped.
    OrphanToolResultDropped {
        /// The call id the result names.
        call_id: String,
        /// The dropped result event.
        runtime_event_id: String,
        /// The result is provider-executed.
        hosted: bool,
    },
    /// A result recorded after later messages was moved up to follow its call.
    ToolResultMoved {
        /// The call answered.
        call_id: String,
        /// The moved result event.
        runtime_event_id: String,
        /// The result is provider-executed.
        hosted: bool,
    },
    /// A call reusing the id of an earlier call that is still unanswered was dropped.
    DuplicateToolCallDropped {
        /// The reused call id.
        call_id: String,
        /// The dropped call event.
        runtime_event_id: String,
        /// The call is provider-executed.
        hosted: bool,
    },
    /// A call reusing the id of an earlier, answered call got a unique projected id; its
    /// results are projected under that id too.
    ToolCallIdRenamed {
        /// The reused call id, as recorded.
        call_id: String,
        /// The id used in the projection.
        projected_call_id: String,
        /// The renamed call event.
        runtime_event_id: String,
        /// The call is provider-executed.
        hosted: bool,
    },
}

impl Repair {
    /// The stable reason code of this repair.
    pub fn reason(&self) -> ReasonCode {
        match self {
            Repair::ToolCallInterrupted { .. } => ReasonCode::ToolCallInterrupted,
            Repair::DuplicateToolResultDropped { .. } => ReasonCode::DuplicateToolResultDropped,
            Repair::OrphanToolResultDropped { .. } => ReasonCode::OrphanToolResultDropped,
            Repair::ToolResultMoved { .. } => ReasonCode::ToolResultMoved,
            Repair::DuplicateToolCallDropped { .. } => ReasonCode::DuplicateToolCallDropped,
            Repair::ToolCallIdRenamed { .. } => ReasonCode::ToolCallIdRenamed,
        }
    }

    /// The stable snake_case reason code, e.g. `tool_call_interrupted`.
    pub fn code(&self) -> &'static str {
        self.reason().as_str()
    }

    /// The call id concerned.
    pub fn call_id(&self) -> &str {
        match self {
            Repair::ToolCallInterrupted { call_id, .. }
            | Repair::DuplicateToolResultDropped { call_id, .. }
            | Repair::OrphanToolResultDropped { call_id, .. }
            | Repair::ToolResultMoved { call_id, .. }
            | Repair::DuplicateToolCallDropped { call_id, .. }
            | Repair::ToolCallIdRenamed { call_id, .. } => call_id,
        }
    }

    /// The event the repair is about.
    pub fn runtime_event_id(&self) -> &str {
        match self {
            Repair::ToolCallInterrupted { runtime_event_id, .. }
            | Repair::DuplicateToolResultDropped { runtime_event_id, .. }
            | Repair::OrphanToolResultDropped { runtime_event_id, .. }
            | Repair::ToolResultMoved { runtime_event_id, .. }
            | Repair::DuplicateToolCallDropped { runtime_event_id, .. }
            | Repair::ToolCallIdRenamed { runtime_event_id, .. } => runtime_event_id,
        }
    }

    /// The repair as a [`Diagnostic`] (no token figures).
    pub fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic::new(
            self.reason(),
            format!("call {} (event {})", self.call_id(), self.runtime_event_id()),
        )
    }
}
