//! Optional capture of provider exchanges for debugging, with redaction that cannot be skipped.
//!
//! A [`RequestCapture`] given to a client (`with_capture`) receives one [`CapturedRequest`] per
//! call: URL, request headers, request body, status, response body (or stream events) and the
//! failure. Before anything is stored:
//!
//! - authentication headers (`authorization`, `proxy-authorization`, `x-api-key`, `api-key`,
//!   `cookie`, and any header whose name contains `token`, `secret` or `key`) are dropped, their
//!   names listed in `strippedHeaders`;
//! - every JSON body goes through
//!   [`redact_provider_state`](contextfold_core::compaction::redact_provider_state), so
//!   no `encrypted_content` survives;
//! - every string is scrubbed of the call's [`Secrets`]: the API key and every
//!   `encrypted_content` value seen in the request or the response;
//! - a body that is not JSON is stored only as its length, because unparsed text could hold
//!   anything.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use contextfold_core::compaction::{REDACTED, redact_provider_state};
use reqwest::header::HeaderMap;
use serde::Serialize;
use serde_json::{Value, json};

/// Strings that must never leave a call: the API key and provider state.
#[derive(Clone, Default)]
pub(crate) struct Secrets {
    values: Vec<String>,
}

impl Secrets {
    /// Adds a secret (empty strings are ignored).
    pub(crate) fn add(&mut self, secret: &str) {
        if !secret.is_empty() && !self.values.iter().any(|known| known == secret) {
            self.values.push(secret.to_owned());
        }
    }

    /// Adds every string found under an `encrypted_content` / `encryptedContent` key.
    pub(crate) fn add_provider_state(&mut self, value: &Value) {
        match value {
            Value::Object(map) => {
                for (key, field) in map {
                    match field {
                        Value::String(text)
                            if key == "encrypted_content" || key == "encryptedContent" =>
                        {
                            self.add(text)
                        }
                        other => self.add_provider_state(other),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| self.add_provider_state(item)),
            _ => {}
        }
    }

    /// `text` with every secret replaced by `[redacted]`, including a secret a length bound
    /// cut short: a prefix of a secret (of [`MIN_CUT_SECRET_CHARS`] or more) that ends the text,
    /// or ends it right before the `…` a cut leaves, is redacted too. (Provider error details
    /// are bounded before the call's secrets are known, so a key can straddle the cut.)
    pub(crate) fn scrub(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for secret in &self.values {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), REDACTED);
            }
            text = scrub_cut_prefix(text, secret);
        }
        text
    }

    /// A copy of `value` with provider state redacted and every string scrubbed.
    pub(crate) fn redact_json(&self, value: &Value) -> Value {
        let mut value = value.clone();
        redact_provider_state(&mut value);
        self.scrub_strings(&mut value);
        value
    }

    fn scrub_strings(&self, value: &mut Value) {
        match value {
            Value::String(text) => *text = self.scrub(text),
            Value::Array(items) => items.iter_mut().for_each(|item| self.scrub_strings(item)),
            Value::Object(map) => {
                let entries = std::mem::take(map);
                for (key, mut field) in entries {
                    self.scrub_strings(&mut field);
                    map.insert(self.scrub(&key), field);
                }
            }
            _ => {}
        }
    }
}

/// The shortest secret prefix redacted at the end of a text.
pub(crate) const MIN_CUT_SECRET_CHARS: usize = 4;

/// `text` with the longest prefix of `secret` that ends it (before a trailing `…`) redacted.
fn scrub_cut_prefix(text: String, secret: &str) -> String {
    let (body, marker) = match text.strip_suffix('…') {
        Some(body) => (body, "…"),
        None => (text.as_str(), ""),
    };
    let cut_at = secret
        .char_indices()
        .map(|(at, _)| at)
        .skip(MIN_CUT_SECRET_CHARS)
        .filter(|&at| body.ends_with(&secret[..at]))
        .last();
    match cut_at {
        Some(at) => format!("{}{REDACTED}{marker}", &body[..body.len() - at]),
        None => text,
    }
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secrets({} redacted)", self.values.len())
    }
}

/// Whether a header carries credentials and must never be captured.
pub(crate) fn is_auth_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    matches!(
        name.as_str(),
        "authorization" | "proxy-authorization" | "x-api-key" | "api-key" | "cookie" | "set-cookie"
    ) || ["token", "secret", "key"].iter().any(|fragment| name.contains(fragment))
}

/// One captured provider exchange, already redacted. Serializes as camelCase JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CapturedRequest {
    /// Which client made the call (`openai-chat`, `anthropic`, `openai-codex`).
    pub provider: String,
    /// The endpoint URL.
    pub url: String,
    /// Request headers other than authentication headers.
    pub headers: BTreeMap<String, String>,
    /// Names of the authentication headers that were dropped.
    pub stripped_headers: Vec<String>,
    /// The request body, redacted.
    pub request: Value,
    /// The HTTP status, if a response arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The response body (redacted JSON), `{"unparsedBytes": n}` for a non-JSON body, or for a
    /// stream `{"events": [{"event", "data"}…]}` with each data redacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
    /// The failure, if the call failed: `{"code", "kind", "message"}` (scrubbed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<Value>,
    /// Wall time of the call in milliseconds.
    pub elapsed_ms: u64,
}

impl CapturedRequest {
    /// Starts a record for a request about to be sent.
    pub(crate) fn new(
        provider: &str,
        url: &str,
        headers: &HeaderMap,
        body: &Value,
        secrets: &Secrets,
    ) -> Self {
        let mut kept = BTreeMap::new();
        let mut stripped = Vec::new();
        for (name, value) in headers {
            if is_auth_header(name.as_str()) {
                stripped.push(name.as_str().to_owned());
            } else {
                let value = String::from_utf8_lossy(value.as_bytes());
                kept.insert(name.as_str().to_owned(), secrets.scrub(&value));
            }
        }
        Self {
            provider: provider.to_owned(),
            url: secrets.scrub(url),
            headers: kept,
            stripped_headers: stripped,
            request: secrets.redact_json(body),
            status: None,
            response: None,
            failure: None,
            elapsed_ms: 0,
        }
    }

    /// Records a whole response body.
    pub(crate) fn record_body(&mut self, body: &[u8], secrets: &Secrets) {
        self.response = Some(match serde_json::from_slice::<Value>(body) {
            Ok(value) => secrets.redact_json(&value),
            Err(_) => json!({ "unparsedBytes": body.len() }),
        });
    }

    /// Records one stream event (`data` redacted when it is JSON, else only its length).
    pub(crate) fn record_event(&mut self, event: Option<&str>, data: &str, secrets: &Secrets) {
        let data = match serde_json::from_str::<Value>(data) {
            Ok(value) => secrets.redact_json(&value),
            Err(_) => json!({ "unparsedBytes": data.len() }),
        };
        let entry = json!({ "event": event.map(|name| secrets.scrub(name)), "data": data });
        let response = self.response.get_or_insert_with(|| json!({ "events": [] }));
        if let Some(Value::Array(events)) = response.get_mut("events") {
            events.push(entry);
        }
    }
}

/// Most exchanges a [`RequestCapture`] keeps; older ones are dropped first.
pub const MAX_CAPTURED_REQUESTS: usize = 256;

/// A shared sink of captured exchanges. Clones share the same entries.
#[derive(Debug, Clone, Default)]
pub struct RequestCapture {
    entries: Arc<Mutex<Vec<CapturedRequest>>>,
}

impl RequestCapture {
    /// An empty capture.
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn push(&self, entry: CapturedRequest) {
        let mut entries = self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if entries.len() >= MAX_CAPTURED_REQUESTS {
            entries.remove(0);
        }
        entries.push(entry);
    }

    /// A copy of the captured exchanges, oldest first.
    pub fn entries(&self) -> Vec<CapturedRequest> {
        self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// The captured exchanges as pretty JSON text (what a debugging dump writes).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&self.entries()).unwrap_or_else(|_| "[]".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    #[test]
    fn a_secret_cut_short_by_a_length_bound_is_redacted_too() {
        let mut secrets = Secrets::default();
        secrets.add("sk-live-0123456789");
        assert_eq!(secrets.scrub("key sk-live-01…"), format!("key {REDACTED}…"));
        assert_eq!(secrets.scrub("key sk-live-0123"), format!("key {REDACTED}"));
        assert_eq!(secrets.scrub("ask-…"), "ask-…", "shorter than the minimum prefix");
        assert_eq!(
            secrets.scrub("sk-live-0123456789 and sk-l…"),
            format!("{REDACTED} and {REDACTED}…")
        );
    }

    #[test]
    fn records_drop_auth_headers_and_scrub_every_string() {
        let mut secrets = Secrets::default();
        secrets.add("sk-live-1234");
        let body = json!({
            "input": [{"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAsecret"}],
            "note": "key sk-live-1234 and gAAAsecret",
        });
        secrets.add_provider_state(&body);
        let mut headers = HeaderMap::new();
        headers.insert("authorization", HeaderValue::from_static("Bearer sk-live-1234"));
        headers.insert("x-api-key", HeaderValue::from_static("sk-live-1234"));
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        let mut record =
            CapturedRequest::new("openai-codex", "http://x/v1", &headers, &body, &secrets);
        record.record_event(
            Some("response.output_item.done"),
            r#"{"item":{"encrypted_content":"gAAAsecret"}}"#,
            &secrets,
        );
        record.record_event(None, "not json sk-live-1234", &secrets);
        let text = serde_json::to_string(&record).expect("serializes");
        assert!(!text.contains("sk-live-1234"), "{text}");
        assert!(!text.contains("gAAAsecret"), "{text}");
        assert_eq!(record.stripped_headers, ["authorization", "x-api-key"]);
        assert_eq!(record.headers.len(), 1);
    }

    #[test]
    fn the_capture_is_bounded() {
        let capture = RequestCapture::new();
        let secrets = Secrets::default();
        for index in 0..MAX_CAPTURED_REQUESTS + 3 {
            let url = format!("http://x/{index}");
            capture.push(CapturedRequest::new("p", &url, &HeaderMap::new(), &json!({}), &secrets));
        }
        let entries = capture.entries();
        assert_eq!(entries.len(), MAX_CAPTURED_REQUESTS);
        assert_eq!(entries[0].url, "http://x/3");
    }
}
