//! OpenAI Responses API input items from neutral messages: the core's mapping
//! (`contextfold_core::projection::to_openai_responses`; rules in its docs and in `docs/cli.md`).

use contextfold_core::projection::Message;
use serde_json::Value;

/// Maps neutral messages to Responses `input` items (a V3 checkpoint → its `compaction` item).
pub fn to_openai_responses(messages: &[Message]) -> Vec<Value> {
    contextfold_core::projection::to_openai_responses(messages)
}
