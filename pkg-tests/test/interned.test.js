// Events passed as objects send each long string into wasm once (pkg/interned.js) and refer to
// it afterwards; a projection without a checkpoint keeps the events' texts as references
// (wasm/contextfold-wasm/src/interned.rs). None of it may show: every result and every error
// must be the one of the same events as JSONL, which never takes that path, whatever the
// strings hold, wherever they are, and however the caller changes its events between calls.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { compact, digestPrefix, extractiveSummary, project } from 'contextfold';
import * as raw from '../../pkg/dist/node/contextfold_wasm.js';
import { MIN_UNITS, REFERENCE_PREFIX, StringInterner } from '../../pkg/interned.js';
import { projectSharing } from '../../pkg/values.js';

raw.useHashFactory(() => createHash('sha256'));

const long = (seed, units = 400) => `${seed} 测试 🚀 "q" \\ \t\u0007 `.repeat(Math.ceil(units / 20)).slice(0, units);
const jsonl = (events) => `${events.map((e) => JSON.stringify(e)).join('\n')}\n`;
const FORMATS = ['ai-sdk', 'openai-chat', 'openai-responses', 'anthropic', 'neutral'];

/**
 * A session with long strings in every place an event can hold one. A runtime note's text
 * goes into a text the core builds (`[runtime:code] text`), which sends the whole projection
 * back to the strings themselves: `notes: false` leaves it out, so the texts stay references.
 */
function session(sessionId = 's', { notes = true } = {}) {
  const events = [];
  const push = (turn, content, extra = {}) => {
    const seq = events.length + 1;
    events.push({ sessionId, runId: 'r', turnId: `t${turn}`, runtimeEventId: `e${seq}`, seq, content, ...extra });
  };
  push(0, { type: 'system_note', text: long('system') });
  push(0, { type: 'user_text', text: long('user') });
  push(0, { type: 'reasoning', text: long('thinking') }, { responseId: 'r0' });
  push(0, { type: 'tool_call', callId: 'c1', toolName: 'shell', input: long('string input') }, { responseId: 'r0' });
  push(0, { type: 'tool_call', callId: 'c2', toolName: 'shell', input: { argv: [long('nested input')] } }, { responseId: 'r0' });
  push(0, { type: 'tool_result', callId: 'c1', toolName: 'shell', output: long('output', 20_000) });
  push(0, { type: 'tool_result', callId: 'c2', toolName: 'shell', output: { lines: [long('nested output'), 'short'] }, isError: true });
  push(0, { type: 'assistant_text', text: long('answer') }, { responseId: 'r1', metadata: { note: long('metadata') } });
  if (notes) push(1, { type: 'runtime_note', code: 'context_compaction_failed_open', text: long('runtime note') });
  push(1, { type: 'user_text', text: long('user') });
  push(1, { type: 'tool_call', callId: 'c3', toolName: 'shell', input: {} }, { responseId: 'r2' });
  push(1, { type: 'assistant_text', text: long('answer 2') }, { responseId: 'r3' });
  push(2, { type: 'user_text', text: 'short' });
  return events;
}

function sameAsJsonl(events, options = {}) {
  for (const format of FORMATS) {
    const input = { model: { contextWindow: 1_000_000 }, format, ...options };
    assert.deepEqual(project({ events, ...input }), project({ events: jsonl(events), ...input }), format);
  }
  assert.equal(digestPrefix(events), digestPrefix(jsonl(events)));
}

test('projections and digests from objects equal those from JSONL, every format', () => {
  sameAsJsonl(session());
  sameAsJsonl(session('s', { notes: false }));
  sameAsJsonl(session('s', { notes: false }), { currentTurnId: 't2' });
  const stale = session('s', { notes: false });
  stale.push(...session('s', { notes: false }).slice(0, 8).map((e, i) => ({ ...e, turnId: `late${i >> 2}`, runtimeEventId: `x${i}`, seq: 100 + i, content: e.content.callId ? { ...e.content, callId: `${e.content.callId}x` } : e.content })));
  sameAsJsonl(stale, { model: { contextWindow: 2_000 } });
});

test('long ids, session ids and call ids are references too', () => {
  const sessionId = long('session', 300);
  const events = session(sessionId, { notes: false }).map((e) => ({ ...e, runtimeEventId: `${long('id', 300)}${e.seq}`, ...(e.content.callId ? { content: { ...e.content, callId: long(e.content.callId, 300) } } : {}) }));
  sameAsJsonl(events);
});

test('a checkpoint is verified over the strings themselves', async () => {
  const events = [...session(), ...session().map((e, i) => ({ ...e, turnId: `b${e.turnId}`, runtimeEventId: `b${i}`, seq: 100 + i, ...(e.content.callId ? { content: { ...e.content, callId: `b${e.content.callId}` } } : {}) }))];
  const ledger = [];
  const outcome = await compact({ events, model: { contextWindow: 8_000 }, trigger: 'manual', checkpointId: 'cp-1', nowMs: 1 }, {
    summarize: async (request) => ({ text: extractiveSummary(request.previousSummary, events.slice(request.fold.start, request.fold.end), request.targetTokens), finishReason: 'stop' }),
    appendCheckpoint: async (checkpoint) => ledger.push(checkpoint),
  });
  assert.equal(outcome.outcome, 'recorded');
  const { checkpoint } = outcome;
  sameAsJsonl(events, { checkpoint });
  assert.ok(project({ events, checkpoint, format: 'ai-sdk' }).checkpoint, 'the checkpoint replays');
  // One covered character changed: both paths refuse the checkpoint (and fail open) alike.
  assert.ok(checkpoint.coverage.eventCount > 5, 'the changed event is covered');
  const tampered = events.map((e) => e);
  tampered[5] = { ...events[5], content: { ...events[5].content, output: `${events[5].content.output.slice(0, -1)}!` } };
  sameAsJsonl(tampered, { checkpoint });
  const refused = project({ events: tampered, checkpoint, format: 'ai-sdk' });
  assert.equal(refused.checkpoint, null);
  assert.ok(refused.diagnostics.some((d) => d.code === 'source_hash_mismatch'), JSON.stringify(refused.diagnostics));
});

test('a string of the caller that looks like a reference is read as itself', () => {
  for (const text of [`${REFERENCE_PREFIX}0`, `${REFERENCE_PREFIX}1`, REFERENCE_PREFIX, `${REFERENCE_PREFIX}${'9'.repeat(MIN_UNITS)}`]) {
    const events = session('s', { notes: false });
    events[1].content.text = text;
    events[5].content.output = `${text} and more`;
    sameAsJsonl(events);
    assert.equal(project({ events, format: 'ai-sdk' }).messages[1].content, text);
  }
});

test('a long string with a lone surrogate fails as it does without references', () => {
  const events = session();
  events[5].content.output = `${long('x', 300)}\ud800`;
  assert.throws(() => project({ events, format: 'ai-sdk' }), (error) => error.code === 'event_invalid' || error.code === 'invalid_argument');
  const code = (() => { try { project({ events, format: 'ai-sdk' }); } catch (error) { return error.code; } })();
  const full = (() => { try { raw.project(JSON.stringify({ events, format: 'ai-sdk' }), true); } catch (error) { return error.code; } })();
  assert.equal(code, full);
});

test('the caller may change its events between calls', () => {
  const events = session('s', { notes: false });
  const before = project({ events, format: 'ai-sdk' });
  events[5] = { ...events[5], content: { ...events[5].content, output: long('changed output', 5000) } };
  events[1].content.text = long('changed user');
  const after = project({ events, format: 'ai-sdk' });
  assert.notDeepEqual(after, before);
  assert.deepEqual(after, project({ events: jsonl(events), format: 'ai-sdk' }));
});

test('values JSON would write otherwise travel as JSON text', () => {
  class Output { constructor(text) { this.text = text; } }
  const events = session();
  events[6].content.output = new Output(long('class instance'));
  events[7].metadata = { when: { toJSON: () => long('toJSON') } };
  sameAsJsonl(events);
});

test('the interner keeps one copy per string and releases what the last call did not use', () => {
  const interner = new StringInterner(raw, { slackUnits: 1000 });
  const first = session('one');
  const text = interner.encode(first);
  assert.ok(text.includes('\\u0000\\u0001cf:'), 'long strings are references');
  const held = interner.size;
  assert.ok(held.strings > 5 && held.units >= held.strings * MIN_UNITS);
  interner.encode(first);
  assert.deepEqual(interner.size, held, 'the same strings are not sent again');
  interner.encode(session('two').map((e) => ({ ...e, content: e.content.text ? { ...e.content, text: `${e.content.text}!` } : e.content })));
  assert.ok(interner.size.units <= 2 * held.units + 1000, 'unused strings are released over the bound');
  // A released id is reused, and what it held is gone from wasm: the old text must be sent again.
  const again = interner.encode(first);
  assert.deepEqual(raw.digestPrefix(again, true), digestPrefix(jsonl(first)));
});

test('many sessions in turn keep the interner bounded and every result right', () => {
  const interner = new StringInterner(raw, { slackUnits: 5000 });
  let largest = 0;
  for (let round = 0; round < 30; round += 1) {
    const events = session(`s${round % 7}`).map((e) => (e.content.text ? { ...e, content: { ...e.content, text: `${e.content.text}${round % 7}` } } : e));
    const text = interner.encode(events);
    assert.equal(raw.digestPrefix(text, true), digestPrefix(jsonl(events)));
    largest = Math.max(largest, interner.size.units);
  }
  assert.ok(largest < 3 * 40_000 + 5000, `held ${largest} units`);
});

test('interners on one module never mix their strings', () => {
  const first = new StringInterner(raw);
  const second = new StringInterner(raw);
  const one = session('one', { notes: false });
  const two = session('two', { notes: false }).map((e) => (e.content.text ? { ...e, content: { ...e.content, text: `${e.content.text} (two)` } } : e));
  const textOne = first.encode(one);
  const textTwo = second.encode(two);
  assert.equal(raw.digestPrefix(textOne, true), digestPrefix(jsonl(one)));
  assert.equal(raw.digestPrefix(textTwo, true), digestPrefix(jsonl(two)));
  // The package's own interner shares the module too.
  assert.deepEqual(project({ events: one, format: 'ai-sdk' }), project({ events: jsonl(one), format: 'ai-sdk' }));
  assert.equal(raw.digestPrefix(first.encode(one), true), digestPrefix(jsonl(one)));
});

test('a growing log reuses the events read before and projects like JSONL at every step', () => {
  const all = [...session('grow', { notes: false }), ...session('grow', { notes: false }).map((e, i) => ({ ...e, turnId: `g${e.turnId}`, runtimeEventId: `g${i}`, seq: 100 + i, ...(e.content.callId ? { content: { ...e.content, callId: `g${e.content.callId}` } } : {}) }))];
  const events = [];
  for (const event of all) {
    events.push(event);
    const input = { model: { contextWindow: 1_000_000 }, format: 'ai-sdk' };
    assert.deepEqual(project({ events, ...input }), project({ events: jsonl(events), ...input }), `${events.length} events`);
  }
  // A change before the end, an event removed, the same events again: each read right.
  events[3] = { ...events[3], content: { ...events[3].content, input: long('other input') } };
  sameAsJsonl(events);
  events.pop();
  sameAsJsonl(events);
  sameAsJsonl(events);
});

test('released strings never leave kept events naming them', () => {
  const interner = new StringInterner(raw, { slackUnits: 0 });
  for (let round = 0; round < 12; round += 1) {
    const events = session(`r${round % 3}`, { notes: false }).map((e) => (e.content.type === 'tool_result' && typeof e.content.output === 'string' ? { ...e, content: { ...e.content, output: long(`round ${round % 4}`, 2000) } } : e));
    const input = { events, model: { contextWindow: 1_000_000 }, format: 'ai-sdk' };
    assert.deepEqual(projectSharing(raw, input, interner), project({ ...input, events: jsonl(events) }), `round ${round}`);
  }
});

test('a released id reused for another string is never read from the kept events', () => {
  const interner = new StringInterner(raw, { slackUnits: 0 });
  const withNested = (text) => {
    const events = session('reuse', { notes: false });
    events[6] = { ...events[6], content: { ...events[6].content, output: { lines: [text] } } };
    return events;
  };
  const input = (events) => ({ events, model: { contextWindow: 1_000_000 }, format: 'ai-sdk' });
  // The nested string outweighs the others, so that it alone is released below.
  const first = withNested(long('first nested', 200_000));
  const firstText = interner.encode(first);
  assert.deepEqual(projectSharing(raw, input(first), interner), project(input(jsonl(first))));
  // A call through the same interner with every string but the nested one releases it ...
  raw.digestPrefix(interner.encode(first.filter((_, i) => i !== 6)), true);
  // ... and the same events with another nested string then name its id in the same place:
  // the same JSON text as the first call's, which must not be read from the kept events.
  const second = withNested(long('second nested', 200_000));
  assert.equal(interner.encode(second), firstText);
  assert.deepEqual(projectSharing(raw, input(second), interner), project(input(jsonl(second))));
});

test('continuations name the kept events exactly: interleaved interners, notes appended', () => {
  const first = new StringInterner(raw);
  const second = new StringInterner(raw);
  const input = (events) => ({ events, model: { contextWindow: 1_000_000 }, format: 'ai-sdk' });
  const one = session('one', { notes: false });
  const two = session('two', { notes: false }).map((e) => (e.content.text ? { ...e, content: { ...e.content, text: `${e.content.text} (two)` } } : e));
  for (let round = 0; round < 4; round += 1) {
    // Each interner's continuation names a state the other one replaced in between.
    assert.deepEqual(projectSharing(raw, input(one), first), project(input(jsonl(one))), `one, round ${round}`);
    assert.deepEqual(projectSharing(raw, input(two), second), project(input(jsonl(two))), `two, round ${round}`);
    one.push({ ...one[one.length - 1], runtimeEventId: `one-${round}`, seq: 1000 + round, content: { type: 'user_text', text: long(`more ${round}`) } });
  }
  // A runtime note appended to kept events: its text is built from the reference, so the
  // projection is redone over the whole text, which only the kept state still has.
  assert.deepEqual(projectSharing(raw, input(one), first), project(input(jsonl(one))));
  assert.deepEqual(projectSharing(raw, input(one), first), project(input(jsonl(one))));
  one.push({ ...one[one.length - 1], runtimeEventId: 'note', seq: 2000, content: { type: 'runtime_note', code: 'x', text: long('note') } });
  assert.deepEqual(projectSharing(raw, input(one), first), project(input(jsonl(one))));
  assert.deepEqual(projectSharing(raw, input(one), first), project(input(jsonl(one))));
});
