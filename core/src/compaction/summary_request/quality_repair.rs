//! The quality gate's repair request and the request-shape hash of a checkpoint's manifest.

use super::{SummaryPurpose, SummaryRequest, message_text};
use crate::budget::TokenEstimator;
use crate::compaction::summary_template::{REPAIR_SEPARATOR, retention_repair_instructions};
use crate::projection::{Message, Role};
use crate::quality::Artifact;

/// After a valid summary of `previous` that left out `lost` artifacts (highest priority
/// first), the one request asking for the summary again with them verbatim. It names only
/// artifacts the request's input shows (a model cannot copy what was omitted from it; the
/// exact-artifacts list brings those from the log), as many as fit `input_budget` (at least
/// the repair reserve `previous` was built with), and returns how many it named; `None` when
/// none can be named. The summary's text is not resent: the model rewrites from the same input.
pub(crate) fn build_retention_repair_request(
    previous: &SummaryRequest,
    lost: &[&Artifact],
    input_budget: u64,
    estimator: &dyn TokenEstimator,
) -> Option<(SummaryRequest, usize)> {
    let base_system = match previous.messages.first().map(message_text) {
        Some(text) => match text.split_once(REPAIR_SEPARATOR) {
            Some((base, _)) => base.to_owned(),
            None => text,
        },
        None => return None,
    };
    let shown: String = previous.messages.iter().skip(1).map(message_text).collect();
    let system_text = |missing: &str| {
        format!("{base_system}{REPAIR_SEPARATOR}{}", retention_repair_instructions(missing))
    };
    let base = estimator.estimate_text(&base_system);
    let room = input_budget
        .saturating_sub(previous.estimated_input_tokens)
        .max(previous.repair_reserve_tokens);
    let (mut missing, mut named, mut growth) = (String::new(), 0, 0);
    for artifact in lost.iter().filter(|a| shown.contains(a.text.as_str())) {
        let line = format!("- {}: {}\n", artifact.class.name(), artifact.text);
        let grown = estimator.estimate_text(&system_text(&format!("{missing}{line}")));
        if grown.saturating_sub(base) > room {
            break;
        }
        growth = grown.saturating_sub(base);
        missing.push_str(&line);
        named += 1;
    }
    if missing.is_empty() {
        return None;
    }
    let mut messages = vec![Message::text(Role::System, system_text(missing.trim_end()))];
    messages.extend(previous.messages.iter().skip(1).cloned());
    let request = SummaryRequest {
        purpose: SummaryPurpose::RetentionRepair,
        messages,
        estimated_input_tokens: previous.estimated_input_tokens + growth,
        omitted_tool_results: previous.omitted_tool_results,
        repair_reserve_tokens: previous.repair_reserve_tokens,
        omitted_payloads: previous.omitted_payloads.clone(),
    };
    Some((request, named))
}

/// `sha256:<hex>` of a request's shape: its purpose, each message's role, and the instruction
/// text of its system message (not the events), as a checkpoint's manifest records it.
pub(crate) fn request_shape_hash(request: &SummaryRequest) -> String {
    let mut shape = String::from(request.purpose.as_str());
    for message in &request.messages {
        shape.push('\n');
        shape.push_str(match message.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        });
    }
    let system = request.messages.iter().find(|m| m.role == Role::System);
    shape.push_str("\n\n");
    shape.push_str(&system.map(message_text).unwrap_or_default());
    crate::digest::sha256_text(shape.as_bytes())
}
