// The page side of browser/stores.test.js (served with an import map for `contextfold`).
// `?mode=conformance` runs the store conformance suite over IndexedDbStore and reports each
// case; `?mode=reload&seed=N` reopens the session `s` of database `reload`, reports what it holds
// (checked against the session the loop writes), then appends seeded batches forever, reporting
// `begin` before and `ack` after each append, until the test reloads the page.
import { matchCheckpoint } from 'contextfold';
import { IndexedDbStore } from 'contextfold/stores/indexeddb';
import { storeCases } from '../stores/conformance.js';
import { sessionEvents, compactStore } from '../stores/session.js';
import { generator } from '../stores/random.js';

const params = new URL(location.href).searchParams;

/** The subset of node:assert the suite uses. */
const assert = {
  ok(value, message) {
    if (!value) throw new Error(message ?? 'expected a truthy value');
  },
  equal(actual, expected, message) {
    if (actual !== expected) throw new Error(`${message ?? 'not equal'}: ${JSON.stringify(actual)} !== ${JSON.stringify(expected)}`);
  },
  deepEqual(actual, expected, message) {
    const [a, b] = [JSON.stringify(actual), JSON.stringify(expected)];
    if (a !== b) throw new Error(`${message ?? 'not deep-equal'}: ${a.slice(0, 300)} !== ${b.slice(0, 300)}`);
  },
};

async function conformance() {
  const results = [];
  let counter = 0;
  for (const { name, fn } of storeCases()) {
    const fresh = async () => {
      const db = `conformance-${(counter += 1)}`;
      return { open: (sessionId) => IndexedDbStore.open({ name: db, sessionId }) };
    };
    try {
      await fn(assert, fresh);
      results.push({ name, ok: true });
    } catch (error) {
      results.push({ name, ok: false, error: `${error?.code ?? ''} ${error?.stack ?? error}` });
    }
  }
  return results;
}

/** Opens the reload session; a lock the previous document held may take a moment to go. */
async function openReloaded() {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await IndexedDbStore.open({ name: 'reload', sessionId: 's' });
    } catch (error) {
      if (error?.code !== 'store_locked' || attempt > 40) throw error;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}

async function reloadLoop() {
  const store = await openReloaded();
  const length = store.log.length;
  const events = store.log.events();
  const expected = sessionEvents('s', length / 4);
  const checkpoint = store.checkpoint;
  await window.__state({
    length,
    sameEvents: JSON.stringify(events) === JSON.stringify(expected),
    checkpointId: checkpoint?.checkpointId ?? null,
    covered: checkpoint ? matchCheckpoint(checkpoint, events).covered === checkpoint.coverage.eventCount : true,
  });
  const random = generator(Number(params.get('seed') ?? 1));
  for (;;) {
    const batch = sessionEvents('s', 1 + Math.floor(random() * 3), store.log.length / 4);
    window.__event(`begin events ${store.log.length + batch.length}`);
    await store.appendEvents(batch);
    window.__event(`ack events ${store.log.length}`);
    if (random() < 0.3) {
      const id = `cp-${store.log.length}`;
      window.__event(`begin checkpoint ${id}`);
      if ((await compactStore(store, id)).outcome === 'recorded') window.__event(`ack checkpoint ${id}`);
    }
  }
}

try {
  if (params.get('mode') === 'conformance') window.__done({ results: await conformance() });
  else await reloadLoop();
} catch (error) {
  window.__done({ error: `${error?.code ?? ''} ${error?.stack ?? error}` });
}
