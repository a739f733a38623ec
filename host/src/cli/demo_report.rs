//! The report of `contextfold demo`: every checkpoint verified against the ledger, the
//! history before and after, the provider's counts and cache, the compactions, and what
//! compaction added to the agent's steps (with background preparation, what it prepared).

use contextfold_core::budget::{CharEstimator, ContextBudget, estimate_events};
use contextfold_core::checkpoint::match_checkpoint_prefix;
use contextfold_core::{HistoryCompactCheckpoint, ModelFacts, RuntimeEvent};
use serde_json::{Value, json};

use super::compact::outcome_name;
use super::demo::{DEMO_CONTEXT_WINDOW, DEMO_SESSION, Player};
use super::{CliError, Output};
use crate::runtime::{PreparationState, RuntimeError};
use crate::storage::Store;

/// The demo's report.
pub(crate) fn report(
    store: &Store,
    player: &Player,
    path: &std::path::Path,
) -> Result<Output, CliError> {
    let events = store.load_events(DEMO_SESSION)?;
    let records = store.recorded_checkpoints(DEMO_SESSION)?;
    let mut verified = 0;
    let mut mismatches = Vec::new();
    for record in &records {
        match HistoryCompactCheckpoint::from_value(record.payload.clone()) {
            Ok(cp) => match match_checkpoint_prefix(&cp, &events) {
                Ok(_) => verified += 1,
                Err(mismatch) => mismatches.push(mismatch.code().as_str()),
            },
            Err(error) => mismatches.push(error.code()),
        }
    }
    let budget = ContextBudget::from_model(&ModelFacts {
        context_window: Some(DEMO_CONTEXT_WINDOW),
        ..Default::default()
    });
    let raw_tokens = estimate_events(&CharEstimator, &events);
    let final_tokens = player.runtime_projection_tokens(store, &events)?;
    let outcomes: Vec<Value> = player
        .reports
        .iter()
        .map(|r| json!({"trigger": r.trigger, "outcome": r.outcome.outcome, "reason": r.outcome.reason, "checkpointId": r.outcome.checkpoint.as_ref().map(|c| c.checkpoint_id.clone()), "tokensBefore": r.outcome.tokens.before, "tokensAfter": r.outcome.tokens.after}))
        .collect();
    let usage_facts = store.usage_facts(DEMO_SESSION)?.len();
    let provider = &player.runtime.config().provider;
    let ratio = f64::from(
        store.calibration(DEMO_SESSION)?.ratio_permille(&provider.provider, &provider.model_id),
    ) / 1000.0;
    let mut sent = player.retired.clone();
    sent.extend(player.model.provider().records());
    let input: u64 = sent.iter().map(|r| r.input_tokens).sum();
    let cached: u64 = sent.iter().map(|r| r.cached_tokens).sum();
    let cached_share = if input == 0 { 0.0 } else { cached as f64 * 100.0 / input as f64 };
    let all: Vec<f64> = player.step_latency_ms.iter().map(|(ms, _)| *ms).collect();
    let ready: Vec<f64> = player
        .step_latency_ms
        .iter()
        .filter(|(_, state)| *state == PreparationState::Held)
        .map(|(ms, _)| *ms)
        .collect();
    let latency = step_latency(&all);
    let prepared_latency = step_latency(&ready);
    let preparations = player.runtime.preparations();
    let foreground_tokens: u64 = player.reports.iter().map(|r| r.summarizer_tokens).sum();
    let summarizer_tokens = foreground_tokens + preparations.tokens;
    // Held at the end, never used: wasted as well.
    let wasted_tokens = preparations.wasted_tokens + preparations.held_tokens;
    let wasted_share = share(wasted_tokens, summarizer_tokens);
    let mut triggers: Vec<&str> = player.reports.iter().map(|r| r.trigger.as_str()).collect();
    triggers.sort_unstable();
    triggers.dedup();
    let mut text = format!(
        "contextfold demo: {} turns, {} events, {} model requests, context window {DEMO_CONTEXT_WINDOW} (history budget {})\n\
         database: {}\n\
         checkpoints recorded: {}; digests verified against the ledger: {verified}/{}\n\
         history tokens: {raw_tokens} raw -> {final_tokens} in the next request\n\
         provider overflows: {}; usage facts recorded: {usage_facts}; calibrated ratio {ratio:.3}; cached input {cached_share:.1}%\n\
         triggers fired: {}\n\
         compaction added to {} agent steps: p50 {:.0} ms, p95 {:.0} ms, max {:.0} ms; to the {} with a finished preparation: p95 {:.0} ms\n\
         background preparation: {}; prepared {}, used {}, superseded {}, wasted {} ({wasted_share:.1}% of {summarizer_tokens} summarizer tokens)\n\ncompactions:\n",
        super::demo_session::DEMO_TURNS,
        events.len(),
        player.requests,
        budget.history_budget,
        path.display(),
        records.len(),
        records.len(),
        player.overflows,
        triggers.join(", "),
        player.step_latency_ms.len(),
        latency.p50,
        latency.p95,
        latency.max,
        ready.len(),
        prepared_latency.p95,
        if player.background_preparation { "on" } else { "off" },
        preparations.prepared,
        preparations.used,
        preparations.superseded,
        preparations.wasted + preparations.held,
    );
    for r in &player.reports {
        let o = &r.outcome;
        text.push_str(&format!(
            "  {:<9} {:<11} {:<28} {:>6} -> {:>5} tokens{}\n",
            r.trigger.as_str(),
            outcome_name(o.outcome),
            o.reason.as_str(),
            o.tokens.before,
            o.tokens.after,
            o.checkpoint.as_ref().map_or(String::new(), |c| format!(
                "  ({} covers {} events)",
                c.checkpoint_id, c.coverage.event_count
            )),
        ));
    }
    let json = json!({
        "database": path,
        "session": DEMO_SESSION,
        "turns": super::demo_session::DEMO_TURNS,
        "events": events.len(),
        "modelRequests": player.requests,
        "providerOverflows": player.overflows,
        "usageFacts": usage_facts,
        "calibratedRatio": ratio,
        "providerInputTokens": input,
        "providerCachedTokens": cached,
        "contextWindow": DEMO_CONTEXT_WINDOW,
        "historyBudget": budget.history_budget,
        "checkpoints": records.len(),
        "digestsVerified": verified,
        "mismatches": mismatches,
        "tokensBefore": raw_tokens,
        "tokensAfter": final_tokens,
        "triggersFired": triggers,
        "outcomes": outcomes,
        "stepLatencyMs": {
            "steps": all.len(),
            "p50": latency.p50,
            "p95": latency.p95,
            "max": latency.max,
            // The steps whose compaction found a finished preparation held.
            "prepared": {
                "steps": ready.len(),
                "p50": prepared_latency.p50,
                "p95": prepared_latency.p95,
                "max": prepared_latency.max,
            },
        },
        "backgroundPreparation": player.background_preparation,
        "preparations": {
            "started": preparations.started,
            "prepared": preparations.prepared,
            "used": preparations.used,
            "superseded": preparations.superseded,
            "wasted": preparations.wasted + preparations.held,
            "failed": preparations.failed,
            "tokens": preparations.tokens,
            "usedTokens": preparations.used_tokens,
            "wastedTokens": wasted_tokens,
        },
        "summarizerTokens": summarizer_tokens,
        "wastedTokenSharePercent": wasted_share,
    });
    if !mismatches.is_empty() {
        return Err(CliError::VerifyFailed {
            failures: mismatches.len(),
            codes: mismatches.join(","),
        });
    }
    Ok(Output { json, text, exit: 0 })
}

impl Player {
    fn runtime_projection_tokens(
        &self,
        store: &Store,
        events: &[RuntimeEvent],
    ) -> Result<u64, CliError> {
        let lookup = store.current_checkpoint(DEMO_SESSION)?;
        let projection = contextfold_core::projection::project(
            &contextfold_core::projection::ProjectInput {
                events,
                current_turn_id: None,
                checkpoint: lookup.checkpoint.as_ref(),
                model: &self.runtime.config().model,
                provider: Some(&self.runtime.config().provider),
                fail_open: false,
            },
            &CharEstimator,
        )
        .map_err(RuntimeError::from)?;
        Ok(projection.estimated_tokens)
    }
}

/// Percentiles of the milliseconds compaction added to the steps that needed it.
#[derive(Debug, Clone, Copy, Default)]
struct Latency {
    p50: f64,
    p95: f64,
    max: f64,
}

/// Nearest-rank percentiles of `samples` (all 0 when there are none).
fn step_latency(samples: &[f64]) -> Latency {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = |percent: usize| match sorted.len() {
        0 => 0.0,
        n => sorted[(n * percent).div_ceil(100).clamp(1, n) - 1],
    };
    Latency { p50: rank(50), p95: rank(95), max: sorted.last().copied().unwrap_or(0.0) }
}

/// `part` as a percentage of `whole` (0 when `whole` is 0).
fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 { 0.0 } else { part as f64 * 100.0 / whole as f64 }
}
