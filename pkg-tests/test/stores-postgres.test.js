// The PostgreSQL store (`contextfold/stores/postgres`, the `pg` package): the schema text equal
// to the native host's (no server needed), then against CONTEXTFOLD_PG_URL (run it as
// `bash scripts/with-postgres.sh bash -c 'cd pkg-tests && node --test test/stores-postgres.test.js'`;
// skipped with the reason when unset): the conformance suite, the rows equal to what the SQLite
// store writes (Node 24: node:sqlite) and to `ledgerRows`, two child processes writing one
// session, the lost races as typed conflicts, the append-only triggers, a full disk. Every test
// gets a database of its own (CREATE DATABASE), dropped at the end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { ledgerRows } from 'contextfold';
import { PostgresStore } from 'contextfold/stores/postgres';
import { MIGRATION_LOCK, MIGRATIONS, PG_SCHEMA_VERSION } from '../node_modules/contextfold/stores/postgres-schema.js';
import { storeCases, rejectsWith } from '../stores/conformance.js';
import { sessionEvents, compactStore } from '../stores/session.js';
import { repoRoot } from './helpers.js';

const run = promisify(execFile);
const URL_ = process.env.CONTEXTFOLD_PG_URL;
const NO_PG = URL_ ? false : 'CONTEXTFOLD_PG_URL is unset: run under scripts/with-postgres.sh for the PostgreSQL half';
const pgTest = (name, options, fn) => test(name, { ...options, skip: NO_PG || options.skip || false }, fn);
const [major, minor] = process.versions.node.split('.').map(Number);
const hasSqlite = major > 22 || (major === 22 && minor >= 5);
const NO_SQLITE = `the SQLite half needs node:sqlite (Node >= 22.5); this is Node ${process.versions.node}`;

const admin = URL_ ? new pg.Pool({ connectionString: URL_, max: 2 }) : null;
const databases = [];
const pools = [];

/** A new, empty database; its URL. */
async function freshDatabase() {
  const name = `cf_js_${process.pid}_${databases.length + 1}`;
  await admin.query(`CREATE DATABASE ${name}`);
  databases.push(name);
  const url = new URL(URL_);
  url.pathname = `/${name}`;
  return url.toString();
}

/** A pool on `url` the test owns (ended at the end). */
function poolOn(url) {
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  pool.on('error', () => {});
  pools.push(pool);
  return pool;
}

test.after(async () => {
  await Promise.all(pools.map((pool) => pool.end().catch(() => {})));
  for (const name of databases) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
  await admin?.end();
});

test('postgres store: the DDL, the migration lock and the schema version are the native host\'s, character for character', () => {
  const rust = readFileSync(path.join(repoRoot, 'host/src/ledger/postgres/schema.rs'), 'utf8');
  MIGRATIONS.forEach((sql, index) => {
    const name = `V${index + 1}`;
    const rustSql = rust.match(new RegExp(`const ${name}: &str = r#"([\\s\\S]*?)"#;`));
    assert.ok(rustSql, `schema.rs still defines ${name} as a raw string`);
    assert.equal(sql, rustSql[1], name);
  });
  const lock = rust.match(/const MIGRATION_LOCK: i64 = (0x[0-9a-f_]+);/);
  assert.equal(MIGRATION_LOCK, BigInt(lock[1].replace(/_/g, '')));
  const migrations = rust.match(/const MIGRATIONS: &\[&str\] = &\[([^\]]*)\];/);
  assert.equal(PG_SCHEMA_VERSION, migrations[1].split(',').filter((item) => item.trim() !== '').length);
  const mod = readFileSync(path.join(repoRoot, 'host/src/ledger/postgres/mod.rs'), 'utf8');
  const client = readFileSync(path.join(repoRoot, 'pkg/stores/postgres-client.js'), 'utf8');
  const sessionLock = 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))';
  assert.ok(mod.includes(sessionLock) && client.includes(sessionLock), 'the session lock key is the same expression');
  // Every code the host's PgError gives is one this store gives.
  const codes = [...readFileSync(path.join(repoRoot, 'host/src/ledger/postgres/error.rs'), 'utf8').matchAll(/=> "(storage_[a-z_]+)"/g)].map((m) => m[1]);
  assert.ok(codes.length >= 9);
  for (const code of codes) assert.ok(client.includes(`'${code}'`), `${code} is mapped in postgres-client.js`);
});

test('postgres store: without pg it is store_unsupported_runtime; a URL that does not parse is not repeated', async () => {
  const scratch = await mkdtemp(path.join(tmpdir(), 'contextfold-nopg-'));
  try {
    const script = path.join(scratch, 'open.mjs');
    const module = pathToFileURL(path.join(repoRoot, 'pkg/stores/postgres.js')).href;
    await writeFile(script, `import { PostgresStore } from ${JSON.stringify(module)};
      try { await PostgresStore.open({ connectionString: 'postgres://u:secret@127.0.0.1:1/db', sessionId: 's' }); }
      catch (error) { console.log(JSON.stringify({ code: error.code, message: error.message })); }`);
    const { stdout } = await run(process.execPath, [script], { cwd: scratch });
    const { code, message } = JSON.parse(stdout);
    assert.equal(code, 'store_unsupported_runtime');
    assert.doesNotMatch(message, /secret/);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  const bad = await rejectsWith(assert, PostgresStore.open({ connectionString: 'postgres://u:secret@[bad/db', sessionId: 's' }), 'storage_config_invalid');
  assert.doesNotMatch(bad.message, /secret/);
  await rejectsWith(assert, PostgresStore.open({ sessionId: 's' }), 'invalid_argument');
});

test('postgres store: an unreachable server is storage_unavailable, retryable, without the password', async () => {
  const error = await rejectsWith(assert, PostgresStore.open({ connectionString: 'postgres://u:secret@127.0.0.1:1/db', sessionId: 's' }), 'storage_unavailable');
  assert.equal(error.retryable, true);
  assert.doesNotMatch(error.message, /secret/);
  assert.match(error.message, /postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/db/);
});

for (const { name, fn } of storeCases({ exclusive: false })) {
  pgTest(`postgres store: ${name}`, {}, () => fn(assert, async () => {
    const url = await freshDatabase();
    return { open: (sessionId) => PostgresStore.open({ connectionString: url, sessionId }) };
  }));
}

/** The stored rows of session `s`, in the columns both ledgers have, normalized to JS values. */
const rowOf = (row) => ({
  session_id: row.session_id,
  seq: Number(row.seq),
  runtime_event_id: row.runtime_event_id,
  event_json: row.event_json,
  canonical: Boolean(row.canonical),
  turn_id: row.turn_id,
  run_id: row.run_id,
  live_head: Boolean(row.live_head),
  tokens: row.tokens === null ? null : Number(row.tokens),
});
const EVENT_ROWS = 'SELECT session_id, seq, runtime_event_id, event_json, canonical, turn_id, run_id, live_head, tokens FROM runtime_events ORDER BY seq';
const CHECKPOINT_ROWS = "SELECT event_id, run_id, kind, payload_json FROM agent_run_events WHERE kind = 'history_compact_checkpoint_recorded' ORDER BY ordinal";
const PROJECTION_ROWS = 'SELECT session_id, checkpoint_id, event_count, agent_run_event_id, checkpoint_json FROM checkpoint_projection';

/** Writes 12 turns and two checkpoints through `store` (as the SQLite store's tests do). */
async function writeSession(store) {
  await store.appendEvents(sessionEvents('s', 6));
  assert.equal((await compactStore(store, 'cp-1')).outcome, 'recorded');
  await store.appendEvents(sessionEvents('s', 6, 6));
  assert.equal((await compactStore(store, 'cp-2')).outcome, 'recorded');
  await store.close();
}

pgTest('postgres store: the rows are the core\'s ledgerRows, and schema_version holds one row per migration', {}, async () => {
  const url = await freshDatabase();
  await writeSession(await PostgresStore.open({ connectionString: url, sessionId: 's' }));
  const pool = poolOn(url);
  const rows = (await pool.query(EVENT_ROWS)).rows.map(rowOf);
  assert.equal(rows.length, 48);
  assert.deepEqual(
    rows.map(({ event_json, canonical, live_head, tokens }) => ({ json: event_json, canonical, liveHead: live_head, tokens })),
    ledgerRows(sessionEvents('s', 12)),
  );
  assert.ok(rows.some((row) => !row.canonical), 'a tool call whose keys are not sorted keeps its serde JSON');
  assert.deepEqual((await pool.query('SELECT version FROM schema_version')).rows, [{ version: 1 }, { version: 2 }]);
});

pgTest('postgres store: the same session written by the SQLite store has the same rows, byte for byte', { skip: hasSqlite ? false : NO_SQLITE }, async () => {
  const url = await freshDatabase();
  await writeSession(await PostgresStore.open({ connectionString: url, sessionId: 's' }));
  const pool = poolOn(url);
  const fromPg = {
    events: (await pool.query(EVENT_ROWS)).rows.map(rowOf),
    checkpoints: (await pool.query(CHECKPOINT_ROWS)).rows,
    projection: (await pool.query(PROJECTION_ROWS)).rows.map((row) => ({ ...row, event_count: Number(row.event_count) })),
  };
  const { SqliteStore } = await import('contextfold/stores/sqlite');
  const { DatabaseSync } = await import('node:sqlite');
  const scratch = await mkdtemp(path.join(tmpdir(), 'contextfold-pg-sqlite-'));
  try {
    const file = path.join(scratch, 'ledger.sqlite');
    await writeSession(await SqliteStore.open({ path: file, sessionId: 's' }));
    const db = new DatabaseSync(file);
    const fromSqlite = {
      events: db.prepare(EVENT_ROWS).all().map(rowOf),
      checkpoints: db.prepare(CHECKPOINT_ROWS).all().map((row) => ({ ...row })),
      projection: db.prepare(PROJECTION_ROWS).all().map((row) => ({ ...row, event_count: Number(row.event_count) })),
    };
    db.close();
    assert.equal(fromPg.events.length, 48);
    assert.equal(fromPg.checkpoints.length, 2);
    assert.deepEqual(fromPg, fromSqlite);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
});

pgTest('postgres store: a stale writer\'s append is a typed store_conflict, nothing written, the store usable after refresh()', {}, async () => {
  const url = await freshDatabase();
  const a = await PostgresStore.open({ connectionString: url, sessionId: 's' });
  const b = await PostgresStore.open({ connectionString: url, sessionId: 's' });
  const events = sessionEvents('s', 3);
  await a.appendEvents(events.slice(0, 4));
  const error = await rejectsWith(assert, b.appendEvents(events.slice(0, 4).map((event) => ({ ...event, runtimeEventId: `b-${event.seq}` }))), 'store_conflict');
  assert.equal(error.conflict, true);
  assert.equal(b.log.length, 0, 'the refused batch left the log');
  // Seqs above the other writer's collide with no key: only the check against the database's
  // last seq refuses them (b has not seen seq 1-4).
  const above = await rejectsWith(assert, b.appendEvents(events.slice(8).map((event) => ({ ...event, runtimeEventId: `b-${event.seq}` }))), 'store_conflict');
  assert.equal(above.conflict, true);
  assert.equal(b.log.length, 0);
  assert.equal(await b.refresh(), 4);
  assert.deepEqual(b.log.events(), events.slice(0, 4));
  await b.appendEvents(events.slice(4, 8));
  await rejectsWith(assert, a.appendEvents(events.slice(4, 8)), 'store_conflict');
  await a.refresh();
  await a.appendEvents(events.slice(8));
  await a.close();
  await b.close();
  const seqs = (await poolOn(url).query('SELECT seq FROM runtime_events ORDER BY seq')).rows.map((row) => Number(row.seq));
  assert.deepEqual(seqs, events.map((event) => event.seq));
});

pgTest('postgres store: of two writers appending at once from the same view exactly one commits, 20 rounds (the session lock)', {}, async () => {
  const url = await freshDatabase();
  const a = await PostgresStore.open({ connectionString: url, sessionId: 's' });
  const b = await PostgresStore.open({ connectionString: url, sessionId: 's' });
  const mark = (events, who) => events.map((event) => ({ ...event, runtimeEventId: `${who}-${event.seq}`, turnId: `${who}-${event.turnId}`, content: event.content.callId ? { ...event.content, callId: `${who}-${event.content.callId}` } : event.content }));
  for (let round = 0; round < 20; round += 1) {
    const next = (a.log.events().at(-1)?.seq ?? 0) + 1;
    // Seqs that never collide: without the lock both would read the same last seq and commit.
    const [first, second] = await Promise.allSettled([
      a.appendEvents(mark(sessionEvents('s', 1, 0).map((event) => ({ ...event, seq: next + event.seq - 1 })), `a${round}`)),
      b.appendEvents(mark(sessionEvents('s', 1, 0).map((event) => ({ ...event, seq: next + 100 + event.seq - 1 })), `b${round}`)),
    ]);
    const outcomes = [first.status, second.status].sort();
    assert.deepEqual(outcomes, ['fulfilled', 'rejected'], `round ${round}: exactly one writer commits`);
    const refused = [first, second].find((result) => result.status === 'rejected').reason;
    assert.equal(refused.code, 'store_conflict');
    await a.refresh();
    await b.refresh();
    assert.deepEqual(a.log.events(), b.log.events());
  }
  await a.close();
  await b.close();
});

pgTest('postgres store: of two writers compacting from one tip the second gets successor_conflict; the row is the winner\'s', {}, async () => {
  const url = await freshDatabase();
  const a = await PostgresStore.open({ connectionString: url, sessionId: 's' });
  await a.appendEvents(sessionEvents('s', 6));
  const b = await PostgresStore.open({ connectionString: url, sessionId: 's' });
  assert.equal((await compactStore(a, 'cp-a')).outcome, 'recorded');
  const lost = await compactStore(b, 'cp-b');
  assert.equal(lost.outcome, 'failed_open');
  assert.equal(lost.reason, 'successor_conflict');
  assert.equal(b.checkpoint, null);
  await b.refresh();
  assert.equal(b.checkpoint.checkpointId, 'cp-a');
  await a.close();
  await b.close();
  const pool = poolOn(url);
  assert.deepEqual((await pool.query(PROJECTION_ROWS)).rows.map((row) => row.checkpoint_id), ['cp-a']);
  assert.equal((await pool.query(CHECKPOINT_ROWS)).rows.length, 1);
});

pgTest('postgres store: two Node processes append to one session at once: seq contiguous, every acknowledged event once, conflicts typed', { timeout: 120_000 }, async () => {
  const url = await freshDatabase();
  const writer = path.join(repoRoot, 'pkg-tests/stores/pg-writer.js');
  const turns = 15;
  const children = ['p1', 'p2'].map((name) => run(process.execPath, [writer, url, 'shared', name, String(turns)], { cwd: path.join(repoRoot, 'pkg-tests') }));
  const reports = (await Promise.all(children)).map(({ stdout }) => JSON.parse(stdout.trim().split('\n').at(-1)));
  for (const report of reports) {
    assert.deepEqual(report.errors, []);
    assert.equal(report.acked.length, turns * 4);
  }
  const rows = (await poolOn(url).query("SELECT seq, runtime_event_id FROM runtime_events WHERE session_id = 'shared' ORDER BY seq")).rows;
  assert.deepEqual(rows.map((row) => Number(row.seq)), Array.from({ length: 2 * turns * 4 }, (_, i) => i + 1), 'seq contiguous from 1');
  assert.deepEqual(rows.map((row) => row.runtime_event_id).sort(), reports.flatMap((report) => report.acked).sort(), 'every acknowledged event, once, and nothing else');
  const store = await PostgresStore.open({ connectionString: url, sessionId: 'shared' });
  assert.equal(store.log.length, 2 * turns * 4, 'the shared log is a valid log');
  assert.deepEqual(store.recoveryDiagnostics, []);
  const recorded = reports.reduce((sum, report) => sum + (report.compactions['recorded:checkpoint_recorded'] ?? report.compactions['recorded:ok'] ?? 0), 0);
  for (const report of reports) {
    for (const key of Object.keys(report.compactions)) assert.match(key, /^(recorded:|failed_open:successor_conflict$)/, `${report.name}: ${key}`);
  }
  console.log(`two writers: ${JSON.stringify(reports.map(({ name, eventConflicts, compactions }) => ({ name, eventConflicts, compactions })))}; checkpoint ${store.checkpoint?.checkpointId} (recorded ${recorded})`);
  assert.ok(store.checkpoint, 'a checkpoint is current');
  await store.close();
});

pgTest('postgres store: the append-only triggers refuse UPDATE and DELETE through the store\'s own pool', {}, async () => {
  const url = await freshDatabase();
  const pool = poolOn(url);
  await writeSession(await PostgresStore.open({ pool, sessionId: 's' }));
  const { pgError } = await import('../node_modules/contextfold/stores/postgres-client.js');
  const statements = [
    "UPDATE runtime_events SET event_json = replace(event_json, 'Turn 1:', 'Turn 7:') WHERE seq = 5",
    'DELETE FROM runtime_events WHERE seq = 48',
    "UPDATE agent_run_events SET payload_json = '{}'",
    'DELETE FROM agent_run_events',
    'TRUNCATE runtime_events',
  ];
  for (const sql of statements) {
    const error = await pool.query(sql).then(() => null, (cause) => pgError('rewriting history', cause));
    assert.ok(error, `${sql} was refused`);
    assert.equal(error.code, 'storage_append_only', sql);
    assert.equal(error.sqlstate, 'CFA01');
  }
  assert.equal((await pool.query('SELECT count(*)::int AS n FROM runtime_events')).rows[0].n, 48);
  const again = await PostgresStore.open({ pool, sessionId: 's' });
  assert.equal(again.checkpoint.checkpointId, 'cp-2');
  await again.close();
});

pgTest('postgres store: a full disk (SQLSTATE 53100 on insert) is storage_disk_full, and nothing of the batch is written', {}, async () => {
  const url = await freshDatabase();
  const pool = poolOn(url);
  const store = await PostgresStore.open({ pool, sessionId: 's' });
  const events = sessionEvents('s', 3);
  await store.appendEvents(events.slice(0, 4));
  await pool.query(`CREATE FUNCTION disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.seq >= 7 THEN RAISE EXCEPTION 'could not extend file' USING ERRCODE = '53100'; END IF; RETURN NEW; END $$;
    CREATE TRIGGER disk_full BEFORE INSERT ON runtime_events FOR EACH ROW EXECUTE FUNCTION disk_full();`);
  const error = await rejectsWith(assert, store.appendEvents(events.slice(4, 8)), 'store_write_failed');
  assert.equal(error.cause?.code, 'storage_disk_full');
  assert.equal(error.cause?.sqlstate, '53100');
  assert.equal(error.cause?.retryable, false);
  await rejectsWith(assert, store.appendEvents(events.slice(8)), 'store_write_failed');
  await store.close();
  assert.equal((await pool.query('SELECT count(*)::int AS n FROM runtime_events')).rows[0].n, 4, 'seq 5 and 6 were rolled back with the batch');
  await pool.query('DROP TRIGGER disk_full ON runtime_events');
  const again = await PostgresStore.open({ pool, sessionId: 's' });
  assert.deepEqual(again.log.events(), events.slice(0, 4));
  await again.appendEvents(events.slice(4));
  await again.close();
});

pgTest('postgres store: a database of a newer schema is refused untouched; processes opening a new database together migrate it once', {}, async () => {
  const url = await freshDatabase();
  const opened = await Promise.all(Array.from({ length: 4 }, (_, i) => PostgresStore.open({ connectionString: url, sessionId: `s${i}` })));
  await Promise.all(opened.map((store) => store.close()));
  const pool = poolOn(url);
  assert.deepEqual((await pool.query('SELECT version FROM schema_version')).rows, [{ version: 1 }, { version: 2 }]);
  await pool.query('INSERT INTO schema_version (version) VALUES (3)');
  await rejectsWith(assert, PostgresStore.open({ pool, sessionId: 's' }), 'store_schema_too_new');
  assert.deepEqual((await pool.query('SELECT version FROM schema_version ORDER BY version')).rows.map((row) => row.version), [1, 2, 3]);
});

const BIN = process.env.CONTEXTFOLD_BIN ?? path.join(repoRoot, 'target', 'debug', 'contextfold');
const NO_BIN = (await import('node:fs')).existsSync(BIN) ? false : `no contextfold binary at ${BIN} (set CONTEXTFOLD_BIN)`;

/** `contextfold <args> --json` against the native binary: `{ code, json, stderr }`. */
async function cli(...args) {
  try {
    const { stdout, stderr } = await run(BIN, ['--json', ...args], { maxBuffer: 64 << 20 });
    return { code: 0, json: JSON.parse(stdout), stderr };
  } catch (error) {
    if (typeof error.code !== 'number') throw error;
    return { code: error.code, json: error.stdout ? JSON.parse(error.stdout) : null, stderr: error.stderr };
  }
}

pgTest('postgres store: a Node agent and the native host share one database', { skip: NO_BIN }, async () => {
  const url = await freshDatabase();
  // Node writes six turns and a checkpoint; the native host projects them, replaying it.
  const store = await PostgresStore.open({ connectionString: url, sessionId: 's' });
  await store.appendEvents(sessionEvents('s', 6));
  assert.equal((await compactStore(store, 'cp-node')).outcome, 'recorded');
  await store.appendEvents(sessionEvents('s', 6, 6));
  await store.close();
  const projected = await cli('project', '--db', url, '--session', 's', '--context-window', '4000');
  assert.equal(projected.code, 0, projected.stderr);
  assert.equal(projected.json.checkpoint.checkpointId, 'cp-node', 'the host replays the checkpoint Node recorded');

  // The host compacts further (its compare-and-swap over Node's tip); Node reopens on the
  // host's checkpoint, its successor, and appends after it.
  const compacted = await cli('compact', '--db', url, '--session', 's', '--context-window', '4000', '--summarizer', 'extractive');
  assert.equal(compacted.code, 0, compacted.stderr);
  assert.equal(compacted.json.outcome, 'recorded', JSON.stringify(compacted.json));
  const hostCheckpoint = compacted.json.checkpoint;
  assert.equal(hostCheckpoint.previousCheckpointId, 'cp-node');
  const reopened = await PostgresStore.open({ connectionString: url, sessionId: 's' });
  assert.equal(reopened.checkpoint?.checkpointId, hostCheckpoint.checkpointId);
  assert.equal(reopened.log.events().length, 48);
  await reopened.appendEvents(sessionEvents('s', 1, 12));
  await reopened.close();
  const exported = await cli('export', '--db', url, '--session', 's');
  assert.equal(exported.code, 0, exported.stderr);
  assert.deepEqual(exported.json.events.map((e) => e.seq), Array.from({ length: 52 }, (_, i) => i + 1));
});

pgTest('postgres store: TLS verified against the server\'s CA; an unknown certificate is storage_tls_failed', { skip: process.env.CONTEXTFOLD_PG_CA ? false : 'CONTEXTFOLD_PG_CA is unset (scripts/with-postgres.sh sets it)' }, async () => {
  const url = await freshDatabase();
  const ca = readFileSync(process.env.CONTEXTFOLD_PG_CA, 'utf8');
  const pool = new pg.Pool({ connectionString: url, ssl: { ca }, max: 2, application_name: 'cf-js-tls' });
  pool.on('error', () => {});
  pools.push(pool);
  const store = await PostgresStore.open({ pool, sessionId: 's' });
  await store.appendEvents(sessionEvents('s', 1));
  const seen = await pool.query('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
  assert.equal(seen.rows[0].ssl, true, 'the connection is TLS');
  await store.close();
  const tls = new URL(url);
  tls.searchParams.set('sslmode', 'verify-full');
  await rejectsWith(assert, PostgresStore.open({ connectionString: tls.toString(), sessionId: 's' }), 'storage_tls_failed');
});
