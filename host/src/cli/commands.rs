//! `import`, `project` and `provider-sim`.

use std::path::Path;

use contextfold_core::compaction::{Compactor, ProviderIdentity};
use contextfold_core::projection::{ImportContext, Message, OutputFormat, import_openai_chat};
use contextfold_core::{ModelFacts, RuntimeEvent};
use serde_json::{Value, json};

use super::formats::EventSink;
use super::formats::ai_sdk::import_ai_sdk;
use super::formats::anthropic::import_anthropic;
use super::{CliError, ImportFormat, Output, Target};
use crate::runtime::{
    ExtractiveSummarizer, NativeCompactor, NoNativeCompactor, SessionConfig, SessionRuntime,
    Summarizer,
};

/// `import`: parses the whole file first, then appends every event in one transaction.
pub(crate) async fn import(
    target: &Target,
    format: ImportFormat,
    file: &Path,
) -> Result<Output, CliError> {
    let text = std::fs::read_to_string(file)
        .map_err(|source| CliError::ReadInput { path: file.to_owned(), source })?;
    if let Some(session_format) = format.session_file() {
        return super::session_files::import(target, session_format, &text).await;
    }
    let ledger = target.open_or_create().await?;
    let existing = ledger.load_events(&target.session).await?;
    let first_seq = existing.last().map_or(1, |e| e.seq + 1);
    let first_turn = contextfold_core::checkpoint::turn_count(&existing);
    let events = parse_import(format, &text, file, &target.session, first_seq, first_turn)?;
    if events.is_empty() {
        return Err(CliError::Import {
            code: "import_empty",
            detail: "the file holds no events".into(),
        });
    }
    let (imported, first_seq, last_seq) =
        (events.len(), events.first().map(|e| e.seq), events.last().map(|e| e.seq));
    ledger.append_events(&target.session, events).await?;
    let total = existing.len() + imported;
    let json = json!({
        "session": target.session,
        "imported": imported,
        "firstSeq": first_seq,
        "lastSeq": last_seq,
        "totalEvents": total,
    });
    let text = format!(
        "imported {} events into session {} ({} in total)\n",
        imported, target.session, total
    );
    Ok(Output { json, text, exit: 0 })
}

fn parse_import(
    format: ImportFormat,
    text: &str,
    file: &Path,
    session: &str,
    first_seq: u64,
    first_turn: u64,
) -> Result<Vec<RuntimeEvent>, CliError> {
    if format == ImportFormat::EventsJsonl {
        let events = RuntimeEvent::parse_jsonl(text).map_err(|error| CliError::Import {
            code: error.source.code(),
            detail: error.to_string(),
        })?;
        contextfold_core::event::validate_log(&events)
            .map_err(|error| CliError::Import { code: error.code(), detail: error.to_string() })?;
        return Ok(events);
    }
    let document: Value = serde_json::from_str(text)
        .map_err(|e| CliError::InputSyntax { path: file.to_owned(), detail: e.to_string() })?;
    match format {
        ImportFormat::OpenaiChat => {
            let mut ids = ImportContext::new(session);
            ids.first_seq = first_seq;
            ids.first_turn = first_turn;
            import_openai_chat(&document, &ids)
                .map_err(|error| CliError::Import { code: error.code(), detail: error.to_string() })
        }
        ImportFormat::OpenaiResponses => {
            let mut ids = ImportContext::new(session);
            ids.first_seq = first_seq;
            ids.first_turn = first_turn;
            contextfold_core::projection::import_openai_responses(&document, &ids)
                .map_err(|error| CliError::Import { code: error.code(), detail: error.to_string() })
        }
        ImportFormat::Anthropic | ImportFormat::AiSdk => {
            let mut sink = EventSink::new(session, first_seq, first_turn);
            if format == ImportFormat::Anthropic {
                import_anthropic(&document, &mut sink)?;
            } else {
                import_ai_sdk(&document, &mut sink)?;
            }
            Ok(sink.finish())
        }
        ImportFormat::EventsJsonl
        | ImportFormat::ClaudeCode
        | ImportFormat::CodexRollout
        | ImportFormat::Cline
        | ImportFormat::Auto => unreachable!("handled above"),
    }
}

pub(crate) async fn open_runtime<S: Summarizer, N: NativeCompactor>(
    target: &Target,
    context_window: u64,
    provider: ProviderIdentity,
    compactor: Compactor,
    summarizer: S,
    native: N,
) -> Result<SessionRuntime<S, N>, CliError> {
    let ledger = target.open_session().await?;
    let config = SessionConfig {
        session_id: target.session.clone(),
        model: ModelFacts { context_window: Some(context_window), ..Default::default() },
        provider,
        compactor,
    };
    Ok(SessionRuntime::new(ledger, config, summarizer, native))
}

/// `project`.
pub(crate) async fn project(
    target: &Target,
    context_window: u64,
    format: OutputFormat,
    provider: ProviderIdentity,
) -> Result<Output, CliError> {
    let runtime = open_runtime(
        target,
        context_window,
        provider,
        Compactor::TextSummary,
        ExtractiveSummarizer,
        NoNativeCompactor,
    )
    .await?;
    let report = runtime.project_for_request().await?;
    let projection = &report.projection;
    let (name, messages) = map_messages(format, &projection.messages)?;
    let json = json!({
        "format": name,
        "messages": messages,
        "estimatedTokens": projection.estimated_tokens,
        "historyBudget": projection.history_budget,
        "fits": projection.fits,
        "checkpoint": projection.checkpoint,
        "omittedEvents": projection.omitted_events,
        "diagnostics": projection.diagnostics,
        "lookupNotes": report.lookup_notes,
    });
    let checkpoint = projection.checkpoint.as_ref().map_or("no checkpoint".to_owned(), |c| {
        format!("checkpoint {} replaces {} events", c.checkpoint_id, c.covered_events)
    });
    let text = format!(
        "{} messages ({name}), {} of {} tokens ({}), {checkpoint}\n{}",
        projection.messages.len(),
        projection.estimated_tokens,
        projection.history_budget,
        if projection.fits { "fits" } else { "over budget" },
        serde_json::to_string_pretty(&messages).unwrap_or_default() + "\n",
    );
    Ok(Output { json, text, exit: 0 })
}

/// `messages` in `format` (the core's rendering): its name and the messages, or for Anthropic
/// the request body `{ system?, messages }`.
fn map_messages(
    format: OutputFormat,
    messages: &[Message],
) -> Result<(&'static str, Value), CliError> {
    let formatted = format.render(messages.to_vec()).map_err(|error| CliError::Mapping {
        format: format.name(),
        code: error.code,
        detail: error.detail,
    })?;
    let messages = Value::Array(formatted.messages);
    let value = match formatted.system {
        None => messages,
        Some(system) => {
            let mut body = serde_json::Map::new();
            if let Some(system) = system {
                body.insert("system".into(), Value::String(system));
            }
            body.insert("messages".into(), messages);
            Value::Object(body)
        }
    };
    Ok((format.name(), value))
}

/// `provider-sim`: prints the bound address as the first stdout line, then serves until
/// interrupted (Ctrl-C) or killed.
pub(crate) async fn provider_sim(
    config: crate::simulator::SimulatorConfig,
) -> Result<Output, CliError> {
    use std::io::Write;

    let handle = crate::simulator::Simulator::start(config).await?;
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{}", handle.addr())?;
        stdout.flush()?;
    }
    tokio::signal::ctrl_c().await?;
    let records = handle.records();
    handle.shutdown().await;
    let json = json!({ "requests": records.len() });
    let text = format!("served {} requests\n", records.len());
    Ok(Output { json, text, exit: 0 })
}
