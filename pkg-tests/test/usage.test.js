// Usage facts, calibration and a caller's counting function, through the built package.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEncoding } from 'js-tiktoken';
import {
  ContextfoldError, EventLog, calibrate, compact, contextBudget, extractiveSummary, project, projectForRequest, usageFact,
} from 'contextfold';
import { generateSession } from '../bench/session.js';

const provider = { provider: 'openai', connectionSlug: 'default', modelId: 'gpt-test' };
const identity = { provider: 'openai', model: 'gpt-test' };
const o200k = getEncoding('o200k_base');
const tiktoken = (text) => o200k.encode(text).length;

/** A small coding session: 6 turns, tool outputs of about 1,200 bytes . */
const events = generateSession(24, { outputBytes: 1200, sessionId: 'usage' });

/** A calibration whose ratio for the test model is `permille` (one sample). */
function calibrationAt(permille, base = undefined) {
  return calibrate(base, { ...identity, estimatedInputTokens: 1000, kind: 'response', inputTokens: permille });
}

function assertCode(fn, code) {
  assert.throws(fn, (error) => error instanceof ContextfoldError && error.code === code, `expected ${code}`);
}

test('a calibration learned from a fact scales estimatedTokens by its ratio', () => {
  const plain = project({ events, provider, model: { contextWindow: 128000 } });
  assert.equal(plain.ratioPermille, 1000);
  assert.equal(plain.uncalibratedTokens, plain.estimatedTokens);
  const reported = Math.ceil(plain.uncalibratedTokens * 1.37);
  const fact = usageFact(plain, identity, { inputTokens: reported, inputTokenDetails: { cacheReadTokens: 100 }, outputTokens: 50 });
  assert.deepEqual(fact, {
    ...identity, estimatedInputTokens: plain.uncalibratedTokens, kind: 'response', inputTokens: reported,
    cachedInputTokens: 100, cacheWriteTokens: 0, outputTokens: 50,
  });
  const calibration = calibrate(undefined, fact);
  const ratio = Math.ceil((reported * 1000) / plain.uncalibratedTokens);
  assert.deepEqual(calibration, { models: [{ ...identity, samplesPermille: [ratio] }] });
  // The ratio in use is the sample plus the core's 2% margin.
  const inUse = ratio + Math.floor((ratio * 20) / 1000);
  const calibrated = project({ events, provider, model: { contextWindow: 128000 }, calibration });
  assert.equal(calibrated.ratioPermille, inUse);
  assert.equal(calibrated.uncalibratedTokens, plain.estimatedTokens);
  assert.deepEqual(calibrated.messages, plain.messages);
  // Every part is scaled and rounded on its own: within half a token per measured piece.
  const scaled = (plain.estimatedTokens * inUse) / 1000;
  assert.ok(Math.abs(calibrated.estimatedTokens - scaled) <= events.length * 3, `${calibrated.estimatedTokens} vs ${scaled}`);
  assert.ok(calibrated.estimatedTokens > plain.estimatedTokens * 1.3);
  // Another model, or no provider, is not calibrated.
  const other = project({ events, provider: { ...provider, modelId: 'other' }, model: { contextWindow: 128000 }, calibration });
  assert.equal(other.estimatedTokens, plain.estimatedTokens);
  assert.equal(project({ events, calibration }).ratioPermille, 1000);
  // The same through an EventLog and projectForRequest.
  const log = new EventLog();
  log.append(events);
  assert.equal(log.project({ provider, model: { contextWindow: 128000 }, calibration }).estimatedTokens, calibrated.estimatedTokens);
  assert.equal(log.projectForRequest({ provider, model: { contextWindow: 128000 }, calibration }).ratioPermille, inUse);
  assert.equal(projectForRequest({ events, provider, model: { contextWindow: 128000 }, calibration }).estimatedTokens, calibrated.estimatedTokens);
  log.free();
});

test('an exact ratio scales each measured text exactly', () => {
  const one = [events[0]];
  const calibration = calibrationAt(1500);
  const counted = project({ events: one, provider, countTokens: () => 1000 });
  assert.equal(counted.estimatedTokens, 1000 + 8);
  const scaled = project({ events: one, provider, countTokens: () => 1000, calibration });
  // 1,500 plus the 2% margin: 1,530, and the overhead of 8 at that ratio.
  assert.equal(scaled.estimatedTokens, 1530 + 12);
  assert.equal(scaled.uncalibratedTokens, 1008);
});

test('a calibration is plain JSON: it round-trips, and calibrate() changes nothing it is given', () => {
  let calibration;
  for (const permille of [1200, 1100, 1300]) calibration = calibrationAt(permille, calibration);
  const before = structuredClone(calibration);
  const text = JSON.stringify(calibration);
  const restored = JSON.parse(text);
  assert.deepEqual(restored, calibration);
  const fact = { ...identity, estimatedInputTokens: 2000, kind: 'overflow', limitTokens: 2400 };
  const next = calibrate(restored, fact);
  assert.deepEqual(next, calibrate(calibration, fact));
  assert.deepEqual(calibration, before);
  assert.deepEqual(restored, before);
  // The limit's ratio plus 0.1 (1,300) is below the ratio in use (1,326), which wins.
  assert.deepEqual(next.models[0].samplesPermille, [1200, 1100, 1300, 1326]);
  const fromText = project({ events, provider, calibration: JSON.parse(text) });
  assert.equal(fromText.estimatedTokens, project({ events, provider, calibration }).estimatedTokens);
  assert.equal(fromText.ratioPermille, 1326);
});

test('bad facts and calibrations are typed errors and change nothing', () => {
  const calibration = calibrationAt(1200);
  const before = structuredClone(calibration);
  const good = { ...identity, estimatedInputTokens: 1000, kind: 'response', inputTokens: 900 };
  const bad = [
    undefined,
    {},
    { ...good, kind: 'guess' },
    { ...good, kind: undefined },
    { ...good, inputTokens: 0 },
    { ...good, inputTokens: -5 },
    { ...good, inputTokens: 12.5 },
    { ...good, inputTokens: '900' },
    { ...good, cachedInputTokens: 901 },
    { ...good, provider: '' },
    { ...good, model: undefined },
    { ...good, estimatedInputTokens: -1 },
  ];
  for (const fact of bad) assertCode(() => calibrate(calibration, fact), 'invalid_usage_fact');
  assert.deepEqual(calibration, before);
  assertCode(() => calibrate({ models: [{ provider: 'p' }] }, good), 'invalid_calibration');
  assertCode(() => calibrate({ model: [] }, good), 'invalid_calibration');
  assertCode(() => usageFact({}, identity, { inputTokens: 5 }), 'invalid_usage_fact');
  assertCode(() => usageFact({ uncalibratedTokens: 5 }, identity, { inputTokens: undefined }), 'invalid_usage_fact');
  assertCode(() => project({ events, provider, calibration: { models: 'no' } }), 'invalid_argument');
  assert.deepEqual(calibrate(null, good).models[0].samplesPermille, [900]);
});

test('countTokens with js-tiktoken measures a text message as tiktoken counts it, plus overhead', () => {
  const text = 'Please refactor the parser so that it reads JSONL lines lazily, and keep the error codes stable.';
  const one = [{ ...events[0], content: { type: 'user_text', text } }];
  const overhead = project({ events: one, countTokens: () => 0 }).estimatedTokens;
  assert.equal(overhead, 8);
  const counted = project({ events: one, countTokens: tiktoken });
  assert.equal(counted.estimatedTokens, tiktoken(text) + overhead);
  assert.equal(counted.uncalibratedTokens, counted.estimatedTokens);
  assert.notEqual(counted.estimatedTokens, project({ events: one }).estimatedTokens);
  const log = new EventLog();
  log.append(one);
  assert.equal(log.project({ countTokens: tiktoken }).estimatedTokens, counted.estimatedTokens);
  log.free();
});

test('countTokens sees every text itself, and a projection without it answers as before', () => {
  const seen = [];
  const counter = (text) => {
    seen.push(text);
    return tiktoken(text);
  };
  const plain = project({ events });
  const first = project({ events, countTokens: counter });
  assert.ok(seen.length > 0);
  assert.ok(seen.every((text) => !text.startsWith('\u0000\u0001cf:')), 'a reference reached the counter');
  assert.ok(seen.includes(events[2].content.output), 'the long tool output was counted whole');
  // Each call measures afresh (nothing is kept between calls): the same figure again.
  const again = project({ events, countTokens: counter });
  assert.equal(again.estimatedTokens, first.estimatedTokens);
  assert.deepEqual(again.messages, plain.messages);
  // Without a counter the projection answers as before.
  assert.equal(project({ events }).estimatedTokens, plain.estimatedTokens);
  const jsonl = events.map((event) => JSON.stringify(event)).join('\n');
  assert.equal(project({ events: jsonl, countTokens: tiktoken }).estimatedTokens, first.estimatedTokens);
});

test('a failing counter gives count_tokens_failed and no projection', async () => {
  const failing = [
    () => { throw new Error('tokenizer not loaded'); },
    () => Number.NaN,
    () => -1,
    () => Infinity,
    () => '12',
  ];
  for (const countTokens of failing) {
    assertCode(() => project({ events, countTokens }), 'count_tokens_failed');
    const log = new EventLog();
    log.append(events);
    assertCode(() => log.project({ countTokens }), 'count_tokens_failed');
    await assert.rejects(
      compact({ events: log, model: { contextWindow: 2000 }, trigger: 'manual', provider, countTokens }, summarizingHost(events)),
      (error) => error instanceof ContextfoldError && error.code === 'count_tokens_failed',
    );
    log.free();
  }
  assertCode(() => project({ events, countTokens: 'tiktoken' }), 'invalid_argument');
  const error = (() => {
    try {
      project({ events, countTokens: failing[0] });
    } catch (thrown) {
      return thrown;
    }
    return undefined;
  })();
  assert.match(error.message, /tokenizer not loaded/);
  // A number that is not a count is named as JavaScript writes it.
  for (const [count, text] of [[Number.NaN, 'NaN'], [-1.5, '-1.5'], [-Infinity, '-Infinity']]) {
    assert.throws(
      () => project({ events, countTokens: () => count }),
      (thrown) => thrown.message.includes(`countTokens returned ${text}, not a count`),
    );
  }
});

/** An extractive summarizer with an in-memory ledger. */
function summarizingHost(log) {
  const ledger = [];
  return {
    ledger,
    async summarize(request) {
      const fold = log.slice(request.fold.start, request.fold.end);
      return { text: extractiveSummary(request.previousSummary, fold, request.targetTokens), finishReason: 'stop' };
    },
    async appendCheckpoint(checkpoint) {
      ledger.push(checkpoint);
    },
  };
}

/** The smallest context window whose history budget holds `tokens` with 20% to spare. */
function windowFor(tokens) {
  let window = tokens;
  while (contextBudget({ contextWindow: window }).historyBudget < tokens * 1.2) window += 64;
  return window;
}

test('fits and compaction follow the calibrated estimate', async () => {
  const estimate = project({ events, provider }).estimatedTokens;
  const model = { contextWindow: windowFor(estimate) };
  const calibration = calibrationAt(1500);
  const uncalibrated = project({ events, provider, model });
  assert.equal(uncalibrated.fits, true);
  const calibrated = project({ events, provider, model, calibration });
  assert.equal(calibrated.fits, false, `${calibrated.estimatedTokens} should exceed ${calibrated.historyBudget}`);
  assert.equal(calibrated.uncalibratedTokens, uncalibrated.estimatedTokens);

  const quiet = await compact({ events, provider, model, trigger: 'pre-turn', nowMs: 1 }, summarizingHost(events));
  assert.equal(quiet.outcome, 'skipped');
  const host = summarizingHost(events);
  const folded = await compact({ events, provider, model, trigger: 'pre-turn', nowMs: 1, calibration }, host);
  assert.equal(folded.outcome, 'recorded', JSON.stringify(folded.reason));
  assert.equal(host.ledger.length, 1);
  const next = project({ events, provider, model, calibration, checkpoint: folded.checkpoint });
  assert.equal(next.fits, true);
  assert.ok(next.checkpoint !== null);
});
