//! Events are append-only: an UPDATE, DELETE or TRUNCATE of a ledger row is refused by the
//! schema's triggers (SQLite and PostgreSQL), and on PostgreSQL also by privileges: a writer
//! role that may only insert and select is refused before any trigger runs.

use contextfold_host::ledger::postgres::{PgError, PgLedger};
use contextfold_host::storage::StoreError;

use super::support::{TestLedger, backends, checkpoint, log};

/// Statements that would change history; each must be refused.
const REWRITES: [&str; 7] = [
    "UPDATE runtime_events SET event_json = '{}' WHERE seq = 1",
    "UPDATE runtime_events SET seq = seq + 100 WHERE seq = 1",
    "DELETE FROM runtime_events WHERE seq = 1",
    "UPDATE agent_run_events SET payload_json = '{}'",
    "DELETE FROM agent_run_events",
    "UPDATE tool_result_archive SET body = body",
    "DELETE FROM tool_result_archive",
];

async fn seeded(backend: &TestLedger) -> Vec<contextfold_core::RuntimeEvent> {
    let events = log("s", 2);
    let ledger = &backend.ledger;
    ledger.append_events("s", events.clone()).await.expect("append");
    ledger
        .append_checkpoint("ar-1", "r", 1, checkpoint(&events, 4, "cp-1", None))
        .await
        .expect("cp");
    ledger.archive_put("s", b"body".to_vec()).await.expect("archive");
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_triggers_refuse_every_rewrite_of_history() {
    for backend in backends("triggers").await {
        let events = seeded(&backend).await;
        if let Some((_, path)) = &backend.sqlite {
            let conn = rusqlite::Connection::open(path).expect("open");
            for sql in REWRITES {
                let error = conn.execute(sql, []).expect_err(sql);
                assert!(error.to_string().contains("append-only"), "sqlite {sql}: {error}");
            }
        }
        if let Some(pg) = &backend.pg {
            let client = pg.client(None).await; // the superuser: only the triggers stop it
            for sql in REWRITES.iter().copied().chain([
                "TRUNCATE runtime_events",
                "TRUNCATE agent_run_events",
                "TRUNCATE tool_result_archive",
            ]) {
                let error = client.execute(sql, &[]).await.expect_err(sql);
                let typed = PgError::from_client("test", error);
                assert_eq!(typed.code(), "storage_append_only", "postgres {sql}: {typed}");
            }
            // As on SQLite, the derived columns may be rebuilt; the event may not change.
            client
                .execute("UPDATE runtime_events SET tokens = tokens", &[])
                .await
                .expect("derived");
        }
        let ledger = &backend.ledger;
        assert_eq!(ledger.load_events("s").await.expect("load"), events, "{}", backend.name());
        assert_eq!(ledger.agent_run_events("s").await.expect("agent run").len(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_insert_and_select_role_writes_but_cannot_rewrite() {
    let Some(backend) = super::support::postgres("privileges").await else { return };
    let pg = backend.pg.as_ref().expect("postgres");
    let role = format!("cf_writer_{}", std::process::id());
    let admin = pg.client(None).await;
    admin
        .batch_execute(&format!("DROP ROLE IF EXISTS {role}; CREATE ROLE {role} LOGIN"))
        .await
        .expect("create the writer role");
    let owner = PgLedger::connect(&pg.config).await.expect("owner");
    owner.grant_writer(&role).await.expect("grant");

    // The writer does everything the runtime does.
    let writer =
        PgLedger::connect(&pg.config.clone().with_user(&role, None)).await.expect("writer");
    let events = log("s", 2);
    writer.append_events("s", &events).await.expect("the writer appends");
    writer
        .append_checkpoint("ar-1", "r", 1, &checkpoint(&events, 4, "cp-1", None))
        .await
        .expect("cp");
    writer.archive_put("s", b"body").await.expect("the writer archives");
    assert_eq!(writer.load_events("s").await.expect("load"), events);

    // And cannot change history, not even the columns the trigger lets the owner rebuild.
    let client = pg.client(Some(&role)).await;
    for sql in REWRITES.iter().copied().chain([
        "UPDATE runtime_events SET tokens = 0",
        "TRUNCATE runtime_events",
        "DROP TRIGGER runtime_events_no_update ON runtime_events",
    ]) {
        let error = client.execute(sql, &[]).await.expect_err(sql);
        let typed = PgError::from_client("test", error);
        assert!(
            matches!(typed, PgError::PermissionDenied { .. }) || typed.sqlstate() == Some("42501"),
            "{sql}: expected a privilege refusal (42501), got {} {typed}",
            typed.code()
        );
    }
    assert_eq!(writer.load_events("s").await.expect("load"), events);
    let store_error = StoreError::from(PgError::Config("x".into()));
    assert_eq!(store_error.code(), "storage_config_invalid");
}
