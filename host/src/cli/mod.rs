//! The `contextfold` command line. Every command accepts `--json` (one JSON document on stdout)
//! and prints a readable summary otherwise; progress goes to stderr. Reference: `docs/cli.md`.

mod commands;
mod compact;
mod demo;
mod demo_provider;
mod demo_report;
mod demo_session;
mod error;
pub mod formats;
mod inspect;
mod inspector;
mod session_files;
mod target;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Parser, Subcommand, ValueEnum};
use contextfold_core::projection::{OutputFormat, SessionFormat};
use serde_json::{Value, json};

pub use compact::{DEFAULT_ANTHROPIC_MODEL, DEFAULT_CODEX_MODEL, DEFAULT_OPENAI_CHAT_MODEL};
pub use error::CliError;
pub use target::{Db, Target};

/// contextfold: LLM context compaction as a projection of an append-only event log.
#[derive(Debug, Parser)]
#[command(name = "contextfold", version, about)]
pub struct Cli {
    /// Print one JSON document on stdout instead of a readable summary.
    #[arg(long, global = true)]
    pub json: bool,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Input formats of `import`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportFormat {
    /// One RuntimeEvent JSON per line (docs/events.md).
    EventsJsonl,
    /// OpenAI Chat Completions messages.
    OpenaiChat,
    /// OpenAI Responses input items (or a request body with `input`).
    OpenaiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// AI SDK ModelMessage[].
    AiSdk,
    /// A Claude Code transcript (`~/.claude/projects/<project>/<session>.jsonl`).
    ClaudeCode,
    /// A Codex CLI rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).
    CodexRollout,
    /// A Cline or Roo Code `api_conversation_history.json`.
    Cline,
    /// Whichever of claude-code, codex-rollout and cline the file is (the output says which).
    Auto,
}

impl ImportFormat {
    /// The agent session-file format this names (`Some(None)` for `auto`), or `None` for a
    /// message format.
    pub fn session_file(self) -> Option<Option<SessionFormat>> {
        match self {
            ImportFormat::ClaudeCode => Some(Some(SessionFormat::ClaudeCode)),
            ImportFormat::CodexRollout => Some(Some(SessionFormat::CodexRollout)),
            ImportFormat::Cline => Some(Some(SessionFormat::Cline)),
            ImportFormat::Auto => Some(None),
            _ => None,
        }
    }
}

/// Parses `--format` as the core's [`OutputFormat`] (its names are the possible values).
fn output_format_parser() -> impl TypedValueParser<Value = OutputFormat> {
    PossibleValuesParser::new(OutputFormat::ALL.map(OutputFormat::name))
        .map(|name| OutputFormat::from_name(&name).unwrap_or_default())
}

/// Summarizers of `compact`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SummarizerChoice {
    /// Offline extractive summarizer (no key, no network).
    Extractive,
    /// OpenAI Chat Completions (OPENAI_API_KEY).
    OpenaiChat,
    /// OpenAI Codex remote compaction v2 (OPENAI_API_KEY).
    OpenaiCodex,
    /// Anthropic Messages (ANTHROPIC_API_KEY).
    Anthropic,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Import a conversation file into a session (appended after its existing events).
    Import {
        /// Where to write.
        #[command(flatten)]
        target: Target,
        /// The file's format.
        #[arg(long, value_enum)]
        format: ImportFormat,
        /// The file to import.
        file: PathBuf,
    },
    /// Print the history of the next request.
    Project {
        /// Where to read.
        #[command(flatten)]
        target: Target,
        /// The model's context window in tokens.
        #[arg(long)]
        context_window: u64,
        /// Output message format (the core's `OutputFormat`).
        #[arg(long, default_value = "neutral", value_parser = output_format_parser())]
        format: OutputFormat,
        /// Provider kind of the request (V3 checkpoints replay only on their own provider).
        #[arg(long, default_value = "local")]
        provider: String,
        /// Connection slug of the request.
        #[arg(long, default_value = "default")]
        connection: String,
        /// Model id of the request.
        #[arg(long, default_value = "default")]
        model: String,
    },
    /// Run a manual compaction (its own Run).
    Compact {
        /// Where to read and write.
        #[command(flatten)]
        target: Target,
        /// The model's context window in tokens.
        #[arg(long)]
        context_window: u64,
        /// Which summarizer writes the checkpoint.
        #[arg(long, value_enum, default_value = "extractive")]
        summarizer: SummarizerChoice,
        /// Provider base URL (default: the provider's public API).
        #[arg(long)]
        base_url: Option<String>,
        /// Model id (default: see docs/cli.md).
        #[arg(long)]
        model: Option<String>,
        /// Connection slug a provider-native (V3) checkpoint is bound to.
        #[arg(long, default_value = "default")]
        connection: String,
    },
    /// List the recorded checkpoints of a session.
    Checkpoints {
        /// Where to read.
        #[command(flatten)]
        target: Target,
        /// Take this checkpoint back (with every checkpoint built on it): a retraction is
        /// appended to the AgentRun ledger, the RuntimeEvent log is untouched, and the previous
        /// valid checkpoint (or the raw source) becomes current.
        #[arg(long, value_name = "CHECKPOINT_ID", requires = "reason")]
        retract: Option<String>,
        /// Why the checkpoint is taken back (recorded with the retraction).
        #[arg(long, value_name = "TEXT", requires = "retract")]
        reason: Option<String>,
    },
    /// Check every recorded checkpoint against the canonical ledger.
    Verify {
        /// Where to read.
        #[command(flatten)]
        target: Target,
        /// Also parse every row and recompute its canonical bytes and derived columns (the
        /// checkpoints alone are checked over the stored bytes, at hashing speed).
        #[arg(long)]
        deep: bool,
    },
    /// Rebuild the bounded checkpoint projection from the AgentRun ledger.
    Recover {
        /// Where to read and write.
        #[command(flatten)]
        target: Target,
    },
    /// Print the canonical events of a session as JSON Lines.
    Export {
        /// Where to read.
        #[command(flatten)]
        target: Target,
    },
    /// Serve a local page over a database (sessions, a paged timeline with token estimates,
    /// checkpoint coverage, lineage, verification and retraction, the usage plot, summaries
    /// beside the events they folded), or write it as one self-contained HTML file
    /// (docs/inspector.md). Serving: the first stdout line is the page's URL.
    Inspect {
        /// The SQLite file, or a PostgreSQL URL (as `--db` of the other commands).
        #[arg(long, value_parser = target::parse_db)]
        db: Db,
        /// The session the page opens first (default: the first session).
        #[arg(long)]
        session: Option<String>,
        /// Address to serve on (port 0: any free port); loopback only unless
        /// `--allow-remote`.
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: std::net::SocketAddr,
        /// Write one self-contained HTML file (data embedded, read-only) instead of serving.
        #[arg(long, value_name = "FILE", conflicts_with = "allow_remote")]
        out: Option<PathBuf>,
        /// Serve on a non-loopback `--listen` address (anyone who reaches it can read the
        /// sessions).
        #[arg(long)]
        allow_remote: bool,
    },
    /// Serve the loopback provider simulator (OpenAI Chat, Responses, Anthropic Messages) until
    /// killed; the first stdout line is the bound address (docs/simulator.md).
    ProviderSim {
        /// Address to listen on (port 0: any free port).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: std::net::SocketAddr,
        /// The simulated model's context window in tokens.
        #[arg(long)]
        context_window: u64,
        /// The assistant's answer to every request.
        #[arg(long)]
        reply: Option<String>,
        /// Output tokens reported per answer (default: the reply's own count).
        #[arg(long)]
        output_tokens: Option<u64>,
        /// Lossy summarizer mode: answer summarizer requests with a template summary keeping
        /// this percentage of each class of the transcript's exact artifacts.
        #[arg(long, value_parser = clap::value_parser!(u8).range(0..=100))]
        lossy_keep_percent: Option<u8>,
        /// Milliseconds before a summarizer request (one carrying contextfold's transcript) is
        /// answered.
        #[arg(long, default_value_t = 0)]
        summarizer_latency_ms: u64,
        /// Milliseconds before any other request is answered.
        #[arg(long, default_value_t = 0)]
        model_latency_ms: u64,
    },
    /// Play a bundled agent session through a small context window, offline.
    Demo {
        /// The SQLite file (default: a new file under the system temp dir).
        #[arg(long)]
        db: Option<PathBuf>,
        /// Milliseconds each summary takes, as a remote model writing it would (default 0).
        #[arg(long, default_value_t = 0)]
        summarizer_latency_ms: u64,
        /// Milliseconds each agent model request takes (default 0).
        #[arg(long, default_value_t = 0)]
        model_latency_ms: u64,
        /// Prepare the next checkpoint in the background from the soft threshold on.
        #[arg(long)]
        background_preparation: bool,
    },
}

/// The bundled demo session (`contextfold demo`) as JSON, for the benches: one object per
/// turn, `{"request", "steps": [{"reasoning", "calls": [{"callId", "tool", "input", "output",
/// "isError"}]}], "answer"}`. Not a stable API.
#[doc(hidden)]
pub fn demo_session_turns() -> Value {
    let turns = demo_session::demo_turns().into_iter().map(|turn| {
        let steps: Vec<Value> = turn
            .steps
            .into_iter()
            .map(|step| {
                let calls: Vec<Value> = step
                    .calls
                    .into_iter()
                    .map(|c| json!({"callId": c.call_id, "tool": c.tool, "input": c.input, "output": c.output, "isError": c.is_error}))
                    .collect();
                json!({"reasoning": step.reasoning, "calls": calls})
            })
            .collect();
        json!({"request": turn.request, "steps": steps, "answer": turn.answer})
    });
    Value::Array(turns.collect())
}

/// What a command prints on success.
pub(crate) struct Output {
    pub(crate) json: Value,
    pub(crate) text: String,
    pub(crate) exit: u8,
}

/// Entry point of the `contextfold` binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let json_mode = cli.json;
    // One-shot commands run on one thread: their work is one request after another, and on a
    // multi-thread runtime a PostgreSQL row stream hands every socket read across threads (a
    // cold `project` of a 90k-event ledger spent a third more CPU; docs/performance.md). The
    // simulator serves many clients and the demo prepares in the background: they get workers.
    let serves = matches!(
        cli.command,
        Command::ProviderSim { .. } | Command::Demo { .. } | Command::Inspect { .. }
    );
    let mut builder = if serves {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("contextfold: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(output) => {
            let written = if json_mode {
                emit(&(serde_json::to_string_pretty(&output.json).unwrap_or_default() + "\n"))
            } else {
                emit(&output.text)
            };
            match written {
                Ok(()) => ExitCode::from(output.exit),
                Err(error) => {
                    eprintln!("contextfold: error [output_failed]: cannot write output: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(error) => {
            if json_mode {
                let body = json!({"error": {"code": error.code(), "message": error.to_string()}});
                let _ = emit(&(serde_json::to_string_pretty(&body).unwrap_or_default() + "\n"));
            }
            eprintln!("contextfold: error [{}]: {error}", error.code());
            ExitCode::from(error.exit_code())
        }
    }
}

/// Writes `text` to stdout. A reader that went away (`contextfold export | head`) is not an
/// error of the command: the rest is dropped quietly instead of panicking as `print!` does;
/// any other write failure (a full disk behind a redirect) is returned.
fn emit(text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

async fn run(cli: Cli) -> Result<Output, CliError> {
    match cli.command {
        Command::Import { target, format, file } => commands::import(&target, format, &file).await,
        Command::Project { target, context_window, format, provider, connection, model } => {
            let identity = contextfold_core::compaction::ProviderIdentity {
                provider,
                connection_slug: connection,
                model_id: model,
            };
            commands::project(&target, context_window, format, identity).await
        }
        Command::Compact { target, context_window, summarizer, base_url, model, connection } => {
            let choice = compact::SummarizerArgs { summarizer, base_url, model, connection };
            compact::compact(&target, context_window, choice).await
        }
        Command::Checkpoints { target, retract: Some(checkpoint), reason } => {
            inspect::retract(&target, &checkpoint, reason.as_deref().unwrap_or_default()).await
        }
        Command::Checkpoints { target, .. } => inspect::checkpoints(&target).await,
        Command::Verify { target, deep } => inspect::verify(&target, deep).await,
        Command::Recover { target } => inspect::recover(&target).await,
        Command::Export { target } => inspect::export(&target).await,
        Command::Inspect { db, session, listen, out, allow_remote } => {
            let options = inspector::InspectOptions { db, session, listen, out, allow_remote };
            inspector::inspect(options).await
        }
        Command::ProviderSim {
            listen,
            context_window,
            reply,
            output_tokens,
            lossy_keep_percent,
            summarizer_latency_ms,
            model_latency_ms,
        } => {
            let mut config = crate::simulator::SimulatorConfig {
                context_window,
                output_tokens,
                listen,
                lossy_keep_percent,
                summarizer_latency_ms,
                model_latency_ms,
                ..Default::default()
            };
            if let Some(reply) = reply {
                config.reply_text = reply;
            }
            commands::provider_sim(config).await
        }
        Command::Demo { db, summarizer_latency_ms, model_latency_ms, background_preparation } => {
            let options = demo::DemoOptions {
                db,
                summarizer_latency_ms,
                model_latency_ms,
                background_preparation,
            };
            demo::demo(options).await
        }
    }
}
