// The long strings of a projection that JS does not hold (JSONL events, in an EventLog or not) come back
// through a table of UTF-16 code units transcoded in wasm 16 bytes at a time: every UTF-8
// length class at every offset around a block edge, at the start and end of a string, and
// strings of nothing else must come back unchanged, and the table's reused buffer must never
// leak one call's strings into another's result.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventLog, project } from 'contextfold';

/** One character of each UTF-8 length (1 to 4 bytes), at the edges of each class. */
const CHARS = ['a', '\0', '\x7f', '\x80', 'é', '\u07ff', '\u0800', '测', '\uffff', '\u{10000}', '🦀', '\u{10ffff}'];
/** Strings are moved to the table from this many UTF-8 bytes on (MIN_TABLE_BYTES). */
const TABLE_BYTES = 256;
const BLOCK = 16;

/** Texts that put `char` at every offset of a block, at the ends, and alone. */
function textsAround(char) {
  const texts = [];
  for (let pad = 0; pad <= 2 * BLOCK + 1; pad += 1) {
    texts.push(`${'x'.repeat(TABLE_BYTES + pad)}${char}${'y'.repeat(pad % (BLOCK + 3))}`);
  }
  texts.push(`${char}${'z'.repeat(TABLE_BYTES)}`);
  texts.push(char.repeat(TABLE_BYTES));
  texts.push(`${char}${'é'.repeat(TABLE_BYTES)}${char}🦀${char}`);
  return texts;
}

/** A session with each text as a user message and as a tool output, plus short and empty ones. */
function session(texts, sessionId = 's') {
  const events = [];
  const push = (turn, content) => {
    const seq = events.length + 1;
    events.push({ sessionId, runId: 'r', turnId: `t${turn}`, runtimeEventId: `e${seq}`, seq, content });
  };
  texts.forEach((text, turn) => {
    push(turn, { type: 'user_text', text });
    push(turn, { type: 'tool_call', callId: `c${turn}`, toolName: 'echo', input: { text: turn % 3 === 0 ? text : '' } });
    push(turn, { type: 'tool_result', callId: `c${turn}`, toolName: 'echo', output: turn % 2 === 0 ? text : '' });
    push(turn, { type: 'assistant_text', text: turn % 5 === 0 ? '' : 'ok' });
  });
  return events;
}

/** The events as JSONL bytes: strings JS does not hold, so they come back through the table. */
const jsonlOf = (events) => Buffer.from(events.map((event) => JSON.stringify(event)).join('\n'));

const options = { model: { contextWindow: 100_000_000 }, format: 'ai-sdk' };

test('every UTF-8 length class at every block offset comes back through the table unchanged', () => {
  for (const char of CHARS) {
    const texts = textsAround(char);
    const events = session(texts);
    const expected = project({ events, ...options });
    const jsonl = jsonlOf(events);
    const log = new EventLog();
    log.append(jsonl);
    const fromLog = log.project(options);
    log.free();
    assert.deepEqual(fromLog, expected, JSON.stringify(char));
    assert.deepEqual(project({ events: jsonl, ...options }), expected, JSON.stringify(char));
    const users = fromLog.messages.filter((message) => message.role === 'user').map((message) => message.content);
    assert.deepEqual(users, texts);
  }
});

test('the reused table buffer never carries strings from one projection into the next', () => {
  const big = session(CHARS.flatMap(textsAround), 'big');
  const small = session(['🦀'.repeat(TABLE_BYTES), 'short', `${'q'.repeat(TABLE_BYTES)}é`], 'small');
  const bigLog = new EventLog();
  bigLog.append(jsonlOf(big));
  const smallLog = new EventLog();
  smallLog.append(jsonlOf(small));
  const bigFirst = bigLog.project(options);
  const smallAfterBig = smallLog.project(options);
  const bigAgain = bigLog.project(options);
  assert.deepEqual(smallAfterBig, project({ events: small, ...options }));
  assert.deepEqual(bigAgain, bigFirst);
  assert.deepEqual(bigFirst, project({ events: big, ...options }));
  assert.deepEqual(smallLog.project(options), smallAfterBig);
  bigLog.free();
  smallLog.free();
});
