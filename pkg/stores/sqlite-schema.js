// The native host's SQLite schema (host/src/storage/schema.rs), statement for statement: the
// same text, applied by the same migrations, so a file created here is byte-for-byte the schema
// a file created by `contextfold` has (pkg-tests/test/stores-sqlite.test.js compares
// `sqlite_master`), and `contextfold verify` reads it. Keep it in step with schema.rs.
import { ContextfoldError, ledgerRows, ledgerTokensEstimator } from 'contextfold';

/** The schema version this package writes (`PRAGMA user_version`), the host's `SCHEMA_VERSION`. */
export const SCHEMA_VERSION = 2;

/** The page size of a file this package creates (the host's `PAGE_SIZE`). */
export const PAGE_SIZE = 16384;

/** How long a writer waits for another connection's write lock (the host's `BUSY_TIMEOUT`). */
export const BUSY_TIMEOUT_MS = 5000;

/** The `ledger_meta` key naming the estimator of the `tokens` column. */
export const TOKENS_ESTIMATOR_KEY = 'tokens_estimator';

/** The host's `append_only!` triggers: every UPDATE or DELETE of a ledger row aborts. */
const appendOnly = (table) =>
  `CREATE TRIGGER ${table}_no_update BEFORE UPDATE ON ${table} BEGIN SELECT RAISE(ABORT, '${table} is append-only'); END;\n` +
  `CREATE TRIGGER ${table}_no_delete BEFORE DELETE ON ${table} BEGIN SELECT RAISE(ABORT, '${table} is append-only'); END;\n`;

/** Version 1: the RuntimeEvent ledger, the AgentRun ledger, the projection, the archive. */
const V1 =
  `CREATE TABLE runtime_events (
        session_id TEXT NOT NULL,
        seq INTEGER NOT NULL CHECK (seq >= 0),
        runtime_event_id TEXT NOT NULL,
        event_json TEXT NOT NULL,
        PRIMARY KEY (session_id, seq),
        UNIQUE (session_id, runtime_event_id)
    ) STRICT;
` +
  appendOnly('runtime_events') +
  `CREATE TABLE agent_run_events (
        ordinal INTEGER PRIMARY KEY AUTOINCREMENT,
        event_id TEXT NOT NULL UNIQUE,
        session_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        recorded_at_ms INTEGER NOT NULL,
        payload_json TEXT NOT NULL
    ) STRICT;
    CREATE INDEX agent_run_events_by_session ON agent_run_events (session_id, kind, ordinal);
` +
  appendOnly('agent_run_events') +
  `CREATE TABLE checkpoint_projection (
        session_id TEXT PRIMARY KEY,
        checkpoint_id TEXT NOT NULL,
        event_count INTEGER NOT NULL,
        agent_run_event_id TEXT NOT NULL,
        checkpoint_json TEXT NOT NULL
    );
` +
  `CREATE TABLE tool_result_archive (
        session_id TEXT NOT NULL,
        content_sha256 TEXT NOT NULL,
        byte_size INTEGER NOT NULL,
        body BLOB NOT NULL,
        PRIMARY KEY (session_id, content_sha256)
    ) STRICT;
` +
  appendOnly('tool_result_archive');

/** Version 2, before its rows are filled: the derived columns and `ledger_meta`. */
const V2_COLUMNS =
  `DROP TRIGGER runtime_events_no_update;
    ALTER TABLE runtime_events ADD COLUMN canonical INTEGER NOT NULL DEFAULT 0
        CHECK (canonical IN (0, 1));
    ALTER TABLE runtime_events ADD COLUMN turn_id TEXT NOT NULL DEFAULT '';
    ALTER TABLE runtime_events ADD COLUMN run_id TEXT NOT NULL DEFAULT '';
    ALTER TABLE runtime_events ADD COLUMN live_head INTEGER NOT NULL DEFAULT 0
        CHECK (live_head IN (0, 1));
    ALTER TABLE runtime_events ADD COLUMN tokens INTEGER;
    CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;`;

/** Version 2, after its rows are filled. */
const V2_TRIGGER =
  `CREATE TRIGGER runtime_events_no_update
    BEFORE UPDATE OF session_id, seq, runtime_event_id, event_json, canonical ON runtime_events
    BEGIN SELECT RAISE(ABORT, 'runtime_events is append-only'); END;`;

/** Rows rewritten per pass of the version 2 fill (the host's `FILL_BATCH`). */
const FILL_BATCH = 2048;

/**
 * Version 2's pass over the rows (the host's `fill_v2`): every row whose `event_json` parses to
 * an event agreeing with its key columns gets its derived columns (`ledgerRows`), and its
 * canonical form when that parses back to the same event; a row that does not parse is left as
 * it was.
 */
function fillV2(db) {
  db.prepare('INSERT INTO ledger_meta (key, value) VALUES (?, ?)').run(TOKENS_ESTIMATOR_KEY, ledgerTokensEstimator());
  const select = db.prepare(
    'SELECT rowid, session_id, seq, runtime_event_id, event_json FROM runtime_events WHERE rowid > ? ORDER BY rowid LIMIT ?',
  );
  const update = db.prepare(
    'UPDATE runtime_events SET event_json = ?, canonical = ?, turn_id = ?, run_id = ?, live_head = ?, tokens = ? WHERE rowid = ?',
  );
  for (let after = 0; ;) {
    const batch = select.all(after, FILL_BATCH);
    if (batch.length === 0) return;
    after = batch.at(-1).rowid;
    for (const row of batch) {
      let event;
      let derived;
      try {
        event = JSON.parse(row.event_json);
        [derived] = ledgerRows(row.event_json.replace(/\n/g, ' '));
      } catch {
        continue;
      }
      if (event.sessionId !== row.session_id || event.seq !== Number(row.seq) || event.runtimeEventId !== row.runtime_event_id) continue;
      update.run(
        derived.canonical ? derived.json : row.event_json,
        derived.canonical ? 1 : 0,
        event.turnId,
        event.runId,
        derived.liveHead ? 1 : 0,
        BigInt(derived.tokens),
        row.rowid,
      );
    }
  }
}

/** Every migration, in order; migration `n` moves a file from version `n - 1` to `n`. */
const MIGRATIONS = [
  { before: V1, fill: null, after: '' },
  { before: V2_COLUMNS, fill: fillV2, after: V2_TRIGGER },
];

/** Reads `PRAGMA user_version`. */
export function userVersion(db) {
  return Number(db.prepare('PRAGMA user_version').get().user_version);
}

/** Throws `store_schema_too_new` when `found` is newer than this package writes. */
export function refuseNewer(found) {
  if (found > SCHEMA_VERSION) {
    throw new ContextfoldError('store_schema_too_new', `the file has schema version ${found}; this package writes ${SCHEMA_VERSION}`);
  }
}

/**
 * Refuses a newer schema, then applies the missing migrations, each in one IMMEDIATE
 * transaction with its `user_version` update (as the host's `migrate`).
 */
export function migrate(db) {
  refuseNewer(userVersion(db));
  for (const [index, migration] of MIGRATIONS.entries()) {
    if (userVersion(db) > index) continue;
    db.exec('BEGIN IMMEDIATE');
    try {
      // Another connection may have migrated while this one waited for the write lock.
      if (userVersion(db) <= index) {
        db.exec(migration.before);
        migration.fill?.(db);
        if (migration.after) db.exec(migration.after);
        db.exec(`PRAGMA user_version = ${index + 1}`);
      }
      db.exec('COMMIT');
    } catch (error) {
      rollback(db);
      throw error;
    }
  }
}

/** Rolls back the open transaction, if any. */
export function rollback(db) {
  try {
    db.exec('ROLLBACK');
  } catch {
    // no transaction was open
  }
}
