// One writer of a shared PostgreSQL session, run as a child process by
// test/stores-postgres.test.js: `node stores/pg-writer.js URL SESSION NAME TURNS`. Appends TURNS
// whole turns of its own (event ids `NAME-<seq>`), each after the session's last `seq` as the
// store knows it; another writer's append first is a typed `store_conflict`, answered by
// `refresh()` and a retry with the next `seq`. Every third turn it compacts; a lost
// compare-and-swap comes back as the outcome `failed_open` / `successor_conflict` and is
// answered by `refresh()` too. Prints one JSON line: the acknowledged event ids, the conflicts
// and the compaction outcomes; any other error is printed with its code and exits 1.
import { PostgresStore } from 'contextfold/stores/postgres';
import { turnEvents, compactStore } from './session.js';

const [url, sessionId, name, turnsText] = process.argv.slice(2);
const turns = Number(turnsText);

/** Turn `turn`'s four events from `seq`, marked as this writer's. */
function myTurn(turn, seq) {
  return turnEvents(sessionId, turn, seq).map((event) => ({
    ...event,
    runtimeEventId: `${name}-${event.seq}`,
    runId: `${name}-run-${turn}`,
    turnId: `${name}-t${turn}`,
    content: event.content.callId ? { ...event.content, callId: `${name}-${event.content.callId}` } : event.content,
  }));
}

const report = { name, acked: [], eventConflicts: 0, compactions: {}, errors: [] };
const store = await PostgresStore.open({ connectionString: url, sessionId, poolSize: 2 });
try {
  for (let turn = 0; turn < turns; turn += 1) {
    for (;;) {
      const seq = store.log.length + 1;
      const events = myTurn(turn, seq);
      try {
        await store.appendEvents(events);
        report.acked.push(...events.map((event) => event.runtimeEventId));
        break;
      } catch (error) {
        if (error?.code !== 'store_conflict' || error.conflict !== true) throw error;
        report.eventConflicts += 1;
        await store.refresh();
      }
    }
    if (turn % 3 === 2) {
      const outcome = await compactStore(store, `cp-${name}-${turn}`);
      const key = `${outcome.outcome}:${outcome.reason}`;
      report.compactions[key] = (report.compactions[key] ?? 0) + 1;
      if (outcome.outcome !== 'recorded') await store.refresh();
    }
  }
} catch (error) {
  report.errors.push({ code: error?.code, message: String(error?.message ?? error), cause: error?.cause?.code });
  process.exitCode = 1;
} finally {
  await store.close();
}
console.log(JSON.stringify(report));
