import { generateSession } from './bench/session.js';
import { plainProject } from './bench/plain-js.js';
import { createHash } from 'node:crypto';
import * as raw from '../pkg/dist/node/contextfold_wasm.js';
import { StringInterner } from '../pkg/interned.js';
import { projectSharing, useUtf16ToString } from '../pkg/values.js';
raw.useHashFactory(() => createHash('sha256'));
useUtf16ToString((units) => Buffer.from(units.buffer, units.byteOffset, units.byteLength).toString('ucs2'));
const events = generateSession(10000);
const input = { events, model: { contextWindow: 100000000 }, format: 'ai-sdk' };
const variants = { base: new StringInterner(raw), min64: new StringInterner(raw, { minUnits: 64 }), min32: new StringInterner(raw, { minUnits: 32 }) };
const time = (fn) => { const s = process.hrtime.bigint(); fn(); return Number(process.hrtime.bigint() - s) / 1e6; };
const med = (xs) => xs.sort((x, y) => x - y)[xs.length >> 1];
const res = { plain: [] }; for (const k in variants) res[k] = [];
for (let i = 0; i < 33; i++) {
  for (const [k, it] of Object.entries(variants)) res[k].push(time(() => projectSharing(raw, input, it)));
  res.plain.push(time(() => plainProject(events, 100000000)));
}
for (const k in res) console.log(k, 'median', med(res[k].slice(3)).toFixed(1));
