// Events as JSONL (a string, or UTF-8 bytes such as a Buffer): the same results as the array,
// and every bad input refused with a code and its 1-based line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ContextfoldError, EventLog, compact, digestPrefix, estimateEvents, extractiveSummary, matchCheckpoint,
  prefixDigests, project, safeBoundaries, selectSafePrefix, validateLog,
} from 'contextfold';
import { compactionFixture } from './helpers.js';

const fixture = compactionFixture();
const rolling = fixture.cases.find((c) => c.name === 'rolling_pre_turn');
const { events, model } = rolling.input;
const checkpoint = rolling.expected.checkpoint;

/** The events as JSONL text: one per line, `\n` after each. */
function toJsonl(list, eol = '\n') {
  return list.map((event) => `${JSON.stringify(event)}${eol}`).join('');
}

const text = toJsonl(events);
/** Every JSONL form of `events`: string, Buffer, plain Uint8Array, CRLF with blank lines, no final newline. */
const forms = {
  string: text,
  buffer: Buffer.from(text),
  uint8array: new Uint8Array(new TextEncoder().encode(text)),
  'crlf and blank lines': Buffer.from(`\r\n${toJsonl(events, '\r\n\r\n')}   \n`),
  'no trailing newline': text.trimEnd(),
};

/** Asserts that `fn` throws a ContextfoldError with `code` and `line`. */
function throwsAt(fn, code, line) {
  assert.throws(fn, (error) => {
    assert.ok(error instanceof ContextfoldError, `a ContextfoldError, not ${error}`);
    assert.equal(error.code, code, error.message);
    assert.equal(error.line, line, error.message);
    assert.match(error.message, new RegExp(`line ${line}\\b`));
    return true;
  });
}

for (const [name, jsonl] of Object.entries(forms)) {
  test(`JSONL as ${name}: the pure functions give the array's results`, () => {
    assert.equal(digestPrefix(jsonl), digestPrefix(events));
    assert.deepEqual(prefixDigests(jsonl), prefixDigests(events));
    assert.equal(validateLog(jsonl), undefined);
    assert.equal(estimateEvents(jsonl), estimateEvents(events));
    assert.deepEqual(matchCheckpoint(checkpoint, jsonl), matchCheckpoint(checkpoint, events));
    assert.deepEqual(selectSafePrefix(jsonl), selectSafePrefix(events));
    assert.deepEqual(safeBoundaries(jsonl), safeBoundaries(events));
    assert.equal(extractiveSummary(null, jsonl, 300), extractiveSummary(null, events, 300));
  });

  test(`JSONL as ${name}: project() gives the array's projection in every format`, () => {
    for (const format of ['ai-sdk', 'openai-chat', 'openai-responses', 'anthropic', 'neutral']) {
      assert.deepEqual(project({ events: jsonl, checkpoint, model, format }), project({ events, checkpoint, model, format }), format);
    }
  });

  test(`JSONL as ${name}: EventLog.append holds the array's state`, () => {
    const fromJsonl = new EventLog();
    const fromArray = new EventLog();
    assert.equal(fromJsonl.append(jsonl), events.length);
    fromArray.append(events);
    assert.equal(fromJsonl.digest(), fromArray.digest());
    assert.deepEqual(fromJsonl.events(), events);
    assert.deepEqual(fromJsonl.project({ checkpoint, model }), fromArray.project({ checkpoint, model }));
    fromJsonl.free();
    fromArray.free();
  });
}

test('JSONL appended in pieces continues the log; a refused piece appends nothing', () => {
  const log = new EventLog();
  assert.equal(log.append(Buffer.from(toJsonl(events.slice(0, 4)))), 4);
  const before = log.digest();
  // The second line of this piece repeats an earlier seq: line 2, log code, nothing appended.
  throwsAt(() => log.append(toJsonl([events[4], events[1]])), 'log_seq_not_increasing', 2);
  assert.equal(log.length, 4);
  assert.equal(log.digest(), before);
  assert.equal(log.append(toJsonl(events.slice(4))), events.length);
  assert.equal(log.digest(), digestPrefix(events));
  log.free();
});

test('compact() over JSONL events gives the native core outcome', async () => {
  const ledger = [];
  const host = {
    async summarize(request) {
      const fold = events.slice(request.fold.start, request.fold.end);
      return { text: extractiveSummary(request.previousSummary, fold, request.targetTokens), finishReason: 'stop' };
    },
    async appendCheckpoint(recorded) {
      ledger.push(structuredClone(recorded));
    },
  };
  const outcome = await compact({ ...rolling.input, events: Buffer.from(text) }, host);
  assert.deepEqual(outcome, rolling.expected);
  assert.deepEqual(ledger, [outcome.checkpoint]);
});

test('empty JSONL is an empty log', () => {
  for (const empty of ['', '\n\r\n  \n', new Uint8Array(0)]) {
    assert.equal(digestPrefix(empty), digestPrefix([]));
    assert.deepEqual(project({ events: empty, model }).messages, project({ events: [], model }).messages);
    const log = new EventLog();
    assert.equal(log.append(empty), 0);
    log.free();
  }
});

test('a bad line is refused with the core code and its 1-based line, in every entry point', () => {
  const lines = events.slice(0, 6).map((event) => JSON.stringify(event));
  const withLine = (index, bad) => lines.map((line, i) => (i === index ? bad : line)).join('\n');
  const cases = [
    ['event_syntax', 3, withLine(2, '{"sessionId": ')],
    ['event_unknown_kind', 4, withLine(3, JSON.stringify({ ...events[3], content: { type: 'telepathy' } }))],
    ['event_unknown_field', 2, withLine(1, JSON.stringify({ ...events[1], mood: 'ok' }))],
    ['event_missing_kind', 1, withLine(0, '[]')],
    ['event_invalid', 5, withLine(4, JSON.stringify({ ...events[4], seq: 'five' }))],
    ['log_mixed_sessions', 6, withLine(5, JSON.stringify({ ...events[5], sessionId: 'other' }))],
    ['log_duplicate_event_id', 6, withLine(5, JSON.stringify({ ...events[5], runtimeEventId: events[0].runtimeEventId }))],
  ];
  for (const [code, line, jsonl] of cases) {
    const bytes = Buffer.from(jsonl);
    throwsAt(() => validateLog(jsonl), code, line);
    throwsAt(() => validateLog(bytes), code, line);
    throwsAt(() => project({ events: bytes, model }), code, line);
    const log = new EventLog();
    throwsAt(() => log.append(bytes), code, line);
    assert.equal(log.length, 0, `${code}: nothing appended`);
    log.free();
    if (code.startsWith('event_')) throwsAt(() => digestPrefix(jsonl), code, line);
  }
  // Blank and CRLF lines count: the bad event sits on line 4.
  throwsAt(() => digestPrefix(`${lines[0]}\r\n\r\n${lines[1]}\r\n{oops}\r\n`), 'event_syntax', 4);
});

test('invalid UTF-8 bytes and lone surrogates have their own codes and lines', () => {
  const good = Buffer.from(toJsonl(events.slice(0, 2)));
  const bad = Buffer.concat([good, Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d, 0x0a])]);
  throwsAt(() => digestPrefix(bad), 'jsonl_invalid_utf8', 3);
  const log = new EventLog();
  throwsAt(() => log.append(bad), 'jsonl_invalid_utf8', 3);
  assert.equal(log.length, 0);
  log.free();
  const lone = `${toJsonl(events.slice(0, 1))}${JSON.stringify(events[1]).replace('"content"', '"\ud800content"')}\n`;
  throwsAt(() => digestPrefix(lone), 'jsonl_lone_surrogate', 2);
  throwsAt(() => project({ events: lone, model }), 'jsonl_lone_surrogate', 2);
});

test('large results (handed over as UTF-16 code units) keep every character', async () => {
  const { generateSession } = await import('../bench/session.js');
  const big = generateSession(400, { outputBytes: 3000 });
  big[1].content.input.note = '🦀 astral, 测试 CJK, é, \u0007 in an object';
  const bigJsonl = Buffer.from(toJsonl(big));
  const fromJsonl = project({ events: bigJsonl, model: { contextWindow: 10_000_000 } });
  assert.ok(JSON.stringify(fromJsonl).length > 128 * 1024, "larger than the UTF-16 threshold (64 KiB)");
  assert.deepEqual(fromJsonl, project({ events: big, model: { contextWindow: 10_000_000 } }));
  assert.equal(fromJsonl.messages[1].content[0].input.note, big[1].content.input.note);
  const log = new EventLog();
  log.append(bigJsonl);
  assert.deepEqual(log.events(), big);
  log.free();
});
