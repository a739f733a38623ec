// The conformance suite every store passes (Node: test/stores-*.test.js; Chromium:
// browser/stores.test.js). `storeCases(kind)` gives named cases; each takes `assert` (node:assert
// or the page's small equivalent: ok, equal, deepEqual) and `fresh()`, which resolves to a new,
// empty location `{ open(sessionId) }` of the store under test.
import { calibrate, importModelMessages } from 'contextfold';
import { sessionEvents, compactStore } from './session.js';

/** A usage fact of one request (`usageFact()`'s shape): `input` tokens counted for `estimate`. */
const fact = (estimate, input) => ({ provider: 'offline', model: 'm', estimatedInputTokens: estimate, kind: 'response', inputTokens: input, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 9 });

/** Awaits `promise` and checks that it rejects with a `ContextfoldError` of `code`. */
export async function rejectsWith(assert, promise, code) {
  let error = null;
  try {
    await promise;
  } catch (caught) {
    error = caught;
  }
  assert.ok(error, `expected a rejection with ${code}`);
  assert.equal(error.code, code, `expected ${code}, got ${error?.code}: ${error?.message}`);
  return error;
}

/** What a reopened store must hold: the same events, digest, checkpoint and circuit. */
function stateOf(store) {
  return {
    events: store.log.events(),
    digest: store.log.digest(),
    checkpoint: store.checkpoint,
    circuit: store.circuit,
  };
}

/**
 * The cases. `exclusive`: the store refuses a second writer (every durable store);
 * `durable`: a reopened location holds what was written (not the memory store).
 */
export function storeCases({ exclusive = true, durable = true } = {}) {
  const cases = [];
  const add = (name, fn) => cases.push({ name, fn });

  add('checkpoints() lists the recorded checkpoints and verify() checks each against the log', async (assert, fresh) => {
    const at = await fresh();
    const store = await at.open('s');
    await store.appendEvents(sessionEvents('s', 6));
    assert.equal((await compactStore(store, 'cp-1')).outcome, 'recorded');
    await store.appendEvents(sessionEvents('s', 6, 6));
    assert.equal((await compactStore(store, 'cp-2')).outcome, 'recorded');
    const listed = store.checkpoints();
    assert.deepEqual(listed.map((c) => [c.checkpointId, c.current, c.previousCheckpointId]), [['cp-1', false, null], ['cp-2', true, 'cp-1']]);
    const verified = await store.verify();
    assert.equal(verified.ok, true, JSON.stringify(verified));
    assert.deepEqual(verified.checkpoints.map((c) => [c.checkpointId, c.ok]), [['cp-1', true], ['cp-2', true]]);
    assert.deepEqual(verified.projection, { ok: true, checkpointId: 'cp-2', recoveredTip: 'cp-2' });
    assert.equal(verified.events, 48);
    // A record whose digest names other events (as a tampered storage would hold it, read back
    // through `restore`) is caught, and verify() writes nothing.
    const forged = { ...store.checkpoint, checkpointId: 'cp-forged', previousCheckpointId: 'cp-2', coverage: { ...store.checkpoint.coverage, sourceDigest: `sha256:${'0'.repeat(64)}` } };
    store.restore({ records: [{ eventId: 'forged', sessionId: 's', recordedAtMs: 1, payload: forged }] });
    const caught = await store.verify();
    assert.equal(caught.ok, false);
    assert.equal(caught.checkpoints[0].ok, false);
    assert.equal(caught.checkpoints[0].code, 'source_hash_mismatch', JSON.stringify(caught.checkpoints[0]));
    assert.equal(store.log.length, 48);
    await store.close();
  });

  add('retractCheckpoint() takes a compaction back, and what was built on it; the log is untouched', async (assert, fresh) => {
    const at = await fresh();
    const store = await at.open('s');
    await store.appendEvents(sessionEvents('s', 6));
    assert.equal((await compactStore(store, 'cp-1')).outcome, 'recorded');
    await store.appendEvents(sessionEvents('s', 6, 6));
    assert.equal((await compactStore(store, 'cp-2')).outcome, 'recorded');
    const digest = store.log.digest();
    const current = await store.retractCheckpoint('cp-2', 'lost the task');
    assert.equal(current.checkpointId, 'cp-1');
    assert.equal(store.checkpoint.checkpointId, 'cp-1');
    const listed = store.checkpoints();
    assert.deepEqual(listed.map((c) => [c.checkpointId, c.current, c.retracted !== null]), [['cp-1', true, false], ['cp-2', false, true]]);
    assert.ok(listed[1].retracted.includes('lost the task'), listed[1].retracted);
    const verified = await store.verify();
    assert.equal(verified.ok, true, JSON.stringify(verified));
    assert.deepEqual(verified.projection, { ok: true, checkpointId: 'cp-1', recoveredTip: 'cp-1' });
    assert.deepEqual(verified.retractions.map((r) => [r.checkpointId, r.reason]), [['cp-2', 'lost the task']]);
    await rejectsWith(assert, store.retractCheckpoint('cp-unknown', 'x'), 'checkpoint_not_found');
    await rejectsWith(assert, store.retractCheckpoint('cp-2', 'again'), 'checkpoint_already_retracted');
    await rejectsWith(assert, store.retractCheckpoint('cp-1'), 'invalid_argument');
    assert.equal(store.retractions.length, 1, 'refused retractions write nothing');
    // The next compaction succeeds the previous checkpoint.
    await store.appendEvents(sessionEvents('s', 2, 12));
    assert.equal((await compactStore(store, 'cp-3')).outcome, 'recorded');
    assert.equal(store.checkpoint.previousCheckpointId, 'cp-1');
    assert.equal(store.log.length, 56);
    await store.close();
    if (!durable) return;
    const again = await at.open('s');
    assert.equal(again.checkpoint.checkpointId, 'cp-3');
    assert.deepEqual(again.retractions.map((r) => r.checkpointId), ['cp-2']);
    assert.equal(again.log.events().slice(0, 48).length, 48);
    // Taking cp-1 back takes back cp-3, built on it: the raw source is current.
    assert.equal(await again.retractCheckpoint('cp-1', 'start over'), null);
    assert.deepEqual(again.checkpoints().map((c) => c.retracted !== null), [true, true, true]);
    assert.equal((await again.verify()).ok, true);
    await again.close();
    const third = await at.open('s');
    assert.equal(third.checkpoint, null);
    assert.ok(third.log.digest() !== digest, 'the log grew by the appended turns only');
    assert.equal(third.log.length, 56);
    await third.close();
  });

  add('events, checkpoints and the circuit survive a reopen unchanged', async (assert, fresh) => {
    const at = await fresh();
    const store = await at.open('s');
    const events = sessionEvents('s', 6);
    await store.appendEvents(events.slice(0, 5));
    await store.appendEvents(events[5]);
    await store.appendEvents(events.slice(6));
    const outcome = await compactStore(store, 'cp-1');
    assert.equal(outcome.outcome, 'recorded');
    assert.equal(store.checkpoint.checkpointId, 'cp-1');
    assert.ok(store.circuit, 'compact() recorded a circuit');
    const before = stateOf(store);
    assert.deepEqual(before.events, events);
    await store.close();
    if (!durable) return;
    const again = await at.open('s');
    assert.deepEqual(stateOf(again), before);
    assert.deepEqual(again.recoveryDiagnostics, []);
    await again.appendEvents(sessionEvents('s', 1, 6));
    assert.equal(again.log.length, events.length + 4);
    await again.close();
  });

  add('usage facts survive a reopen and teach the calibration; modelMessages() gives the conversation back', async (assert, fresh) => {
    const at = await fresh();
    const store = await at.open('s');
    assert.equal(store.calibration, null);
    assert.deepEqual(store.modelMessages(), []);
    const events = sessionEvents('s', 3);
    await store.appendEvents(events);
    const facts = [fact(1000, 1400), fact(2000, 2200), { provider: 'offline', model: 'm', estimatedInputTokens: 3000, kind: 'overflow', limitTokens: 3200 }];
    for (const one of facts) await store.recordUsage(one);
    await rejectsWith(assert, store.recordUsage({ provider: 'offline' }), 'invalid_usage_fact');
    const calibration = facts.reduce((c, f) => calibrate(c, f), null);
    assert.deepEqual(store.calibration, calibration);
    assert.deepEqual(store.usageFacts, facts);
    const messages = store.modelMessages();
    assert.deepEqual(importModelMessages(messages, { sessionId: 's' }).map((e) => e.content), events.map((e) => e.content));
    await store.close();
    if (!durable) return;
    const again = await at.open('s');
    assert.deepEqual(again.calibration, calibration);
    assert.deepEqual(again.usageFacts, facts);
    assert.deepEqual(again.modelMessages(), messages);
    await again.recordUsage(fact(1000, 1000));
    await again.close();
  });

  add('a checkpoint that is not a successor of the tip is a conflict, and nothing is written', async (assert, fresh) => {
    const at = await fresh();
    const store = await at.open('s');
    await store.appendEvents(sessionEvents('s', 6));
    assert.equal((await compactStore(store, 'cp-1')).outcome, 'recorded');
    const first = store.checkpoint;
    const forged = { ...first, checkpointId: 'cp-forged', previousCheckpointId: null };
    const error = await rejectsWith(assert, store.appendCheckpoint(forged), 'successor_conflict');
    assert.equal(error.conflict, true);
    assert.equal(store.checkpoint.checkpointId, 'cp-1');
    await store.appendEvents(sessionEvents('s', 4, 6));
    assert.equal((await compactStore(store, 'cp-2')).outcome, 'recorded');
    assert.equal(store.checkpoint.previousCheckpointId, 'cp-1');
    const beyond = { ...store.checkpoint, checkpointId: 'cp-beyond', previousCheckpointId: 'cp-2', coverage: { ...store.checkpoint.coverage, eventCount: 999 } };
    await rejectsWith(assert, store.appendCheckpoint(beyond), 'checkpoint_beyond_log');
    const tip = stateOf(store);
    await store.close();
    if (!durable) return;
    const again = await at.open('s');
    assert.equal(again.checkpoint.checkpointId, 'cp-2');
    assert.deepEqual(stateOf(again), tip);
    await again.close();
  });

  add('invalid events are refused whole, and the store stays usable', async (assert, fresh) => {
    const at = await fresh();
    const store = await at.open('s');
    const events = sessionEvents('s', 3);
    await store.appendEvents(events.slice(0, 8));
    const repeat = { ...events[8], seq: 8 };
    await rejectsWith(assert, store.appendEvents([events[8], repeat]), 'log_seq_not_increasing');
    await rejectsWith(assert, store.appendEvents([{ ...events[8], runtimeEventId: 'e1' }]), 'log_duplicate_event_id');
    await rejectsWith(assert, store.appendEvents([{ ...events[8], content: { type: 'no_such_kind' } }]), 'event_unknown_kind');
    assert.equal(store.log.length, 8);
    await store.appendEvents(events.slice(8));
    assert.equal(store.log.length, events.length);
    await store.close();
    if (!durable) return;
    const again = await at.open('s');
    assert.deepEqual(again.log.events(), events);
    await again.close();
  });

  add('events and checkpoints of another session are refused', async (assert, fresh) => {
    const at = await fresh();
    const store = await at.open('s');
    await rejectsWith(assert, store.appendEvents(sessionEvents('other', 1)), 'store_session_mismatch');
    await store.appendEvents(sessionEvents('s', 6));
    assert.equal((await compactStore(store, 'cp-1')).outcome, 'recorded');
    const foreign = { ...store.checkpoint, checkpointId: 'cp-other', sessionId: 'other' };
    await rejectsWith(assert, store.appendCheckpoint(foreign), 'store_session_mismatch');
    await store.close();
    if (!durable) return;
    const other = await at.open('other');
    assert.equal(other.log.length, 0);
    assert.equal(other.checkpoint, null);
    await other.appendEvents(sessionEvents('other', 1));
    await other.close();
    const again = await at.open('s');
    assert.equal(again.log.length, 24);
    assert.equal(again.checkpoint.checkpointId, 'cp-1');
    await again.close();
  });

  if (exclusive) {
    add('a second writer of the session is refused while the first has it open', async (assert, fresh) => {
      const at = await fresh();
      const store = await at.open('s');
      await store.appendEvents(sessionEvents('s', 1));
      await rejectsWith(assert, at.open('s'), 'store_locked');
      const other = await at.open('other');
      await other.close();
      await store.close();
      const again = await at.open('s');
      assert.equal(again.log.length, 4);
      await again.close();
    });
  }

  add('a closed store refuses calls', async (assert, fresh) => {
    const at = await fresh();
    const store = await at.open('s');
    await store.close();
    await store.close();
    await rejectsWith(assert, store.appendEvents(sessionEvents('s', 1)), 'store_closed');
  });

  return cases;
}
