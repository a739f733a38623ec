//! Versioned schema migrations (`PRAGMA user_version`).
//!
//! Migration `n` (1-based) moves a file from version `n - 1` to `n`; each runs in one IMMEDIATE
//! transaction together with its `user_version` update. A file whose version is higher than
//! [`SCHEMA_VERSION`] was written by a newer build and is refused untouched. Version 2 adds the
//! derived columns of `runtime_events` and rewrites its rows in place (`super::derived`).

use rusqlite::{Connection, TransactionBehavior};

use super::error::StoreError;

/// Append-only enforcement: every UPDATE or DELETE of a ledger row aborts.
macro_rules! append_only {
    ($table:literal) => {
        concat!(
            "CREATE TRIGGER ",
            $table,
            "_no_update BEFORE UPDATE ON ",
            $table,
            " BEGIN SELECT RAISE(ABORT, '",
            $table,
            " is append-only'); END;\n",
            "CREATE TRIGGER ",
            $table,
            "_no_delete BEFORE DELETE ON ",
            $table,
            " BEGIN SELECT RAISE(ABORT, '",
            $table,
            " is append-only'); END;\n"
        )
    };
}

/// Version 1: the canonical RuntimeEvent ledger, the AgentRun ledger, the bounded checkpoint
/// projection, and the tool-result archive.
const V1: &str = concat!(
    "CREATE TABLE runtime_events (
        session_id TEXT NOT NULL,
        seq INTEGER NOT NULL CHECK (seq >= 0),
        runtime_event_id TEXT NOT NULL,
        event_json TEXT NOT NULL,
        PRIMARY KEY (session_id, seq),
        UNIQUE (session_id, runtime_event_id)
    ) STRICT;\n",
    append_only!("runtime_events"),
    "CREATE TABLE agent_run_events (
        ordinal INTEGER PRIMARY KEY AUTOINCREMENT,
        event_id TEXT NOT NULL UNIQUE,
        session_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        recorded_at_ms INTEGER NOT NULL,
        payload_json TEXT NOT NULL
    ) STRICT;
    CREATE INDEX agent_run_events_by_session ON agent_run_events (session_id, kind, ordinal);\n",
    append_only!("agent_run_events"),
    "CREATE TABLE checkpoint_projection (
        session_id TEXT PRIMARY KEY,
        checkpoint_id TEXT NOT NULL,
        event_count INTEGER NOT NULL,
        agent_run_event_id TEXT NOT NULL,
        checkpoint_json TEXT NOT NULL
    );\n",
    "CREATE TABLE tool_result_archive (
        session_id TEXT NOT NULL,
        content_sha256 TEXT NOT NULL,
        byte_size INTEGER NOT NULL,
        body BLOB NOT NULL,
        PRIMARY KEY (session_id, content_sha256)
    ) STRICT;\n",
    append_only!("tool_result_archive"),
);

/// Version 2, before its rows are filled: the derived columns of `runtime_events`
/// (`super::derived`), the table naming their estimator, and the UPDATE trigger narrowed to the
/// columns that are the event (the derived ones may be rebuilt; nothing may change the event).
const V2_COLUMNS: &str = "DROP TRIGGER runtime_events_no_update;
    ALTER TABLE runtime_events ADD COLUMN canonical INTEGER NOT NULL DEFAULT 0
        CHECK (canonical IN (0, 1));
    ALTER TABLE runtime_events ADD COLUMN turn_id TEXT NOT NULL DEFAULT '';
    ALTER TABLE runtime_events ADD COLUMN run_id TEXT NOT NULL DEFAULT '';
    ALTER TABLE runtime_events ADD COLUMN live_head INTEGER NOT NULL DEFAULT 0
        CHECK (live_head IN (0, 1));
    ALTER TABLE runtime_events ADD COLUMN tokens INTEGER;
    CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;";

/// Version 2, after its rows are filled.
const V2_TRIGGER: &str = "CREATE TRIGGER runtime_events_no_update
    BEFORE UPDATE OF session_id, seq, runtime_event_id, event_json, canonical ON runtime_events
    BEGIN SELECT RAISE(ABORT, 'runtime_events is append-only'); END;";

/// A migration's pass over the rows.
type Fill = fn(&Connection) -> Result<(), StoreError>;

/// One schema step: SQL, then (optionally) a pass over the rows in Rust, then more SQL, all in
/// the transaction that records the new version.
struct Migration {
    before: &'static str,
    fill: Option<Fill>,
    after: &'static str,
}

/// Every migration, in order; the schema version is their count.
const MIGRATIONS: &[Migration] = &[
    Migration { before: V1, fill: None, after: "" },
    Migration { before: V2_COLUMNS, fill: Some(super::derived::fill_v2), after: V2_TRIGGER },
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// Reads `PRAGMA user_version`.
pub(crate) fn user_version(conn: &Connection) -> Result<u32, StoreError> {
    conn.pragma_query_value(None, "user_version", |row| row.get::<_, u32>(0))
        .map_err(StoreError::sqlite("reading the schema version"))
}

/// Refuses a newer schema, then applies the missing migrations.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let found = user_version(conn)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew { found, supported: SCHEMA_VERSION });
    }
    for (index, migration) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(StoreError::sqlite("starting a migration"))?;
        // Another process may have migrated while this one waited for the write lock.
        if user_version(&tx)? > index as u32 {
            continue;
        }
        tx.execute_batch(migration.before).map_err(StoreError::sqlite("applying a migration"))?;
        if let Some(fill) = migration.fill {
            fill(&tx)?;
        }
        tx.execute_batch(migration.after).map_err(StoreError::sqlite("applying a migration"))?;
        tx.pragma_update(None, "user_version", index as u32 + 1)
            .map_err(StoreError::sqlite("recording the schema version"))?;
        tx.commit().map_err(StoreError::sqlite("committing a migration"))?;
    }
    Ok(())
}
