//! `compact`: a manual compaction Run with the extractive summarizer or a real provider.
//!
//! | `--summarizer` | Client | Key | Default base URL | Default model |
//! |---|---|---|---|---|
//! | `extractive` | offline, no network | none | – | – |
//! | `openai-chat` | Chat Completions text summary | `OPENAI_API_KEY` | [`OPENAI_BASE_URL`] | [`DEFAULT_OPENAI_CHAT_MODEL`] |
//! | `anthropic` | Messages text summary | `ANTHROPIC_API_KEY` | [`ANTHROPIC_BASE_URL`] | [`DEFAULT_ANTHROPIC_MODEL`] |
//! | `openai-codex` | Codex remote compaction v2, one Responses text fallback | `OPENAI_API_KEY` | [`CODEX_BASE_URL`] | [`DEFAULT_CODEX_MODEL`] |
//!
//! The provider is resolved (key read, base URL and model checked) before the database is
//! opened, so a missing key or a bad URL changes nothing. Keys are never printed.

use contextfold_core::compaction::{
    Compactor, OPENAI_CODEX_PROVIDER, OutcomeKind, ProviderIdentity,
};
use serde_json::json;

use super::commands::open_runtime;
use super::{CliError, Output, SummarizerChoice, Target};
use crate::providers::{
    ANTHROPIC_BASE_URL, AnthropicSummarizer, CODEX_BASE_URL, CodexNativeCompactor, OPENAI_BASE_URL,
    OpenAiChatSummarizer, anthropic_api_key_from_env, openai_api_key_from_env,
};
use crate::runtime::{
    CompactionReport, ExtractiveSummarizer, NativeCompactor, NoNativeCompactor, StopSignal,
    Summarizer,
};

/// Model of `--summarizer openai-chat` when `--model` is not given.
pub const DEFAULT_OPENAI_CHAT_MODEL: &str = "gpt-4.1-mini";
/// Model of `--summarizer anthropic` when `--model` is not given.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
/// Model of `--summarizer openai-codex` when `--model` is not given.
pub const DEFAULT_CODEX_MODEL: &str = "gpt-5-codex";

/// The summarizer options of `compact`.
#[derive(Debug, Clone)]
pub(crate) struct SummarizerArgs {
    pub(crate) summarizer: SummarizerChoice,
    pub(crate) base_url: Option<String>,
    pub(crate) model: Option<String>,
    pub(crate) connection: String,
}

impl SummarizerArgs {
    fn identity(&self, provider: &str, default_model: &str) -> ProviderIdentity {
        ProviderIdentity {
            provider: provider.to_owned(),
            connection_slug: self.connection.clone(),
            model_id: self.model.clone().unwrap_or_else(|| default_model.to_owned()),
        }
    }

    fn base_url<'a>(&'a self, default: &'a str) -> &'a str {
        self.base_url.as_deref().unwrap_or(default)
    }
}

/// `compact`: a manual compaction Run; Ctrl-C stops it (nothing is persisted).
pub(crate) async fn compact(
    target: &Target,
    context_window: u64,
    args: SummarizerArgs,
) -> Result<Output, CliError> {
    match args.summarizer {
        SummarizerChoice::Extractive => {
            let identity = args.identity("local", "default");
            let compactor = Compactor::TextSummary;
            let setup = (identity, compactor, ExtractiveSummarizer, NoNativeCompactor);
            run(target, context_window, "extractive", setup).await
        }
        SummarizerChoice::OpenaiChat => {
            let identity = args.identity("openai", DEFAULT_OPENAI_CHAT_MODEL);
            let key = openai_api_key_from_env()?;
            let client =
                OpenAiChatSummarizer::new(args.base_url(OPENAI_BASE_URL), &identity.model_id, key)?;
            let setup = (identity, Compactor::TextSummary, client, NoNativeCompactor);
            run(target, context_window, "openai-chat", setup).await
        }
        SummarizerChoice::Anthropic => {
            let identity = args.identity("anthropic", DEFAULT_ANTHROPIC_MODEL);
            let key = anthropic_api_key_from_env()?;
            let client = AnthropicSummarizer::new(
                args.base_url(ANTHROPIC_BASE_URL),
                &identity.model_id,
                key,
            )?;
            let setup = (identity, Compactor::TextSummary, client, NoNativeCompactor);
            run(target, context_window, "anthropic", setup).await
        }
        SummarizerChoice::OpenaiCodex => {
            let identity = args.identity(OPENAI_CODEX_PROVIDER, DEFAULT_CODEX_MODEL);
            let key = openai_api_key_from_env()?;
            let client =
                CodexNativeCompactor::new(args.base_url(CODEX_BASE_URL), &identity.model_id, key)?;
            let setup = (identity, Compactor::OpenaiCodexNative, client.clone(), client);
            run(target, context_window, "openai-codex", setup).await
        }
    }
}

async fn run<S: Summarizer, N: NativeCompactor>(
    target: &Target,
    context_window: u64,
    name: &'static str,
    (identity, compactor, summarizer, native): (ProviderIdentity, Compactor, S, N),
) -> Result<Output, CliError> {
    let runtime =
        open_runtime(target, context_window, identity, compactor, summarizer, native).await?;
    let stop = StopSignal::new();
    let watcher = {
        let stop = stop.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("contextfold: stopping the compaction");
                stop.stop();
            }
        })
    };
    eprintln!("contextfold: compacting session {} with the {name} summarizer", target.session);
    let report = runtime.compact_manually(&stop).await;
    watcher.abort();
    Ok(compact_output(&report?, name))
}

/// The snake_case name of an outcome (`recorded`, `failed_open`…), as in the JSON output.
pub(crate) fn outcome_name(kind: OutcomeKind) -> String {
    serde_json::to_value(kind).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// The `compact` output: `{outcome, reason, checkpoint, diagnostics, …}`; exit 0 for
/// `recorded` / `skipped`, 3 for `failed_open` / `exhausted`, 130 when stopped.
pub(crate) fn compact_output(report: &CompactionReport, summarizer: &str) -> Output {
    let outcome = &report.outcome;
    let json = json!({
        "outcome": outcome.outcome,
        "reason": outcome.reason,
        "checkpoint": outcome.checkpoint.as_ref().map(|c| c.to_value()),
        "diagnostics": outcome.diagnostics,
        "attempts": outcome.attempts,
        "tokens": outcome.tokens,
        "summarizer": summarizer,
        "runId": report.run_id,
        "lookupNotes": report.lookup_notes,
    });
    let checkpoint = outcome.checkpoint.as_ref().map_or(String::new(), |c| {
        format!(
            ", checkpoint {} (schema v{}) covers {} events",
            c.checkpoint_id,
            c.schema_version(),
            c.coverage.event_count
        )
    });
    let text = format!(
        "{}: {} (history {} -> {} tokens, budget {}){checkpoint}\n",
        outcome_name(outcome.outcome),
        outcome.reason,
        outcome.tokens.before,
        outcome.tokens.after,
        outcome.tokens.budget,
    );
    let exit = match outcome.outcome {
        OutcomeKind::Recorded | OutcomeKind::Skipped => 0,
        OutcomeKind::Cancelled => 130,
        _ => 3,
    };
    Output { json, text, exit }
}
