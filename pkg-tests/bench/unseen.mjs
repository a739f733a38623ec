// The unseen projection alone, for comparing two builds of the package in alternating
// processes (docs/performance.md, "npm package"): N generated sessions (default 12), each read
// back from JSON and projected once by the package and once by the plain-JS baseline, then the
// median per-pair ratio and the median milliseconds of each side.
//
//   PKG=/path/to/a/copy/of/pkg N=12 node bench/unseen.mjs    # PKG unset: the linked package
//   SIDE=wasm ...                                              # the package only (profiling)
import { plainProject } from './plain-js.js';
import { generateSession } from './session.js';

const { project } = await import(process.env.PKG ? `${process.env.PKG}/node.js` : 'contextfold');
const count = Number(process.env.N ?? 12);
const side = process.env.SIDE ?? 'both';
const contextWindow = 100_000_000;
const sessions = Array.from({ length: count + 1 }, (_, i) => JSON.parse(JSON.stringify(generateSession(10000, { seed: 1000 + i }))));
const input = { model: { contextWindow }, format: 'ai-sdk' };

/** Milliseconds `fn()` takes. */
function elapsedMs(fn) {
  const start = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];
const ours = [];
const plain = [];
for (let i = 0; i < count; i += 1) {
  if (side !== 'plain') ours.push(elapsedMs(() => project({ events: sessions[i], ...input })));
  if (side !== 'wasm') plain.push(elapsedMs(() => plainProject(sessions[i], contextWindow)));
}
const ratio = side === 'both' ? median(ours.map((ms, i) => ms / plain[i])).toFixed(2) : '-';
const ms = (values) => (values.length ? `${median(values).toFixed(1)} ms` : '-');
console.log(`unseen projection: ratio ${ratio}, package ${ms(ours)}, plain JS ${ms(plain)} (median of ${count} sessions; the first call of each side included)`);
