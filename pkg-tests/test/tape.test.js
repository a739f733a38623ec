// The value tape (pkg/tape.js, wasm/contextfold-wasm/src/tape.rs): events given as objects
// reach wasm as a tape, and must read exactly as their JSON text does (the oracle here: the
// same events as JSONL, which wasm reads as text). What the tape does not carry goes as JSON
// text; a damaged tape is refused with a typed error, never a panic.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { EventLog, digestPrefix, importAnthropic, importOpenAIChat, project } from 'contextfold';
import * as raw from '../../pkg/dist/node/contextfold_wasm.js';
import { eventsTape, exactTape } from '../../pkg/tape.js';
import { repoRoot } from './helpers.js';

const base = (i) => ({ sessionId: 's', runId: 'r', turnId: `t${i >> 2}`, runtimeEventId: `e${i}`, seq: i + 1 });
const jsonl = (events) => events.map((e) => JSON.stringify(e)).join('\n');
const long = (unit, n) => unit.repeat(Math.ceil(n / unit.length)).slice(0, n);
const nullProto = Object.assign(Object.create(null), { 'ключ': 'значение', n: 1 });

/** Events of every shape the tape writes: numbers, strings, undefined, nesting, each kind. */
function corpus() {
  const numbers = { negZero: -0, half: 1.5, tenth: 0.1, big: 2 ** 53 + 2, pow64: 2 ** 64, e21: 1e21, nan: NaN, inf: -Infinity, i63: -(2 ** 63), i70: -(2 ** 70), max: Number.MAX_VALUE, tiny: 5e-324 };
  const strings = ['', 'ascii', long('abc ', 47), long('abc ', 48), long('plain ascii ', 5000), 'é', '🦀', long('数据库 ', 300), long('"\\\t\u0007\n😀', 999), '\u0000\u001f'];
  const contents = [
    { type: 'user_text', text: long('Fix the failing test in src/模块.rs — ', 400) },
    { type: 'tool_call', callId: 'c1', toolName: 'shell', input: { numbers, strings, skip: undefined, list: [1, undefined, [null, [true, false]]], nullProto } },
    { type: 'tool_result', callId: 'c1', toolName: 'shell', output: long('error[E0308]: mismatched types 🚀 ', 6000), isError: false },
    { type: 'assistant_text', text: strings.join('|') },
    { type: 'tool_call', callId: 'c2', toolName: 'edit', input: strings },
    { type: 'tool_result', callId: 'c2', toolName: 'edit', output: { ok: true, lines: [1, 2, 3], nested: { deeper: { deepest: numbers } } }, isError: true },
    { type: 'reasoning', text: '', providerData: { signature: long('sig', 200) } },
    { type: 'system_note', text: 'note' },
    { type: 'runtime_note', code: 'context_compaction_failed_open', text: 'failed open' },
  ];
  return contents.map((content, i) => ({ ...base(i), createdAtMs: 1_767_000_000_000 + i, responseId: i % 2 ? `resp-${i}` : undefined, metadata: i === 3 ? { tag: 'x', count: 2 } : undefined, pinned: i === 4 ? true : undefined, content }));
}

/** `count` events: the corpus repeated, ids and seq unique. */
function session(count) {
  const one = corpus();
  return Array.from({ length: count }, (_, i) => ({ ...one[i % one.length], ...base(i) }));
}

test('events as a tape read as their JSON text does: digest, events and projection', () => {
  for (const events of [corpus(), session(200)]) {
    assert.ok(eventsTape(events) instanceof DataView, 'the corpus goes as a tape');
    const text = jsonl(events);
    assert.equal(digestPrefix(events), digestPrefix(text));
    const fromTape = new EventLog();
    fromTape.append(events);
    const fromText = new EventLog();
    fromText.append(text);
    assert.deepEqual(fromTape.events(), fromText.events());
    assert.equal(fromTape.digest(), fromText.digest());
    const model = { contextWindow: 1_000_000 };
    assert.deepEqual(project({ events, model }), project({ events: text, model }));
    // A second call projects over the hidden log of the first (pkg/last-log.js).
    assert.deepEqual(project({ events, model }), project({ events: text, model }));
  }
});

test('real agent logs read the same as a tape and as JSONL (SWE-agent, mini-swe-agent, Moatless)', () => {
  const logs = [
    ['swe-agent/native/marshmallow-1867-function-calling.openai-chat.json', importOpenAIChat],
    ['mini-swe-agent/native/pvlib-1072-deepseek-chat.openai-chat.json', importOpenAIChat],
    ['moatless/native/django__django-15819.anthropic.json', importAnthropic],
  ];
  for (const [file, importer] of logs) {
    const wire = JSON.parse(readFileSync(path.join(repoRoot, 'tests', 'trajectories', file), 'utf8'));
    const events = importer(wire, { sessionId: 'real' });
    assert.ok(eventsTape(events) instanceof DataView, file);
    const text = jsonl(events);
    assert.equal(digestPrefix(events), digestPrefix(text), file);
    const model = { contextWindow: 8_000 };
    assert.deepEqual(project({ events, model }), project({ events: text, model }), file);
  }
});

test('what the tape does not carry goes as JSON text, with the JSON meaning', () => {
  const [event] = corpus();
  const withInput = (input) => [{ ...base(0), content: { type: 'tool_call', callId: 'c', toolName: 't', input } }];
  const date = new Date(0);
  class Point {
    constructor() {
      this.x = 1;
    }
  }
  const cases = [
    [{ at: date }, { at: date.toISOString() }],
    [{ map: new Map([['a', 1]]) }, { map: {} }],
    [{ point: new Point() }, { point: { x: 1 } }],
    [{ f: () => 1, kept: 1 }, { kept: 1 }],
  ];
  for (const [input, meaning] of cases) {
    assert.equal(eventsTape(withInput(input)), undefined, 'not carried');
    assert.equal(digestPrefix(withInput(input)), digestPrefix(withInput(meaning)));
  }
  // A lone surrogate has no UTF-8 form: refused, never replaced by U+FFFD.
  const lone = [{ ...event, content: { type: 'user_text', text: 'a\ud800b' } }];
  assert.equal(eventsTape(lone), undefined);
  assert.throws(() => digestPrefix(lone), (error) => error.code === 'invalid_argument');
  let deep = 'x';
  for (let i = 0; i < 200; i += 1) deep = [deep];
  assert.equal(eventsTape(withInput(deep)), undefined);
  assert.throws(() => digestPrefix(withInput(deep)), /recursion limit/);
});

test('a tape written without the lone-surrogate check: U+FFFD makes wasm ask for the check', () => {
  const replacement = session(80);
  replacement[7] = { ...replacement[7], content: { type: 'user_text', text: `${long('bytes a tool could not decode ', 300)}\ufffd.` } };
  const lone = replacement.map((e) => e);
  lone[7] = { ...replacement[7], content: { type: 'user_text', text: `${long('bytes a tool could not decode ', 300)}\ud800.` } };
  // encodeInto writes both as the same bytes: wasm cannot tell them apart, so it refuses both.
  const unchecked = (events) => eventsTape(events, { checked: false });
  assert.equal(new Uint8Array(unchecked(replacement).buffer)[0], 2);
  for (const events of [replacement, lone]) {
    assert.throws(() => raw.digestPrefix(unchecked(events)), (error) => error.code === 'tape_unchecked_strings');
  }
  assert.equal(raw.digestPrefix(eventsTape(replacement)), digestPrefix(jsonl(replacement)), 'the checked tape');
  assert.equal(raw.digestPrefix(unchecked(session(80))), digestPrefix(jsonl(session(80))), 'no U+FFFD: read');
  // The paths that write it unchecked (EventLog.append, the hidden log of project and
  // digestPrefix) write it again checked: U+FFFD is kept, a lone surrogate refused as in JSON.
  const model = { contextWindow: 1_000_000 };
  const log = new EventLog();
  log.append(replacement);
  const fromText = new EventLog();
  fromText.append(jsonl(replacement));
  assert.deepEqual(log.events(), fromText.events());
  assert.ok(log.events()[7].content.text.endsWith('\ufffd.'));
  assert.deepEqual(project({ events: replacement, model }), project({ events: jsonl(replacement), model }));
  assert.equal(digestPrefix(replacement), digestPrefix(jsonl(replacement)));
  const next = { ...base(80), content: lone[7].content };
  assert.throws(() => log.append(next), (error) => error.code === 'invalid_argument');
  assert.throws(() => new EventLog().append(lone), (error) => error.code === 'invalid_argument');
  assert.equal(log.length, 80, 'nothing appended');
  assert.throws(() => project({ events: lone, model }), (error) => error.code === 'invalid_argument');
  assert.throws(() => digestPrefix(lone), (error) => error.code === 'invalid_argument');
});

test('a BigInt crosses exactly, and the projection gives it back', () => {
  const events = [
    { ...base(0), content: { type: 'user_text', text: 'count' } },
    { ...base(1), content: { type: 'tool_call', callId: 'c', toolName: 't', input: { n: 2n ** 63n, m: -5n } } },
  ];
  const text = jsonl([events[0], { ...events[1], content: { ...events[1].content, input: { n: 0, m: -5 } } }]).replace('"n":0', '"n":9223372036854775808');
  assert.equal(digestPrefix(events), digestPrefix(text));
  const call = project({ events }).messages[1].content[0];
  assert.equal(call.input.n, 2n ** 63n);
  assert.throws(() => exactTape({ n: 2n ** 64n }), (error) => error.code === 'invalid_argument');
});

test('a damaged tape is refused with a typed error, never a panic', () => {
  const tape = eventsTape(corpus());
  const bytes = new Uint8Array(tape.buffer, tape.byteOffset, tape.byteLength).slice();
  const attempt = (damaged) => {
    try {
      raw.digestPrefix(new DataView(damaged.buffer));
    } catch (error) {
      assert.equal(typeof error.code, 'string', `a typed error, not ${error}`);
      assert.ok(!(error instanceof WebAssembly.RuntimeError), 'no panic');
    }
  };
  for (let cut = 0; cut < bytes.length; cut += 97) attempt(bytes.slice(0, cut));
  for (let i = 0; i < 400; i += 1) {
    const damaged = bytes.slice();
    damaged[(i * 7919) % damaged.length] ^= 1 + (i % 255);
    attempt(damaged);
  }
  attempt(Uint8Array.of(0, 5, 255, 255, 255, 255));
});
