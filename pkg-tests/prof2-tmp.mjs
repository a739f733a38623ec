import { project } from 'contextfold';
import { generateSession } from '/work/main/pkg-tests/bench/session.js';
const sessions = Array.from({ length: 8 }, (_, i) => JSON.parse(JSON.stringify(generateSession(10000, { seed: 100 + i, sessionId: `s${i}` }))));
const s0 = process.hrtime.bigint();
for (let r = 0; r < 3; r++) for (const events of sessions) project({ events, model: { contextWindow: 100000000 }, format: 'ai-sdk' });
console.log(Number(process.hrtime.bigint() - s0) / 1e6 / 24);
