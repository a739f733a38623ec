// The shared conformance vectors (tests/vectors/digest.json) through the built package.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { digestPrefix, prefixDigests, canonicalEventJson } from 'contextfold';
import { readRepoJson } from './helpers.js';

const vectors = readRepoJson('tests/vectors/digest.json');

test('the vector file has cases', () => {
  assert.ok(vectors.cases.length >= 20, `only ${vectors.cases.length} cases`);
});

for (const vector of vectors.cases) {
  test(`digest vector ${vector.name}`, () => {
    assert.equal(digestPrefix(vector.events), vector.digest);
    assert.deepEqual(prefixDigests(vector.events), vector.prefixDigests);
    vector.events.forEach((event, index) => {
      assert.equal(canonicalEventJson(event), vector.canonical[index], `event ${index}`);
    });
  });
}

test('a changed event changes the digest', () => {
  const [first] = vectors.cases;
  const events = structuredClone(first.events);
  events[0].content.text += ' ';
  assert.notEqual(digestPrefix(events), first.digest);
});

test('BigInt seq is read exactly and digests like its double', () => {
  const [first] = vectors.cases;
  const events = first.events.map((event) => ({ ...event, seq: BigInt(event.seq) }));
  assert.equal(digestPrefix(events), first.digest);
});
