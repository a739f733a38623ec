//! Provider budgets and caching (issue 19, point 6): the session runtime against the
//! in-process provider simulator, on the real path (a `SessionRuntime` over a SQLite file,
//! `project_for_request` before every model request, `record_usage` after it,
//! `recover_from_overflow` on a refusal, the extractive summarizer).
//!
//! Rows: (a) estimate error per content class, raw and calibrated after one usage;
//! (b) provider overflows per session with calibration and without, from the pieces estimate
//! (the native default) and from the characters estimate (the npm package's); (c) the share of each
//! request that comes back as the next request's prefix under one checkpoint, with breaks and
//! pruning epochs; (d) billed-equivalent input tokens against peer strategies, OpenAI- and
//! Anthropic-style. Method and a recorded run: `docs/performance.md`, "Provider budgets and
//! caching (issue 19)".
//!
//! Run: `cargo bench -p contextfold-host --bench provider_budget` (`QUICK=1`: a 60-step long
//! turn instead of 150). Prints readable tables, then one `RESULT|metric|measured|goal|pass`
//! line per figure for `bench/run.sh`.

use std::process::ExitCode;

#[path = "provider_budget/billing.rs"]
mod billing;
#[path = "provider_budget/estimate.rs"]
mod estimate;
#[path = "provider_budget/session.rs"]
mod session;
#[path = "provider_budget/wire.rs"]
mod wire;

use billing::{Bill, Strategy};
use session::{Base, BenchResult, BenchSession, RunLog};
use wire::Shape;

/// Context window of the long single-turn session.
const LONG_TURN_WINDOW: u64 = 32_000;

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("provider_budget: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(results) => {
            for line in results {
                println!("{line}");
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("provider_budget: {error}");
            ExitCode::FAILURE
        }
    }
}

fn pass(ok: bool) -> &'static str {
    if ok { "pass" } else { "FAIL" }
}

fn percent(value: f64) -> String {
    format!("{:+.1}%", value * 100.0)
}

async fn run() -> BenchResult<Vec<String>> {
    let quick = std::env::var_os("QUICK").is_some_and(|v| !v.is_empty());
    let dir = tempfile::tempdir()?;
    let mut results = Vec::new();

    println!("== a. estimate error per content class (OpenAI Chat count, o200k_base)");
    println!(
        "| class | tokens per request | characters: median | worst | pieces (raw): median | worst | after one usage: median | worst | every usage recorded: median | worst |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (class, texts) in estimate::classes() {
        let e = estimate::measure(class, &texts, dir.path()).await?;
        println!(
            "| {} | {}-{} | {} | {} | {} | {} | {} | {} | {} | {} |",
            e.class,
            e.tokens.0,
            e.tokens.1,
            percent(e.chars_median),
            percent(e.chars_worst),
            percent(e.raw_median),
            percent(e.raw_worst),
            percent(e.calibrated_median),
            percent(e.calibrated_worst),
            percent(e.running_median),
            percent(e.running_worst)
        );
        let key = e.class.replace(' ', "_").to_lowercase();
        results.push(format!(
            "RESULT|estimate_{key}_characters_worst|{}|report|-",
            percent(e.chars_worst)
        ));
        results.push(format!("RESULT|estimate_{key}_raw_worst|{}|report|-", percent(e.raw_worst)));
        results.push(format!(
            "RESULT|estimate_{key}_every_usage_worst|{}|report|-",
            percent(e.running_worst)
        ));
        let ok = e.calibrated_worst.abs() <= estimate::GOAL;
        results.push(format!(
            "RESULT|estimate_{key}_after_one_usage_worst|{}|within ±10%|{}",
            percent(e.calibrated_worst),
            pass(ok)
        ));
    }

    let steps = if quick { 60 } else { 150 };
    let sessions = [
        ("demo", session::demo_session()),
        ("long_turn", session::long_turn(steps, LONG_TURN_WINDOW)),
    ];
    let mut runs: Vec<(&str, &BenchSession, RunLog)> = Vec::new();
    println!("\n== b. provider overflows per session");
    println!(
        "| session | window | requests answered | overflows: pieces, calibrated | pieces, never calibrated | characters, calibrated | characters, never calibrated | compactions (pieces cal. / not) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (key, session) in &sessions {
        let calibrated = session::drive(session, Base::Pieces, true, dir.path()).await?;
        let base = session::drive(session, Base::Pieces, false, dir.path()).await?;
        let chars = session::drive(session, Base::Characters, true, dir.path()).await?;
        let chars_base = session::drive(session, Base::Characters, false, dir.path()).await?;
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} / {} |",
            session.name,
            session.window,
            calibrated.sent.len(),
            calibrated.overflows,
            base.overflows,
            chars.overflows,
            chars_base.overflows,
            calibrated.compactions,
            base.compactions
        );
        results.push(format!(
            "RESULT|overflows_{key}_calibrated|{}|<= 1|{}",
            calibrated.overflows,
            pass(calibrated.overflows <= 1)
        ));
        results
            .push(format!("RESULT|overflows_{key}_never_calibrated|{}|report|-", base.overflows));
        results.push(format!(
            "RESULT|overflows_{key}_characters_calibrated|{}|report|-",
            chars.overflows
        ));
        results.push(format!(
            "RESULT|overflows_{key}_characters_never_calibrated|{}|report|-",
            chars_base.overflows
        ));
        runs.push((key, session, calibrated));
    }

    println!("\n== c. cache reuse between checkpoints (calibrated run)");
    println!(
        "| session | shape | pairs under one checkpoint | prefix reused | breaks | epochs | breaks outside epochs (at a turn start / within a turn) |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|");
    for (key, session, log) in &runs {
        for (shape, label) in [(Shape::Chat, "openai_chat"), (Shape::Anthropic, "anthropic")] {
            let c = wire::prefix_reuse(&log.sent, shape)?;
            println!(
                "| {} | {label} | {} | {:.1}% | {} | {} | {} ({} / {}) |",
                session.name,
                c.pairs,
                c.share() * 100.0,
                c.breaks,
                c.epochs,
                c.breaks_outside_epochs,
                c.breaks_at_turn_start,
                c.breaks_outside_epochs - c.breaks_at_turn_start
            );
            results.push(format!(
                "RESULT|cache_prefix_reused_{key}_{label}|{:.1}% ({} breaks, {} epochs, {} pairs)|report|-",
                c.share() * 100.0,
                c.breaks,
                c.epochs,
                c.pairs
            ));
            results.push(format!(
                "RESULT|cache_breaks_outside_epochs_{key}_{label}|{}|0|{}",
                c.breaks_outside_epochs,
                pass(c.breaks_outside_epochs == 0)
            ));
            results.push(format!(
                "RESULT|cache_breaks_outside_epochs_within_a_turn_{key}_{label}|{}|report|-",
                c.breaks_outside_epochs - c.breaks_at_turn_start
            ));
        }
    }

    println!("\n== d. billed-equivalent input tokens per session");
    println!(
        "| session | strategy | requests | summaries | summarizer input | OpenAI-style | Anthropic-style |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|");
    for (key, session, log) in &runs {
        let bills = billing::measure(session, log)?;
        for b in &bills {
            println!(
                "| {} | {} | {} | {} | {} | {:.0} | {:.0} |",
                session.name,
                b.strategy.name(),
                b.requests,
                b.summaries,
                b.summarizer_input,
                b.openai,
                b.anthropic
            );
        }
        results.extend(billing_results(key, &bills));
    }
    Ok(results)
}

fn billing_results(key: &str, bills: &[Bill]) -> Vec<String> {
    let mut out = Vec::new();
    let Some(ours) = bills.iter().find(|b| b.strategy == Strategy::Contextfold) else {
        return out;
    };
    let openai: fn(&Bill) -> f64 = |b| b.openai;
    let anthropic: fn(&Bill) -> f64 = |b| b.anthropic;
    for (style, value) in [("openai", openai), ("anthropic", anthropic)] {
        out.push(format!("RESULT|billed_{key}_{style}_contextfold|{:.0}|report|-", value(ours)));
        for peer in bills.iter().filter(|b| b.strategy != Strategy::Contextfold) {
            let ratio = value(ours) / value(peer);
            let name = peer.strategy.name().replace(' ', "_").replace(['(', ')'], "");
            out.push(format!(
                "RESULT|billed_{key}_{style}_contextfold_vs_{name}|{ratio:.2}x|< 1.0x|{}",
                pass(ratio < 1.0)
            ));
        }
    }
    out
}
