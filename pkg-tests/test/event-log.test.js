// EventLog: events held in wasm memory, digest kept incrementally, projection without resending.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ContextfoldError, EventLog, digestPrefix, prefixDigests, project } from 'contextfold';
import { compactionFixture } from './helpers.js';

const rolling = compactionFixture().cases.find((c) => c.name === 'rolling_pre_turn');
const { events, model } = rolling.input;
const checkpoint = rolling.expected.checkpoint;

test('appending one by one keeps the digest of every prefix', () => {
  const log = new EventLog();
  const expected = prefixDigests(events);
  assert.equal(log.length, 0);
  events.forEach((event, index) => {
    assert.equal(log.append(event), index + 1);
    assert.equal(log.digest(), expected[index]);
  });
  assert.equal(log.digest(), digestPrefix(events));
  assert.deepEqual(log.events(), events);
  log.free();
  log.free();
  assert.throws(() => log.digest(), (error) => error instanceof ContextfoldError && error.code === 'log_freed');
});

test('projection over the log equals project() over the same events, in every format', () => {
  const log = new EventLog();
  log.append(events);
  for (const format of ['ai-sdk', 'openai-chat', 'openai-responses', 'anthropic', 'neutral']) {
    assert.deepEqual(log.project({ checkpoint, model, format }), project({ events, checkpoint, model, format }), format);
  }
  assert.throws(() => log.project({ events }), (error) => error.code === 'invalid_argument');
  log.free();
});

test('a bad append is refused whole, with the core code, and the log is unchanged', () => {
  const log = new EventLog();
  log.append(events.slice(0, 5));
  const before = log.digest();
  const stale = [events[5], events[2]];
  assert.throws(() => log.append(stale), (error) => error instanceof ContextfoldError && error.code === 'log_seq_not_increasing');
  assert.throws(() => log.append([{ ...events[5], sessionId: 'other' }]), (error) => error.code === 'log_mixed_sessions');
  assert.throws(() => log.append([{ ...events[5], content: { type: 'telepathy' } }]), (error) => error.code === 'event_unknown_kind');
  assert.equal(log.length, 5);
  assert.equal(log.digest(), before);
  assert.equal(log.append(events.slice(5)), events.length);
  assert.equal(log.digest(), digestPrefix(events));
  log.free();
});
