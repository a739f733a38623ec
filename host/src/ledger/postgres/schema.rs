//! The PostgreSQL schema and its versioned migrations.
//!
//! The tables mean what SQLite schema version 2 means (`host/src/storage/schema.rs`,
//! `docs/storage.md`): `runtime_events` keeps each event's stored bytes (its canonical JSON
//! where that is exact) as `text`, never `jsonb` (which would reorder keys and rewrite numbers,
//! so the digest could no longer be taken over the stored bytes), beside the derived columns a
//! cold projection proves coverage from. Version numbers are this backend's own:
//! PostgreSQL version 1 is SQLite version 2 (there was never a PostgreSQL ledger without the
//! derived columns).
//!
//! `schema_version` has one row per applied migration. Migrations run in one transaction each,
//! under a transaction-scoped advisory lock, so two processes starting at once apply each one
//! exactly once; a database whose version is newer than this build is refused untouched.

use tokio_postgres::{Client, GenericClient};

use super::error::PgError;
use crate::storage::StoreError;

/// The advisory lock key that serializes migrations (`"cfmigrat"` as bytes).
const MIGRATION_LOCK: i64 = 0x6366_6d69_6772_6174;

/// Version 1: the ledgers, the projection, the archive, their append-only triggers.
const V1: &str = r#"
CREATE TABLE schema_version (
    version integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE runtime_events (
    session_id text NOT NULL,
    seq bigint NOT NULL CHECK (seq >= 0),
    runtime_event_id text NOT NULL,
    event_json text NOT NULL,
    canonical boolean NOT NULL DEFAULT false,
    turn_id text NOT NULL DEFAULT '',
    run_id text NOT NULL DEFAULT '',
    live_head boolean NOT NULL DEFAULT false,
    tokens bigint,
    CONSTRAINT runtime_events_pkey PRIMARY KEY (session_id, seq),
    CONSTRAINT runtime_events_event_id_key UNIQUE (session_id, runtime_event_id)
);
CREATE TABLE ledger_meta (key text PRIMARY KEY, value text NOT NULL);
INSERT INTO ledger_meta (key, value) VALUES ('tokens_estimator', 'pieces-v1');
CREATE TABLE agent_run_events (
    ordinal bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id text NOT NULL UNIQUE,
    session_id text NOT NULL,
    run_id text NOT NULL,
    kind text NOT NULL,
    recorded_at_ms bigint NOT NULL,
    payload_json text NOT NULL
);
CREATE INDEX agent_run_events_by_session ON agent_run_events (session_id, kind, ordinal);
CREATE TABLE checkpoint_projection (
    session_id text PRIMARY KEY,
    checkpoint_id text NOT NULL,
    event_count bigint NOT NULL,
    agent_run_event_id text NOT NULL,
    checkpoint_json text NOT NULL
);
CREATE TABLE tool_result_archive (
    session_id text NOT NULL,
    content_sha256 text NOT NULL,
    byte_size bigint NOT NULL,
    body bytea NOT NULL,
    PRIMARY KEY (session_id, content_sha256)
);
CREATE FUNCTION contextfold_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'CFA01';
END
$$;
CREATE TRIGGER runtime_events_no_update
    BEFORE UPDATE OF session_id, seq, runtime_event_id, event_json, canonical ON runtime_events
    FOR EACH ROW EXECUTE FUNCTION contextfold_append_only();
CREATE TRIGGER runtime_events_no_delete BEFORE DELETE ON runtime_events
    FOR EACH ROW EXECUTE FUNCTION contextfold_append_only();
CREATE TRIGGER runtime_events_no_truncate BEFORE TRUNCATE ON runtime_events
    FOR EACH STATEMENT EXECUTE FUNCTION contextfold_append_only();
CREATE TRIGGER agent_run_events_no_update BEFORE UPDATE ON agent_run_events
    FOR EACH ROW EXECUTE FUNCTION contextfold_append_only();
CREATE TRIGGER agent_run_events_no_delete BEFORE DELETE ON agent_run_events
    FOR EACH ROW EXECUTE FUNCTION contextfold_append_only();
CREATE TRIGGER agent_run_events_no_truncate BEFORE TRUNCATE ON agent_run_events
    FOR EACH STATEMENT EXECUTE FUNCTION contextfold_append_only();
CREATE TRIGGER tool_result_archive_no_update BEFORE UPDATE ON tool_result_archive
    FOR EACH ROW EXECUTE FUNCTION contextfold_append_only();
CREATE TRIGGER tool_result_archive_no_delete BEFORE DELETE ON tool_result_archive
    FOR EACH ROW EXECUTE FUNCTION contextfold_append_only();
CREATE TRIGGER tool_result_archive_no_truncate BEFORE TRUNCATE ON tool_result_archive
    FOR EACH STATEMENT EXECUTE FUNCTION contextfold_append_only();
"#;

/// Version 2: the stored events compressed with lz4 where the server has it (PostgreSQL 14+
/// built with lz4; pglz otherwise). A cold projection streams every covered row's bytes:
/// decompressing them was a sixth of the server's time with pglz (docs/performance.md, "The
/// ledger on PostgreSQL"). Rows written before keep their compression until rewritten, which
/// the append-only ledger never does; it only changes how new rows are stored.
const V2: &str = r#"
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_settings
               WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        ALTER TABLE runtime_events ALTER COLUMN event_json SET COMPRESSION lz4;
    END IF;
END
$$;
"#;

/// Every migration, in order; the schema version is their count.
const MIGRATIONS: &[&str] = &[V1, V2];

/// The schema version this build writes.
pub const PG_SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// The version recorded in `schema_version` (0 before the first migration).
pub(super) async fn schema_version(client: &impl GenericClient) -> Result<u32, PgError> {
    let read = PgError::during("reading the schema version");
    let exists = client
        // A query on `pg_class`, not `to_regclass`: the latter reads the backend's catalog
        // cache, which waiting on the migration lock does not refresh, so a process that waited
        // while another migrated would still see no table and run version 1 again.
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c \
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.relname = 'schema_version' AND n.nspname = current_schema())",
            &[],
        )
        .await
        .map_err(PgError::during("reading the schema version"))?
        .get::<_, bool>(0);
    if !exists {
        return Ok(0);
    }
    let row = client
        .query_one("SELECT coalesce(max(version), 0) FROM schema_version", &[])
        .await
        .map_err(read)?;
    Ok(row.get::<_, i32>(0).max(0) as u32)
}

/// Refuses a newer schema, then applies the missing migrations. A role without DDL rights can
/// open a database that is already current (nothing is run then).
pub(super) async fn migrate(client: &mut Client) -> Result<u32, StoreError> {
    let found = schema_version(client).await?;
    if found > PG_SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew { found, supported: PG_SCHEMA_VERSION });
    }
    if found == PG_SCHEMA_VERSION {
        return Ok(found);
    }
    let tx = client.transaction().await.map_err(PgError::during("starting a migration"))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(PgError::during("waiting for the migration lock"))?;
    // Another process may have migrated while this one waited for the lock.
    let found = schema_version(&tx).await?;
    if found > PG_SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew { found, supported: PG_SCHEMA_VERSION });
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        tx.batch_execute(sql).await.map_err(PgError::during("applying a migration"))?;
        let version = index as i32 + 1;
        tx.execute("INSERT INTO schema_version (version) VALUES ($1)", &[&version])
            .await
            .map_err(PgError::during("recording the schema version"))?;
    }
    tx.commit().await.map_err(PgError::during("committing a migration"))?;
    Ok(PG_SCHEMA_VERSION)
}

/// The grants of a writer role: it may read every table and insert into the ledgers and the
/// archive, and may never update or delete a ledger row (the projection, a rebuildable cache,
/// it may rewrite). Privileges and triggers are independent locks on the same door: a role
/// with these grants is refused (SQLSTATE 42501) before any trigger runs.
pub fn writer_grants_sql(role: &str) -> String {
    let role = quote_identifier(role);
    format!(
        "GRANT SELECT ON schema_version, ledger_meta TO {role};
         GRANT SELECT, INSERT ON runtime_events, agent_run_events, tool_result_archive TO {role};
         GRANT SELECT, INSERT, UPDATE, DELETE ON checkpoint_projection TO {role};"
    )
}

/// `name` as a quoted SQL identifier.
pub(super) fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
