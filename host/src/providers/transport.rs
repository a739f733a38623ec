//! The HTTP plumbing the three clients share: base URL, timeout, cancellation, capture, bounded
//! body reads, status classification and scrubbing of every failure.
//!
//! A call is `Transport::start` → `Transport::guard(async { call.send() … call.read_body() })`
//! → `Call::finish`. `guard` races the whole call (connect, headers, body or stream) against the
//! client's timeout and its [`CancelToken`]; `finish` scrubs the error of every secret the call
//! saw, turns it into the core's [`ProviderFailure`] and stores the redacted capture record.
//!
//! Three deadlines bound a call, so that no server can hold it open:
//!
//! | Deadline | Default | Set by | Failure (code) |
//! |---|---|---|---|
//! | connect | [`CONNECT_TIMEOUT`] (30 s) | the HTTP client (`with_http_client`) | `connect_failed` |
//! | whole call: connect, headers, body or stream | `DEFAULT_SUMMARY_TIMEOUT` (300 s), `DEFAULT_NATIVE_TIMEOUT` (600 s) | `with_timeout` | `timeout` |
//! | idle: the longest wait for the next body byte once the headers arrived | [`STREAM_IDLE_TIMEOUT`] (300 s) | `with_idle_timeout` | `stream_stalled` |
//!
//! A body trickled slowly (one byte every 200 ms) never trips the idle deadline and ends on the
//! whole-call one; a body or event stream that stops sending without closing ends on whichever
//! comes first. Both failures are `Unavailable`.

use std::error::Error as StdError;
use std::future::Future;
use std::time::{Duration, Instant};

use bytes::Bytes;
use contextfold_core::compaction::ProviderFailure;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::api_key::ApiKey;
use super::cancel::CancelToken;
use super::capture::{CapturedRequest, RequestCapture, Secrets};
use super::classify::{ErrorDetail, classify_http};
use super::error::{ProviderConfigError, ProviderError};

/// Largest response body (or whole event stream) a client reads: 16 MiB.
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// Largest error body read to classify a failed status: 64 KiB.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// Connect timeout of the default HTTP client.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Default idle deadline: the longest a call waits for the next chunk of a response body or
/// event stream once the headers arrived (300 s, the stream idle timeout of the Codex CLI).
/// Past it the call fails with `stream_stalled`. Set per client with `with_idle_timeout`.
pub const STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// Shared configuration of one client.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    client: reqwest::Client,
    base_url: String,
    pub(crate) timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) cancel: CancelToken,
    pub(crate) capture: Option<RequestCapture>,
    extra_headers: HeaderMap,
}

impl Transport {
    /// Validates `base_url` (`http://` or `https://`, no query) and builds the default client.
    pub(crate) fn new(base_url: &str, timeout: Duration) -> Result<Self, ProviderConfigError> {
        let invalid = |reason: &str| ProviderConfigError::InvalidBaseUrl {
            url: base_url.to_owned(),
            reason: reason.to_owned(),
        };
        let url = reqwest::Url::parse(base_url).map_err(|error| invalid(&error.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(invalid("the scheme must be http or https"));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(invalid("a base URL takes no query or fragment"));
        }
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|error| ProviderConfigError::HttpClient(error_chain(&error)))?;
        Ok(Self {
            client,
            base_url: base_url.trim_end_matches('/').to_owned(),
            timeout,
            idle_timeout: STREAM_IDLE_TIMEOUT,
            cancel: CancelToken::new(),
            capture: None,
            extra_headers: HeaderMap::new(),
        })
    }

    /// Replaces the HTTP client (proxies, custom roots, a shared connection pool).
    pub(crate) fn set_http_client(&mut self, client: reqwest::Client) {
        self.client = client;
    }

    /// Adds a header sent with every request (for example an account id).
    pub(crate) fn add_header(
        &mut self,
        name: &str,
        value: &str,
    ) -> Result<(), ProviderConfigError> {
        let invalid = || ProviderConfigError::InvalidHeader { name: name.to_owned() };
        let header_name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid())?;
        let mut header_value = HeaderValue::from_str(value).map_err(|_| invalid())?;
        header_value.set_sensitive(super::capture::is_auth_header(name));
        self.extra_headers.insert(header_name, header_value);
        Ok(())
    }

    /// Starts a POST of `body` (JSON) to `base_url + path` with the client's headers plus
    /// `headers` (authentication, protocol version).
    pub(crate) fn start(
        &self,
        provider: &'static str,
        path: &str,
        mut headers: HeaderMap,
        body: Value,
        key: &ApiKey,
    ) -> Call {
        let mut secrets = Secrets::default();
        secrets.add(key.expose());
        secrets.add_provider_state(&body);
        for (name, value) in &self.extra_headers {
            headers.entry(name.clone()).or_insert_with(|| value.clone());
        }
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let url = format!("{}{path}", self.base_url);
        let record = self
            .capture
            .as_ref()
            .map(|_| CapturedRequest::new(provider, &url, &headers, &body, &secrets));
        Call {
            client: self.client.clone(),
            url,
            headers,
            body,
            secrets,
            record,
            capture: self.capture.clone(),
            idle_timeout: self.idle_timeout,
            started: Instant::now(),
        }
    }

    /// Runs `call` under the timeout and the cancel token.
    pub(crate) async fn guard<T>(
        &self,
        call: impl Future<Output = Result<T, ProviderError>>,
    ) -> Result<T, ProviderError> {
        if self.cancel.is_cancelled() {
            return Err(ProviderError::Cancelled);
        }
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => Err(ProviderError::Cancelled),
            result = tokio::time::timeout(self.timeout, call) => {
                result.unwrap_or(Err(ProviderError::Timeout(self.timeout)))
            }
        }
    }
}

/// One request in flight. Its `Debug` shows only the URL (the body may hold provider state).
pub(crate) struct Call {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    body: Value,
    secrets: Secrets,
    record: Option<CapturedRequest>,
    capture: Option<RequestCapture>,
    idle_timeout: Duration,
    started: Instant,
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call").field("url", &self.url).finish_non_exhaustive()
    }
}

impl Call {
    /// Adds every provider state value of `value` to the secrets scrubbed from failures.
    pub(crate) fn learn_secrets(&mut self, value: &Value) {
        self.secrets.add_provider_state(value);
    }

    /// Sends the request. A non-success status becomes [`ProviderError::Status`], classified
    /// from its (bounded) error body.
    pub(crate) async fn send(&mut self) -> Result<reqwest::Response, ProviderError> {
        let body = serde_json::to_vec(&self.body)
            .map_err(|error| ProviderError::Unmappable(error.to_string()))?;
        let mut response = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .body(body)
            .send()
            .await
            .map_err(transport_error)?;
        let status = response.status();
        if let Some(record) = self.record.as_mut() {
            record.status = Some(status.as_u16());
        }
        if status.is_success() {
            return Ok(response);
        }
        let error_body =
            read_bounded(&mut response, MAX_ERROR_BODY_BYTES, true, self.idle_timeout).await?;
        if let Some(record) = self.record.as_mut() {
            record.record_body(&error_body, &self.secrets);
        }
        Err(status_error(status.as_u16(), &error_body))
    }

    /// Reads the whole success body (at most [`MAX_RESPONSE_BYTES`]).
    pub(crate) async fn read_body(
        &mut self,
        mut response: reqwest::Response,
    ) -> Result<Vec<u8>, ProviderError> {
        let body =
            read_bounded(&mut response, MAX_RESPONSE_BYTES, false, self.idle_timeout).await?;
        if let Some(record) = self.record.as_mut() {
            record.record_body(&body, &self.secrets);
        }
        Ok(body)
    }

    /// The next chunk of a streamed body; `None` at a clean end; [`ProviderError::Stalled`]
    /// when nothing arrives within the idle deadline.
    pub(crate) async fn next_chunk(
        &mut self,
        response: &mut reqwest::Response,
    ) -> Result<Option<Bytes>, ProviderError> {
        let chunk = tokio::time::timeout(self.idle_timeout, response.chunk())
            .await
            .map_err(|_| ProviderError::Stalled(self.idle_timeout))?;
        chunk.map_err(|error| {
            ProviderError::StreamTruncated(format!("the connection broke: {}", error_chain(&error)))
        })
    }

    /// Records one stream event in the capture, if any.
    pub(crate) fn record_event(&mut self, event: Option<&str>, data: &str) {
        if let Some(record) = self.record.as_mut() {
            record.record_event(event, data, &self.secrets);
        }
    }

    /// Ends the call: scrubs a failure, stores the capture record, converts to the core type.
    pub(crate) fn finish<T>(
        mut self,
        result: Result<T, ProviderError>,
    ) -> Result<T, ProviderFailure> {
        let result = result.map_err(|error| error.map_text(|text| self.secrets.scrub(text)));
        if let (Some(mut record), Some(capture)) = (self.record.take(), self.capture.take()) {
            record.elapsed_ms =
                u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
            if let Err(error) = &result {
                record.failure = Some(json!({
                    "code": error.code(),
                    "kind": error.kind(),
                    "message": error.to_string(),
                }));
            }
            capture.push(record);
        }
        result.map_err(ProviderFailure::from)
    }
}

/// The failure of a non-success `status` with its (bounded) error body, classified.
pub(crate) fn status_error(status: u16, error_body: &[u8]) -> ProviderError {
    let detail = ErrorDetail::from_body(error_body);
    ProviderError::Status { status, kind: classify_http(status, &detail), detail: detail.summary() }
}

/// Reads at most `limit` bytes; past it, an error body is cut and a success body is an error.
/// A wait longer than `idle` for the next chunk is [`ProviderError::Stalled`].
async fn read_bounded(
    response: &mut reqwest::Response,
    limit: usize,
    cut: bool,
    idle: Duration,
) -> Result<Vec<u8>, ProviderError> {
    let mut body = Vec::new();
    loop {
        let chunk = tokio::time::timeout(idle, response.chunk())
            .await
            .map_err(|_| ProviderError::Stalled(idle))?;
        let chunk = chunk.map_err(|error| {
            ProviderError::Transport(format!("reading the body failed: {}", error_chain(&error)))
        })?;
        let Some(chunk) = chunk else { return Ok(body) };
        if body.len() + chunk.len() > limit {
            if cut {
                body.extend_from_slice(&chunk[..limit - body.len()]);
                return Ok(body);
            }
            return Err(ProviderError::ResponseTooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
}

fn transport_error(error: reqwest::Error) -> ProviderError {
    let text = error_chain(&error);
    if error.is_connect() { ProviderError::Connect(text) } else { ProviderError::Transport(text) }
}

/// An error and its sources, joined by `: `.
pub(crate) fn error_chain(error: &dyn StdError) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
