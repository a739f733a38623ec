//! A scripted loopback server (axum on 127.0.0.1:0) for Chat Completions, Anthropic Messages
//! and the streaming Responses API.
//!
//! Every request is recorded (method, path, headers, JSON body) and answered with the next
//! scripted [`Reply`], in order; an unscripted request gets a 599 so the test fails loudly.
//! Slow servers are scripted too: a body trickled byte by byte ([`Reply::trickle`]), and a
//! body or stream that stalls without closing ([`StreamEnd::Stall`], [`Reply::StallJson`]).

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::Value;

/// How a scripted event stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// The body ends normally after the last frame.
    Clean,
    /// The connection is aborted after the last frame (no terminating chunk).
    Abort,
    /// Nothing more is sent after the last frame and the connection stays open.
    Stall,
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A JSON body with a status.
    Json { status: u16, body: Value },
    /// Any text with a status and content type (malformed JSON, HTML error pages).
    Raw { status: u16, content_type: &'static str, body: String },
    /// A `text/event-stream` body: raw frames (already formatted), a pause before each, an end.
    Sse { frames: Vec<String>, gap: Duration, end: StreamEnd },
    /// A JSON body whose connection is aborted after `sent` bytes.
    CutJson { body: Value, sent: usize },
    /// A JSON body with a status, of which `sent` bytes are sent, then nothing, the
    /// connection left open.
    StallJson { status: u16, body: Value, sent: usize },
    /// A 200 body sent one byte per chunk, `every` apart, then closed normally.
    Trickle { content_type: &'static str, body: String, every: Duration },
    /// Waits, then answers with the inner reply.
    Delayed { delay: Duration, reply: Box<Reply> },
}

impl Reply {
    /// 200 with `body`.
    pub fn ok(body: Value) -> Self {
        Reply::Json { status: 200, body }
    }

    /// `status` with `body`.
    pub fn status(status: u16, body: Value) -> Self {
        Reply::Json { status, body }
    }

    /// A stream of JSON events, each framed as `event: <type>` + `data: <json>`.
    pub fn sse(events: &[Value], end: StreamEnd) -> Self {
        Reply::Sse { frames: events.iter().map(sse_frame).collect(), gap: Duration::ZERO, end }
    }

    /// A 200 `body` of `content_type` sent one byte every `every`.
    pub fn trickle(content_type: &'static str, body: String, every: Duration) -> Self {
        Reply::Trickle { content_type, body, every }
    }

    /// A stream of JSON events (framed like [`Reply::sse`]) that then stalls, left open.
    pub fn sse_then_stall(events: &[Value]) -> Self {
        Reply::sse(events, StreamEnd::Stall)
    }

    /// This reply after `delay`.
    pub fn delayed(self, delay: Duration) -> Self {
        Reply::Delayed { delay, reply: Box::new(self) }
    }
}

/// Formats one event the way the Responses API does.
pub fn sse_frame(event: &Value) -> String {
    let name = event.get("type").and_then(Value::as_str).unwrap_or("message");
    format!("event: {name}\ndata: {event}\n\n")
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    /// Lowercased header names.
    pub headers: BTreeMap<String, String>,
    /// The body as JSON (`Value::Null` if it did not parse).
    pub body: Value,
}

#[derive(Debug, Default)]
struct Shared {
    replies: Mutex<VecDeque<Reply>>,
    received: Mutex<Vec<Received>>,
}

/// A running loopback server; it stops with the test's runtime.
#[derive(Debug, Clone)]
pub struct LoopbackServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl LoopbackServer {
    /// Binds 127.0.0.1 on a free port and serves in the background.
    pub async fn start() -> Self {
        let shared = Arc::new(Shared::default());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
        let addr = listener.local_addr().expect("local address");
        let app = Router::new().fallback(handle).with_state(shared.clone());
        tokio::spawn(async move {
            axum::serve(listener, app).await.expect("serve");
        });
        Self { addr, shared }
    }

    /// Queues the answer to the next unanswered request.
    pub fn script(&self, reply: Reply) -> &Self {
        self.shared.replies.lock().expect("lock").push_back(reply);
        self
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Every request received so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().expect("lock").clone()
    }

    /// How many requests the server has received so far (answered or not).
    pub fn requests(&self) -> usize {
        self.shared.received.lock().expect("lock").len()
    }

    /// Scripted replies not yet used.
    pub fn unused_replies(&self) -> usize {
        self.shared.replies.lock().expect("lock").len()
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let headers = headers
        .iter()
        .map(|(name, value)| {
            (name.as_str().to_owned(), String::from_utf8_lossy(value.as_bytes()).into_owned())
        })
        .collect();
    shared.received.lock().expect("lock").push(Received {
        method: method.to_string(),
        path: uri.path().to_owned(),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let reply = shared.replies.lock().expect("lock").pop_front();
    match reply {
        Some(reply) => respond(reply).await,
        None => text_response(599, "text/plain", "no scripted reply".into()),
    }
}

async fn respond(mut reply: Reply) -> Response {
    while let Reply::Delayed { delay, reply: inner } = reply {
        tokio::time::sleep(delay).await;
        reply = *inner;
    }
    match reply {
        Reply::Json { status, body } => text_response(status, "application/json", body.to_string()),
        Reply::Raw { status, content_type, body } => text_response(status, content_type, body),
        Reply::Sse { frames, gap, end } => stream_response(
            200,
            "text/event-stream",
            frames.into_iter().map(Bytes::from).collect(),
            gap,
            end,
        ),
        Reply::CutJson { body, sent } => {
            let text = body.to_string();
            let cut = Bytes::from(text.as_bytes()[..sent.min(text.len())].to_vec());
            stream_response(200, "application/json", vec![cut], Duration::ZERO, StreamEnd::Abort)
        }
        Reply::StallJson { status, body, sent } => {
            let text = body.to_string();
            let sent = Bytes::from(text.as_bytes()[..sent.min(text.len())].to_vec());
            let stall = StreamEnd::Stall;
            stream_response(status, "application/json", vec![sent], Duration::ZERO, stall)
        }
        Reply::Trickle { content_type, body, every } => {
            let bytes = body.into_bytes().into_iter().map(|byte| Bytes::from(vec![byte])).collect();
            stream_response(200, content_type, bytes, every, StreamEnd::Clean)
        }
        Reply::Delayed { .. } => unreachable!("unwrapped above"),
    }
}

fn text_response(status: u16, content_type: &str, body: String) -> Response {
    Response::builder()
        .status(StatusCode::from_u16(status).expect("valid status"))
        .header(CONTENT_TYPE, content_type)
        .body(Body::from(body))
        .expect("valid response")
}

/// A chunked body that sends each chunk after `gap`, then ends, aborts or stalls the
/// connection.
fn stream_response(
    status: u16,
    content_type: &str,
    chunks: Vec<Bytes>,
    gap: Duration,
    end: StreamEnd,
) -> Response {
    let chunks: VecDeque<Bytes> = chunks.into();
    let stream = futures_util::stream::unfold((chunks, end), move |(mut chunks, end)| async move {
        match chunks.pop_front() {
            Some(chunk) => {
                if !gap.is_zero() {
                    tokio::time::sleep(gap).await;
                }
                Some((Ok::<Bytes, std::io::Error>(chunk), (chunks, end)))
            }
            None if end == StreamEnd::Abort => {
                // Give the client time to read what was sent, then break the connection.
                tokio::time::sleep(Duration::from_millis(20)).await;
                let error =
                    std::io::Error::new(std::io::ErrorKind::ConnectionReset, "scripted abort");
                Some((Err(error), (chunks, StreamEnd::Clean)))
            }
            // Pending until the client gives up and the connection is dropped.
            None if end == StreamEnd::Stall => std::future::pending().await,
            None => None,
        }
    });
    Response::builder()
        .status(StatusCode::from_u16(status).expect("valid status"))
        .header(CONTENT_TYPE, content_type)
        .body(Body::from_stream(stream))
        .expect("valid response")
}
