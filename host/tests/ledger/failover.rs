//! Failover without loss (issue 40 point 4), driven by `scripts/postgres-failover.sh`: the
//! script runs a primary with one synchronous streaming standby and kills the primary
//! (`SIGKILL`) at random points, promoting the standby and rebuilding the killed node as the
//! new standby each time, while this test's fleet of worker processes (`churn.rs`) churns the
//! ledger through a URL naming both nodes (`target_session_attrs=read-write`: the pool
//! reconnects to whichever is the primary). Afterwards every acknowledged append is present
//! exactly once at its `seq`, `seq`s are contiguous, every checkpoint verifies and each tip is
//! recovery's. An append whose `COMMIT` answer was lost with the primary may be present
//! without an acknowledgement; nothing acknowledged may be missing.

use std::time::{Duration, Instant};

use contextfold_host::ledger::SharedLedger;
use contextfold_host::ledger::postgres::{PgLedger, PgLedgerConfig};

use super::churn::{Fleet, acknowledged, check_session, churn};
use super::churn_worker::session_name;

/// The ledger at `url`, once a primary answers (the script may be mid-promotion).
async fn reachable(url: &str) -> SharedLedger {
    let config = PgLedgerConfig::from_url(url).expect("the URL parses");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match PgLedger::connect(&config).await {
            Ok(ledger) => return std::sync::Arc::new(ledger),
            Err(error) if Instant::now() < deadline => {
                eprintln!("failover: waiting for a primary: {error}");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(error) => panic!("no primary after two minutes: {error}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the primary and standby of scripts/postgres-failover.sh"]
async fn a_fleet_loses_nothing_across_primary_kills() {
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"));
    let url = var("CONTEXTFOLD_FAILOVER_URL");
    let dir = std::path::PathBuf::from(var("CONTEXTFOLD_FAILOVER_DIR"));
    let millis: u64 = var("CONTEXTFOLD_FAILOVER_MILLIS").parse().expect("millis");
    let seed: u64 =
        std::env::var("PROPTEST_RNG_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(7);
    let fleet = Fleet { workers: 4, sessions: 8, millis };
    // The first connection migrates the new database before the workers start.
    drop(reachable(&url).await);
    let (churn_url, churn_dir) = (url.clone(), dir.clone());
    tokio::task::spawn_blocking(move || churn(fleet, &churn_url, &churn_dir, seed))
        .await
        .expect("churn");
    let acked = acknowledged(&dir, fleet.workers);
    let ledger = reachable(&url).await;
    let (mut events, mut checkpoints) = (0, 0);
    for index in 0..fleet.sessions {
        let session = session_name(index);
        let none = Vec::new();
        let (n, c) =
            check_session(&ledger, &session, acked.get(&session).unwrap_or(&none), true).await;
        events += n;
        checkpoints += c;
    }
    let acked_total: usize = acked.values().map(Vec::len).sum();
    let mut errors = std::collections::BTreeMap::<String, u64>::new();
    for worker in 0..fleet.workers {
        let text =
            std::fs::read_to_string(dir.join(format!("worker-{worker}.json"))).expect("summary");
        let summary: serde_json::Value = serde_json::from_str(&text).expect("json");
        for (code, count) in summary["errors"].as_object().into_iter().flatten() {
            *errors.entry(code.clone()).or_default() += count.as_u64().unwrap_or(0);
        }
    }
    println!(
        "FAILOVER events={events} acknowledged={acked_total} unacknowledged={} \
         checkpoints={checkpoints} errors={errors:?}",
        events.saturating_sub(acked_total)
    );
    assert!(acked_total > 0, "the workers appended");
}
