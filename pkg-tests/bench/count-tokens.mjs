// The cost of a caller's counting function: project() of a generated 1,000-event coding session
// (bench/session.js: tool outputs of about 3,000 bytes of mixed unicode) with the built-in
// estimate and with js-tiktoken's o200k_base as `countTokens`, plus js-tiktoken alone over the
// same texts. Prints one line per row (median of the runs, milliseconds) and the token totals.
//   node bench/count-tokens.mjs            (EVENTS=, OUTPUT_BYTES=, RUNS= to change)
import { getEncoding } from 'js-tiktoken';
import { EventLog, project } from 'contextfold';
import { generateSession } from './session.js';

const count = Number(process.env.EVENTS ?? 1000);
const outputBytes = Number(process.env.OUTPUT_BYTES ?? 3000);
const runs = Number(process.env.RUNS ?? 5);
const events = generateSession(count, { outputBytes, sessionId: 'count-tokens' });
const model = { contextWindow: 10_000_000 };
const o200k = getEncoding('o200k_base');
const countTokens = (text) => o200k.encode(text).length;

function median(fn) {
  const times = [];
  let value;
  for (let i = 0; i < runs; i += 1) {
    const start = performance.now();
    value = fn();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return { ms: times[Math.floor(times.length / 2)], value };
}

const texts = events.map((e) => e.content.text ?? e.content.output ?? JSON.stringify(e.content.input));
const chars = texts.reduce((sum, text) => sum + text.length, 0);
console.log(`${count} events, ${chars} chars of text, ${runs} runs each (median)`);

// Warm-up: js-tiktoken's JIT and the package's hidden log of the last call, so that no row pays them.
for (let i = 0; i < 2; i += 1) texts.forEach(countTokens);
project({ events, model });

const rows = [
  ['js-tiktoken alone: encode() of every event text once', () => texts.reduce((sum, text) => sum + countTokens(text), 0)],
  ['built-in estimate: project({ events })', () => project({ events, model }).estimatedTokens],
  ['js-tiktoken: project({ events, countTokens })', () => project({ events, model, countTokens }).estimatedTokens],
];
const log = new EventLog();
log.append(events);
rows.push(['built-in estimate: log.project()', () => log.project({ model }).estimatedTokens]);
rows.push(['js-tiktoken: log.project({ countTokens })', () => log.project({ model, countTokens }).estimatedTokens]);
for (const [name, fn] of rows) {
  const { ms, value } = median(fn);
  console.log(`${name.padEnd(56)} ${ms.toFixed(1).padStart(9)} ms  ${value} tokens`);
}
log.free();
