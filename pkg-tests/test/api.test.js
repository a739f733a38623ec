// The pure functions of the package: typed results and ContextfoldError codes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ContextfoldError, canonicalEventJson, contextBudget, estimateEvents, importAnthropic, importModelMessages,
  matchCheckpoint, parseCheckpoint,
  project, recoverCheckpoint, validateLog, validateSummary,
} from 'contextfold';
import { compactionFixture } from './helpers.js';

const initial = compactionFixture().cases.find((c) => c.name === 'initial_manual');
const checkpoint = initial.expected.checkpoint;
const events = initial.input.events;

function throwsCode(fn, code) {
  assert.throws(fn, (error) => error instanceof ContextfoldError && error instanceof Error && error.code === code);
}

test('matchCheckpoint proves coverage and rejects an edited prefix', () => {
  assert.deepEqual(matchCheckpoint(checkpoint, events), { covered: checkpoint.coverage.eventCount });
  const edited = structuredClone(events);
  edited[0].content.text = 'something else';
  throwsCode(() => matchCheckpoint(checkpoint, edited), 'source_hash_mismatch');
});

test('parseCheckpoint keeps the JSON and rejects unknown schemas', () => {
  assert.deepEqual(parseCheckpoint(checkpoint), checkpoint);
  throwsCode(() => parseCheckpoint({ ...checkpoint, schemaVersion: 9 }), 'checkpoint_schema_unsupported');
});

test('validateSummary accepts the recorded summary and rejects truncation', () => {
  const valid = validateSummary(checkpoint.summary, 'stop', 1000);
  assert.equal(valid.text, checkpoint.summary);
  assert.ok(valid.estimatedTokens > 0);
  assert.throws(() => validateSummary(checkpoint.summary, 'length', 1000), (error) => error instanceof ContextfoldError && /summary|length/.test(error.code));
  throwsCode(() => validateSummary('   ', 'stop', 10), validateSummaryEmptyCode());
});

function validateSummaryEmptyCode() {
  try {
    validateSummary('   ', 'stop', 10);
  } catch (error) {
    return error.code;
  }
  throw new Error('blank summary accepted');
}

test('recoverCheckpoint selects the recorded checkpoint and reports bad records', () => {
  const recovery = recoverCheckpoint(checkpoint.sessionId, [
    { eventId: 'ev-1', sessionId: checkpoint.sessionId, recordedAtMs: 10, payload: checkpoint },
    { eventId: 'ev-2', sessionId: checkpoint.sessionId, recordedAtMs: 11, payload: '{not json' },
  ]);
  assert.deepEqual(recovery.checkpoint, checkpoint);
  assert.equal(recovery.eventId, 'ev-1');
  assert.equal(recovery.skipped.length, 1);
  assert.equal(recovery.skipped[0].eventId, 'ev-2');
  assert.equal(recovery.diagnostics.length, 1);
});

test('validateLog and event parsing keep the core codes', () => {
  validateLog(events);
  throwsCode(() => validateLog([events[0], events[0]]), 'log_seq_not_increasing');
  throwsCode(() => validateLog([{ ...events[0], content: { type: 'telepathy' } }]), 'event_unknown_kind');
  throwsCode(() => validateLog([{ ...events[0], extra: 1 }]), 'event_unknown_field');
});

test('budget and estimates', () => {
  assert.deepEqual(contextBudget({ contextWindow: 200000 }), { contextWindow: 200000, reserve: 16384, historyBudget: 183616 });
  assert.deepEqual(contextBudget(), { contextWindow: 48384, reserve: 16384, historyBudget: 32000 });
  assert.ok(estimateEvents(events) > 1000);
});

test('Anthropic import and projection', () => {
  const body = {
    system: 'Be brief.',
    messages: [
      { role: 'user', content: 'List files.' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'use ls', signature: 'sig-1' },
          { type: 'tool_use', id: 'tu1', name: 'shell', input: { cmd: 'ls' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu1', content: 'a.rs\nb.rs' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Two files.' }] },
    ],
  };
  const imported = importAnthropic(body, { sessionId: 'anth' });
  assert.deepEqual(imported.map((e) => e.content.type), ['system_note', 'user_text', 'reasoning', 'tool_call', 'tool_result', 'assistant_text']);
  const projection = project({ events: imported, format: 'anthropic' });
  assert.equal(projection.system, 'Be brief.');
  // The core writes `is_error` on every tool_result block.
  assert.deepEqual(projection.messages, body.messages.map((m) => ({
    role: m.role,
    content: typeof m.content === 'string'
      ? [{ type: 'text', text: m.content }]
      : m.content.map((block) => (block.type === 'tool_result' ? { ...block, is_error: false } : block)),
  })));
  throwsCode(() => importAnthropic([{ role: 'user', content: [{ type: 'image', source: {} }] }], { sessionId: 's' }), 'anthropic_import_unsupported_block');
});

test('an unknown format is an invalid_argument error', () => {
  throwsCode(() => project({ events, format: 'xml' }), 'invalid_argument');
});

/** Every object in `value` is a plain object or array (never a Map, Set or class instance). */
function assertPlain(value, path = '$') {
  if (value === null || typeof value !== 'object') return;
  const proto = Object.getPrototypeOf(value);
  assert.ok(proto === Object.prototype || proto === Array.prototype, `${path} is ${value.constructor?.name}`);
  for (const [key, item] of Object.entries(value)) assertPlain(item, `${path}.${key}`);
}

test('JSON-like values come out as plain objects, never Maps', () => {
  const withOptions = [
    { role: 'user', content: 'hi', providerOptions: { openai: { user: 'u1', nested: { list: [1, { a: 2 }] } } } },
    { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c', toolName: 't', input: { deep: { x: [true, null] } } }] },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c', toolName: 't', output: { type: 'json', value: { rows: [{ id: 1 }] } } }] },
  ];
  const imported = importModelMessages(withOptions, { sessionId: 'plain' });
  assertPlain(imported);
  assert.deepEqual(imported[0].metadata.messageProviderOptions, withOptions[0].providerOptions);
  for (const format of ['ai-sdk', 'openai-chat', 'openai-responses', 'anthropic', 'neutral']) {
    assertPlain(project({ events: imported, format }), format);
  }
  assertPlain(recoverCheckpoint(checkpoint.sessionId, [
    { eventId: 'e1', sessionId: checkpoint.sessionId, recordedAtMs: 1, payload: checkpoint },
  ]));
});

test('64-bit counts never lose precision: BigInt in, BigInt out beyond 2^53', () => {
  const big = 2n ** 60n + 1n;
  const [event] = importModelMessages([{ role: 'user', content: 'hi' }], { sessionId: 's', firstSeq: big });
  assert.equal(typeof event.seq, 'bigint');
  assert.equal(event.seq, big);
  assert.equal(event.runtimeEventId, `evt-${big}`);
  const [small] = importModelMessages([{ role: 'user', content: 'hi' }], { sessionId: 's', firstSeq: 7 });
  assert.equal(small.seq, 7);
  // Round trip of a checkpoint with a count beyond 2^53: exact.
  const huge = { ...checkpoint, createdAtMs: 2n ** 63n + 5n };
  assert.equal(parseCheckpoint(huge).createdAtMs, 2n ** 63n + 5n);
  // The digest writes numbers as doubles (docs/digest.md), so it equals the rounded number's.
  assert.equal(canonicalEventJson(event), canonicalEventJson({ ...event, seq: Number(big) }));
  // The value walk beside the BigInt: u64::MAX exactly, nested arrays and objects, and a BigInt
  // no JSON integer holds refused with a typed error.
  assert.equal(parseCheckpoint({ ...checkpoint, createdAtMs: 2n ** 64n - 1n }).createdAtMs, 2n ** 64n - 1n);
  const nested = parseCheckpoint({ ...checkpoint, createdAtMs: 5n, limitations: ['a', 'b'] });
  assert.deepEqual([nested.createdAtMs, nested.limitations], [5, ['a', 'b']]);
  assert.throws(() => parseCheckpoint({ ...checkpoint, createdAtMs: 2n ** 64n }), { code: 'invalid_argument' });
  assert.throws(() => parseCheckpoint({ ...checkpoint, createdAtMs: -1n }), { code: 'checkpoint_invalid' });
});
