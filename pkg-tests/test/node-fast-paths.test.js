// The Node-specific fast paths of the package: digests hashed by node:crypto (fed in 16 KiB
// chunks by the wasm module) and projections whose long strings come back in a UTF-16 table.
// Both must give exactly what the portable paths give; the browser test covers the wasm engine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventLog, digestPrefix, hashEngine, prefixDigests, project } from 'contextfold';
import { plainDigest, plainProject } from '../bench/plain-js.js';
import { generateSession } from '../bench/session.js';

test('Node digests through node:crypto', () => {
  assert.equal(hashEngine(), 'host');
});

test('digests of long unicode outputs (many 16 KiB chunks) equal an independent implementation', () => {
  // 40 KB tool outputs: strings longer than the hash buffer, written across several chunks.
  const events = generateSession(40, { outputBytes: 40_000, seed: 11 });
  const expected = plainDigest(events);
  assert.equal(digestPrefix(events), expected);
  assert.equal(prefixDigests(events).at(-1), expected);
  const log = new EventLog();
  for (const event of events) log.append(event);
  assert.equal(log.digest(), expected);
  log.free();
  assert.equal(digestPrefix(events.slice(0, 5)), plainDigest(events.slice(0, 5)));
});

test('a projection from objects equals the plain-JS one and the EventLog one', () => {
  const events = generateSession(200, { outputBytes: 3000, seed: 5 });
  const projected = project({ events, model: { contextWindow: 100_000_000 }, format: 'ai-sdk' });
  assert.deepEqual(projected.messages, plainProject(events, 100_000_000).messages);
  assert.equal(projected.sharedStrings, undefined);
  const log = new EventLog();
  log.append(events);
  const fromLog = log.project({ model: { contextWindow: 100_000_000 }, format: 'ai-sdk' });
  log.free();
  assert.deepEqual(projected, fromLog);
  for (const format of ['openai-chat', 'openai-responses', 'anthropic', 'neutral']) {
    const log2 = new EventLog();
    log2.append(events);
    assert.deepEqual(project({ events, format }), log2.project({ format }), format);
    log2.free();
  }
});

test('a projection of events with toJSON uses what JSON.stringify gives, not the raw object', () => {
  const events = generateSession(8, { outputBytes: 1000, seed: 3 });
  const secret = events[2].content.output;
  const redacted = 'x'.repeat(secret.length);
  const raw = events[2].content;
  events[2] = { ...events[2], content: { ...raw, toJSON: () => ({ ...raw, output: redacted }) } };
  const projected = project({ events, format: 'ai-sdk' });
  const outputs = projected.messages
    .filter((m) => m.role === 'tool')
    .flatMap((m) => m.content.map((part) => part.output.value));
  assert.ok(outputs.includes(redacted));
  assert.ok(!outputs.includes(secret));
  assert.equal(digestPrefix(events), plainDigest(JSON.parse(JSON.stringify(events))));
});
