import { generateSession } from './bench/session.js';
import { plainProject, plainDigest } from './bench/plain-js.js';
import { project, digestPrefix } from 'contextfold';
const events = generateSession(10000);
function t(name, fn, n = 20) { fn(); const s = process.hrtime.bigint(); for (let i = 0; i < n; i++) fn(); const ms = Number(process.hrtime.bigint() - s) / n / 1e6; console.log(name, ms.toFixed(1), 'ms'); return ms; }
const input = { events, model: { contextWindow: 100000000 }, format: 'ai-sdk' };
for (let r = 0; r < 2; r++) {
const a = t('project', () => project(input));
const b = t('plainProject', () => plainProject(events, 100000000));
console.log('ratio', (a / b).toFixed(2));
const c = t('digest', () => digestPrefix(events));
const d = t('plainDigest', () => plainDigest(events));
console.log('ratio', (c / d).toFixed(2));
}
