//! [`ProviderError`]: why one provider call failed, with its failure class, and
//! [`ProviderConfigError`]: why a client could not be built.
//!
//! The clients return the core's [`ProviderFailure`] (what `Compaction::handle_summary` and
//! `handle_native` take); it is built from a `ProviderError` whose strings were already scrubbed
//! of the API key and of any provider state seen in the call, so a failure message is safe to
//! log and to persist in diagnostics.

use std::time::Duration;

use contextfold_core::compaction::{ProviderFailure, ProviderFailureKind};

/// Why a provider call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The provider answered with a non-success HTTP status.
    #[error("HTTP {status}: {detail}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// Its class (see [`crate::providers::classify`]).
        kind: ProviderFailureKind,
        /// The provider's error detail (bounded, scrubbed).
        detail: String,
    },
    /// No complete answer within the client's whole-call timeout (`with_timeout`), for example
    /// a body trickled too slowly to finish in time.
    #[error("no complete response within {0:?}")]
    Timeout(Duration),
    /// The response body or event stream sent nothing for the idle deadline
    /// (`with_idle_timeout`, default [`crate::providers::STREAM_IDLE_TIMEOUT`]) without closing.
    #[error("the response sent nothing for {0:?} before it was complete")]
    Stalled(Duration),
    /// The connection could not be established.
    #[error("could not connect: {0}")]
    Connect(String),
    /// The connection broke or the HTTP exchange failed.
    #[error("transport error: {0}")]
    Transport(String),
    /// The call was cancelled through its [`crate::providers::CancelToken`].
    #[error("the call was cancelled")]
    Cancelled,
    /// A success response whose body is not the JSON the protocol defines.
    #[error("malformed response: {0}")]
    MalformedResponse(String),
    /// The response body exceeded the client's size bound.
    #[error("response body exceeds {limit} bytes")]
    ResponseTooLarge {
        /// The bound, in bytes.
        limit: usize,
    },
    /// The event stream ended (or broke) before the response completed.
    #[error("stream ended before the response completed: {0}")]
    StreamTruncated(String),
    /// The provider reported an error inside a success response: a stream `error` event, a
    /// `response.failed` response, or a 200 body that holds only an `error`.
    #[error("the provider reported a failure: {detail}")]
    Reported {
        /// Its class (see [`crate::providers::classify::classify_stream_error`]).
        kind: ProviderFailureKind,
        /// The provider's error detail (bounded, scrubbed).
        detail: String,
    },
    /// The response finished as incomplete (for example at its output limit).
    #[error("response incomplete: {0}")]
    Incomplete(String),
    /// The request cannot be expressed in this provider's wire format.
    #[error("request cannot be expressed for this provider: {0}")]
    Unmappable(String),
}

impl ProviderError {
    /// The failure class the core's fallback rules read.
    ///
    /// Timeouts, stalls, malformed success bodies, oversized bodies and truncated streams are
    /// `Unavailable`: the
    /// provider (or a proxy) failed to deliver a response to a request it accepted, which says
    /// nothing against the request itself, so no text-summary fallback doubles the traffic.
    /// An incomplete response and an unmappable request are `Rejected`: the request as built
    /// cannot produce a usable answer there, which is what the one fallback is for.
    pub fn kind(&self) -> ProviderFailureKind {
        match self {
            ProviderError::Status { kind, .. } | ProviderError::Reported { kind, .. } => *kind,
            ProviderError::Cancelled => ProviderFailureKind::Cancelled,
            ProviderError::Incomplete(_) | ProviderError::Unmappable(_) => {
                ProviderFailureKind::Rejected
            }
            ProviderError::Timeout(_)
            | ProviderError::Stalled(_)
            | ProviderError::Connect(_)
            | ProviderError::Transport(_)
            | ProviderError::MalformedResponse(_)
            | ProviderError::ResponseTooLarge { .. }
            | ProviderError::StreamTruncated(_) => ProviderFailureKind::Unavailable,
        }
    }

    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            ProviderError::Status { .. } => "http_status",
            ProviderError::Timeout(_) => "timeout",
            ProviderError::Stalled(_) => "stream_stalled",
            ProviderError::Connect(_) => "connect_failed",
            ProviderError::Transport(_) => "transport_failed",
            ProviderError::Cancelled => "cancelled",
            ProviderError::MalformedResponse(_) => "malformed_response",
            ProviderError::ResponseTooLarge { .. } => "response_too_large",
            ProviderError::StreamTruncated(_) => "stream_truncated",
            ProviderError::Reported { .. } => "provider_reported",
            ProviderError::Incomplete(_) => "response_incomplete",
            ProviderError::Unmappable(_) => "request_unmappable",
        }
    }

    /// The same error with `scrub` applied to every free-text field.
    pub(crate) fn map_text(self, scrub: impl Fn(&str) -> String) -> Self {
        match self {
            ProviderError::Status { status, kind, detail } => {
                ProviderError::Status { status, kind, detail: scrub(&detail) }
            }
            ProviderError::Reported { kind, detail } => {
                ProviderError::Reported { kind, detail: scrub(&detail) }
            }
            ProviderError::Connect(text) => ProviderError::Connect(scrub(&text)),
            ProviderError::Transport(text) => ProviderError::Transport(scrub(&text)),
            ProviderError::MalformedResponse(text) => {
                ProviderError::MalformedResponse(scrub(&text))
            }
            ProviderError::StreamTruncated(text) => ProviderError::StreamTruncated(scrub(&text)),
            ProviderError::Incomplete(text) => ProviderError::Incomplete(scrub(&text)),
            ProviderError::Unmappable(text) => ProviderError::Unmappable(scrub(&text)),
            other @ (ProviderError::Timeout(_)
            | ProviderError::Stalled(_)
            | ProviderError::Cancelled
            | ProviderError::ResponseTooLarge { .. }) => other,
        }
    }
}

impl From<ProviderError> for ProviderFailure {
    /// `message` is `<code>: <display>`, e.g. `http_status: HTTP 429: rate_limit_exceeded: …`.
    fn from(error: ProviderError) -> Self {
        ProviderFailure { kind: error.kind(), message: format!("{}: {error}", error.code()) }
    }
}

/// Why a client could not be built. Nothing was sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderConfigError {
    /// The base URL does not parse or is not `http(s)://`.
    #[error("invalid base URL `{url}`: {reason}")]
    InvalidBaseUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The key cannot be sent in an HTTP header (empty, or holds control characters).
    #[error("the API key is empty or holds characters an HTTP header cannot carry")]
    InvalidApiKey,
    /// The model id is empty.
    #[error("the model id is empty")]
    EmptyModel,
    /// An extra header has an invalid name or value.
    #[error("invalid header `{name}`")]
    InvalidHeader {
        /// The header name as given.
        name: String,
    },
    /// The HTTP client could not be created (TLS setup).
    #[error("HTTP client setup failed: {0}")]
    HttpClient(String),
}

impl ProviderConfigError {
    /// Stable machine-readable reason code.
    pub fn code(&self) -> &'static str {
        match self {
            ProviderConfigError::InvalidBaseUrl { .. } => "invalid_base_url",
            ProviderConfigError::InvalidApiKey => "invalid_api_key",
            ProviderConfigError::EmptyModel => "empty_model",
            ProviderConfigError::InvalidHeader { .. } => "invalid_header",
            ProviderConfigError::HttpClient(_) => "http_client_setup",
        }
    }
}
