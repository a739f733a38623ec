//! Crash loop: a child process appends turns and runs compactions against one SQLite file
//! while this test kills it with SIGKILL at seeded random moments; after every kill the file
//! is reopened, recovered and verified: no projection row without its ledger event, no
//! accepted checkpoint lost after its append returned (the child logs `appended <id>` to a
//! side file only after the append returned), no canonical event lost after its append
//! returned, every checkpoint verifies against the canonical log, the canonical log is
//! `1..=n` with unique event ids. The worker logs `phase <operation>` before each store
//! operation, so each kill is attributed to the operation it interrupted (`phases=` in the
//! summary line).
//!
//! `CONTEXTFOLD_CRASH_KILLS` (default 25; the reliability script runs 200) and
//! `CONTEXTFOLD_CRASH_SEED` (default 8) choose the run. Also here: the full-disk row of the
//! fault matrix, run in a child process on a 512 KiB tmpfs (user + mount namespace).

use crate::reliability_support;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::Duration;

use contextfold_core::checkpoint::select_recovered_checkpoint;
use contextfold_host::storage::Store;
use reliability_support::verify::consistency;
use reliability_support::worker::{ROLE, spawn_role};
use reliability_support::{SESSION, report_fault};

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

/// The store operation the worker had entered last, from its side-log lines since it started.
fn last_phase(lines: &str) -> String {
    lines
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("phase "))
        .map_or("startup", |p| p.split(' ').next().unwrap_or(p))
        .to_owned()
}

/// The canonical log is `1..=n`: every seq present once, in order, with unique event ids.
fn log_problems(events: &[contextfold_core::RuntimeEvent]) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some((i, e)) = events.iter().enumerate().find(|(i, e)| e.seq != *i as u64 + 1) {
        problems.push(format!("event at index {i} has seq {}, not {}", e.seq, i + 1));
    }
    let ids: BTreeSet<&str> = events.iter().map(|e| e.runtime_event_id.as_str()).collect();
    if ids.len() != events.len() {
        problems.push(format!("{} repeated runtimeEventIds", events.len() - ids.len()));
    }
    problems
}

#[test]
fn sigkill_at_random_moments_loses_and_corrupts_nothing() {
    let kills = env_number("CONTEXTFOLD_CRASH_KILLS", 25);
    let seed = env_number("CONTEXTFOLD_CRASH_SEED", 8);
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("crash.sqlite");
    let side = dir.path().join("side.log");
    let mut survived = 0;
    let mut accepted = BTreeSet::new();
    let mut checkpoints_seen = 0;
    // Counted, not asserted one by one, so the summary line reports what was measured.
    let (mut inconsistent, mut lost) = (Vec::new(), Vec::new());
    // Where each kill landed: the last `phase` line of that worker (`startup` if none).
    let mut phases: BTreeMap<String, u64> = BTreeMap::new();
    for kill in 0..kills {
        let side_before = std::fs::metadata(&side).map_or(0, |m| m.len()) as usize;
        let mut child =
            spawn_role("work", &[("CONTEXTFOLD_DB", &db), ("CONTEXTFOLD_SIDE_LOG", &side)])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn worker");
        std::thread::sleep(Duration::from_millis(20 + rng.below(180)));
        child.kill().expect("SIGKILL");
        let output = child.wait_with_output().expect("wait");
        assert_eq!(
            output.status.signal(),
            Some(9),
            "kill {kill}: the worker ended on its own: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        // Reopen, recover, verify.
        let store = Store::open(&db).expect("reopen after SIGKILL");
        let lookup = store.current_checkpoint(SESSION).expect("recover the checkpoint");
        let recorded = store.recorded_checkpoints(SESSION).expect("ledger");
        let events = store.load_events(SESSION).expect("canonical log");
        drop(store);
        let found = consistency(&db, SESSION);
        if !found.problems.is_empty() {
            inconsistent.push(format!("kill {kill}: {:?}", found.problems));
        }
        if lookup.checkpoint != select_recovered_checkpoint(SESSION, &recorded).selected {
            inconsistent.push(format!("kill {kill}: the tip disagrees with the ledger"));
        }
        let ids: BTreeSet<String> = recorded
            .iter()
            .filter_map(|r| r.payload["checkpointId"].as_str().map(str::to_owned))
            .collect();
        let last_seq = events.last().map_or(0, |e| e.seq);
        inconsistent.extend(log_problems(&events).into_iter().map(|p| format!("kill {kill}: {p}")));
        let side_text = std::fs::read_to_string(&side).unwrap_or_default();
        *phases.entry(last_phase(side_text.get(side_before..).unwrap_or_default())).or_default() +=
            1;
        for line in side_text.lines() {
            let mut words = line.split(' ');
            match (words.next(), words.next()) {
                (Some("appended"), Some(id)) => {
                    if !ids.contains(id) && !lost.iter().any(|l: &String| l.ends_with(id)) {
                        lost.push(format!("kill {kill}: accepted checkpoint {id}"));
                    }
                    accepted.insert(id.to_owned());
                }
                (Some("events"), Some(seq)) => {
                    let Ok(seq) = seq.parse::<u64>() else {
                        inconsistent.push(format!("kill {kill}: unreadable side line {line:?}"));
                        continue;
                    };
                    if seq > last_seq {
                        lost.push(format!("kill {kill}: event {seq}"));
                    }
                }
                _ => {} // a line cut by the kill
            }
        }
        checkpoints_seen = found.checkpoints;
        survived += 1;
    }
    eprintln!(
        "CRASH-LOOP kills={kills} survived={survived} seed={seed} accepted_checkpoints={} recorded_checkpoints={checkpoints_seen} inconsistent={} lost={} phases={}",
        accepted.len(),
        inconsistent.len(),
        lost.len(),
        phases.iter().map(|(p, n)| format!("{p}:{n}")).collect::<Vec<_>>().join(",")
    );
    assert!(inconsistent.is_empty(), "seed {seed}: inconsistent after a kill: {inconsistent:#?}");
    assert!(lost.is_empty(), "seed {seed}: lost after their append returned: {lost:#?}");
    assert!(accepted.len() > 1, "the worker never got a checkpoint accepted (seed {seed})");
}

#[test]
fn a_full_disk_fails_the_append_and_loses_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mount = dir.path().join("small-disk");
    std::fs::create_dir(&mount).expect("mount point");
    let exe = std::env::current_exe().expect("test binary");
    let script = r#"mount -t tmpfs -o size=512k none "$CONTEXTFOLD_DIR" && exec "$0" child_process_entry --exact --nocapture --test-threads=1"#;
    let output = std::process::Command::new("unshare")
        .args(["-r", "-m", "sh", "-c", script])
        .arg(&exe)
        .env(ROLE, "disk-full")
        .env("CONTEXTFOLD_DIR", &mount)
        .output();
    // Skipped only where this machine cannot give a user + mount namespace at all (probed
    // with a no-op); once it can, any failure of the child is a failure of the row.
    let namespaces = std::process::Command::new("unshare")
        .args(["-r", "-m", "true"])
        .output()
        .is_ok_and(|probe| probe.status.success());
    if !namespaces {
        eprintln!("FAULT-SKIPPED row=append_full_disk (no user+mount namespace here)");
        return;
    }
    let output = output.expect("run the child in its namespace");
    assert!(
        output.status.success(),
        "the full-disk child failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("DISKFULL ").map(|(_, rest)| rest))
        .expect("the child reports");
    let report: serde_json::Value = serde_json::from_str(line).expect("json");
    assert_eq!(report["checkpointReturned"], false, "{report}");
    assert_eq!(report["eventsAfter"], report["eventsBefore"], "{report}");
    assert_eq!(report["recorded"], 0, "{report}");
    assert!(report["current"].is_null(), "{report}");
    assert_eq!(report["problems"], serde_json::json!([]), "{report}");
    let detail = report["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("full") || report["outcome"] == "FailedOpen", "{report}");
    report_fault("append_full_disk", report["outcome"].as_str().unwrap_or("?"), detail);
}

#[test]
fn a_process_killed_while_preparing_leaves_nothing_behind_and_the_next_carries_on() {
    // Issue 39: a background preparation writes nothing until a compaction adopts it, so a
    // SIGKILL while its summary is in flight leaves the file exactly as the agent's appends
    // left it, and the next process compacts the same log.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("prepare.sqlite");
    drop(reliability_support::seeded_store(&db, 6));
    let side = dir.path().join("prepare.side");
    let mut child =
        spawn_role("prepare", &[("CONTEXTFOLD_DB", &db), ("CONTEXTFOLD_SIDE_LOG", &side)])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
    let mut events = None;
    for _ in 0..3_000 {
        let line = std::fs::read_to_string(&side).unwrap_or_default();
        events = line.trim().strip_prefix("PREPARING ").and_then(|n| n.parse::<usize>().ok());
        if events.is_some() || child.try_wait().expect("poll").is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let events = events.expect("the child reported its preparation in flight");
    child.kill().expect("SIGKILL");
    let status = child.wait().expect("wait");
    assert_eq!(status.signal(), Some(9), "killed, not exited: {status:?}");
    let found = consistency(&db, SESSION);
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    assert_eq!(
        (found.events, found.checkpoints),
        (events, 0),
        "nothing lost, nothing half-written"
    );
    let store = std::sync::Arc::new(Store::open(&db).expect("reopen"));
    let kinds: Vec<String> =
        store.agent_run_events(SESSION).expect("ledger").into_iter().map(|r| r.kind).collect();
    assert!(kinds.is_empty(), "a preparation in flight records nothing: {kinds:?}");
    // The next process resumes the turn and compacts when the budget needs it.
    let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio");
    tokio.block_on(async {
        let summarizer = contextfold_host::runtime::ExtractiveSummarizer;
        let native = contextfold_host::runtime::NoNativeCompactor;
        let rt = reliability_support::runtime(&store, 16_000, false, summarizer, native)
            .with_background_preparation();
        rt.begin_turn("t-prepare").expect("begin");
        let mut builder =
            contextfold_core::LogBuilder::extend(store.load_events(SESSION).expect("load"));
        builder.turn("t-prepare");
        for step in 0..80 {
            let before = builder.events().len();
            let call = format!("c-next-{step}");
            builder.response(Some(&format!("r-next-{step}")));
            builder.tool_call(&call, "shell", serde_json::json!({"cmd": "cargo test"}));
            builder.response(None);
            builder.tool_result(&call, "shell", serde_json::json!("test ... FAILED\n".repeat(80)));
            rt.append(builder.events()[before..].to_vec()).await.expect("append");
            if let Some(report) = rt.evaluate_mid_turn().await.expect("evaluate") {
                assert!(report.outcome.checkpoint.is_some(), "{:?}", report.outcome);
                return;
            }
        }
        panic!("the next process never compacted");
    });
    let found = consistency(&db, SESSION);
    assert!(found.problems.is_empty() && found.checkpoints >= 1, "{found:?}");
}
