//! The HTTP server: axum on a tokio listener, one route per wire shape.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::{RequestRecord, SimulatedProvider, SimulatorConfig, SimulatorError, WireShape};

/// The largest request body accepted (axum's default is 2 MiB; long contexts with images
/// exceed it).
pub const MAX_REQUEST_BYTES: usize = 64 << 20;

/// Starts simulators.
#[derive(Debug)]
pub struct Simulator;

impl Simulator {
    /// Binds `config.listen` (port 0: any free port) and serves on the current tokio runtime
    /// until the handle is shut down or dropped.
    pub async fn start(config: SimulatorConfig) -> Result<SimulatorHandle, SimulatorError> {
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|source| SimulatorError::Bind { addr: config.listen, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| SimulatorError::Bind { addr: config.listen, source })?;
        let provider = Arc::new(SimulatedProvider::new(config));
        let router = Router::new()
            .route(WireShape::OpenAiChat.path(), post(chat))
            .route(WireShape::OpenAiResponses.path(), post(responses))
            .route(WireShape::AnthropicMessages.path(), post(messages))
            .route("/v1/simulator/records", get(records))
            .layer(DefaultBodyLimit::max(MAX_REQUEST_BYTES))
            .with_state(Arc::clone(&provider));
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stopped.await;
            };
            // A serve error ends the task; callers see refused connections.
            let _ = axum::serve(listener, router).with_graceful_shutdown(shutdown).await;
        });
        Ok(SimulatorHandle { addr, provider, stop: Some(stop), task: Some(task) })
    }
}

/// A running simulator. Dropping it stops the server (without waiting).
#[derive(Debug)]
pub struct SimulatorHandle {
    addr: SocketAddr,
    provider: Arc<SimulatedProvider>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl SimulatorHandle {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>`: the base URL of Anthropic clients (they append
    /// `/v1/messages`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:<port>/v1`: the base URL of OpenAI clients (they append
    /// `/chat/completions` or `/responses`).
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// A copy of the request log, oldest first.
    pub fn records(&self) -> Vec<RequestRecord> {
        self.provider.records()
    }

    /// The provider behind the server (the same log and caches).
    pub fn provider(&self) -> &Arc<SimulatedProvider> {
        &self.provider
    }

    /// Stops accepting requests, lets the open ones finish, and waits for the server to end.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for SimulatorHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn answer(provider: Arc<SimulatedProvider>, shape: WireShape, body: Bytes) -> Response {
    // Counting a large request takes milliseconds of CPU: off the async workers.
    match tokio::task::spawn_blocking(move || provider.answer(shape, &body)).await {
        Ok(answer) => {
            tokio::time::sleep(answer.latency).await;
            let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
            (status, [(CONTENT_TYPE, answer.content_type)], answer.body).into_response()
        }
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

async fn chat(State(provider): State<Arc<SimulatedProvider>>, body: Bytes) -> Response {
    answer(provider, WireShape::OpenAiChat, body).await
}

async fn responses(State(provider): State<Arc<SimulatedProvider>>, body: Bytes) -> Response {
    answer(provider, WireShape::OpenAiResponses, body).await
}

async fn messages(State(provider): State<Arc<SimulatedProvider>>, body: Bytes) -> Response {
    answer(provider, WireShape::AnthropicMessages, body).await
}

async fn records(State(provider): State<Arc<SimulatedProvider>>) -> Response {
    axum::Json(provider.records()).into_response()
}
