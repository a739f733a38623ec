// Fuzzing the package's JSONL reader (`jsonlBytes` in pkg/values.js, then the wasm reader):
// a real log's JSONL is mutated byte-wise from a seeded PRNG (truncation, bit flips, invalid
// UTF-8, lone surrogates in strings, huge lines, duplicated and swapped lines, wrong types,
// spliced JSON tokens) and fed as bytes and as text to every entry point that reads events.
// Property: each call returns, or throws a `ContextfoldError` with a snake_case code and a
// message; never any other exception (a wasm trap, a TypeError, a RangeError). An accepted log
// gives the same digest as the same events parsed by `JSON.parse`, so acceptance is not a
// misreading. Cases: CONTEXTFOLD_FUZZ_CASES (default 300); seed: PROPTEST_RNG_SEED (as CI sets
// it) or CONTEXTFOLD_FUZZ_SEED, default 1. Prints `FUZZ-EXECUTIONS target=npm_jsonl ...`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ContextfoldError, EventLog, digestPrefix, project, validateLog } from 'contextfold';
import { compactionFixture } from './helpers.js';
import { generator } from '../stores/random.js';

const rolling = compactionFixture().cases.find((c) => c.name === 'rolling_pre_turn');
const { events, model } = rolling.input;
const seed = Number(process.env.PROPTEST_RNG_SEED ?? process.env.CONTEXTFOLD_FUZZ_SEED ?? 1) >>> 0;
const cases = Number(process.env.CONTEXTFOLD_FUZZ_CASES ?? 300);

const encoder = new TextEncoder();
const lines = events.map((event) => JSON.stringify(event));
const tokens = ['null', '"', '{', '}', '[', ']', ',', ':', '-1', '1e999', 'true', '"seq":0', '"seq":"1"', '\\u0000', '\\ud800'];

/** One mutated JSONL document: bytes, or a string (which may hold a lone surrogate). */
function mutate(next) {
  const pick = (n) => Math.floor(next() * n);
  let list = [...lines];
  const rounds = 1 + pick(3);
  for (let r = 0; r < rounds; r++) {
    const at = pick(list.length);
    switch (pick(7)) {
      case 0: list.splice(at, 0, list[at]); break; // a duplicated line: its seq repeats
      case 1: { const other = pick(list.length); [list[at], list[other]] = [list[other], list[at]]; break; }
      case 2: list[at] = list[at].replace(/"seq":\d+/, `"seq":${pick(3) ? '"x"' : -1}`); break;
      case 3: list[at] = list[at].replace(/"text":"/, `"text":"${'a'.repeat(1 << (10 + pick(11)))}`); break;
      case 4: { const i = pick(list[at].length); list[at] = list[at].slice(0, i) + tokens[pick(tokens.length)] + list[at].slice(i); break; }
      case 5: list[at] = list[at].replace(/"text":"/, '"text":"\ud800'); break; // a lone surrogate
      default: list.splice(at, 1);
    }
  }
  const text = list.join(pick(4) === 0 ? '\r\n' : '\n') + (pick(2) ? '\n' : '');
  if (pick(3) === 0) return text;
  const bytes = Buffer.from(text, 'utf8');
  const edits = pick(4);
  let out = bytes;
  for (let e = 0; e < edits; e++) {
    const i = pick(out.length + 1);
    switch (pick(4)) {
      case 0: out = out.subarray(0, i); break; // truncated
      case 1: if (i < out.length) { out = Buffer.from(out); out[i] ^= 1 << pick(8); } break;
      case 2: out = Buffer.concat([out.subarray(0, i), Buffer.from([[0xff, 0xc0, 0x80, 0xed, 0xf4][pick(5)]]), out.subarray(i)]); break;
      default: out = Buffer.concat([out.subarray(0, i), out.subarray(Math.min(out.length, i + pick(64)))]);
    }
  }
  return pick(2) ? out : new Uint8Array(out);
}

/** The events `JSON.parse` reads from a document, or undefined when it reads none cleanly. */
function parsedEvents(doc) {
  const text = typeof doc === 'string' ? doc : new TextDecoder('utf-8', { fatal: true }).decode(doc);
  return text.split(/\r?\n/).filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
}

/** Runs `fn`; a throw must be a ContextfoldError with a code. Returns whether it returned. */
function typed(fn, what) {
  try {
    fn();
    return true;
  } catch (error) {
    assert.ok(error instanceof ContextfoldError, `${what}: not a ContextfoldError: ${error?.stack ?? error}`);
    assert.match(error.code, /^[a-z][a-z0-9_]*$/, `${what}: code ${error.code}`);
    assert.ok(error.message.length > 0, `${what}: empty message`);
    return false;
  }
}

test('the JSONL reader refuses every mutated log with a typed error or reads it exactly', () => {
  const next = generator(seed);
  let executions = 0;
  let accepted = 0;
  for (let n = 0; n < cases; n++) {
    const doc = mutate(next);
    const what = `case ${n} (seed ${seed})`;
    executions += 1;
    if (typed(() => validateLog(doc), `${what} validateLog`)) {
      accepted += 1;
      // Accepted: the reader saw exactly what JSON.parse sees.
      assert.equal(digestPrefix(doc), digestPrefix(parsedEvents(doc)), `${what}: digest differs from JSON.parse's events`);
      typed(() => project({ events: doc, model, format: 'openai-chat' }), `${what} project`);
    } else {
      typed(() => digestPrefix(doc), `${what} digestPrefix`);
    }
    const log = new EventLog();
    typed(() => log.append(doc), `${what} EventLog.append`);
  }
  process.stderr.write(`FUZZ-EXECUTIONS target=npm_jsonl executions=${executions} filtered=0 accepted=${accepted} seed=${seed}\n`);
  assert.ok(accepted > 0 && accepted < executions, `mutations neither all accepted nor all refused (${accepted}/${executions})`);
});
