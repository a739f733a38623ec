// Two builds of the package in one process, called in turn on the same unseen sessions: the
// ratio of their median times cancels the machine's drift that separate processes see.
//
//   A=/path/to/pkg-copy B=/path/to/other N=24 node bench/ab.mjs
import { generateSession } from './session.js';

const a = await import(`${process.env.A}/node.js`);
const b = await import(`${process.env.B}/node.js`);
const count = Number(process.env.N ?? 24);
const input = { model: { contextWindow: 100_000_000 }, format: 'ai-sdk' };

function elapsedMs(fn) {
  const start = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}
const median = (values) => [...values].sort((x, y) => x - y)[values.length >> 1];
const times = { a: [], b: [] };
for (let i = 0; i < count; i += 1) {
  const events = JSON.parse(JSON.stringify(generateSession(10000, { seed: 1000 + i })));
  const order = i % 2 ? ['a', 'b'] : ['b', 'a'];
  for (const side of order) {
    const { project } = side === 'a' ? a : b;
    times[side].push(elapsedMs(() => project({ events, ...input })));
  }
}
const ma = median(times.a.slice(2));
const mb = median(times.b.slice(2));
console.log(`A ${ma.toFixed(1)} ms, B ${mb.toFixed(1)} ms, B/A ${(mb / ma).toFixed(3)}`);
