// The memory and JSONL file stores: the conformance suite, the JSONL store's repair of a torn
// tail and refusal of corruption, its single-writer lock across processes, and a SIGKILL loop.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFile, mkdtemp, readFile, readdir, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MemoryStore } from 'contextfold/stores/memory';
import { JsonlFileStore } from 'contextfold/stores/jsonl';
import { storeCases, rejectsWith } from '../stores/conformance.js';
import { crashLoop } from '../stores/crash-loop.js';
import { sessionEvents, compactStore } from '../stores/session.js';

const scratch = await mkdtemp(path.join(tmpdir(), 'contextfold-jsonl-'));
let counter = 0;
const freshDirectory = () => path.join(scratch, `d${(counter += 1)}`, 'nested');
const openAt = (directory) => (sessionId) => JsonlFileStore.open({ directory, sessionId });

test.after(() => rm(scratch, { recursive: true, force: true }));

for (const { name, fn } of storeCases({ exclusive: false, durable: false })) {
  test(`memory store: ${name}`, () => fn(assert, async () => ({ open: (sessionId) => MemoryStore.open({ sessionId }) })));
}

for (const { name, fn } of storeCases()) {
  test(`JSONL store: ${name}`, () => fn(assert, async () => ({ open: openAt(freshDirectory()) })));
}

/** A directory holding a session of 3 turns and one checkpoint, closed. */
async function writtenSession() {
  const directory = freshDirectory();
  const store = await JsonlFileStore.open({ directory, sessionId: 's' });
  await store.appendEvents(sessionEvents('s', 6));
  assert.equal((await compactStore(store, 'cp-1')).outcome, 'recorded');
  const state = { events: store.log.events(), checkpoint: store.checkpoint, circuit: store.circuit };
  await store.close();
  return { directory, state, events: path.join(directory, 's.events.jsonl'), records: path.join(directory, 's.records.jsonl') };
}

test('JSONL store: the files are events JSON Lines and store records', async () => {
  const { directory, events, records } = await writtenSession();
  assert.deepEqual((await readdir(directory)).sort(), ['s.events.jsonl', 's.records.jsonl']);
  const lines = (await readFile(events, 'utf8')).split('\n');
  assert.equal(lines.pop(), '');
  assert.deepEqual(lines.map((line) => JSON.parse(line)), sessionEvents('s', 6));
  const kinds = (await readFile(records, 'utf8')).trim().split('\n').map((line) => JSON.parse(line).type);
  assert.deepEqual(kinds, ['events', 'checkpoint', 'circuit']);
});

test('JSONL store: a torn final line of either file is truncated and reported', async () => {
  const { directory, state, events, records } = await writtenSession();
  const eventsBytes = await readFile(events);
  const recordsBytes = await readFile(records);
  // An append that crashed: events written but never committed, and a torn record line.
  await appendFile(events, `${JSON.stringify(sessionEvents('s', 1, 6)[0])}\n{"sessionId":"s","ru`);
  await appendFile(records, '{"type":"events","cou');
  const store = await JsonlFileStore.open({ directory, sessionId: 's' });
  assert.deepEqual(store.storageDiagnostics.map((d) => [d.code, d.file]).sort(), [
    ['torn_tail_truncated', 's.events.jsonl'],
    ['torn_tail_truncated', 's.records.jsonl'],
  ]);
  assert.deepEqual({ events: store.log.events(), checkpoint: store.checkpoint, circuit: store.circuit }, state);
  assert.deepEqual(await readFile(events), eventsBytes, 'the file was cut back to its committed bytes');
  assert.deepEqual(await readFile(records), recordsBytes);
  await store.appendEvents(sessionEvents('s', 1, 6));
  await store.close();
  const again = await JsonlFileStore.open({ directory, sessionId: 's' });
  assert.equal(again.log.length, 28);
  assert.deepEqual(again.storageDiagnostics, []);
  await again.close();
});

test('JSONL store: damage before the last line is store_corrupt and nothing is changed', async () => {
  const { directory, events, records } = await writtenSession();
  const original = await readFile(events, 'utf8');
  await writeFile(events, original.replace('"seq":2,', '"seq":2,,'));
  await rejectsWith(assert, JsonlFileStore.open({ directory, sessionId: 's' }), 'store_corrupt');
  assert.equal(await readFile(events, 'utf8'), original.replace('"seq":2,', '"seq":2,,'), 'a corrupt file is left as it is');
  await writeFile(events, original);
  const recordsText = await readFile(records, 'utf8');
  await writeFile(records, `{oops}\n${recordsText}`);
  await rejectsWith(assert, JsonlFileStore.open({ directory, sessionId: 's' }), 'store_corrupt');
  await writeFile(records, recordsText);
  // Committed events that are missing (the events file lost its tail) are corruption too.
  await truncate(events, original.lastIndexOf('\n', original.length - 2) + 1);
  await rejectsWith(assert, JsonlFileStore.open({ directory, sessionId: 's' }), 'store_corrupt');
  await writeFile(events, original);
  // A recorded checkpoint over more events than the file holds.
  const cp = JSON.parse(recordsText.split('\n').find((line) => line.includes('"checkpoint"'))).record;
  const beyond = { ...cp, eventId: 'x', payload: { ...cp.payload, checkpointId: 'cp-beyond', previousCheckpointId: 'cp-1', coverage: { ...cp.payload.coverage, eventCount: 999 } } };
  await writeFile(records, `${recordsText}${JSON.stringify({ type: 'checkpoint', record: beyond })}\n`);
  const beyondError = await rejectsWith(assert, JsonlFileStore.open({ directory, sessionId: 's' }), 'store_corrupt');
  assert.match(beyondError.message, /cp-beyond covers 999 events/);
  await writeFile(records, recordsText);
  const store = await JsonlFileStore.open({ directory, sessionId: 's' });
  assert.equal(store.log.length, 24);
  await store.close();
});

/** Runs a node child that opens the store, prints `opened`, and waits to be killed. */
function holder(directory) {
  const script = `import { JsonlFileStore } from 'contextfold/stores/jsonl';
    await JsonlFileStore.open({ directory: ${JSON.stringify(directory)}, sessionId: 's' });
    console.log('opened'); setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: path.resolve(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), '..'), stdio: ['ignore', 'pipe', 'inherit'] });
  const opened = new Promise((resolve) => child.stdout.once('data', resolve));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return { child, opened, exited };
}

test('JSONL store: a live writer in another process keeps the lock; a dead one loses it', async () => {
  const directory = freshDirectory();
  const first = holder(directory);
  await first.opened;
  const error = await rejectsWith(assert, JsonlFileStore.open({ directory, sessionId: 's' }), 'store_locked');
  assert.match(error.message, new RegExp(`pid ${first.child.pid}`));
  first.child.kill('SIGKILL');
  await first.exited;
  assert.equal((await readFile(path.join(directory, 's.lock'), 'utf8')).trim(), String(first.child.pid), 'the killed writer left its lock');
  const store = await JsonlFileStore.open({ directory, sessionId: 's' });
  assert.equal((await readFile(path.join(directory, 's.lock'), 'utf8')).trim(), String(process.pid));
  await store.close();
  await assert.rejects(readFile(path.join(directory, 's.lock')), { code: 'ENOENT' });
});

test('JSONL store: SIGKILL at seeded moments loses no acknowledged append', { timeout: 120_000 }, async () => {
  const directory = freshDirectory();
  const seed = Number(process.env.STORE_CRASH_SEED ?? 1);
  const figures = await crashLoop({ assert, kind: 'jsonl', location: directory, seed, iterations: 20, open: () => JsonlFileStore.open({ directory, sessionId: 's' }) });
  console.log(`jsonl crash loop (seed ${seed}): ${JSON.stringify(figures)}`);
  assert.equal(figures.rounds, 20);
  assert.ok(figures.events > 0);
});
