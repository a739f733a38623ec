//! Reported usage, read from a provider's response body into the core's [`UsageReport`].
//!
//! Each API names its counts its own way; the fact records every input token the provider
//! counted, cached ones included:
//!
//! | wire | input (all) | cached read | cache write | output |
//! | --- | --- | --- | --- | --- |
//! | OpenAI Chat Completions | `usage.prompt_tokens` | `usage.prompt_tokens_details.cached_tokens` | — | `usage.completion_tokens` |
//! | OpenAI Responses | `usage.input_tokens` | `usage.input_tokens_details.cached_tokens` | — | `usage.output_tokens` |
//! | Anthropic Messages | `input_tokens` + `cache_read_input_tokens` + `cache_creation_input_tokens` | `cache_read_input_tokens` | `cache_creation_input_tokens` | `output_tokens` |
//!
//! A body without a usage object gives `None`: no fact is better than an invented one.

use contextfold_core::budget::UsageReport;
use serde_json::Value;

/// The wire formats whose usage this module reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum UsageWire {
    /// OpenAI Chat Completions (and compatible servers).
    OpenAiChat,
    /// OpenAI Responses.
    OpenAiResponses,
    /// Anthropic Messages.
    Anthropic,
}

/// The usage of a response body (the whole JSON response, or its `usage` object), or `None`
/// when it reports none.
pub fn usage_report(wire: UsageWire, body: &Value) -> Option<UsageReport> {
    let usage = body.get("usage").unwrap_or(body);
    let count = |path: &[&str]| -> Option<u64> {
        path.iter().try_fold(usage, |value, key| value.get(*key)).and_then(Value::as_u64)
    };
    match wire {
        UsageWire::OpenAiChat => Some(UsageReport::Response {
            input_tokens: count(&["prompt_tokens"])?,
            cached_input_tokens: count(&["prompt_tokens_details", "cached_tokens"]).unwrap_or(0),
            cache_write_tokens: 0,
            output_tokens: count(&["completion_tokens"]).unwrap_or(0),
        }),
        UsageWire::OpenAiResponses => Some(UsageReport::Response {
            input_tokens: count(&["input_tokens"])?,
            cached_input_tokens: count(&["input_tokens_details", "cached_tokens"]).unwrap_or(0),
            cache_write_tokens: 0,
            output_tokens: count(&["output_tokens"]).unwrap_or(0),
        }),
        UsageWire::Anthropic => {
            let uncached = count(&["input_tokens"])?;
            let read = count(&["cache_read_input_tokens"]).unwrap_or(0);
            let written = count(&["cache_creation_input_tokens"]).unwrap_or(0);
            Some(UsageReport::Response {
                input_tokens: uncached + read + written,
                cached_input_tokens: read,
                cache_write_tokens: written,
                output_tokens: count(&["output_tokens"]).unwrap_or(0),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_wire_reads_its_own_names() {
        let chat = json!({"usage": {"prompt_tokens": 1200, "completion_tokens": 9,
            "prompt_tokens_details": {"cached_tokens": 1024}}});
        assert_eq!(
            usage_report(UsageWire::OpenAiChat, &chat),
            Some(UsageReport::Response {
                input_tokens: 1200,
                cached_input_tokens: 1024,
                cache_write_tokens: 0,
                output_tokens: 9
            })
        );
        let responses = json!({"usage": {"input_tokens": 300, "output_tokens": 4,
            "input_tokens_details": {"cached_tokens": 0}}});
        assert_eq!(
            usage_report(UsageWire::OpenAiResponses, &responses),
            Some(UsageReport::Response {
                input_tokens: 300,
                cached_input_tokens: 0,
                cache_write_tokens: 0,
                output_tokens: 4
            })
        );
        let anthropic = json!({"usage": {"input_tokens": 20, "cache_read_input_tokens": 2048,
            "cache_creation_input_tokens": 100, "output_tokens": 7}});
        assert_eq!(
            usage_report(UsageWire::Anthropic, &anthropic),
            Some(UsageReport::Response {
                input_tokens: 2168,
                cached_input_tokens: 2048,
                cache_write_tokens: 100,
                output_tokens: 7
            })
        );
    }

    #[test]
    fn a_body_without_usage_reports_nothing() {
        assert_eq!(usage_report(UsageWire::OpenAiChat, &json!({"choices": []})), None);
        assert_eq!(
            usage_report(UsageWire::Anthropic, &json!({"usage": {"output_tokens": 3}})),
            None
        );
        assert_eq!(usage_report(UsageWire::OpenAiResponses, &json!("text")), None);
    }
}
