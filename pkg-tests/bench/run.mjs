// Benchmark of the npm package `contextfold` in Node against the native core and a plain
// JavaScript implementation of the same digest and projection (bench/plain-js.js).
//
//   node bench/run.mjs [--events 10000] [--native path/to/native_bench]
//
// Generates a seeded session (large unicode tool outputs), writes it as JSONL for the native
// example (tests/examples/native_bench.rs), checks that all three agree on the
// digest and the projection, and prints the ratios: from events held as JS objects — the same
// array every call, an array growing by one turn before each call (an agent's loop), and
// sessions never seen before (every event crosses into wasm as a value tape, pkg/tape.js) —
// and from the same JSONL bytes on every side (package: the bytes passed in; plain JS: checked
// UTF-8 decoding, line split, JSON.parse, then the same work; native: parse then the same
// work). Each row's two sides are timed in alternation and its ratio is the median over the
// pairs of calls (`paired`, `pairedSteps`). `bench/npm.sh` builds everything and runs it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants as zlibConstants } from 'node:zlib';
import { EventLog, digestPrefix, hashEngine, project } from 'contextfold';
import { parseJsonl, plainDigest, plainProject } from './plain-js.js';
import { generateSession } from './session.js';

function option(name, fallback) {
  const index = process.argv.indexOf(name);
  return index > 0 ? process.argv[index + 1] : fallback;
}

/** Milliseconds per call of `fn`: one warm-up call, then at least `minMs` and 3 calls. */
function timeIt(fn, minMs = 1500) {
  fn();
  let runs = 0;
  const start = process.hrtime.bigint();
  let elapsed = 0n;
  while (elapsed < BigInt(minMs) * 1_000_000n || runs < 3) {
    fn();
    runs += 1;
    elapsed = process.hrtime.bigint() - start;
  }
  return Number(elapsed) / runs / 1e6;
}

/** Milliseconds `fn(...args)` takes. */
function elapsedMs(fn, ...args) {
  const start = process.hrtime.bigint();
  fn(...args);
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** The median of `values` (the mean of the middle two when their number is even). */
function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/**
 * A paired comparison of the package's side with its baseline: calls in alternation (package,
 * baseline, baseline, package, …) after one warm-up call each, for at least `minMs` in all and 6
 * calls each. Returns the mean milliseconds per call of each side and `ratio`, the median over
 * the pairs of package / baseline: a burst of load on the machine lands on both calls of a pair
 * and leaves the median alone, where two means measured seconds apart would each carry it.
 */
function paired(ours, baseline, minMs = 3000) {
  ours();
  baseline();
  const times = [[], []];
  const start = process.hrtime.bigint();
  while (times[0].length < 6 || Number(process.hrtime.bigint() - start) < minMs * 1e6) {
    const first = times[0].length % 2;
    times[first].push(elapsedMs(first === 0 ? ours : baseline));
    times[1 - first].push(elapsedMs(first === 0 ? baseline : ours));
  }
  return summary(times);
}

/**
 * [`paired`] over steps: `ours(i)` and `baseline(i)` for i in 0..calls, each `i` by both sides
 * (the first side alternating), after one untimed warm-up call of each with `calls`.
 */
function pairedSteps(calls, ours, baseline) {
  ours(calls);
  baseline(calls);
  const times = [[], []];
  for (let i = 0; i < calls; i += 1) {
    const first = i % 2;
    times[first].push(elapsedMs(first === 0 ? ours : baseline, i));
    times[1 - first].push(elapsedMs(first === 0 ? baseline : ours, i));
  }
  return summary(times);
}

function summary([ours, baseline]) {
  const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;
  return { ours: mean(ours), baseline: mean(baseline), ratio: median(ours.map((t, i) => t / baseline[i])) };
}

const count = Number(option('--events', '10000'));
/** Issue 38: the stateless `project` and `digestPrefix` take at most this many times plain JS. */
const STATELESS_GOAL = 1.5;
/**
 * Issue 38: no row more than 10% worse than when it was filed. The unseen projection, a report
 * row then at 2.26x (docs/performance.md of `af19ac0`), was already above STATELESS_GOAL, which
 * relaxes the rule for the stateless rows and so cannot tighten it: this row keeps the 10%.
 */
const UNSEEN_PROJECTION_GOAL = 2.26 * 1.1;
/** Projections of the growing log (one turn appended before each), and unseen sessions. */
const GROWING_CALLS = 20;
const FRESH_SESSIONS = 8;
const contextWindow = 100_000_000;
const events = generateSession(count);
const jsonl = Buffer.from(`${events.map((e) => JSON.stringify(e)).join('\n')}\n`);
console.log(`session: ${events.length} events, ${(jsonl.length / 1e6).toFixed(1)} MB of JSONL; package SHA-256 engine: ${hashEngine()}`);

// Agreement first: the package, the plain implementation and the native core.
const digest = digestPrefix(events);
assert.equal(plainDigest(events), digest, 'plain JS and wasm digests agree');
assert.equal(digestPrefix(jsonl), digest, 'JSONL and array digests agree');
assert.equal(plainDigest(parseJsonl(jsonl)), digest, 'plain JS JSONL digest agrees');
const projectInput = { model: { contextWindow }, format: 'ai-sdk' };
const projected = project({ events, ...projectInput });
// The package also reports how it measured (no calibration here: ratio 1.0, the same tokens);
// the plain implementation has no calibration, so the comparison leaves those two fields out.
assert.equal(projected.ratioPermille, 1000);
assert.equal(projected.uncalibratedTokens, projected.estimatedTokens);
const withoutMeasure = ({ ratioPermille: _ratio, uncalibratedTokens: _uncalibrated, ...rest }) => rest;
const measured = withoutMeasure(projected);
const plain = plainProject(events, contextWindow);
assert.deepEqual(plain, measured, 'plain JS and wasm projections agree (messages, tokens, budget, diagnostics)');
assert.deepEqual(project({ events: jsonl, ...projectInput }), projected, 'JSONL and array projections agree');
assert.deepEqual(plainProject(parseJsonl(jsonl), contextWindow), measured, 'plain JS JSONL projection agrees');

const log = new EventLog();
log.append(events);
assert.equal(log.digest(), digest, 'EventLog digest agrees');
assert.deepEqual(log.project({ model: { contextWindow }, format: 'ai-sdk' }).messages, projected.messages, 'EventLog projection agrees');

const digestRow = paired(() => digestPrefix(events), () => plainDigest(events));
const appendDigestMs = timeIt(() => {
  const fresh = new EventLog();
  fresh.append(events);
  fresh.digest();
  fresh.free();
});
const logDigestMs = timeIt(() => log.digest(), 200);
const projectRow = paired(
  () => project({ events, model: { contextWindow }, format: 'ai-sdk' }),
  () => plainProject(events, contextWindow),
);
// An agent appends each event to an EventLog once, as it happens, and projects every request; the
// plain-JS equivalent keeps its array of objects and projects it.
const logRow = paired(
  () => log.project({ model: { contextWindow }, format: 'ai-sdk' }),
  () => plainProject(events, contextWindow),
);
// An agent's loop: the array grows by one turn (4 events) before each projection.
const extra = generateSession(count + 4 * GROWING_CALLS).slice(count);
const growing = [...events];
const plainGrowing = [...events];
const growingRow = pairedSteps(
  GROWING_CALLS,
  (i) => {
    growing.push(...extra.slice(4 * i, 4 * i + 4));
    project({ events: growing, ...projectInput });
  },
  (i) => {
    plainGrowing.push(...extra.slice(4 * i, 4 * i + 4));
    plainProject(plainGrowing, contextWindow);
  },
);
assert.deepEqual(plainProject(plainGrowing, contextWindow), withoutMeasure(project({ events: growing, ...projectInput })), 'grown projections agree');
// Every call a session the package has not seen: its long strings all cross into wasm. Read
// back from JSON, as events usually arrive (the generator's strings are ropes, which the first
// side to read them would pay to flatten).
const fresh = Array.from({ length: FRESH_SESSIONS + 1 }, (_, i) => JSON.parse(JSON.stringify(generateSession(count, { seed: 1000 + i }))));
const freshRow = pairedSteps(
  FRESH_SESSIONS,
  (i) => project({ events: fresh[i], ...projectInput }),
  (i) => plainProject(fresh[i], contextWindow),
);
const freshDigestRow = pairedSteps(
  FRESH_SESSIONS,
  (i) => digestPrefix(fresh[i]),
  (i) => plainDigest(fresh[i]),
);
const jsonlDigestRow = paired(() => digestPrefix(jsonl), () => plainDigest(parseJsonl(jsonl)));
const jsonlProjectRow = paired(
  () => project({ events: jsonl, ...projectInput }),
  () => plainProject(parseJsonl(jsonl), contextWindow),
);

const { ours: wasmDigestMs, baseline: plainDigestMs } = digestRow;
const { ours: wasmProjectMs, baseline: plainProjectMs } = projectRow;
const { ours: logProjectMs } = logRow;
const { ours: growingMs, baseline: plainGrowingMs } = growingRow;
const { ours: freshMs, baseline: plainFreshMs } = freshRow;
const { ours: freshDigestMs, baseline: plainFreshDigestMs } = freshDigestRow;
const { ours: jsonlDigestMs, baseline: plainJsonlDigestMs } = jsonlDigestRow;
const { ours: jsonlProjectMs, baseline: plainJsonlProjectMs } = jsonlProjectRow;

console.log(`digest:     node(wasm) ${wasmDigestMs.toFixed(1)} ms   plain JS ${plainDigestMs.toFixed(1)} ms`);
console.log(`projection: node(wasm) ${wasmProjectMs.toFixed(1)} ms   plain JS ${plainProjectMs.toFixed(1)} ms`);
console.log(`from JSONL: digest node(wasm) ${jsonlDigestMs.toFixed(1)} ms   plain JS ${plainJsonlDigestMs.toFixed(1)} ms   projection node(wasm) ${jsonlProjectMs.toFixed(1)} ms   plain JS ${plainJsonlProjectMs.toFixed(1)} ms`);
console.log(`growing:    node(wasm) ${growingMs.toFixed(1)} ms   plain JS ${plainGrowingMs.toFixed(1)} ms per projection (one turn appended before each)`);
console.log(`unseen:     node(wasm) ${freshMs.toFixed(1)} ms   plain JS ${plainFreshMs.toFixed(1)} ms per projection of a session not seen before; digest ${freshDigestMs.toFixed(1)} ms   plain JS ${plainFreshDigestMs.toFixed(1)} ms`);
console.log(`EventLog:   append all + digest ${appendDigestMs.toFixed(1)} ms   digest() after append ${logDigestMs.toFixed(3)} ms   project() ${logProjectMs.toFixed(1)} ms`);

const nativeBin = option('--native');
if (nativeBin) {
  const dir = mkdtempSync(path.join(tmpdir(), 'contextfold-bench-'));
  const file = path.join(dir, 'session.jsonl');
  writeFileSync(file, jsonl);
  const out = execFileSync(nativeBin, [file, String(contextWindow)], { encoding: 'utf8' });
  const native = Object.fromEntries(out.trim().split('\n').map((l) => l.split('=')));
  assert.equal(native.digest, digest, 'native and wasm digests agree');
  assert.equal(Number(native.messages), projected.messages.length, 'native and wasm project the same messages');
  const n = (key) => Number(native[key]);
  console.log(`native:     parse+digest ${n('parse_digest_ms').toFixed(1)} ms (digest alone ${n('digest_ms').toFixed(1)} ms)   parse+project ${n('parse_project_ms').toFixed(1)} ms (alone ${n('project_ms').toFixed(1)} ms)`);
  console.log(`node/native digest ratio: ${(wasmDigestMs / n('parse_digest_ms')).toFixed(2)} (goal <= 2.5; native digest alone: ${(wasmDigestMs / n('digest_ms')).toFixed(2)})`);
  console.log(`node/native projection ratio: ${(wasmProjectMs / n('parse_project_ms')).toFixed(2)} (goal <= 2.5; native projection alone: ${(wasmProjectMs / n('project_ms')).toFixed(2)})`);
  console.log(`node/native digest ratio from jsonl: ${(jsonlDigestMs / n('parse_digest_ms')).toFixed(2)} (goal <= 2.5; both parse the same JSONL bytes)`);
  console.log(`node/native projection ratio from jsonl: ${(jsonlProjectMs / n('parse_project_ms')).toFixed(2)} (goal <= 2.5; both parse the same JSONL bytes)`);
}
console.log(`node vs plain-js digest: ${digestRow.ratio.toFixed(2)} (goal <= ${STATELESS_GOAL})`);
console.log(`node vs plain-js projection: ${projectRow.ratio.toFixed(2)} (goal <= ${STATELESS_GOAL})`);
console.log(`node vs plain-js projection growing: ${growingRow.ratio.toFixed(2)} (goal <= ${STATELESS_GOAL}; one turn appended before each projection)`);
console.log(`node vs plain-js projection unseen: ${freshRow.ratio.toFixed(2)} (goal <= ${UNSEEN_PROJECTION_GOAL.toFixed(2)}; within 10% of 2.26x, the row when issue 38 was filed; every long string crosses into wasm)`);
console.log(`node vs plain-js digest unseen: ${freshDigestRow.ratio.toFixed(2)} (goal <= ${STATELESS_GOAL}; every long string crosses into wasm)`);
console.log(`node vs plain-js digest from jsonl: ${jsonlDigestRow.ratio.toFixed(2)} (goal <= ${STATELESS_GOAL})`);
console.log(`node vs plain-js projection from jsonl: ${jsonlProjectRow.ratio.toFixed(2)} (goal <= ${STATELESS_GOAL})`);
console.log(`eventlog vs plain-js project: ${logRow.ratio.toFixed(2)} (goal < 1.0; events appended once, projected per request)`);
console.log(`EventLog vs plain-js: digest() after append ${(logDigestMs / plainDigestMs).toFixed(4)} (kept incrementally)`);
log.free();

// What a browser or an edge runtime downloads: the module as built into the package, compressed
// by the `gzip` program (`gzip -9`; Node's zlib at level 9 writes about 1% more) and by brotli.
const GZIP_GOAL_KB = 300;
const packageDir = path.dirname(fileURLToPath(import.meta.resolve('contextfold/package.json')));
for (const target of ['web', 'node']) {
  const file = path.join(packageDir, 'dist', target, 'contextfold_wasm_bg.wasm');
  const module = readFileSync(file);
  const kb = (bytes) => (bytes / 1000).toFixed(1);
  const gzipped = execFileSync('gzip', ['-9', '-c', file], { maxBuffer: 4 * module.length }).length;
  const brotli = brotliCompressSync(module, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 11 } }).length;
  console.log(`${target} wasm gzip: ${kb(gzipped)} KB (goal <= ${GZIP_GOAL_KB} KB; gzip -9 of dist/${target}/contextfold_wasm_bg.wasm, 1 KB = 1000 bytes)`);
  console.log(`${target} wasm raw: ${kb(module.length)} KB (report)`);
  console.log(`${target} wasm brotli: ${kb(brotli)} KB (report; quality 11)`);
}
