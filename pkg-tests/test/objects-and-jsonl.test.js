// Events passed as objects (JSON text) and as JSONL (bytes) take different ways into wasm, and a
// projection's long strings come back through the UTF-16 table: every result and every error
// must be the one of the same events as JSONL, whatever the strings hold, wherever they are,
// and however the caller changes its events between calls.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compact, digestPrefix, extractiveSummary, project } from 'contextfold';

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

test('a long string with a lone surrogate fails with a typed error', () => {
  const events = session();
  events[5].content.output = `${long('x', 300)}\ud800`;
  assert.throws(() => project({ events, format: 'ai-sdk' }), (error) => error.code === 'event_invalid' || error.code === 'invalid_argument');
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

test('long arrays go through the hidden log of the last call and still see every change', async () => {
  const { generateSession } = await import('../bench/session.js');
  const events = generateSession(200, { outputBytes: 600, seed: 3 });
  const same = (label) => {
    for (const format of FORMATS) {
      const input = { model: { contextWindow: 1_000_000 }, format };
      assert.deepEqual(project({ events, ...input }), project({ events: jsonl(events), ...input }), `${label} ${format}`);
    }
    assert.equal(digestPrefix(events), digestPrefix(jsonl(events)), label);
  };
  same('first call');
  same('the same array again');
  events.push(...generateSession(208, { outputBytes: 600, seed: 3 }).slice(200));
  same('appended');
  events[10].content.output = `${events[10].content.output.slice(0, -1)}!`;
  same('a long string changed in place');
  events[11].content.text = 'short';
  same('a short string changed in place');
  events.length = 120;
  same('shortened');
  const other = generateSession(100, { outputBytes: 600, seed: 4, sessionId: 'other' });
  assert.deepEqual(project({ events: other }), project({ events: jsonl(other) }));
  const broken = events.map((e) => e);
  broken[50] = { ...broken[50], seq: 1 };
  const code = (fn) => { try { fn(); return 'ok'; } catch (error) { return error.code; } };
  assert.equal(code(() => project({ events: broken })), code(() => project({ events: jsonl(broken) })));
  assert.notEqual(code(() => project({ events: broken })), 'ok');
});
