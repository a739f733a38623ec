//! Continuation quality (issue 37, point 1): how many exact artifacts of the folded events
//! (constraints, plan, errors, commands, paths, identifiers; `contextfold_core::compaction`) appear
//! verbatim in the next request after compaction, for contextfold and for two baselines built
//! from the same events at the same budget: truncation (newest whole steps) and observation
//! masking (old tool outputs replaced by a placeholder), each also at contextfold's own request
//! size.
//!
//! Sources: the real agent trajectories of `tests/trajectories/` (SWE-agent, OpenHands,
//! Moatless, mini-swe-agent) and seeded long turns; windows 4k to 128k; two scenarios:
//! compact-then-project (one manual compaction, as `contextfold compact`) and the agent loop
//! (mid-turn evaluation after every step). Each run prints one `QUALITY` line per strategy;
//! `bench/quality.sh` runs the ignored tests in release and aggregates them
//! (docs/performance.md, "Continuation quality").
//!
//! The non-ignored test is the CI regression floor: three trajectories of three agents at 8k.

use crate::cli_support;
use crate::quality_support;

use std::path::Path;

use contextfold_conformance::long_turn::{LongTurnSpec, long_turn_session};
use contextfold_conformance::trajectories::{self, Trajectory};
use contextfold_core::RuntimeEvent;
use contextfold_core::compaction::{ArtifactClass, Retention, extract_artifacts, visible_text};

use quality_support::scenarios::{agent_loop, agent_loop_prepared, compact_then_project};
use quality_support::{RunReport, Tally, first_task_turn, quality_line, source_name};

/// Context windows of the full run.
const WINDOWS: [u64; 5] = [4_000, 8_000, 16_000, 32_000, 128_000];

/// Window of the CI floor and of the CLI path.
const FLOOR_WINDOW: u64 = 8_000;

/// The CI floor's trajectories: one each of three agents.
const FLOOR_TRAJECTORIES: [&str; 3] = [
    "moatless/sympy__sympy-20590.jsonl",
    "openhands/ponylang__ponyc-4593.jsonl",
    "mini-swe-agent/pvlib-1072-deepseek-chat.jsonl",
];

/// Pooled overall retention the CI floor requires of contextfold (compact scenario, 8k, the
/// three [`FLOOR_TRAJECTORIES`]), in percent. Measured when the benchmark was written (main at
/// 519acd2): 120/214 = 56%; with the grouped Critical Context, the 75% share after
/// compaction and the task at a third of the summary (2026-12-05): 213/215 = 99.1% (131/215
/// with the share back at 50%); with the task at a fifth and six call lines: 215/215. The floor
/// sits a few points under.
const FLOOR_OVERALL_PERCENT: u32 = 95;

/// Pooled constraint retention the CI floor requires, in percent. Measured when the benchmark
/// was written: 24/24 (before the quality gate, at c6dacf4: 0/24, the task cut in the
/// summary's Goal line); 95% lets at most one of the 24 go.
const FLOOR_CONSTRAINT_PERCENT: u32 = 95;

/// The seeded long turns of the full run: (seed, steps), two prior turns each.
const GENERATED: [(u64, u32); 2] = [(1, 60), (2, 60)];

/// One source: its name, events and task turn.
struct Source {
    name: String,
    events: Vec<RuntimeEvent>,
    task_turn: String,
}

fn trajectory_source(trajectory: Trajectory) -> Source {
    let task_turn = first_task_turn(&trajectory.events);
    Source { name: source_name(&trajectory.path), events: trajectory.events, task_turn }
}

fn sources() -> Vec<Source> {
    let mut out: Vec<Source> = trajectories::all().into_iter().map(trajectory_source).collect();
    for (seed, steps) in GENERATED {
        let spec = LongTurnSpec::new(seed, steps).with_prior_turns(2);
        let (events, task_turn) = (long_turn_session(&spec), spec.task_turn_id());
        out.push(Source { name: format!("generated/seed-{seed}"), events, task_turn });
    }
    out
}

/// Whether `kept / total` is at least `floor_percent` percent (exactly, in integers).
fn meets_floor(kept: u32, total: u32, floor_percent: u32) -> bool {
    u64::from(kept) * 100 >= u64::from(floor_percent) * u64::from(total)
}

/// One `ARTIFACTS` line: how many artifacts of each class the whole log has.
fn census(source: &Source) {
    let artifacts = extract_artifacts(&source.events);
    let mut line = format!("ARTIFACTS source={} events={}", source.name, source.events.len());
    for class in ArtifactClass::ALL {
        let count = artifacts.iter().filter(|a| a.class == class).count();
        line.push_str(&format!(" {}={count}", class.name()));
    }
    println!("{line}");
}

#[tokio::test]
async fn continuation_quality_floor_on_three_agents_at_8k() {
    let root = trajectories::root();
    let mut pooled = Tally::default();
    for file in FLOOR_TRAJECTORIES {
        let path = root.join(file);
        let source = trajectory_source(Trajectory { events: trajectories::load(&path), path });
        let run = compact_then_project(&source.events, &source.task_turn, FLOOR_WINDOW).await;
        run.print(&source.name, FLOOR_WINDOW);
        assert!(run.folded > 0, "{}: the log is larger than 8k, so it folds", source.name);
        let tally = run.tally("contextfold").expect("contextfold's tally");
        for (sum, class) in pooled.classes.iter_mut().zip(tally.classes) {
            sum.kept += class.kept;
            sum.total += class.total;
        }
    }
    let overall = pooled.overall();
    let constraint = pooled.class(ArtifactClass::Constraint);
    println!(
        "QUALITY_FLOOR overall={}/{} constraint={}/{}",
        overall.kept, overall.total, constraint.kept, constraint.total
    );
    assert!(overall.total > 0 && constraint.total > 0, "the folded events have artifacts");
    assert!(
        meets_floor(overall.kept, overall.total, FLOOR_OVERALL_PERCENT),
        "overall retention {}/{} fell under the floor of {FLOOR_OVERALL_PERCENT}%",
        overall.kept,
        overall.total
    );
    assert!(
        meets_floor(constraint.kept, constraint.total, FLOOR_CONSTRAINT_PERCENT),
        "constraint retention {}/{} fell under the floor of {FLOOR_CONSTRAINT_PERCENT}%",
        constraint.kept,
        constraint.total
    );
}

/// `QUALITY_SOURCES=swe-agent,generated` runs the sources whose name contains one of the words.
fn selected(source: &Source) -> bool {
    listed("QUALITY_SOURCES", |word| source.name.contains(word))
}

/// Whether the comma-separated list in `variable` (unset: everything) has a word `matches`
/// accepts: `QUALITY_WINDOWS=4000,8000`, `QUALITY_SCENARIOS=loop,prepared` (of compact, loop,
/// prepared).
fn listed(variable: &str, matches: impl Fn(&str) -> bool) -> bool {
    std::env::var(variable).map_or(true, |list| list.split(',').any(|word| matches(word.trim())))
}

#[tokio::test]
#[ignore = "full run: bench/quality.sh"]
async fn continuation_quality_of_every_source_at_every_window() {
    let sources: Vec<Source> = sources().into_iter().filter(selected).collect();
    assert!(!sources.is_empty(), "QUALITY_SOURCES selects a source");
    for source in &sources {
        census(source);
        let windows =
            WINDOWS.into_iter().filter(|w| listed("QUALITY_WINDOWS", |x| x == w.to_string()));
        for window in windows {
            let started = std::time::Instant::now();
            let scenario = |name: &str| listed("QUALITY_SCENARIOS", |x| x == name);
            let (events, task_turn) = (&source.events, &source.task_turn);
            if scenario("compact") {
                compact_then_project(events, task_turn, window).await.print(&source.name, window);
            }
            if scenario("loop") {
                agent_loop(events, task_turn, window).await.print(&source.name, window);
            }
            if scenario("prepared") {
                agent_loop_prepared(events, task_turn, window).await.print(&source.name, window);
            }
            eprintln!("{} at {window}: {:.1} s", source.name, started.elapsed().as_secs_f64());
        }
    }
}

/// Compact-then-project through the real binary: import, compact, project.
fn cli_run(path: &Path, window: u64) -> RunReport {
    let events = trajectories::load(path);
    let session = events[0].session_id.clone();
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("cli.sqlite");
    let (db, file, window_arg) =
        (db.to_str().expect("utf-8"), path.to_str().expect("utf-8"), window.to_string());
    let base = ["--db", db, "--session", &session];
    cli_support::ok(&[&["import"], &base[..], &["--format", "events-jsonl", file]].concat());
    let compact = cli_support::ok(
        &[
            &["compact"],
            &base[..],
            &["--summarizer", "extractive", "--context-window", &window_arg],
        ]
        .concat(),
    );
    let projected =
        cli_support::ok(&[&["project"], &base[..], &["--context-window", &window_arg]].concat());
    let folded = projected["checkpoint"]["coveredEvents"].as_u64().unwrap_or(0);
    let tokens = projected["estimatedTokens"].as_u64().expect("estimatedTokens");
    let budget = projected["historyBudget"].as_u64().expect("historyBudget");
    let mut tally = Tally::default();
    tally.size(tokens);
    if folded > 0 {
        let covered = usize::try_from(folded).expect("an index").min(events.len());
        let artifacts = extract_artifacts(&events[..covered]);
        let retention = Retention::measure(&artifacts, &visible_text(&projected["messages"]));
        tally.add(&retention, tokens, budget);
    }
    RunReport {
        scenario: "compact",
        budget,
        steps: quality_support::step_ranges(&events).len(),
        compactions: usize::from(compact["checkpoint"].is_object()),
        folded,
        tallies: vec![("contextfold-cli", tally)],
        preparation: None,
    }
}

#[tokio::test]
#[ignore = "full run: bench/quality.sh"]
async fn continuation_quality_through_the_cli() {
    let root = trajectories::root();
    let files = [
        "swe-agent/pydicom-1458.jsonl",
        "openhands/ponylang__ponyc-4588.jsonl",
        "moatless/django__django-15819.jsonl",
        "mini-swe-agent/sqlfluff-1733-deepseek-reasoner.jsonl",
    ];
    for file in files {
        let path = root.join(file);
        let run = cli_run(&path, FLOOR_WINDOW);
        let name = source_name(&path);
        for (strategy, tally) in &run.tallies {
            println!("{}", quality_line(&name, FLOOR_WINDOW, &run, strategy, tally));
        }
        assert!(run.folded > 0, "{name}: the log folds at 8k");
        // The binary and the runtime in process fold the same prefix and keep the same
        // artifacts.
        let source = trajectory_source(Trajectory { events: trajectories::load(&path), path });
        let native = compact_then_project(&source.events, &source.task_turn, FLOOR_WINDOW).await;
        let tally = native.tally("contextfold").expect("a tally");
        assert_eq!((run.folded, run.tallies[0].1.classes), (native.folded, tally.classes));
    }
}

/// Scores the requests `pkg-tests/bench/quality.mjs` wrote (the npm AI SDK adapter over the real
/// trajectories) with the core's artifacts: one `QUALITY` line per run, strategy
/// `contextfold-npm`, scenario `loop`. The file is named by `QUALITY_NPM_REQUESTS`.
#[test]
#[ignore = "full run: bench/quality.sh, after pkg-tests/bench/quality.mjs"]
fn continuation_quality_of_the_npm_adapter() {
    use std::io::BufRead;
    let file = std::env::var("QUALITY_NPM_REQUESTS").expect("QUALITY_NPM_REQUESTS names the file");
    let reader = std::io::BufReader::new(std::fs::File::open(&file).expect("the requests file"));
    // A run's requests arrive before its log (the log is written once the run is over).
    let mut pending: Vec<serde_json::Value> = Vec::new();
    let mut runs = 0;
    for line in reader.lines() {
        let record: serde_json::Value = serde_json::from_str(&line.expect("a line")).expect("JSON");
        if record["type"] == "request" {
            pending.push(record);
            continue;
        }
        let events: Vec<RuntimeEvent> =
            serde_json::from_value(record["events"].clone()).expect("the store's events");
        let (mut tally, mut run_budget) = (Tally::default(), 0);
        let mut scored: Option<(u64, Vec<contextfold_core::compaction::Artifact>)> = None;
        for request in pending.drain(..) {
            let covered = request["covered"].as_u64().expect("covered");
            if scored.as_ref().is_none_or(|(at, _)| *at != covered) {
                let end = usize::try_from(covered).expect("an index").min(events.len());
                scored = Some((covered, extract_artifacts(&events[..end])));
            }
            let Some((_, artifacts)) = &scored else { unreachable!() };
            let retention = Retention::measure(artifacts, &visible_text(&request["messages"]));
            let (tokens, budget) = (request["tokens"].as_u64(), request["budget"].as_u64());
            run_budget = budget.expect("budget");
            tally.add(&retention, tokens.expect("tokens"), run_budget);
        }
        let run = RunReport {
            scenario: "loop",
            budget: run_budget,
            steps: record["steps"].as_u64().expect("steps") as usize,
            compactions: record["compactions"].as_u64().expect("compactions") as usize,
            folded: scored.map_or(0, |(covered, _)| covered),
            tallies: vec![("contextfold-npm", tally)],
            preparation: None,
        };
        let source = record["source"].as_str().expect("source");
        let window = record["window"].as_u64().expect("window");
        run.print(source, window);
        runs += 1;
    }
    assert!(runs > 0, "{file} holds at least one run");
}
