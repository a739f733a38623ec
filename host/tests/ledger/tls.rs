//! TLS to PostgreSQL (`host/src/ledger/postgres/tls.rs`): with `sslmode=require` and the
//! server's CA as the root the ledger connects over TLS (the server says so in `pg_stat_ssl`);
//! with Mozilla's roots the same server's private certificate is refused (`storage_tls_failed`), before a
//! password is sent; the default mode connects without TLS. Needs the throwaway cluster of
//! `scripts/with-postgres.sh` (its TLS certificate and `CONTEXTFOLD_PG_CA`).

use contextfold_host::ledger::postgres::{PgLedger, PgLedgerConfig};

use super::support::postgres;

/// Whether the server sees the ledger's connection (by application name) as TLS.
async fn server_sees_tls(pg: &super::support::PgDatabase, application: &str) -> Option<bool> {
    let client = pg.client(None).await;
    let row = client
        .query_opt(
            "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
             WHERE a.application_name = $1 LIMIT 1",
            &[&application],
        )
        .await
        .expect("pg_stat_ssl");
    row.map(|row| row.get(0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_connects_over_verified_tls_and_refuses_an_unknown_certificate() {
    let Some(backend) = postgres("tls").await else { return };
    let Some(pg) = &backend.pg else { return };
    let Ok(ca) = std::env::var("CONTEXTFOLD_PG_CA") else {
        eprintln!("SKIPPED tls: CONTEXTFOLD_PG_CA is not set (run under scripts/with-postgres.sh)");
        return;
    };
    let url = |application: &str, mode: &str| {
        format!("{}?sslmode={mode}&application_name={application}", pg.url())
    };
    let env = |name: &str| (name == "PGPASSWORD").then(|| "tls-secret".to_owned());

    let verified = PgLedgerConfig::from_url_and(&url("cf-tls-verified", "require"), env)
        .expect("parses")
        .with_root_certificates(&ca);
    let ledger = PgLedger::connect(&verified).await.expect("TLS with the server's CA");
    assert_eq!(server_sees_tls(pg, "cf-tls-verified").await, Some(true), "the connection is TLS");
    drop(ledger);

    // libpq's spelling of a verifying mode is taken as require.
    let verify_full = PgLedgerConfig::from_url_and(&url("cf-tls-full", "verify-full"), env)
        .expect("verify-full parses")
        .with_root_certificates(&ca);
    PgLedger::connect(&verify_full).await.expect("verify-full");

    let unknown =
        PgLedgerConfig::from_url_and(&url("cf-tls-unknown", "require"), env).expect("parses");
    let error = PgLedger::connect(&unknown).await.expect_err("a private CA is not Mozilla's");
    assert_eq!(error.code(), "storage_tls_failed", "{error}");
    assert!(!error.is_retryable(), "the same server fails the same way");
    assert!(!format!("{error} {error:?}").contains("tls-secret"), "{error:?}");

    let plain = PgLedgerConfig::from_url_and(&url("cf-tls-plain", "prefer"), env).expect("parses");
    let ledger = PgLedger::connect(&plain).await.expect("the default connects");
    assert_eq!(server_sees_tls(pg, "cf-tls-plain").await, Some(false), "prefer stays plain");
    drop(ledger);
}
