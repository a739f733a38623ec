// The native host's PostgreSQL schema (host/src/ledger/postgres/schema.rs) and its migrations,
// with the same semantics: `schema_version` holds one row per applied migration; a database of a
// newer version is refused untouched (`store_schema_too_new`); each migration runs in one
// transaction under the same transaction-scoped advisory lock key as the host's, so a Node
// process and a `contextfold` process starting together apply each migration exactly once.
// The DDL is the host's text, character for character: pkg-tests/test/stores-postgres.test.js
// extracts `V1` from schema.rs and compares, so a change on either side fails until both agree.
import { ContextfoldError, ledgerTokensEstimator } from 'contextfold';
import { query, transaction } from './postgres-client.js';

/** The advisory lock key that serializes migrations (the host's `MIGRATION_LOCK`, "cfmigrat"). */
export const MIGRATION_LOCK = 0x6366_6d69_6772_6174n;

/** The `ledger_meta` key naming the estimator of the `tokens` column. */
export const TOKENS_ESTIMATOR_KEY = 'tokens_estimator';

/** Version 1: the ledgers, the projection, the archive, their append-only triggers (schema.rs `V1`). */
export const V1 = `
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
`;

/** Version 2: new stored events compressed with lz4 where the server has it (schema.rs `V2`). */
export const V2 = `
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_settings
               WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        ALTER TABLE runtime_events ALTER COLUMN event_json SET COMPRESSION lz4;
    END IF;
END
$$;
`;

/** Every migration, in order; the schema version is their count (the host's `MIGRATIONS`). */
export const MIGRATIONS = [V1, V2];

/** The schema version this package writes (the host's `PG_SCHEMA_VERSION`). */
export const PG_SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Whether `schema_version` exists in a schema of the search path, read from the catalog with the
 * statement's snapshot. Not `to_regclass`, as the host asks: that reads the backend's catalog
 * cache, which a wait for an advisory lock does not refresh, so a process that waited while
 * another migrated would still see no table and run the migration again ("relation
 * schema_version already exists"; test: "processes opening a new database together").
 */
const SCHEMA_VERSION_EXISTS =
  'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace ' +
  "WHERE c.relname = 'schema_version' AND c.relkind IN ('r', 'p') AND n.nspname = ANY (current_schemas(false))) AS exists";

/** The version recorded in `schema_version` (0 before the first migration). */
export async function schemaVersion(client) {
  const exists = await query(client, 'reading the schema version', SCHEMA_VERSION_EXISTS);
  if (!exists.rows[0].exists) return 0;
  const found = await query(client, 'reading the schema version', 'SELECT coalesce(max(version), 0) AS version FROM schema_version');
  return Math.max(0, Number(found.rows[0].version));
}

/** Throws `store_schema_too_new` when `found` is newer than this package writes. */
function refuseNewer(found) {
  if (found > PG_SCHEMA_VERSION) {
    throw new ContextfoldError('store_schema_too_new', `the database has PostgreSQL ledger schema version ${found}; this package writes ${PG_SCHEMA_VERSION}`);
  }
}

/**
 * Refuses a newer schema, then applies the missing migrations in one transaction under the
 * migration lock, checking the version again once the lock is held (as the host's `migrate`).
 * A role without DDL rights opens a database that is already current: nothing is run then.
 * Then checks that the `tokens` column is by this package's estimator
 * (`store_estimator_mismatch` otherwise). Resolves to the version.
 */
export async function migrate(pool, target) {
  const found = await transaction(pool, 'reading the schema version', (client) => schemaVersion(client), { target });
  refuseNewer(found);
  if (found < PG_SCHEMA_VERSION) {
    await transaction(pool, 'migrating', async (client) => {
      await query(client, 'waiting for the migration lock', 'SELECT pg_advisory_xact_lock($1::bigint)', [MIGRATION_LOCK.toString()]);
      // Another process may have migrated while this one waited for the lock.
      const current = await schemaVersion(client);
      refuseNewer(current);
      for (let index = current; index < MIGRATIONS.length; index += 1) {
        await query(client, 'applying a migration', MIGRATIONS[index]);
        await query(client, 'recording the schema version', 'INSERT INTO schema_version (version) VALUES ($1)', [index + 1]);
      }
    }, { target });
  }
  const estimator = await transaction(pool, 'reading the tokens estimator', (client) =>
    query(client, 'reading the tokens estimator', 'SELECT value FROM ledger_meta WHERE key = $1', [TOKENS_ESTIMATOR_KEY]), { target });
  const named = estimator.rows[0]?.value;
  if (named !== undefined && named !== ledgerTokensEstimator()) {
    throw new ContextfoldError('store_estimator_mismatch', `the ledger's tokens are by ${named}; this package writes ${ledgerTokensEstimator()}`);
  }
  return PG_SCHEMA_VERSION;
}
