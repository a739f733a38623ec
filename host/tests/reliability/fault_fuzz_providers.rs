//! Corpus-driven fuzzing of the parsers of provider responses with the core's fuzzer
//! (`core/tests/fuzz_support`): Chat Completions bodies, Anthropic Messages bodies, Responses
//! event streams (fed whole and in chunks) and Responses JSON answers, and error bodies
//! classified under every status. Seeds are real-looking responses built from the provider
//! test fixtures. Properties: no panic; a value, or a typed error with a stable snake_case code;
//! bounded output (no more text or items than the input holds, failure messages bounded); the
//! chunking of a stream never changes its result; an error body is always `http_status` with
//! the class its status fixes.

use crate::fuzz_support;
use crate::providers;

use contextfold_core::compaction::ProviderFailureKind;
use contextfold_host::providers::ProviderError;
use contextfold_host::providers::classify::MAX_DETAIL_CHARS;
use contextfold_host::providers::parse_entry;
use fuzz_support::{PARSED, Reach, fuzz_seeds, is_code};
use proptest::prelude::*;
use providers::fixtures::*;
use providers::server::sse_frame;
use serde_json::{Value, json};

/// Longest failure message a parser may produce, in characters: a bounded provider detail
/// plus a short fixed text.
const MAX_MESSAGE_CHARS: usize = MAX_DETAIL_CHARS + 300;

fn bytes(value: &Value) -> Vec<u8> {
    value.to_string().into_bytes()
}

/// A typed failure: snake_case code, bounded message.
fn check_error(error: &ProviderError) -> Result<(), TestCaseError> {
    prop_assert!(is_code(error.code()), "code {:?}", error.code());
    let chars = error.to_string().chars().count();
    prop_assert!(chars <= MAX_MESSAGE_CHARS, "{chars} characters: {error}");
    Ok(())
}

fn check_summary(
    input: &[u8],
    parsed: Result<contextfold_core::compaction::SummaryResponse, ProviderError>,
) -> Result<Reach, TestCaseError> {
    match parsed {
        // Escapes shrink text, never grow it: no more text than input bytes.
        Ok(summary) => prop_assert!(summary.text.len() <= input.len()),
        Err(error) => check_error(&error)?,
    }
    PARSED
}

fn check_items(
    input: &[u8],
    parsed: &Result<Vec<Value>, ProviderError>,
) -> Result<(), TestCaseError> {
    match parsed {
        Ok(items) => {
            prop_assert!(items.len() <= input.len());
            // Re-serialized numbers can grow (`1e5` → `100000.0`), a few-fold at most.
            let size = serde_json::to_string(items).expect("serializes").len();
            prop_assert!(
                size <= 4 * input.len() + 16,
                "{size} bytes of items from {}",
                input.len()
            );
        }
        Err(error) => check_error(error)?,
    }
    Ok(())
}

#[test]
fn fuzz_chat_completion_bodies() {
    let mut parts = chat_completion("x", "length");
    parts["choices"][0]["message"]["content"] = json!([{"type": "text", "text": "## Goal\n"}]);
    let mut refusal = chat_completion("x", "stop");
    refusal["choices"][0]["message"] = json!({"content": null, "refusal": "I can't."});
    let seeds = vec![
        bytes(&chat_completion(&valid_summary(), "stop")),
        bytes(&parts),
        bytes(&refusal),
        bytes(&json!({"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}})),
        bytes(&json!({"id": "c", "object": "chat.completion", "choices": []})),
    ];
    fuzz_seeds("provider_chat_completion", seeds, |input| {
        check_summary(input, parse_entry::chat_completion(input))
    });
}

#[test]
fn fuzz_anthropic_message_bodies() {
    let mut blocks = anthropic_message(&valid_summary(), "max_tokens");
    blocks["content"] =
        json!([{"type": "thinking", "thinking": "…"}, {"type": "text", "text": "## Goal"}]);
    let seeds = vec![
        bytes(&anthropic_message(&valid_summary(), "end_turn")),
        bytes(&blocks),
        bytes(
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
    ];
    fuzz_seeds("provider_anthropic_message", seeds, |input| {
        check_summary(input, parse_entry::anthropic_message(input))
    });
}

fn stream_text(events: &[Value]) -> Vec<u8> {
    events.iter().map(sse_frame).collect::<String>().into_bytes()
}

#[test]
fn fuzz_responses_streams() {
    let message = json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": valid_summary()}]});
    let mut crlf =
        String::from_utf8(stream_text(&responses_stream(std::slice::from_ref(&message))))
            .expect("UTF-8")
            .replace('\n', "\r\n");
    crlf.push_str("data: [DONE]\r\n\r\n");
    let seeds = vec![
        stream_text(&responses_stream(&[compaction_item("cmp_1", NEW_STATE)])),
        crlf.into_bytes(),
        stream_text(&[
            json!({"type": "response.created", "response": {"status": "in_progress"}}),
            json!({"type": "response.failed", "response": {"status": "failed", "error": {"code": "context_length_exceeded", "message": "too long"}}}),
        ]),
        stream_text(&[json!({"type": "error", "code": "rate_limit_exceeded", "message": "slow"})]),
        stream_text(&[
            json!({"type": "response.incomplete", "response": {"incomplete_details": {"reason": "max_output_tokens"}}}),
        ]),
    ];
    fuzz_seeds("provider_responses_stream", seeds, |input| {
        let whole = parse_entry::responses_stream(input, input.len());
        check_items(input, &whole)?;
        // Any chunking gives the same result (the size comes from the input: reproducible).
        let chunk = 1 + input.first().map_or(0, |byte| usize::from(*byte % 13));
        prop_assert_eq!(parse_entry::responses_stream(input, chunk), whole);
        PARSED
    });
}

#[test]
fn fuzz_responses_json_answers() {
    let completed = json!({"id": "resp_1", "status": "completed", "output": [compaction_item("cmp_1", NEW_STATE)]});
    let seeds = vec![
        bytes(&completed),
        bytes(&json!({"type": "response.completed", "response": completed})),
        bytes(&json!({"status": "failed", "error": {"code": "server_error", "message": "boom"}})),
        bytes(
            &json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}),
        ),
    ];
    fuzz_seeds("provider_responses_json", seeds, |input| {
        check_items(input, &parse_entry::responses_json(input))?;
        PARSED
    });
}

#[test]
fn fuzz_error_bodies() {
    let seeds = vec![
        bytes(
            &json!({"error": {"message": "This model's maximum context length is 8192 tokens.", "type": "invalid_request_error", "param": null, "code": "context_length_exceeded"}}),
        ),
        bytes(
            &json!({"type": "error", "error": {"type": "invalid_request_error", "message": "Your credit balance is too low to access the Anthropic API."}}),
        ),
        bytes(&json!({"error": "unavailable"})),
        bytes(&json!({"code": 503, "message": "upstream connect error"})),
        b"<html><body>502 Bad Gateway</body></html>".to_vec(),
    ];
    use ProviderFailureKind::*;
    fuzz_seeds("provider_error_body", seeds, |input| {
        for status in [400u16, 401, 402, 404, 408, 413, 422, 429, 500, 502, 503, 529] {
            let error = parse_entry::error_body(status, input);
            check_error(&error)?;
            prop_assert_eq!(error.code(), "http_status");
            let ProviderError::Status { status: got, kind, ref detail } = error else {
                return Err(TestCaseError::fail(format!("not a status failure: {error:?}")));
            };
            prop_assert_eq!(got, status);
            prop_assert!(detail.chars().count() <= MAX_DETAIL_CHARS + 1);
            let allowed: &[ProviderFailureKind] = match status {
                401 | 403 => &[Auth],
                402 => &[Billing],
                413 => &[Billing, Overflow],
                400 | 422 => &[Billing, Overflow, Rejected],
                429 => &[Billing, RateLimited],
                404 => &[Billing, Rejected],
                408 => &[Billing, Unavailable],
                _ => &[Unavailable],
            };
            prop_assert!(allowed.contains(&kind), "{status}: {kind:?}");
        }
        PARSED
    });
}
