// The node:sqlite store (Node 22.5 and later; scripts/test-npm.sh runs this file with Node 24):
// the conformance suite, the host's schema and rows byte for byte, `contextfold verify --deep`
// on ledgers written from JS (and a changed byte it catches), a native ledger opened in JS, and
// a SIGKILL loop. The native binary comes from CONTEXTFOLD_BIN (default target/debug/contextfold).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { SqliteStore } from 'contextfold/stores/sqlite';
import { storeCases, rejectsWith } from '../stores/conformance.js';
import { crashLoop } from '../stores/crash-loop.js';
import { sessionEvents, compactStore } from '../stores/session.js';
import { repoRoot } from './helpers.js';

const run = promisify(execFile);
const [major, minor] = process.versions.node.split('.').map(Number);
const hasSqlite = major > 22 || (major === 22 && minor >= 5 && (await import('node:sqlite').then(() => true, () => false)));
const NO_SQLITE = `node:sqlite needs Node >= 22.5; this is Node ${process.versions.node} (scripts/test-npm.sh runs this file with Node 24)`;
const BIN = process.env.CONTEXTFOLD_BIN ?? path.join(repoRoot, 'target', 'debug', 'contextfold');
const NO_BIN = existsSync(BIN) ? false : `no contextfold binary at ${BIN} (set CONTEXTFOLD_BIN; scripts/test-npm.sh builds it)`;
const sqliteTest = (name, options, fn) => test(name, { ...options, skip: hasSqlite ? options.skip ?? false : NO_SQLITE }, fn);

const scratch = await mkdtemp(path.join(tmpdir(), 'contextfold-sqlite-'));
let counter = 0;
const freshPath = () => path.join(scratch, `ledger-${(counter += 1)}.sqlite`);
test.after(() => rm(scratch, { recursive: true, force: true }));

/** `contextfold <args> --json`: `{ code, json, stderr }` (a failing command is not thrown). */
async function cli(...args) {
  try {
    const { stdout, stderr } = await run(BIN, ['--json', ...args], { maxBuffer: 64 << 20 });
    return { code: 0, json: JSON.parse(stdout), stderr };
  } catch (error) {
    if (typeof error.code !== 'number') throw error;
    return { code: error.code, json: null, stderr: error.stderr };
  }
}

const verify = (db, session = 's') => cli('verify', '--deep', '--db', db, '--session', session);

test('SqliteStore.open is store_unsupported_runtime without node:sqlite', { skip: hasSqlite ? 'node:sqlite is available here' : false }, async () => {
  await rejectsWith(assert, SqliteStore.open({ path: freshPath(), sessionId: 's' }), 'store_unsupported_runtime');
});

for (const { name, fn } of storeCases()) {
  sqliteTest(`sqlite store: ${name}`, {}, () => fn(assert, async () => {
    const file = freshPath();
    return { open: (sessionId) => SqliteStore.open({ path: file, sessionId }) };
  }));
}

/** A session of 12 turns and two checkpoints written from JS to a new file; its state. */
async function writtenSession(file = freshPath()) {
  const store = await SqliteStore.open({ path: file, sessionId: 's' });
  await store.appendEvents(sessionEvents('s', 6));
  assert.equal((await compactStore(store, 'cp-1')).outcome, 'recorded');
  await store.appendEvents(sessionEvents('s', 6, 6));
  assert.equal((await compactStore(store, 'cp-2')).outcome, 'recorded');
  const state = { events: store.log.events(), checkpoint: store.checkpoint, circuit: store.circuit };
  await store.close();
  return { file, state };
}

/** Reads a file with node:sqlite (only where it exists). */
async function readDb(file, read) {
  const { DatabaseSync } = await import('node:sqlite');
  const db = new DatabaseSync(file);
  try {
    return read(db);
  } finally {
    db.close();
  }
}

sqliteTest('sqlite store: a file written from JS has the host\'s schema, pragmas and rows, byte for byte', { skip: NO_BIN }, async () => {
  const { file } = await writtenSession();
  const events = sessionEvents('s', 12);
  const native = freshPath();
  const jsonl = path.join(scratch, 'events.jsonl');
  await writeFile(jsonl, events.map((event) => JSON.stringify(event)).join('\n'));
  const imported = await cli('import', '--db', native, '--session', 's', '--format', 'events-jsonl', jsonl);
  assert.equal(imported.code, 0, imported.stderr);
  const facts = (db) => ({
    schema: db.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name").all(),
    pageSize: db.prepare('PRAGMA page_size').get().page_size,
    userVersion: db.prepare('PRAGMA user_version').get().user_version,
    journal: db.prepare('PRAGMA journal_mode').get().journal_mode,
    meta: db.prepare('SELECT key, value FROM ledger_meta ORDER BY key').all(),
    rows: db.prepare('SELECT session_id, seq, runtime_event_id, event_json, canonical, turn_id, run_id, live_head, tokens FROM runtime_events ORDER BY seq').all(),
  });
  const fromJs = await readDb(file, facts);
  const fromHost = await readDb(native, facts);
  assert.deepEqual(fromJs.schema, fromHost.schema);
  assert.deepEqual({ ...fromJs, schema: null }, { ...fromHost, schema: null });
  assert.equal(fromJs.userVersion, 2);
  assert.equal(fromJs.pageSize, 16384);
  assert.equal(fromJs.rows.length, 48);
  assert.ok(fromJs.rows.some((row) => row.canonical === 0), 'a tool call whose keys are not sorted keeps its serde JSON');
});

sqliteTest('sqlite store: contextfold verify --deep accepts a ledger written from JS, and fails on one changed byte', { skip: NO_BIN }, async () => {
  const { file, state } = await writtenSession();
  const ok = await verify(file);
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ok.json.ok, true);
  assert.equal(ok.json.verified, 2);
  assert.equal(ok.json.projection.checkpointId, 'cp-2');
  assert.deepEqual(ok.json.rows, { checked: 48, canonical: ok.json.rows.canonical, mismatchedSeqs: [] });
  const native = await cli('checkpoints', '--db', file, '--session', 's');
  assert.equal(native.code, 0, native.stderr);
  assert.equal(JSON.stringify(native.json).includes('cp-2'), true);
  // One byte of a covered event (seq 5 is covered by both checkpoints): "Turn 1" → "Turn 7".
  await readDb(file, (db) => db.exec(`DROP TRIGGER runtime_events_no_update;
    UPDATE runtime_events SET event_json = replace(event_json, 'Turn 1:', 'Turn 7:') WHERE session_id = 's' AND seq = 5;`));
  const broken = await verify(file);
  assert.notEqual(broken.code, 0);
  assert.match(broken.stderr, /source_hash_mismatch|digest/);
  assert.ok(state.checkpoint);
});

sqliteTest('sqlite store: a retraction from JS and one from the native CLI are the same fact to both', { skip: NO_BIN }, async () => {
  const { file } = await writtenSession();
  const store = await SqliteStore.open({ path: file, sessionId: 's' });
  assert.equal((await store.retractCheckpoint('cp-2', 'lost the task')).checkpointId, 'cp-1');
  await store.close();
  // The native CLI reads the JS retraction: the projection row moved, verify passes.
  const listed = await cli('checkpoints', '--db', file, '--session', 's');
  assert.equal(listed.code, 0, listed.stderr);
  assert.equal(listed.json.current, 'cp-1');
  assert.match(listed.json.checkpoints[1].retracted, /lost the task/);
  const checked = await verify(file);
  assert.equal(checked.code, 0, checked.stderr);
  assert.equal(checked.json.projection.recoveredTip, 'cp-1');
  // A native retraction is read by the store: nothing is current, and the store refuses it again.
  const native = await cli('checkpoints', '--db', file, '--session', 's', '--retract', 'cp-1', '--reason', 'start over');
  assert.equal(native.code, 0, native.stderr);
  const again = await SqliteStore.open({ path: file, sessionId: 's' });
  assert.equal(again.checkpoint, null);
  assert.deepEqual(again.retractions.map((r) => r.checkpointId), ['cp-2', 'cp-1']);
  await rejectsWith(assert, again.retractCheckpoint('cp-1', 'x'), 'checkpoint_already_retracted');
  await again.close();
});

sqliteTest('sqlite store: a background preparation\'s end is a preparation_settled AgentRun event, as the native runtime writes it; verify --deep still passes', { skip: NO_BIN }, async () => {
  const { file } = await writtenSession();
  const store = await SqliteStore.open({ path: file, sessionId: 's' });
  await store.recordPreparation({ fate: 'used', checkpointId: 'cp-prepared-1', summarizerTokens: 812, detail: null });
  await store.recordPreparation({ fate: 'failed', checkpointId: null, summarizerTokens: 40, detail: 'provider_unavailable' });
  await store.close();
  const rows = await readDb(file, (db) => db.prepare("SELECT run_id, payload_json FROM agent_run_events WHERE session_id = 's' AND kind = 'preparation_settled' ORDER BY ordinal").all());
  assert.deepEqual(rows.map((row) => JSON.parse(row.payload_json)), [
    { fate: 'used', checkpointId: 'cp-prepared-1', summarizerTokens: 812, detail: null },
    { fate: 'failed', checkpointId: null, summarizerTokens: 40, detail: 'provider_unavailable' },
  ]);
  assert.ok(rows.every((row) => row.run_id.length > 0));
  const reopened = await SqliteStore.open({ path: file, sessionId: 's' });
  assert.equal(reopened.checkpoint.checkpointId, 'cp-2', 'the events change nothing the store recovers');
  await reopened.close();
  const ok = await verify(file);
  assert.equal(ok.code, 0, ok.stderr);
});

sqliteTest('sqlite store: usage facts are model_usage_recorded AgentRun events, as the host writes them; contextfold project calibrates with them', { skip: NO_BIN }, async () => {
  const { file } = await writtenSession();
  const project = async (provider) => {
    const out = await cli('project', '--db', file, '--session', 's', '--provider', provider, '--model', 'm', '--context-window', '1000000');
    assert.equal(out.code, 0, out.stderr);
    return out.json.estimatedTokens;
  };
  const uncalibrated = await project('offline');
  const store = await SqliteStore.open({ path: file, sessionId: 's' });
  const fact = { provider: 'offline', model: 'm', estimatedInputTokens: 2000, kind: 'response', inputTokens: 3000, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 9 };
  await store.recordUsage(fact);
  await store.close();
  const rows = await readDb(file, (db) => db.prepare("SELECT run_id, payload_json FROM agent_run_events WHERE session_id = 's' AND kind = 'model_usage_recorded'").all());
  assert.deepEqual(rows.map((row) => JSON.parse(row.payload_json)), [fact]);
  assert.ok(rows[0].run_id.length > 0);
  // The native CLI learns the 1.5 ratio from the fact written in JS (only for its provider;
  // each event is scaled and rounded up).
  const calibrated = await project('offline');
  assert.ok(calibrated >= uncalibrated * 1.5 && calibrated < uncalibrated * 1.6, `${uncalibrated} -> ${calibrated}`);
  assert.equal(await project('other'), uncalibrated);
  const reopened = await SqliteStore.open({ path: file, sessionId: 's' });
  assert.deepEqual(reopened.calibration, { models: [{ provider: 'offline', model: 'm', samplesPermille: [1500] }] });
  await reopened.close();
  const ok = await verify(file);
  assert.equal(ok.code, 0, ok.stderr);
});

sqliteTest('sqlite store: a ledger the native CLI wrote opens in JS, continues, and still verifies', { skip: NO_BIN }, async () => {
  const file = freshPath();
  const demo = await cli('demo', '--db', file);
  assert.equal(demo.code, 0, demo.stderr);
  const exported = await cli('export', '--db', file, '--session', demo.json.session);
  const store = await SqliteStore.open({ path: file, sessionId: demo.json.session });
  assert.equal(store.log.length, demo.json.events);
  assert.deepEqual(store.log.events(), exported.json.events);
  const current = await cli('checkpoints', '--db', file, '--session', demo.json.session);
  assert.ok(store.checkpoint && JSON.stringify(current.json).includes(store.checkpoint.checkpointId));
  const last = store.log.events().at(-1);
  const next = { sessionId: last.sessionId, runId: 'run-js', turnId: 'turn-js', runtimeEventId: 'js-1', seq: last.seq + 1, content: { type: 'user_text', text: 'one more request, from JS' } };
  await store.appendEvents(next);
  await store.close();
  const checked = await verify(file, demo.json.session);
  assert.equal(checked.code, 0, checked.stderr);
  assert.equal(checked.json.rows.checked, demo.json.events + 1);
});

sqliteTest('sqlite store: a file of a newer schema is refused untouched', {}, async () => {
  const file = freshPath();
  await readDb(file, (db) => db.exec('PRAGMA user_version = 3'));
  await rejectsWith(assert, SqliteStore.open({ path: file, sessionId: 's' }), 'store_schema_too_new');
  assert.equal(await readDb(file, (db) => db.prepare('PRAGMA user_version').get().user_version), 3);
});

sqliteTest('sqlite store: another writer of the file is a conflict, never overwritten', { skip: NO_BIN }, async () => {
  const { file } = await writtenSession();
  const store = await SqliteStore.open({ path: file, sessionId: 's' });
  const jsonl = path.join(scratch, 'more.jsonl');
  await writeFile(jsonl, sessionEvents('s', 1, 12).map((event) => JSON.stringify(event)).join('\n'));
  const imported = await cli('import', '--db', file, '--session', 's', '--format', 'events-jsonl', jsonl);
  assert.equal(imported.code, 0, imported.stderr);
  await rejectsWith(assert, store.appendEvents(sessionEvents('s', 1, 13)), 'store_write_failed');
  await store.close();
  const again = await SqliteStore.open({ path: file, sessionId: 's' });
  assert.equal(again.log.length, 52);
  await again.close();
});

sqliteTest('sqlite store: SIGKILL at seeded moments loses no acknowledged append; verify --deep passes each round', { skip: NO_BIN, timeout: 180_000 }, async () => {
  const file = freshPath();
  const seed = Number(process.env.STORE_CRASH_SEED ?? 1);
  let verified = 0;
  const figures = await crashLoop({
    assert,
    kind: 'sqlite',
    location: file,
    seed,
    iterations: 20,
    open: () => SqliteStore.open({ path: file, sessionId: 's' }),
    afterEach: async (store) => {
      if (store.log.length === 0) return;
      const checked = await verify(file);
      assert.equal(checked.code, 0, checked.stderr);
      verified += checked.json.verified;
    },
  });
  console.log(`sqlite crash loop (seed ${seed}): ${JSON.stringify({ ...figures, checkpointsVerified: verified })}`);
  assert.equal(figures.rounds, 20);
});
