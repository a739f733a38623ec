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

/** A session whose texts and tool outputs are long enough to be shared (256 UTF-8 bytes on). */
function longSession(sessionId = 'held') {
  const events = [];
  const push = (turn, content) => {
    const seq = events.length + 1;
    events.push({ sessionId, runId: 'r', turnId: `t${turn}`, runtimeEventId: `e${seq}`, seq, content });
  };
  for (let turn = 0; turn < 6; turn += 1) {
    const text = `${'测试 🦀 '.repeat(20 + turn)}${turn}`;
    push(turn, { type: 'user_text', text });
    push(turn, { type: 'tool_call', callId: `c${turn}`, toolName: 'read', input: { path: 'a', lines: [text, 'short'] } });
    push(turn, { type: 'tool_result', callId: `c${turn}`, toolName: 'read', output: { content: `${'x'.repeat(300)}${turn}` } });
    push(turn, { type: 'assistant_text', text: `${'ok '.repeat(100)}${turn}` });
  }
  return events;
}

const wide = { model: { contextWindow: 100_000_000 } };

test('the long strings of events appended as objects come back from JS, as they were appended', () => {
  const events = longSession();
  const copy = structuredClone(events);
  const log = new EventLog();
  log.append(events.slice(0, 10));
  for (const event of events.slice(10)) log.append(event);
  for (const format of ['ai-sdk', 'openai-chat', 'openai-responses', 'anthropic', 'neutral']) {
    assert.deepEqual(log.project({ ...wide, format }), project({ events: copy, ...wide, format }), format);
  }
  // The caller changes its objects afterwards (same lengths, other text): the log's projection
  // still holds what was appended.
  for (const event of events) {
    const content = event.content;
    if (typeof content.text === 'string') content.text = 'z'.repeat(content.text.length);
    if (content.input) content.input.lines[0] = 'z'.repeat(content.input.lines[0].length);
    if (content.output) content.output = { content: 'z'.repeat(content.output.content.length) };
  }
  assert.deepEqual(log.project(wide), project({ events: copy, ...wide }));
  log.free();
});

test('a log appended partly as JSONL and partly as objects, or with toJSON, projects the same', () => {
  const events = longSession('mixed');
  const expected = project({ events, ...wide });
  const jsonl = events.slice(0, 12).map((event) => JSON.stringify(event)).join('\n');
  const log = new EventLog();
  log.append(jsonl);
  log.append(events.slice(12, 16));
  log.append(Buffer.from(events.slice(16, 20).map((event) => JSON.stringify(event)).join('\n')));
  log.append(events.slice(20));
  assert.deepEqual(log.project(wide), expected);
  log.free();
  // An object whose toJSON writes another text than it holds: the log keeps what toJSON gave.
  const replaced = `${'r'.repeat(400)}!`;
  const tricky = events.map((event) => ({ ...event, content: { ...event.content } }));
  const user = tricky.findIndex((event) => event.content.type === 'user_text');
  tricky[user].content = { ...tricky[user].content, toJSON: () => ({ type: 'user_text', text: replaced }) };
  const written = JSON.parse(JSON.stringify(tricky));
  const trickyLog = new EventLog();
  trickyLog.append(tricky);
  const projected = trickyLog.project(wide);
  assert.deepEqual(projected, project({ events: written, ...wide }));
  assert.ok(JSON.stringify(projected).includes(replaced));
  trickyLog.free();
});
