import { project } from 'contextfold';
import { generateSession } from './session.js';
const events = generateSession(10000);
const jsonl = Buffer.from(`${events.map((e) => JSON.stringify(e)).join('\n')}\n`);
const input = { events: jsonl, model: { contextWindow: 100_000_000 }, format: 'ai-sdk' };
project(input);
const ts = [];
for (let i = 0; i < 25; i++) { const t = performance.now(); project(input); ts.push(performance.now() - t); }
ts.sort((a, b) => a - b);
console.log(process.argv[2], 'median', ts[12].toFixed(1), 'q1', ts[6].toFixed(1));
