// Benchmark of the npm package `contextfold` in Node against the native core and a plain
// JavaScript implementation of the same digest and projection (bench/plain-js.js).
//
//   node bench/run.mjs [--events 10000] [--native path/to/native_bench]
//
// Generates a seeded session (large unicode tool outputs), writes it as JSONL for the native
// example (wasm/contextfold-wasm/examples/native_bench.rs), checks that all three agree on the
// digest and the projection, and prints the ratios: from events held as JS objects — the same
// array every call, an array growing by one turn before each call (an agent's loop), and
// sessions never seen before (report: every long string crosses into wasm, pkg/interned.js) —
// and from the same JSONL bytes on every side (package: the bytes passed in; plain JS: checked
// UTF-8 decoding, line split, JSON.parse, then the same work; native: parse then the same
// work). `bench/npm.sh` builds everything and runs it.
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

/** Milliseconds per call of `fn(i)` for i in 0..calls, after one untimed warm-up call `fn(calls)`. */
function meanOf(calls, fn) {
  fn(calls);
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i += 1) fn(i);
  return Number(process.hrtime.bigint() - start) / calls / 1e6;
}

const count = Number(option('--events', '10000'));
/** Projections of the growing log (one turn appended before each), and unseen sessions. */
const GROWING_CALLS = 20;
const FRESH_SESSIONS = 5;
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

const wasmDigestMs = timeIt(() => digestPrefix(events));
const appendDigestMs = timeIt(() => {
  const fresh = new EventLog();
  fresh.append(events);
  fresh.digest();
  fresh.free();
});
const logDigestMs = timeIt(() => log.digest(), 200);
const logProjectMs = timeIt(() => log.project({ model: { contextWindow }, format: 'ai-sdk' }));
const plainDigestMs = timeIt(() => plainDigest(events));
const wasmProjectMs = timeIt(() => project({ events, model: { contextWindow }, format: 'ai-sdk' }));
const plainProjectMs = timeIt(() => plainProject(events, contextWindow));
// An agent's loop: the array grows by one turn (4 events) before each projection.
const extra = generateSession(count + 4 * GROWING_CALLS).slice(count);
const growing = [...events];
const plainGrowing = [...events];
const growingMs = meanOf(GROWING_CALLS, (i) => {
  growing.push(...extra.slice(4 * i, 4 * i + 4));
  project({ events: growing, ...projectInput });
});
const plainGrowingMs = meanOf(GROWING_CALLS, (i) => {
  plainGrowing.push(...extra.slice(4 * i, 4 * i + 4));
  plainProject(plainGrowing, contextWindow);
});
assert.deepEqual(plainProject(plainGrowing, contextWindow), withoutMeasure(project({ events: growing, ...projectInput })), 'grown projections agree');
// Every call a session the package has not seen: its long strings all cross into wasm. Read
// back from JSON, as events usually arrive (the generator's strings are ropes, which the first
// side to read them would pay to flatten).
const fresh = Array.from({ length: FRESH_SESSIONS + 1 }, (_, i) => JSON.parse(JSON.stringify(generateSession(count, { seed: 1000 + i }))));
const freshMs = meanOf(FRESH_SESSIONS, (i) => project({ events: fresh[i], ...projectInput }));
const plainFreshMs = meanOf(FRESH_SESSIONS, (i) => plainProject(fresh[i], contextWindow));
const jsonlDigestMs = timeIt(() => digestPrefix(jsonl));
const plainJsonlDigestMs = timeIt(() => plainDigest(parseJsonl(jsonl)));
const jsonlProjectMs = timeIt(() => project({ events: jsonl, ...projectInput }));
const plainJsonlProjectMs = timeIt(() => plainProject(parseJsonl(jsonl), contextWindow));

console.log(`digest:     node(wasm) ${wasmDigestMs.toFixed(1)} ms   plain JS ${plainDigestMs.toFixed(1)} ms`);
console.log(`projection: node(wasm) ${wasmProjectMs.toFixed(1)} ms   plain JS ${plainProjectMs.toFixed(1)} ms`);
console.log(`from JSONL: digest node(wasm) ${jsonlDigestMs.toFixed(1)} ms   plain JS ${plainJsonlDigestMs.toFixed(1)} ms   projection node(wasm) ${jsonlProjectMs.toFixed(1)} ms   plain JS ${plainJsonlProjectMs.toFixed(1)} ms`);
console.log(`growing:    node(wasm) ${growingMs.toFixed(1)} ms   plain JS ${plainGrowingMs.toFixed(1)} ms per projection (one turn appended before each)`);
console.log(`unseen:     node(wasm) ${freshMs.toFixed(1)} ms   plain JS ${plainFreshMs.toFixed(1)} ms per projection of a session not seen before`);
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
console.log(`node vs plain-js digest: ${(wasmDigestMs / plainDigestMs).toFixed(2)} (goal < 1.0)`);
console.log(`node vs plain-js projection: ${(wasmProjectMs / plainProjectMs).toFixed(2)} (goal < 1.0)`);
console.log(`node vs plain-js projection growing: ${(growingMs / plainGrowingMs).toFixed(2)} (goal < 1.0; one turn appended before each projection)`);
console.log(`node vs plain-js projection unseen: ${(freshMs / plainFreshMs).toFixed(2)} (report; every long string crosses into wasm)`);
console.log(`node vs plain-js digest from jsonl: ${(jsonlDigestMs / plainJsonlDigestMs).toFixed(2)} (goal < 1.0)`);
console.log(`node vs plain-js projection from jsonl: ${(jsonlProjectMs / plainJsonlProjectMs).toFixed(2)} (goal < 1.0)`);
// An agent appends each event to an EventLog once, as it happens, and projects every request; the
// plain-JS equivalent keeps its array of objects and projects it.
console.log(`eventlog vs plain-js project: ${(logProjectMs / plainProjectMs).toFixed(2)} (goal < 1.0; events appended once, projected per request)`);
console.log(`EventLog vs plain-js: digest() after append ${(logDigestMs / plainDigestMs).toFixed(4)} (kept incrementally)`);
log.free();

// What a browser or an edge runtime downloads: the module as built into the package, compressed
// by the `gzip` program (`gzip -9`; Node's zlib at level 9 writes about 1% more) and by brotli.
const GZIP_GOAL_KB = 250;
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
