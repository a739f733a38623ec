//! Server-side failures reach the caller typed, and lose nothing: a full disk (a trigger
//! raising SQLSTATE 53100, as the server does when it cannot extend a file) and a statement
//! timeout (57014).

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
