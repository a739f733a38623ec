//! [`CodexNativeCompactor`]: OpenAI Codex remote compaction v2 over the streaming Responses API.
//!
//! `POST {base_url}/responses` with `Authorization: Bearer <key>`, `Accept: text/event-stream`
//! and `{"model", "input", "store": false, "stream": true}`. `input` is the core's
//! [`NativeRequest::input`] unchanged: the previous compaction item (rolling), the fold, and the
//! terminal `{"type":"compaction_trigger"}` last. No `instructions` (system prompt) and no
//! `tools` are sent: the design's history-only contract.
//!
//! The whole stream is consumed, because a compaction-only response has no ordinary text result:
//!
//! - `response.output_item.done` items are collected in `output_index` order;
//! - `response.completed` ends the response: its `response.output` is returned when it is a
//!   non-empty array, otherwise the collected items (servers differ on which they fill);
//! - `response.failed` and `error` events are [`ProviderError::Reported`], classified by their
//!   code (see [`crate::providers::classify`]); `response.incomplete` is
//!   [`ProviderError::Incomplete`] (`Rejected`, so the core tries its one text fallback);
//! - a stream that ends, or breaks, before `response.completed` is
//!   [`ProviderError::StreamTruncated`] (`Unavailable`); an event whose data is not JSON is
//!   [`ProviderError::MalformedResponse`] (`Unavailable`);
//! - a gateway that answers `application/json` instead of a stream is read as one response
//!   object with the same rules.
//!
//! This client does not judge the items: [`accept_native_output`] in the core admits exactly
//! one compaction item (zero or two fall back to one text summary).
//!
//! [`accept_native_output`]: contextfold_core::compaction::accept_native_output

use std::time::Duration;

use contextfold_core::compaction::{NativeRequest, ProviderFailure};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use serde_json::{Value, json};

use super::api_key::ApiKey;
use super::classify::{ErrorDetail, classify_stream_error};
use super::client::{ClientBase, KeyHeader, client_builders, parse_json, reported};
use super::error::{ProviderConfigError, ProviderError};
use super::sse::SseParser;
use super::transport::{Call, MAX_RESPONSE_BYTES};

/// Provider label of this client in captures (the core's provider kind).
pub const CODEX_PROVIDER: &str = contextfold_core::compaction::OPENAI_CODEX_PROVIDER;

/// The Codex (ChatGPT subscription) Responses base URL (the path `/responses` is appended).
pub const CODEX_BASE_URL: &str = "https://chatgpt.com/backend-api/codex";

/// Default deadline of one native compaction call, stream included.
pub const DEFAULT_NATIVE_TIMEOUT: Duration = Duration::from_secs(600);

/// A Codex remote-compaction client. Cheap to clone (the HTTP pool is shared). Its `Debug`
/// never shows the key. The same client also writes the portable text summary of the core's
/// one fallback over the same connection (see [`CodexNativeCompactor::summarize`]).
#[derive(Clone, Debug)]
pub struct CodexNativeCompactor {
    pub(crate) base: ClientBase,
}

client_builders!(CodexNativeCompactor);

impl CodexNativeCompactor {
    /// A client for `model` at `base_url` (e.g. [`CODEX_BASE_URL`], or an OpenAI-compatible
    /// `…/v1`); see the module docs.
    pub fn new(
        base_url: &str,
        model: &str,
        api_key: impl Into<ApiKey>,
    ) -> Result<Self, ProviderConfigError> {
        let base = ClientBase::new(
            base_url,
            model,
            api_key.into(),
            KeyHeader::Bearer,
            DEFAULT_NATIVE_TIMEOUT,
        )?;
        Ok(Self { base })
    }

    /// The JSON body sent for `request`.
    pub fn request_body(&self, request: &NativeRequest) -> Value {
        json!({ "model": self.base.model, "input": request.input, "store": false, "stream": true })
    }

    /// Sends the compaction request, consumes the whole stream and returns the output items of
    /// the completed response.
    pub async fn compact(&self, request: &NativeRequest) -> Result<Vec<Value>, ProviderFailure> {
        self.stream_response(self.request_body(request)).await
    }

    /// POSTs `body` to `/responses` on the streaming path and returns the completed response's
    /// output items.
    pub(crate) async fn stream_response(&self, body: Value) -> Result<Vec<Value>, ProviderFailure> {
        let accept = (ACCEPT, HeaderValue::from_static("text/event-stream"));
        let headers = self.base.headers(&[accept]);
        let transport = &self.base.transport;
        let mut call =
            transport.start(CODEX_PROVIDER, "/responses", headers, body, self.base.key());
        let result = transport.guard(read_response_output(&mut call)).await;
        call.finish(result)
    }
}

/// What the stream has told so far.
#[derive(Debug, Default)]
struct StreamState {
    done_items: Vec<(u64, Value)>,
    completed: Option<Value>,
    events: u64,
}

async fn read_response_output(call: &mut Call) -> Result<Vec<Value>, ProviderError> {
    let mut response = call.send().await?;
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if is_json {
        let body = call.read_body(response).await?;
        return parse_response_json(&body, call);
    }
    let mut reader = ResponsesReader::new();
    loop {
        match call.next_chunk(&mut response).await {
            Ok(Some(chunk)) => reader.push(&chunk, call)?,
            Ok(None) => break,
            // A break after completion loses nothing: the response is whole.
            Err(_) if reader.is_completed() => break,
            Err(error) => return Err(error),
        }
    }
    reader.finish()
}

/// Where the readers report what they saw: the capture and the secrets of a [`Call`], or
/// nothing (the fuzz entry points).
pub(crate) trait EventSink {
    /// One dispatched stream event, before it is parsed.
    fn event(&mut self, name: Option<&str>, data: &str);
    /// One parsed JSON value, whose provider state becomes a secret to scrub.
    fn learn(&mut self, value: &Value);
}

impl EventSink for Call {
    fn event(&mut self, name: Option<&str>, data: &str) {
        self.record_event(name, data);
    }

    fn learn(&mut self, value: &Value) {
        self.learn_secrets(value);
    }
}

/// A sink that keeps nothing.
impl EventSink for () {
    fn event(&mut self, _: Option<&str>, _: &str) {}
    fn learn(&mut self, _: &Value) {}
}

/// Reads an `application/json` answer on the streaming path as one response object.
pub(crate) fn parse_response_json(
    body: &[u8],
    sink: &mut impl EventSink,
) -> Result<Vec<Value>, ProviderError> {
    let value = parse_json(body)?;
    sink.learn(&value);
    let response_object = value.get("response").unwrap_or(&value).clone();
    match response_object.get("status").and_then(Value::as_str) {
        Some("failed") => Err(failed(&response_object)),
        Some("incomplete") => Err(incomplete(&response_object)),
        _ => output_of(StreamState { completed: Some(response_object), ..StreamState::default() }),
    }
}

/// The Responses event stream read so far: SSE framing, the events applied in order, and the
/// [`MAX_RESPONSE_BYTES`] bound. Pure: the transport feeds it chunks.
#[derive(Debug)]
pub(crate) struct ResponsesReader {
    parser: SseParser,
    state: StreamState,
    received: usize,
}

impl ResponsesReader {
    /// A reader at the start of a stream.
    pub(crate) fn new() -> Self {
        Self { parser: SseParser::new(), state: StreamState::default(), received: 0 }
    }

    /// Feeds one chunk; a failure event, a non-JSON event or the size bound ends the read.
    pub(crate) fn push(
        &mut self,
        chunk: &[u8],
        sink: &mut impl EventSink,
    ) -> Result<(), ProviderError> {
        self.received += chunk.len();
        if self.received > MAX_RESPONSE_BYTES {
            return Err(ProviderError::ResponseTooLarge { limit: MAX_RESPONSE_BYTES });
        }
        for event in self.parser.push(chunk) {
            sink.event(event.event.as_deref(), &event.data);
            if event.data.trim() == "[DONE]" {
                continue;
            }
            let value: Value = serde_json::from_str(&event.data).map_err(|_| {
                ProviderError::MalformedResponse(format!(
                    "event {} (`{}`) does not hold JSON data",
                    self.state.events + 1,
                    event.event.as_deref().unwrap_or("message")
                ))
            })?;
            sink.learn(&value);
            self.state.events += 1;
            apply_event(&mut self.state, event.event.as_deref(), value)?;
        }
        Ok(())
    }

    /// Whether `response.completed` was seen.
    pub(crate) fn is_completed(&self) -> bool {
        self.state.completed.is_some()
    }

    /// The output at the end of the stream, or [`ProviderError::StreamTruncated`] when it
    /// never completed.
    pub(crate) fn finish(self) -> Result<Vec<Value>, ProviderError> {
        if self.state.completed.is_none() {
            let pending = if self.parser.pending_bytes() > 0 { " and a partial event" } else { "" };
            return Err(ProviderError::StreamTruncated(format!(
                "no response.completed after {} event(s){pending}",
                self.state.events
            )));
        }
        output_of(self.state)
    }
}

fn apply_event(
    state: &mut StreamState,
    name: Option<&str>,
    value: Value,
) -> Result<(), ProviderError> {
    let kind = value.get("type").and_then(Value::as_str).or(name).unwrap_or_default().to_owned();
    match kind.as_str() {
        "response.output_item.done" => {
            let index = value.get("output_index").and_then(Value::as_u64).unwrap_or(u64::MAX);
            match value.get("item") {
                Some(item @ Value::Object(_)) => state.done_items.push((index, item.clone())),
                _ => {
                    return Err(ProviderError::MalformedResponse(
                        "response.output_item.done has no item object".into(),
                    ));
                }
            }
        }
        "response.completed" => {
            state.completed = Some(value.get("response").cloned().unwrap_or(Value::Null));
        }
        "response.failed" => return Err(failed(value.get("response").unwrap_or(&value))),
        "response.incomplete" => return Err(incomplete(value.get("response").unwrap_or(&value))),
        "error" => return Err(reported(&value)),
        _ => {}
    }
    Ok(())
}

fn failed(response: &Value) -> ProviderError {
    let detail = match response.get("error") {
        Some(error @ Value::Object(_)) => ErrorDetail::from_value(error),
        _ => ErrorDetail::default(),
    };
    ProviderError::Reported { kind: classify_stream_error(&detail), detail: detail.summary() }
}

fn incomplete(response: &Value) -> ProviderError {
    let reason = response
        .pointer("/incomplete_details/reason")
        .and_then(Value::as_str)
        .unwrap_or("no reason given");
    ProviderError::Incomplete(reason.chars().take(100).collect())
}

fn output_of(state: StreamState) -> Result<Vec<Value>, ProviderError> {
    if let Some(Value::Array(output)) = state.completed.as_ref().and_then(|r| r.get("output"))
        && !output.is_empty()
    {
        return Ok(output.clone());
    }
    let mut items = state.done_items;
    items.sort_by_key(|(index, _)| *index);
    Ok(items.into_iter().map(|(_, item)| item).collect())
}

#[cfg(test)]
mod tests {
    use contextfold_core::compaction::ProviderFailureKind;

    use super::*;

    fn run(events: &[Value]) -> Result<Vec<Value>, ProviderError> {
        let mut state = StreamState::default();
        for event in events {
            apply_event(&mut state, None, event.clone())?;
        }
        output_of(state)
    }

    #[test]
    fn done_items_are_returned_in_output_order_when_completed_output_is_empty() {
        let item = |n: u64| json!({"type": "message", "id": format!("m{n}")});
        let output = run(&[
            json!({"type": "response.output_item.done", "output_index": 1, "item": item(1)}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": item(0)}),
            json!({"type": "response.completed", "response": {"status": "completed", "output": []}}),
        ]);
        assert_eq!(output, Ok(vec![item(0), item(1)]));
    }

    #[test]
    fn completed_output_wins_when_present() {
        let cmp = json!({"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAA"});
        let output =
            run(&[json!({"type": "response.completed", "response": {"output": [cmp.clone()]}})]);
        assert_eq!(output, Ok(vec![cmp]));
    }

    #[test]
    fn failures_and_incomplete_responses_are_typed() {
        let failed = run(&[
            json!({"type": "response.failed", "response": {"status": "failed", "error": {"code": "context_length_exceeded", "message": "too long"}}}),
        ]);
        assert_eq!(failed.expect_err("failed").kind(), ProviderFailureKind::Overflow);
        let error =
            run(&[json!({"type": "error", "code": "rate_limit_exceeded", "message": "slow down"})]);
        assert_eq!(error.expect_err("error").kind(), ProviderFailureKind::RateLimited);
        let incomplete = run(&[
            json!({"type": "response.incomplete", "response": {"incomplete_details": {"reason": "max_output_tokens"}}}),
        ]);
        let incomplete = incomplete.expect_err("incomplete");
        assert_eq!(
            (incomplete.code(), incomplete.kind()),
            ("response_incomplete", ProviderFailureKind::Rejected)
        );
    }
}
