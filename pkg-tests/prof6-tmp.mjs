import { digestPrefix, project } from 'contextfold';
import { generateSession } from '/work/main/pkg-tests/bench/session.js';
import { plainProject, plainDigest } from '/work/main/pkg-tests/bench/plain-js.js';
const sessions = Array.from({ length: 12 }, (_, i) => JSON.parse(JSON.stringify(generateSession(10000, { seed: 100 + i, sessionId: `s${i}` }))));
const T = (f) => { const s = process.hrtime.bigint(); f(); return Number(process.hrtime.bigint() - s) / 1e6; };
const d = [], p = [], pd = [], pp = [];
for (const events of sessions) { d.push(T(() => digestPrefix(events))); pd.push(T(() => plainDigest(events))); }
for (const events of sessions) { p.push(T(() => project({ events, model: { contextWindow: 1e8 }, format: 'ai-sdk' }))); pp.push(T(() => plainProject(events, 1e8))); }
const med = (x) => x.sort((a, b) => a - b)[x.length >> 1].toFixed(1);
console.log(`digest ${med(d)} (plain ${med(pd)}) project ${med(p)} (plain ${med(pp)})`);
