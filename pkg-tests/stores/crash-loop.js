// The SIGKILL loop of the Node crash tests: spawn ./crash-child.js on a store, kill -9 it at a
// seeded moment (after a seeded number of acknowledged appends, plus a seeded delay), reopen the
// store and check that every acknowledged event and checkpoint is there, that at most the one
// append in flight was added on top, and that the log is the one the child wrote.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { matchCheckpoint } from 'contextfold';
import { generator } from './random.js';
import { sessionEvents } from './session.js';

const CHILD = fileURLToPath(new URL('./crash-child.js', import.meta.url));

/** Runs the child until `acks` acknowledgements plus `delayMs`, kills it; resolves its log. */
function runAndKill({ kind, location, seed, acks, delayMs }) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, kind, location, String(seed)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let seen = 0;
    let killed = false;
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      out += chunk;
      seen = (out.match(/^ack /gm) ?? []).length;
      if (!killed && seen >= acks) {
        killed = true;
        setTimeout(() => child.kill('SIGKILL'), delayMs);
      }
    });
    child.stderr.on('data', (chunk) => { err += chunk; });
    child.on('error', reject);
    // 'close': reaped (its pid is free, so its lock is stale) and all its output read.
    child.on('close', (code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`the child ended on its own (${code}): ${err}`));
      else resolve(out.split('\n').slice(0, -1));
    });
  });
}

/** The acknowledged state and what was in flight, from the child's complete output lines. */
function acknowledged(lines) {
  const state = { opened: null, events: null, inflightEvents: null, checkpoint: null, inflightCheckpoint: null };
  for (const line of lines) {
    const [word, what, value] = line.split(' ');
    if (word === 'open') state.opened = Number(what);
    else if (word === 'begin' && what === 'events') state.inflightEvents = Number(value);
    else if (word === 'ack' && what === 'events') [state.events, state.inflightEvents] = [Number(value), null];
    else if (word === 'begin' && what === 'checkpoint') state.inflightCheckpoint = value;
    else if (word === 'ack' && what === 'checkpoint') [state.checkpoint, state.inflightCheckpoint] = [value, null];
  }
  return state;
}

/**
 * `iterations` kill-and-reopen rounds on one store location. `open()` reopens it in this
 * process; `afterEach(store, round)` may check more (e.g. `contextfold verify`). Resolves to
 * figures: rounds, events, checkpoints, in-flight appends found committed, repairs reported.
 */
export async function crashLoop({ assert, kind, location, open, iterations = 20, seed = 1, afterEach }) {
  const random = generator(seed);
  const figures = { rounds: 0, events: 0, checkpoints: 0, inflightCommitted: 0, repaired: 0, ms: 0 };
  const started = Date.now();
  let lastCheckpoint = null;
  for (let round = 0; round < iterations; round += 1) {
    const lines = await runAndKill({ kind, location, seed: seed * 1000 + round, acks: 1 + Math.floor(random() * 6), delayMs: Math.floor(random() * 25) });
    const acked = acknowledged(lines);
    const store = await open();
    try {
      const length = store.log.length;
      const allowed = [acked.events ?? acked.opened, acked.inflightEvents].filter((n) => n !== null);
      assert.ok(allowed.includes(length), `round ${round}: ${length} events after the kill; acknowledged ${acked.events}, in flight ${acked.inflightEvents}`);
      if (length === acked.inflightEvents) figures.inflightCommitted += 1;
      assert.deepEqual(store.log.events(), sessionEvents('s', length / 4), `round ${round}: the events are the ones written`);
      const expected = acked.checkpoint ?? lastCheckpoint;
      const found = store.checkpoint?.checkpointId ?? null;
      assert.ok(found === expected || (found !== null && found === acked.inflightCheckpoint), `round ${round}: checkpoint ${found}; acknowledged ${expected}, in flight ${acked.inflightCheckpoint}`);
      if (store.checkpoint) assert.equal(matchCheckpoint(store.checkpoint, store.log.events()).covered, store.checkpoint.coverage.eventCount);
      lastCheckpoint = found;
      if ((store.storageDiagnostics ?? []).length > 0) figures.repaired += 1;
      await afterEach?.(store, round);
      figures.events = length;
    } finally {
      await store.close();
    }
    figures.rounds += 1;
    if (acked.checkpoint) figures.checkpoints += 1;
  }
  figures.ms = Date.now() - started;
  return figures;
}
