//! Server-side failures reach the caller typed, and lose nothing: a full disk (a trigger
//! raising SQLSTATE 53100, as the server does when it cannot extend a file), a statement
//! timeout (57014), the connection cut in the middle of a transaction, and every connection
//! dropped as a restarting server drops them (the real SIGKILL and promotion are
//! `scripts/postgres-failover.sh`).

use std::time::Duration;

use contextfold_host::ledger::postgres::{PgError, PgLedger};
use contextfold_host::storage::StoreError;

use super::support::{checkpoint, log, postgres};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_is_a_typed_error_and_loses_nothing() {
    let Some(backend) = postgres("disk_full").await else { return };
    let pg = backend.pg.as_ref().expect("postgres");
    let ledger = &backend.ledger;
    let events = log("s", 3);
    ledger.append_events("s", events[..4].to_vec()).await.expect("append before the disk fills");
    ledger
        .append_checkpoint("ar-1", "r", 1, checkpoint(&events, 4, "cp-1", None))
        .await
        .expect("cp");

    let admin = pg.client(None).await;
    admin
        .batch_execute(
            "CREATE FUNCTION disk_full() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
               RAISE EXCEPTION 'could not extend file: No space left on device' \
               USING ERRCODE = '53100'; END $$;
             CREATE TRIGGER disk_full_events BEFORE INSERT ON runtime_events FOR EACH ROW \
               WHEN (NEW.seq >= 6) EXECUTE FUNCTION disk_full();
             CREATE TRIGGER disk_full_runs BEFORE INSERT ON agent_run_events FOR EACH ROW \
               EXECUTE FUNCTION disk_full();",
        )
        .await
        .expect("fill the disk");

    // The batch's first two rows insert, the third hits the full disk: nothing is kept.
    let error = ledger.append_events("s", events[4..].to_vec()).await.expect_err("disk full");
    assert_eq!(error.code(), "storage_disk_full", "{error}");
    assert!(matches!(error, StoreError::Postgres(PgError::DiskFull { .. })), "{error:?}");
    assert!(!error.is_retryable());
    assert_eq!(ledger.load_events("s").await.expect("load"), events[..4]);
    let error = ledger
        .append_checkpoint("ar-2", "r", 2, checkpoint(&events, 8, "cp-2", Some("cp-1")))
        .await
        .expect_err("disk full");
    assert_eq!(error.code(), "storage_disk_full", "{error}");
    let tip = ledger.current_checkpoint("s").await.expect("lookup");
    assert_eq!(tip.checkpoint.map(|c| c.checkpoint_id).as_deref(), Some("cp-1"));

    // Space again: the same calls succeed and everything is there once.
    admin
        .batch_execute(
            "DROP TRIGGER disk_full_events ON runtime_events; \
                        DROP TRIGGER disk_full_runs ON agent_run_events;",
        )
        .await
        .expect("free the disk");
    ledger.append_events("s", events[4..].to_vec()).await.expect("append after");
    ledger
        .append_checkpoint("ar-2", "r", 2, checkpoint(&events, 8, "cp-2", Some("cp-1")))
        .await
        .expect("cp after");
    assert_eq!(ledger.load_events("s").await.expect("load"), events);
    assert_eq!(ledger.agent_run_events("s").await.expect("runs").len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_timeout_is_a_typed_error_and_loses_nothing() {
    let Some(backend) = postgres("timeout").await else { return };
    let pg = backend.pg.as_ref().expect("postgres");
    let events = log("s", 2);
    backend.ledger.append_events("s", events[..4].to_vec()).await.expect("append");
    pg.client(None)
        .await
        .batch_execute(
            "CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
               PERFORM pg_sleep(2); RETURN NEW; END $$;
             CREATE TRIGGER slow_events BEFORE INSERT ON runtime_events FOR EACH ROW \
               WHEN (NEW.seq >= 6) EXECUTE FUNCTION slow();",
        )
        .await
        .expect("slow the server");
    let impatient = pg.config.clone().with_statement_timeout(Duration::from_millis(200));
    let ledger = PgLedger::connect(&impatient).await.expect("connect");
    let error = ledger.append_events("s", &events[4..]).await.expect_err("timeout");
    assert_eq!(error.code(), "storage_statement_timeout", "{error}");
    assert_eq!(ledger.load_events("s").await.expect("load"), events[..4]);
}

/// The session's events, retrying the retryable failure of a pooled connection the server
/// closed while it was idle (the pool learns it is dead when it is next used).
async fn load_retrying(ledger: &PgLedger) -> Vec<contextfold_core::RuntimeEvent> {
    for _ in 0..3 {
        match ledger.load_events("s").await {
            Ok(events) => return events,
            Err(error) => assert_eq!(error.code(), "storage_connection_lost", "{error}"),
        }
    }
    panic!("no live connection after three tries");
}

/// Terminates every backend of the test's database that runs as `application`.
async fn terminate(pg: &super::support::PgDatabase, application: &str) -> i64 {
    let row = pg
        .client(None)
        .await
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE datname = $1 AND application_name = $2",
            &[&pg.dbname, &application],
        )
        .await
        .expect("terminate");
    row.get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_cut_mid_transaction_is_typed_and_loses_nothing() {
    let Some(backend) = postgres("cut").await else { return };
    let pg = backend.pg.as_ref().expect("postgres");
    let events = log("s", 2);
    backend.ledger.append_events("s", events[..4].to_vec()).await.expect("append");
    // The append's third row waits in a trigger, inside its transaction, while the connection
    // is cut under it.
    pg.client(None)
        .await
        .batch_execute(
            "CREATE FUNCTION held() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
               PERFORM pg_sleep(5); RETURN NEW; END $$;
             CREATE TRIGGER held_events BEFORE INSERT ON runtime_events FOR EACH ROW \
               WHEN (NEW.seq = 6) EXECUTE FUNCTION held();",
        )
        .await
        .expect("hold the transaction");
    let config = pg.config.clone();
    let ledger =
        PgLedger::connect(&config.clone().with_application_name("cf-cut")).await.expect("connect");
    let append = tokio::spawn({
        let ledger = ledger.clone();
        let rest = events[4..].to_vec();
        async move { ledger.append_events("s", &rest).await }
    });
    let mut cut = 0;
    while cut == 0 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cut = terminate(pg, "cf-cut").await;
    }
    let error = append.await.expect("join").expect_err("the connection was cut");
    assert_eq!(error.code(), "storage_connection_lost", "{error}");
    assert!(error.is_retryable());
    assert_eq!(load_retrying(&ledger).await, events[..4], "nothing of it kept");

    // Retried on a fresh connection (the pool drops the dead one), it lands once.
    pg.client(None)
        .await
        .batch_execute("DROP TRIGGER held_events ON runtime_events")
        .await
        .expect("drop");
    ledger.append_events("s", &events[4..]).await.expect("the retry");
    assert_eq!(ledger.load_events("s").await.expect("load"), events);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_connection_dropped_as_by_a_restart_reconnects_and_loses_nothing() {
    let Some(backend) = postgres("restart").await else { return };
    let pg = backend.pg.as_ref().expect("postgres");
    let events = log("s", 4);
    let ledger = PgLedger::connect(&pg.config.clone().with_application_name("cf-restart"))
        .await
        .expect("connect");
    ledger.append_events("s", &events[..8]).await.expect("append");
    // A restarting server closes every connection; the idle pooled ones are now dead.
    assert!(terminate(pg, "cf-restart").await >= 1);
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The pool notices a closed connection when it hands one out and opens a new one; a call
    // that raced the close would get the retryable `storage_connection_lost` instead.
    let mut attempts = 0;
    loop {
        attempts += 1;
        match ledger.append_events("s", &events[8..]).await {
            Ok(()) => break,
            Err(error) if error.is_retryable() && attempts < 3 => {
                assert_eq!(error.code(), "storage_connection_lost", "{error}");
            }
            Err(error) => panic!("no reconnection: {error}"),
        }
    }
    assert_eq!(ledger.load_events("s").await.expect("load"), events, "every event once");
}
