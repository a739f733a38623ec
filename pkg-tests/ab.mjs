import { generateSession } from './bench/session.js';
import { plainProject } from './bench/plain-js.js';
import { project } from 'contextfold';
const events = generateSession(10000);
const input = { events, model: { contextWindow: 100000000 }, format: 'ai-sdk' };
const time = (fn) => { const s = process.hrtime.bigint(); fn(); return Number(process.hrtime.bigint() - s) / 1e6; };
const med = (xs) => xs.sort((x, y) => x - y)[xs.length >> 1];
for (let i = 0; i < 5; i++) { project(input); plainProject(events, 100000000); }
const a = [], b = [];
for (let i = 0; i < 30; i++) { a.push(time(() => project(input))); b.push(time(() => plainProject(events, 100000000))); }
console.log(process.argv[2] ?? '', 'median', med(a).toFixed(1), med(b).toFixed(1), 'ratio', (med(a) / med(b)).toFixed(2), 'min', Math.min(...a).toFixed(1), Math.min(...b).toFixed(1));
