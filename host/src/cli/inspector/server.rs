//! The inspector's loopback server: the page at `/`, its JSON under `/api/`, and the one write,
//! `POST /api/retract`, which does what `checkpoints --retract ID --reason TEXT` does.
//!
//! Only the page itself can write: a POST must carry the run's random token (it is in the page,
//! which another origin cannot read) in `x-contextfold-token`, a header no cross-origin form can
//! send without a preflight this server never answers; and every request's `Host` must name the
//! loopback address it is bound to (no DNS rebinding).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, HOST};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use super::super::CliError;
use super::super::inspect::retract_in;
use super::data;
use crate::ledger::SharedLedger;

/// What every route reads.
pub(crate) struct ServerState {
    /// The open database.
    pub(crate) ledger: SharedLedger,
    /// The rendered page (boot data and token inline).
    pub(crate) page: String,
    /// The token a POST must carry.
    pub(crate) token: String,
    /// `Host` values accepted; `None` accepts any (a non-loopback `--listen` the user asked for).
    pub(crate) hosts: Option<Vec<String>>,
}

/// The routes over `state`.
pub(crate) fn router(state: Arc<ServerState>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/api/sessions", get(sessions))
        .route("/api/overview", get(overview))
        .route("/api/events", get(events))
        .route("/api/retract", post(retract))
        .with_state(state)
}

/// The `Host` values of a server bound to `addr` on loopback: its address, and `localhost`.
pub(crate) fn loopback_hosts(addr: SocketAddr) -> Vec<String> {
    let port = addr.port();
    vec![addr.to_string(), format!("localhost:{port}"), format!("127.0.0.1:{port}")]
}

/// A random hex token (the standard library's randomly keyed hasher, twice).
pub(crate) fn random_token() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut out = String::new();
    for _ in 0..2 {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(std::time::SystemTime::now().elapsed().map_or(0, |d| d.as_nanos()));
        hasher.write_u32(std::process::id());
        out.push_str(&format!("{:016x}", hasher.finish()));
    }
    out
}

/// A failed request: its HTTP status and the CLI's `{"error": {"code", "message"}}` body.
struct ApiError {
    status: StatusCode,
    code: String,
    message: String,
}

impl ApiError {
    /// A request the server refuses before reading the ledger.
    fn refused(status: StatusCode, code: &str, message: &str) -> Self {
        Self { status, code: code.to_owned(), message: message.to_owned() }
    }
}

impl From<CliError> for ApiError {
    fn from(error: CliError) -> Self {
        let status = match error.code() {
            "unknown_session" | "checkpoint_not_found" => StatusCode::NOT_FOUND,
            "checkpoint_already_retracted" => StatusCode::CONFLICT,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        Self { status, code: error.code().to_owned(), message: error.to_string() }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code, "message": self.message}});
        (self.status, [(CONTENT_TYPE, "application/json")], body.to_string()).into_response()
    }
}

/// A JSON answer the browser must not cache (the ledger changes under it).
fn json_response(value: &Value) -> Response {
    let headers = [(CONTENT_TYPE, "application/json"), (CACHE_CONTROL, "no-store")];
    (StatusCode::OK, headers, value.to_string()).into_response()
}

/// Refuses a request whose `Host` is not this server's loopback address.
fn check_host(state: &ServerState, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(hosts) = &state.hosts else { return Ok(()) };
    let host = headers.get(HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    if hosts.iter().any(|allowed| allowed == host) {
        Ok(())
    } else {
        Err(ApiError::refused(StatusCode::FORBIDDEN, "host_refused", "not this server's host"))
    }
}

/// Decodes `%XX` and `+` of a query-string component.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = |b: u8| (b as char).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(high), Some(low)) => {
                        out.push((high * 16 + low) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The query string's parameters.
fn query(uri: &Uri) -> HashMap<String, String> {
    uri.query()
        .unwrap_or_default()
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(key), percent_decode(value))
        })
        .collect()
}

/// The `session` parameter, required.
fn session_of(params: &HashMap<String, String>) -> Result<String, ApiError> {
    params.get("session").filter(|s| !s.is_empty()).cloned().ok_or_else(|| {
        ApiError::refused(StatusCode::BAD_REQUEST, "bad_request", "`session` is required")
    })
}

/// `GET /`: the page.
async fn page(State(state): State<Arc<ServerState>>, headers: HeaderMap) -> Response {
    if let Err(error) = check_host(&state, &headers) {
        return error.into_response();
    }
    let headers = [(CONTENT_TYPE, "text/html; charset=utf-8"), (CACHE_CONTROL, "no-store")];
    (StatusCode::OK, headers, state.page.clone()).into_response()
}

/// `GET /api/sessions`: the sessions of the database with their event counts.
async fn sessions(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    check_host(&state, &headers)?;
    Ok(json_response(&data::sessions(&state.ledger).await?))
}

/// `GET /api/overview?session=S`: checkpoints, verification, summaries and usage of a session.
async fn overview(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, ApiError> {
    check_host(&state, &headers)?;
    let session = session_of(&query(&uri))?;
    Ok(json_response(&data::overview(&state.ledger, &session).await?))
}

/// `GET /api/events?session=S&after=SEQ&limit=N`: one page of the timeline.
async fn events(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, ApiError> {
    check_host(&state, &headers)?;
    let params = query(&uri);
    let session = session_of(&params)?;
    let number = |key: &str, default: u64| -> Result<u64, ApiError> {
        params.get(key).map_or(Ok(default), |text| {
            text.parse().map_err(|_| {
                ApiError::refused(StatusCode::BAD_REQUEST, "bad_request", "not a number")
            })
        })
    };
    let after = number("after", 0)?;
    let limit = usize::try_from(number("limit", data::DEFAULT_PAGE as u64)?).unwrap_or(usize::MAX);
    Ok(json_response(&data::events_page(&state.ledger, &session, after, limit).await?))
}

/// `POST /api/retract` with `{"session", "checkpointId", "reason"}`: `checkpoints --retract`,
/// answered with what that prints under `--json`.
async fn retract(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    check_host(&state, &headers)?;
    let token = headers.get("x-contextfold-token").and_then(|t| t.to_str().ok());
    if token != Some(state.token.as_str()) {
        return Err(ApiError::refused(StatusCode::FORBIDDEN, "token_refused", "missing token"));
    }
    let bad = |message: &str| ApiError::refused(StatusCode::BAD_REQUEST, "bad_request", message);
    let request: Value = serde_json::from_slice(&body).map_err(|_| bad("the body is not JSON"))?;
    let field = |key: &str| request[key].as_str().filter(|s| !s.trim().is_empty());
    let session = field("session").ok_or_else(|| bad("`session` is required"))?;
    let checkpoint = field("checkpointId").ok_or_else(|| bad("`checkpointId` is required"))?;
    let reason = field("reason").ok_or_else(|| bad("`reason` is required"))?;
    let listed = retract_in(&state.ledger, session, checkpoint, reason).await?;
    Ok(json_response(&listed.json))
}
