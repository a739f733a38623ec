//! What compaction adds to an agent's steps, foreground only against background preparation
//! (issue 39), on the real long trajectories (at least 50 model steps): each trajectory's task
//! turn driven step by step through the native runtime on a real SQLite file, every model call
//! taking `BENCH_MODEL_LATENCY_MS` and every summary `BENCH_SUMMARIZER_LATENCY_MS` (the
//! extractive summary, answered late: `simulator::LatentSummarizer`).
//!
//! `BENCH_PREPARE_AT_PERCENT` sets the soft threshold (default: the core's).
//!
//! Those latencies are simulated on tokio's paused clock, so a run over hundreds of steps takes
//! seconds, not hours: a step's added latency is the virtual time its evaluation waited (a
//! summary) plus the real time it took (hashing, SQLite, the core). Each run prints one
//! `LATENCY` line per mode; `bench/background.sh` runs it in release and aggregates them
//! (docs/performance.md, "Background preparation").

use crate::quality_support;

use std::time::Instant;

use contextfold_conformance::trajectories;
use contextfold_core::compaction::Compactor;
use contextfold_core::{ModelFacts, RuntimeEvent};
use contextfold_host::runtime::{
    NoNativeCompactor, PreparationState, SessionConfig, SessionRuntime,
};
use contextfold_host::simulator::LatentSummarizer;
use quality_support::{first_task_turn, source_name, step_ranges, task_index};

use crate::runtime_support::{config, runtime_with};

/// Windows of the run.
const WINDOWS: [u64; 2] = [8_000, 16_000];

/// Trajectories shorter than this many model steps are left out.
const MIN_STEPS: usize = 50;

fn env_ms(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Added latency of each compaction-needing step, in ms, with what preparation had ready.
async fn drive(
    events: &[RuntimeEvent],
    task_turn: &str,
    window: u64,
    background: bool,
    latencies: (u64, u64),
) -> (Vec<(f64, PreparationState)>, usize, contextfold_host::runtime::PreparationStats, u64) {
    let (summarizer_ms, model_ms) = latencies;
    let session = SessionConfig {
        session_id: events[0].session_id.clone(),
        model: ModelFacts {
            context_window: Some(window),
            prepare_at_percent: std::env::var("BENCH_PREPARE_AT_PERCENT")
                .ok()
                .and_then(|v| v.parse().ok()),
            ..Default::default()
        },
        provider: config().provider,
        compactor: Compactor::TextSummary,
    };
    let summarizer = LatentSummarizer::new(summarizer_ms);
    let (_dir, _store, mut runtime) = runtime_with(session, summarizer, NoNativeCompactor);
    if background {
        runtime = runtime.with_background_preparation();
    }
    let runtime: SessionRuntime<LatentSummarizer, NoNativeCompactor> = runtime;
    let task = task_index(events, task_turn);
    let turn_start = events.iter().position(|e| e.turn_id == task_turn).expect("task turn");
    if turn_start > 0 {
        runtime.append(events[..turn_start].to_vec()).await.expect("prior turns");
    }
    runtime.begin_turn(task_turn).expect("begin");
    runtime.append(events[turn_start..=task].to_vec()).await.expect("task");
    let mut waited = Vec::new();
    let mut foreground_tokens = 0;
    let rest = &events[task + 1..];
    let steps = step_ranges(rest);
    for range in &steps {
        // The model writes this step.
        tokio::time::sleep(std::time::Duration::from_millis(model_ms)).await;
        runtime.append(rest[range.clone()].to_vec()).await.expect("step");
        let (real, virtual_clock) = (Instant::now(), tokio::time::Instant::now());
        if let Some(report) = runtime.evaluate_mid_turn().await.expect("evaluate") {
            let ms = real.elapsed().as_secs_f64() * 1_000.0
                + virtual_clock.elapsed().as_secs_f64() * 1_000.0;
            waited.push((ms, report.preparation));
            foreground_tokens += report.summarizer_tokens;
        }
    }
    runtime.await_preparation().await;
    (waited, steps.len(), runtime.preparations(), foreground_tokens)
}

#[tokio::test(start_paused = true)]
#[ignore = "bench: bench/background.sh"]
async fn background_preparation_latency_on_real_long_trajectories() {
    let latencies =
        (env_ms("BENCH_SUMMARIZER_LATENCY_MS", 2_000), env_ms("BENCH_MODEL_LATENCY_MS", 2_500));
    let mut runs = 0;
    for trajectory in trajectories::all() {
        let task_turn = first_task_turn(&trajectory.events);
        let task = task_index(&trajectory.events, &task_turn);
        if step_ranges(&trajectory.events[task + 1..]).len() < MIN_STEPS {
            continue;
        }
        let name = source_name(&trajectory.path);
        for window in WINDOWS {
            for background in [false, true] {
                let (waited, steps, p, foreground) =
                    drive(&trajectory.events, &task_turn, window, background, latencies).await;
                let ms: Vec<String> = waited
                    .iter()
                    .map(|(ms, state)| {
                        let tag = match state {
                            PreparationState::Held => "h",
                            PreparationState::InFlight => "f",
                            _ => "n",
                        };
                        format!("{ms:.1}{tag}")
                    })
                    .collect();
                let soft =
                    std::env::var("BENCH_PREPARE_AT_PERCENT").unwrap_or_else(|_| "default".into());
                println!(
                    "LATENCY source={name} window={window} mode={} soft={soft} steps={steps} summarizer_ms={} model_ms={} prepared={} used={} superseded={} wasted={} failed={} preparation_tokens={} wasted_tokens={} foreground_tokens={foreground} waited={}",
                    if background { "background" } else { "foreground" },
                    latencies.0,
                    latencies.1,
                    p.prepared,
                    p.used,
                    p.superseded,
                    p.wasted + p.held,
                    p.failed,
                    p.tokens,
                    p.wasted_tokens + p.held_tokens,
                    if ms.is_empty() { "-".to_owned() } else { ms.join(",") },
                );
            }
        }
        runs += 1;
    }
    assert!(runs > 0, "at least one long trajectory");
}
