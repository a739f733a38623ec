// Benchmark (not part of the test path): the source digest and projection through the wasm
// package in Node, against the native core (an example binary, when built) and a plain
// JavaScript implementation (JCS canonicalization + node:crypto).
//
//   node bench/digest-bench.js [--native path/to/native_digest_bench]
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { digestPrefix, project } from 'contextfold';
import { compactionFixture, readRepoJson } from '../test/helpers.js';

const DOMAIN_PREFIX = 'contextfold-source-v1\n';
const OPTIONAL = ['createdAtMs', 'responseId', 'metadata'];
const FLAGS = ['partial', 'pinned'];

/** RFC 8785 canonical JSON: JSON.stringify with keys sorted by UTF-16 code units. */
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The event as the core reads it: null optionals and false flags left out. */
function normalized(event) {
  const out = { ...event };
  for (const key of OPTIONAL) if (out[key] == null) delete out[key];
  for (const key of FLAGS) if (!out[key]) delete out[key];
  const content = { ...event.content };
  if (content.providerData == null) delete content.providerData;
  if (!content.isError) delete content.isError;
  out.content = content;
  return out;
}

/** The plain-JS digest of the events. */
export function jsDigest(events) {
  const hash = createHash('sha256').update(DOMAIN_PREFIX);
  for (const event of events) hash.update(`${canonical(normalized(event))}\n`);
  return `sha256:${hash.digest('hex')}`;
}

function timeIt(fn, minMs = 400) {
  fn();
  let runs = 0;
  const start = process.hrtime.bigint();
  let elapsed = 0n;
  while (elapsed < BigInt(minMs) * 1_000_000n) {
    fn();
    runs += 1;
    elapsed = process.hrtime.bigint() - start;
  }
  return Number(elapsed) / runs / 1e6;
}

const vectors = readRepoJson('tests/vectors/digest.json');
const events = vectors.cases.flatMap((c) => c.events);
const perCase = vectors.cases.map((c) => c.events);
const agree = vectors.cases.filter((c) => jsDigest(c.events) === c.digest).length;

const wasmMs = timeIt(() => perCase.forEach((e) => digestPrefix(e)));
const jsMs = timeIt(() => perCase.forEach((e) => jsDigest(e)));
console.log(`vectors: ${vectors.cases.length} cases, ${events.length} events; plain JS agrees on ${agree}`);
console.log(`digest  wasm(node): ${wasmMs.toFixed(3)} ms/pass   plain JS: ${jsMs.toFixed(3)} ms/pass   wasm/JS = ${(wasmMs / jsMs).toFixed(2)}`);

const rolling = compactionFixture().cases.find((c) => c.name === 'rolling_pre_turn');
const projectMs = timeIt(() => project({ events: rolling.input.events, checkpoint: rolling.expected.checkpoint, model: rolling.input.model }));
console.log(`project wasm(node): ${projectMs.toFixed(3)} ms for ${rolling.input.events.length} events with a checkpoint`);

const nativeIndex = process.argv.indexOf('--native');
if (nativeIndex > 0) {
  const out = execFileSync(process.argv[nativeIndex + 1], [], { encoding: 'utf8' });
  const nativeMs = Number(/digest_ms=([\d.]+)/.exec(out)?.[1]);
  console.log(`digest  native: ${nativeMs.toFixed(3)} ms/pass   node(wasm)/native = ${(wasmMs / nativeMs).toFixed(2)}`);
}
