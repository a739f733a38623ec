//! What the three clients share above the HTTP [`Transport`]: the configuration checks, the
//! authentication header, one JSON request/response exchange, JSON body helpers, and the
//! text-only split of a summary request's neutral messages.

use std::fmt;
use std::time::Duration;

use contextfold_core::compaction::{FinishReason, ProviderFailure};
use contextfold_core::projection::{Message, Part, Role};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::api_key::ApiKey;
use super::classify::{ErrorDetail, classify_stream_error};
use super::error::{ProviderConfigError, ProviderError};
use super::transport::Transport;

/// How a client presents its key.
#[derive(Debug, Clone, Copy)]
pub(crate) enum KeyHeader {
    /// `Authorization: Bearer <key>` (OpenAI).
    Bearer,
    /// `x-api-key: <key>` (Anthropic).
    XApiKey,
}

/// Transport, model, key and authentication header of one client.
#[derive(Clone)]
pub(crate) struct ClientBase {
    pub(crate) transport: Transport,
    pub(crate) model: String,
    key: ApiKey,
    auth: (HeaderName, HeaderValue),
}

impl fmt::Debug for ClientBase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBase")
            .field("model", &self.model)
            .field("timeout", &self.transport.timeout)
            .field("idle_timeout", &self.transport.idle_timeout)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl ClientBase {
    /// Checks the model and key, builds the sensitive authentication header and the transport.
    pub(crate) fn new(
        base_url: &str,
        model: &str,
        key: ApiKey,
        scheme: KeyHeader,
        timeout: Duration,
    ) -> Result<Self, ProviderConfigError> {
        if model.trim().is_empty() {
            return Err(ProviderConfigError::EmptyModel);
        }
        if key.expose().is_empty() {
            return Err(ProviderConfigError::InvalidApiKey);
        }
        let auth = match scheme {
            KeyHeader::Bearer => {
                (AUTHORIZATION, secret_header(&format!("Bearer {}", key.expose()))?)
            }
            KeyHeader::XApiKey => {
                (HeaderName::from_static("x-api-key"), secret_header(key.expose())?)
            }
        };
        Ok(Self {
            transport: Transport::new(base_url, timeout)?,
            model: model.to_owned(),
            key,
            auth,
        })
    }

    /// The authentication header plus `extra` headers.
    pub(crate) fn headers(&self, extra: &[(HeaderName, HeaderValue)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(self.auth.0.clone(), self.auth.1.clone());
        for (name, value) in extra {
            headers.insert(name.clone(), value.clone());
        }
        headers
    }

    /// The key, for [`Transport::start`].
    pub(crate) fn key(&self) -> &ApiKey {
        &self.key
    }

    /// One non-streaming exchange: POSTs `body` to `path`, reads the whole success body under
    /// the timeout and the cancel token, and parses it with `parse`.
    pub(crate) async fn exchange_json<T>(
        &self,
        provider: &'static str,
        path: &str,
        extra_headers: &[(HeaderName, HeaderValue)],
        body: Value,
        parse: fn(&[u8]) -> Result<T, ProviderError>,
    ) -> Result<T, ProviderFailure> {
        let headers = self.headers(extra_headers);
        let mut call = self.transport.start(provider, path, headers, body, &self.key);
        let result = self
            .transport
            .guard(async {
                let response = call.send().await?;
                let body = call.read_body(response).await?;
                parse(&body)
            })
            .await;
        call.finish(result)
    }
}

/// A sensitive header value holding `text` (a key), or the config error naming the key.
pub(crate) fn secret_header(text: &str) -> Result<HeaderValue, ProviderConfigError> {
    let mut value = HeaderValue::from_str(text).map_err(|_| ProviderConfigError::InvalidApiKey)?;
    value.set_sensitive(true);
    Ok(value)
}

/// Parses a success body as JSON.
pub(crate) fn parse_json(body: &[u8]) -> Result<Value, ProviderError> {
    serde_json::from_slice(body).map_err(|error| {
        ProviderError::MalformedResponse(format!("the body is not JSON ({error})"))
    })
}

/// The failure a provider reported inside a success body (`{"error": …}` or
/// `{"type": "error", "error": …}`), classified like an in-stream error.
pub(crate) fn reported(value: &Value) -> ProviderError {
    let detail = ErrorDetail::from_value(value);
    ProviderError::Reported { kind: classify_stream_error(&detail), detail: detail.summary() }
}

/// The finish reason in `value[field]` through the core's [`FinishReason::parse`]; missing is
/// [`FinishReason::Unknown`].
pub(crate) fn finish_reason(value: &Value, field: &str) -> FinishReason {
    value.get(field).and_then(Value::as_str).map_or(FinishReason::Unknown, FinishReason::parse)
}

/// The JSON type name of `value`, for messages that must not quote provider text.
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// One user or assistant message of a text-only request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TextTurn<'a> {
    /// `user` or `assistant`.
    pub(crate) role: &'static str,
    /// Its text parts, in order.
    pub(crate) texts: Vec<&'a str>,
}

/// Splits a summary request's neutral messages into the joined system text (blank line between
/// messages) and the user/assistant turns, for the APIs that carry the system prompt apart
/// (Anthropic `system`, Responses `instructions`). Reasoning parts are dropped; tool, tool-call,
/// tool-result and provider-state parts are [`ProviderError::Unmappable`] (a summary request
/// carries text only), and so is a request without a user or assistant message.
pub(crate) fn split_text_messages(
    messages: &[Message],
) -> Result<(String, Vec<TextTurn<'_>>), ProviderError> {
    let mut system = Vec::new();
    let mut turns = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let mut texts = Vec::new();
        for part in &message.parts {
            match part {
                Part::Text { text } => texts.push(text.as_str()),
                Part::Reasoning { .. } => {}
                other => {
                    return Err(ProviderError::Unmappable(format!(
                        "message {index} holds a {} part; summary requests carry text only",
                        part_kind(other)
                    )));
                }
            }
        }
        let role = match message.role {
            Role::System => {
                system.extend(texts);
                continue;
            }
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => {
                return Err(ProviderError::Unmappable(format!(
                    "message {index} has the tool role; summary requests carry text only"
                )));
            }
        };
        if !texts.is_empty() {
            turns.push(TextTurn { role, texts });
        }
    }
    if turns.is_empty() {
        return Err(ProviderError::Unmappable("the request has no user message".into()));
    }
    Ok((system.join("\n\n"), turns))
}

fn part_kind(part: &Part) -> &'static str {
    match part {
        Part::Text { .. } => "text",
        Part::Reasoning { .. } => "reasoning",
        Part::ToolCall { .. } => "tool-call",
        Part::ToolResult { .. } => "tool-result",
        Part::ProviderState { .. } => "provider-state",
        Part::Attachment { .. } => "attachment",
    }
}

/// The builder methods every client shares (`with_timeout`, `with_idle_timeout`, `with_cancel`,
/// `with_capture`, `with_http_client`, `with_header`, `timeout`, `idle_timeout`, `model`), for a struct with a
/// `base: ClientBase` field.
macro_rules! client_builders {
    ($client:ty) => {
        impl $client {
            /// Sets the deadline of one whole call (connect, response and body or stream).
            pub fn with_timeout(mut self, timeout: std::time::Duration) -> Self {
                self.base.transport.timeout = timeout;
                self
            }

            /// Sets the idle deadline: the longest wait for the next chunk of the response
            /// body or event stream once the headers arrived (default
            /// [`STREAM_IDLE_TIMEOUT`](crate::providers::STREAM_IDLE_TIMEOUT), 300 s); past it
            /// the call fails with `stream_stalled`.
            pub fn with_idle_timeout(mut self, idle_timeout: std::time::Duration) -> Self {
                self.base.transport.idle_timeout = idle_timeout;
                self
            }

            /// Makes every call of this client end with a `Cancelled` failure once `token`
            /// fires (immediately, without sending, if it already has).
            pub fn with_cancel(mut self, token: $crate::providers::CancelToken) -> Self {
                self.base.transport.cancel = token;
                self
            }

            /// Stores a redacted record of every call in `capture`.
            pub fn with_capture(mut self, capture: $crate::providers::RequestCapture) -> Self {
                self.base.transport.capture = Some(capture);
                self
            }

            /// Uses `client` for HTTP (proxies, custom roots, a shared connection pool).
            pub fn with_http_client(mut self, client: reqwest::Client) -> Self {
                self.base.transport.set_http_client(client);
                self
            }

            /// Adds a header sent with every request. Headers whose names look like
            /// credentials are marked sensitive and never captured.
            pub fn with_header(
                mut self,
                name: &str,
                value: &str,
            ) -> Result<Self, $crate::providers::ProviderConfigError> {
                self.base.transport.add_header(name, value)?;
                Ok(self)
            }

            /// The configured call deadline.
            pub fn timeout(&self) -> std::time::Duration {
                self.base.transport.timeout
            }

            /// The configured idle deadline (see `with_idle_timeout`).
            pub fn idle_timeout(&self) -> std::time::Duration {
                self.base.transport.idle_timeout
            }

            /// The model id sent with every request.
            pub fn model(&self) -> &str {
                &self.base.model
            }
        }
    };
}

pub(crate) use client_builders;
