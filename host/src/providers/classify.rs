//! Error classification: an HTTP status and error body, or an in-stream error code, mapped to
//! the [`ProviderFailureKind`] that the core's fallback rules read.
//!
//! | Signal | Kind |
//! |---|---|
//! | 401, 403 | `Auth` |
//! | 402, or a billing marker (`insufficient_quota`, `billing_`, "credit balance", `usage_not_included`) on any 4xx | `Billing` |
//! | 413, or an overflow marker on 400 / 422 (`context_length_exceeded`, "prompt is too long", "maximum context length", …) | `Overflow` |
//! | 429 | `RateLimited` |
//! | 408, 5xx (including 529 "overloaded"), any other non-4xx status | `Unavailable` |
//! | any other 4xx (400, 404, 409, 422, …) | `Rejected` |
//!
//! The order of the rows is the order of the checks: a 429 whose body says
//! `insufficient_quota` is `Billing` (OpenAI reports exhausted credit that way), and an
//! Anthropic 400 "Your credit balance is too low" is `Billing`, not `Rejected`.

use contextfold_core::compaction::ProviderFailureKind;
use serde_json::Value;

/// Lowercased fragments that mark a context overflow in an error code, type or message.
pub const OVERFLOW_MARKERS: &[&str] = &[
    "context_length_exceeded",
    "context length",
    "context_length",
    "maximum context",
    "context window",
    "prompt is too long",
    "input is too long",
    "too many tokens",
    "too many input tokens",
    "request_too_large",
    "exceeds the context",
    "maximum prompt length",
    // Anthropic: "input length and `max_tokens` exceed context limit: N + M > W".
    "exceed context limit",
];

/// Lowercased fragments that mark a billing or quota failure.
pub const BILLING_MARKERS: &[&str] = &[
    "insufficient_quota",
    "billing_",
    "billing error",
    "credit balance",
    "payment required",
    "usage_not_included",
];

/// Lowercased in-stream error codes (after overflow and billing markers) that mean a rate limit.
const RATE_LIMIT_CODES: &[&str] = &["rate_limit", "usage_limit_reached", "too_many_requests"];

/// Lowercased in-stream error codes that mean the credential was refused.
const AUTH_CODES: &[&str] =
    &["invalid_api_key", "authentication", "unauthorized", "permission", "forbidden"];

/// Lowercased in-stream error codes that mean the request itself was refused.
const REJECTION_CODES: &[&str] = &[
    "invalid_request",
    "invalid_prompt",
    "invalid_value",
    "bad_request",
    "unsupported",
    "not_found",
    "model_not_found",
];

/// What an error body says, in the shapes OpenAI and Anthropic use:
/// `{"error": {"message", "type", "code"}}` or a flat `{"code", "message", "type"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorDetail {
    /// The provider's error code (`context_length_exceeded`, `rate_limit_exceeded`…).
    pub code: Option<String>,
    /// The provider's error type (`invalid_request_error`, `overloaded_error`…).
    pub error_type: Option<String>,
    /// The provider's human-readable message.
    pub message: Option<String>,
}

impl ErrorDetail {
    /// Reads the detail from a parsed error body (or from the `error` of a failed response).
    pub fn from_value(value: &Value) -> Self {
        let error = match value.get("error") {
            Some(inner @ Value::Object(_)) => inner,
            Some(Value::String(message)) => {
                return Self { message: Some(message.clone()), ..Self::default() };
            }
            _ => value,
        };
        let field = |name: &str| match error.get(name) {
            Some(Value::String(text)) if !text.is_empty() => Some(text.clone()),
            Some(Value::Number(number)) => Some(number.to_string()),
            _ => None,
        };
        Self { code: field("code"), error_type: field("type"), message: field("message") }
    }

    /// Reads the detail from a raw error body: JSON when it parses, otherwise the text itself
    /// (cut to [`MAX_DETAIL_CHARS`]) as the message.
    pub fn from_body(body: &[u8]) -> Self {
        match serde_json::from_slice::<Value>(body) {
            Ok(value) => Self::from_value(&value),
            Err(_) => {
                let text = String::from_utf8_lossy(body);
                let text = text.trim();
                Self {
                    message: (!text.is_empty()).then(|| cut(text, MAX_DETAIL_CHARS)),
                    ..Self::default()
                }
            }
        }
    }

    /// Every field, lowercased and joined, for marker matching.
    fn haystack(&self) -> String {
        [&self.code, &self.error_type, &self.message]
            .into_iter()
            .flatten()
            .map(|text| text.to_lowercase())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// One line for a failure message: `type/code: message`, bounded.
    pub fn summary(&self) -> String {
        let label: Vec<&str> =
            [&self.error_type, &self.code].into_iter().flatten().map(String::as_str).collect();
        let text = match (label.is_empty(), &self.message) {
            (true, None) => "no error detail".to_owned(),
            (true, Some(message)) => message.clone(),
            (false, None) => label.join("/"),
            (false, Some(message)) => format!("{}: {message}", label.join("/")),
        };
        cut(&text, MAX_DETAIL_CHARS)
    }
}

/// Longest provider detail kept in a failure message, in characters.
pub const MAX_DETAIL_CHARS: usize = 500;

fn cut(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

fn contains_any(haystack: &str, markers: &[&str]) -> bool {
    markers.iter().any(|marker| haystack.contains(marker))
}

/// Classifies a non-success HTTP status with its error detail (see the module table).
pub fn classify_http(status: u16, detail: &ErrorDetail) -> ProviderFailureKind {
    let haystack = detail.haystack();
    let client_error = (400..500).contains(&status);
    match status {
        401 | 403 => ProviderFailureKind::Auth,
        402 => ProviderFailureKind::Billing,
        _ if client_error && contains_any(&haystack, BILLING_MARKERS) => {
            ProviderFailureKind::Billing
        }
        413 => ProviderFailureKind::Overflow,
        400 | 422 if contains_any(&haystack, OVERFLOW_MARKERS) => ProviderFailureKind::Overflow,
        429 => ProviderFailureKind::RateLimited,
        408 => ProviderFailureKind::Unavailable,
        _ if client_error => ProviderFailureKind::Rejected,
        _ => ProviderFailureKind::Unavailable,
    }
}

/// Classifies an error reported inside a successful stream (a Responses `error` event or a
/// `response.failed` response): by markers and code, and `Unavailable` when nothing says
/// otherwise (the request was accepted, then failed for a reason the client cannot act on).
pub fn classify_stream_error(detail: &ErrorDetail) -> ProviderFailureKind {
    let haystack = detail.haystack();
    if contains_any(&haystack, OVERFLOW_MARKERS) {
        ProviderFailureKind::Overflow
    } else if contains_any(&haystack, BILLING_MARKERS) {
        ProviderFailureKind::Billing
    } else if contains_any(&haystack, RATE_LIMIT_CODES) {
        ProviderFailureKind::RateLimited
    } else if contains_any(&haystack, AUTH_CODES) {
        ProviderFailureKind::Auth
    } else if contains_any(&haystack, REJECTION_CODES) {
        ProviderFailureKind::Rejected
    } else {
        ProviderFailureKind::Unavailable
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use ProviderFailureKind::*;

    fn detail(body: Value) -> ErrorDetail {
        ErrorDetail::from_value(&body)
    }

    #[test]
    fn statuses_without_markers_follow_the_table() {
        let empty = ErrorDetail::default();
        let table = [
            (400, Rejected),
            (404, Rejected),
            (409, Rejected),
            (422, Rejected),
            (401, Auth),
            (403, Auth),
            (402, Billing),
            (413, Overflow),
            (429, RateLimited),
            (408, Unavailable),
            (500, Unavailable),
            (502, Unavailable),
            (503, Unavailable),
            (529, Unavailable),
            (302, Unavailable),
        ];
        for (status, kind) in table {
            assert_eq!(classify_http(status, &empty), kind, "status {status}");
        }
    }

    #[test]
    fn overflow_and_billing_markers_refine_client_errors() {
        let openai = detail(
            json!({"error": {"message": "This model's maximum context length is 8192 tokens", "type": "invalid_request_error", "code": "context_length_exceeded"}}),
        );
        assert_eq!(classify_http(400, &openai), Overflow);
        let anthropic = detail(
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}}),
        );
        assert_eq!(classify_http(400, &anthropic), Overflow);
        let with_output = detail(
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000, decrease input length or `max_tokens` and try again"}}),
        );
        assert_eq!(classify_http(400, &with_output), Overflow);
        // Overflow markers count only on 400/422: a 404 stays a rejection.
        assert_eq!(classify_http(404, &openai), Rejected);
        let quota = detail(
            json!({"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}}),
        );
        assert_eq!(classify_http(429, &quota), Billing);
        let credit = detail(
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "Your credit balance is too low to access the Anthropic API."}}),
        );
        assert_eq!(classify_http(400, &credit), Billing);
        // Auth wins over markers.
        assert_eq!(classify_http(401, &quota), Auth);
    }

    #[test]
    fn stream_errors_classify_by_code() {
        let by_code = |code: &str| classify_stream_error(&detail(json!({"code": code})));
        assert_eq!(by_code("context_length_exceeded"), Overflow);
        assert_eq!(by_code("insufficient_quota"), Billing);
        assert_eq!(by_code("rate_limit_exceeded"), RateLimited);
        assert_eq!(by_code("usage_limit_reached"), RateLimited);
        assert_eq!(by_code("invalid_api_key"), Auth);
        assert_eq!(by_code("invalid_prompt"), Rejected);
        assert_eq!(by_code("server_error"), Unavailable);
        assert_eq!(by_code("something_new"), Unavailable);
    }

    #[test]
    fn details_read_both_shapes_and_raw_text() {
        let flat = ErrorDetail::from_body(br#"{"code":"server_error","message":"boom"}"#);
        assert_eq!(flat.summary(), "server_error: boom");
        let html = ErrorDetail::from_body(b"<html>502 Bad Gateway</html>");
        assert_eq!(html.message.as_deref(), Some("<html>502 Bad Gateway</html>"));
        let long = ErrorDetail::from_body("x".repeat(2_000).as_bytes());
        assert_eq!(long.summary().chars().count(), MAX_DETAIL_CHARS + 1);
        assert_eq!(ErrorDetail::from_body(b"").summary(), "no error detail");
    }
}
