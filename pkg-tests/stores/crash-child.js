// The writer the crash tests kill: opens a durable store and appends whole turns of the test
// session in seeded batches, compacting every few batches, until it is killed. It prints
// `begin events <n>` before an append that will make the log `n` events long and `ack events <n>`
// once it resolved; `begin checkpoint <id>` / `ack checkpoint <id>` likewise around a compaction
// that records a checkpoint. Usage: node crash-child.js <jsonl|sqlite> <location> <seed>
import { generator } from './random.js';
import { sessionEvents, compactStore } from './session.js';

const [kind, location, seedText] = process.argv.slice(2);
const SESSION = 's';

async function openStore() {
  if (kind === 'jsonl') {
    const { JsonlFileStore } = await import('contextfold/stores/jsonl');
    return JsonlFileStore.open({ directory: location, sessionId: SESSION });
  }
  const { SqliteStore } = await import('contextfold/stores/sqlite');
  return SqliteStore.open({ path: location, sessionId: SESSION });
}

const say = (line) => process.stdout.write(`${line}\n`);
const random = generator(Number(seedText ?? 1));
const store = await openStore();
say(`open ${store.log.length}`);
for (let batch = 0; batch < 10_000; batch += 1) {
  const turns = 1 + Math.floor(random() * 3);
  const events = sessionEvents(SESSION, turns, store.log.length / 4);
  say(`begin events ${store.log.length + events.length}`);
  await store.appendEvents(events);
  say(`ack events ${store.log.length}`);
  if (random() < 0.35) {
    const id = `cp-${store.log.length}`;
    say(`begin checkpoint ${id}`);
    const outcome = await compactStore(store, id);
    if (outcome.outcome === 'recorded') say(`ack checkpoint ${id}`);
  }
}
await store.close();
