//! Token estimates of projected messages, consistent with [`crate::budget::estimate_event`].
//!
//! A part counts what [`estimate_event`](crate::budget::estimate_event) counts for the event it
//! came from (text, or call/result JSON, plus one message overhead), and adds what the wire
//! carries beside it (call ids, tool names, reasoning provider data). A message adds one more
//! overhead for itself. So a message holding exactly the parts of some events never estimates
//! fewer tokens than those events do.

use crate::budget::{TokenEstimator, estimate_value};
use crate::projection::message::{Message, Part};

/// Estimated tokens of one part, including its own overhead.
pub(crate) fn estimate_part(estimator: &dyn TokenEstimator, part: &Part) -> u64 {
    let body = match part {
        Part::Text { text } => estimator.estimate_text(text),
        Part::Reasoning { text, provider_data } => {
            estimator.estimate_text(text)
                + provider_data.as_ref().map_or(0, |data| estimate_value(estimator, data))
        }
        Part::ToolCall { call_id, tool_name, input, .. } => {
            estimator.estimate_text(call_id)
                + estimator.estimate_text(tool_name)
                + estimate_value(estimator, input)
        }
        Part::ToolResult { call_id, tool_name, output, attachments, .. } => {
            estimator.estimate_text(call_id)
                + estimator.estimate_text(tool_name)
                + estimate_value(estimator, output)
                + attachments.iter().map(|a| estimator.estimate_attachment(a)).sum::<u64>()
        }
        Part::Attachment { attachment } => estimator.estimate_attachment(attachment),
        Part::ProviderState { state } => {
            estimator.estimate_text(&serde_json::to_string(state).unwrap_or_default())
        }
    };
    body + estimator.message_overhead()
}

/// Estimated tokens of one message: its parts plus one message overhead.
pub fn estimate_message(estimator: &dyn TokenEstimator, message: &Message) -> u64 {
    estimator.message_overhead()
        + message.parts.iter().map(|part| estimate_part(estimator, part)).sum::<u64>()
}

/// Estimated tokens of a run of messages (text + JSON sizes + per-message overhead).
pub fn estimate_messages(estimator: &dyn TokenEstimator, messages: &[Message]) -> u64 {
    messages.iter().map(|message| estimate_message(estimator, message)).sum()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::budget::{CharEstimator, estimate_events};
    use crate::log_builder::LogBuilder;
    use crate::projection::materialize::materialize;
    use crate::projection::message::Role;

    #[test]
    fn message_costs_at_least_its_events() {
        let mut log = LogBuilder::new("s");
        log.user("please look").response(Some("r1")).reasoning("think").assistant("ok");
        log.tool_call("c1", "read", json!({"path": "src/lib.rs"}));
        log.tool_result("c1", "read", json!("fn main() {}"));
        let events = log.build();
        let out = materialize(None, &events, &[]);
        assert!(out.repairs.is_empty());
        let projected = estimate_messages(&CharEstimator, &out.messages);
        assert!(projected >= estimate_events(&CharEstimator, &events));
        // Exactly: 3 messages of overhead beyond the per-part (per-event) costs, plus ids/names.
        let ids = CharEstimator.estimate_text("c1") * 2 + CharEstimator.estimate_text("read");
        assert_eq!(projected, estimate_events(&CharEstimator, &events) + 3 * 4 + ids);
    }

    #[test]
    fn empty_message_costs_one_overhead() {
        let message = Message { role: Role::Tool, parts: Vec::new() };
        assert_eq!(estimate_message(&CharEstimator, &message), 4);
        assert_eq!(estimate_messages(&CharEstimator, &[]), 0);
    }

    #[test]
    fn reasoning_provider_data_counts() {
        let bare = Part::Reasoning { text: "abcd".into(), provider_data: None };
        let signed = Part::Reasoning {
            text: "abcd".into(),
            provider_data: Some(json!({"sig": "x".repeat(40)})),
        };
        assert_eq!(estimate_part(&CharEstimator, &bare), 1 + 4);
        assert!(estimate_part(&CharEstimator, &signed) > estimate_part(&CharEstimator, &bare) + 10);
    }
}
