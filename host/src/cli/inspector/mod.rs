//! `contextfold inspect`: a local page over one database (issue 42): its sessions, a paged
//! timeline of a session's events with their token estimates, each checkpoint's coverage,
//! lineage, verification and retraction, the usage plot, and each summary beside the events it
//! folded. Served on loopback (`--listen`, where the page can also retract a checkpoint), or
//! written as one self-contained HTML file (`--out`). The page, its style and its script are
//! files of this folder compiled into the binary: nothing is fetched from anywhere else.

mod data;
mod server;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};

use super::{CliError, Db, Output};
use crate::storage::StoreError;

/// The page: markup and style, with `<!--BOOT-->` and `<!--SCRIPT-->` where the data and the
/// script go.
const PAGE_HTML: &str = include_str!("page.html");

/// The page's script.
const PAGE_JS: &str = include_str!("page.js");

/// What `inspect` was asked.
#[derive(Debug, Clone)]
pub(crate) struct InspectOptions {
    /// The database.
    pub(crate) db: Db,
    /// The session the page opens (default: the first one).
    pub(crate) session: Option<String>,
    /// Where to serve.
    pub(crate) listen: SocketAddr,
    /// Write one HTML file here instead of serving.
    pub(crate) out: Option<PathBuf>,
    /// Serve on a non-loopback `listen` address (refused otherwise).
    pub(crate) allow_remote: bool,
}

/// Runs `inspect`: writes `--out` and returns, or serves until interrupted (the first stdout
/// line is the page's URL).
pub(crate) async fn inspect(options: InspectOptions) -> Result<Output, CliError> {
    let ledger = options.db.open_existing().await?;
    if let Some(session) = &options.session
        && ledger.last_seq(session).await?.is_none()
    {
        return Err(StoreError::UnknownSession { session_id: session.clone() }.into());
    }
    match &options.out {
        Some(path) => write_file(&ledger, &options, path).await,
        None => serve(ledger, &options).await,
    }
}

/// `--out`: every session (or the one named) with its overview and all its timeline rows,
/// embedded in the page, which still renders one page of events at a time.
async fn write_file(
    ledger: &crate::ledger::SharedLedger,
    options: &InspectOptions,
    path: &std::path::Path,
) -> Result<Output, CliError> {
    let mut listed = data::sessions(ledger).await?;
    if let Some(only) = &options.session
        && let Some(rows) = listed["sessions"].as_array_mut()
    {
        rows.retain(|row| row["session"].as_str() == Some(only));
    }
    let names: Vec<String> = listed["sessions"]
        .as_array()
        .map(|rows| rows.iter().filter_map(|r| r["session"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    let mut overviews = serde_json::Map::new();
    let mut event_blocks = Vec::new();
    let mut total = 0usize;
    for (index, name) in names.iter().enumerate() {
        overviews.insert(name.clone(), data::overview(ledger, name).await?);
        let rows = data::all_events(ledger, name).await?;
        total += rows.len();
        event_blocks.push((index, Value::Array(rows)));
    }
    let boot = json!({
        "mode": "file",
        "session": options.session.clone().or_else(|| names.first().cloned()),
        "sessions": listed,
        "overviews": overviews,
        "eventBlocks": names,
        "defaultPage": data::DEFAULT_PAGE,
    });
    let html = render(&boot, &event_blocks);
    tokio::fs::write(path, html.as_bytes()).await?;
    let text = format!(
        "wrote {} ({} session(s), {total} events, {} bytes)\n",
        path.display(),
        names.len(),
        html.len()
    );
    let json = json!({"out": path, "sessions": names, "events": total, "bytes": html.len()});
    Ok(Output { json, text, exit: 0 })
}

/// `--listen`: binds (loopback unless `--allow-remote`), prints the URL, serves until Ctrl-C.
async fn serve(
    ledger: crate::ledger::SharedLedger,
    options: &InspectOptions,
) -> Result<Output, CliError> {
    use std::io::Write as _;
    let listen = options.listen;
    if !listen.ip().is_loopback() && !options.allow_remote {
        return Err(CliError::InspectorListen {
            addr: listen,
            detail: "not a loopback address (pass --allow-remote to serve it anyway)".to_owned(),
        });
    }
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|error| CliError::InspectorListen { addr: listen, detail: error.to_string() })?;
    let addr = listener
        .local_addr()
        .map_err(|error| CliError::InspectorListen { addr: listen, detail: error.to_string() })?;
    let token = server::random_token();
    let boot = json!({
        "mode": "live",
        "session": options.session,
        "token": token,
        "defaultPage": data::DEFAULT_PAGE,
    });
    let hosts = listen.ip().is_loopback().then(|| server::loopback_hosts(addr));
    let state = Arc::new(server::ServerState { ledger, page: render(&boot, &[]), token, hosts });
    let url = format!("http://{addr}/");
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{url}")?;
        stdout.flush()?;
    }
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    axum::serve(listener, server::router(state))
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(CliError::Output)?;
    Ok(Output { json: json!({"url": url}), text: String::new(), exit: 0 })
}

/// JSON made safe inside a `<script>` element: every `<` escaped (only strings hold one).
fn script_json(value: &Value) -> String {
    value.to_string().replace('<', "\\u003c")
}

/// The page with `boot` and each embedded events block (`<script type="application/json">`,
/// parsed only when the page first shows that session) and the script inline.
fn render(boot: &Value, event_blocks: &[(usize, Value)]) -> String {
    let mut data = format!(
        "<script id=\"cf-boot\" type=\"application/json\">{}</script>\n",
        script_json(boot)
    );
    for (index, rows) in event_blocks {
        data.push_str(&format!(
            "<script id=\"cf-events-{index}\" type=\"application/json\">{}</script>\n",
            script_json(rows)
        ));
    }
    PAGE_HTML.replacen("<!--BOOT-->", &data, 1).replacen(
        "<!--SCRIPT-->",
        &format!("<script>\n{PAGE_JS}</script>"),
        1,
    )
}
