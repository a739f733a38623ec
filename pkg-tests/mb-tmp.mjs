import { generateSession } from '/work/main/pkg-tests/bench/session.js';
const sessions = Array.from({ length: 6 }, (_, i) => generateSession(10000, { seed: 100 + i, sessionId: `s${i}` }));
const strs = []; const walk = (v) => { if (typeof v === 'string') strs.push(v); else if (v && typeof v === 'object') for (const k in v) walk(v[k]); };
for (const s of sessions) walk(s);
const enc = new TextEncoder(); const buf = Buffer.alloc(200 << 20); const u8 = new Uint8Array(buf.buffer, buf.byteOffset, buf.length);
const T = (f) => { const s = process.hrtime.bigint(); f(); return (Number(process.hrtime.bigint() - s) / 1e6 / 6).toFixed(1); };
for (let r = 0; r < 3; r++) {
  console.log('encodeInto', T(() => { let at = 0; for (const s of strs) at += enc.encodeInto(s, u8.subarray(at)).written; }),
    'utf8Write', T(() => { let at = 0; for (const s of strs) at += buf.utf8Write(s, at); }),
    'wellFormed', T(() => { let n = 0; for (const s of strs) n += s.isWellFormed() ? 1 : 0; }));
}
