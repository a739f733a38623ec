// selectSafePrefix, safeBoundaries and evaluateReplay through the built package, against the
// values the native core recorded in tests/vectors/projection.json.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ContextfoldError, evaluateReplay, matchCheckpoint, safeBoundaries, selectSafePrefix,
} from 'contextfold';
import { readRepoJson } from './helpers.js';

const cases = readRepoJson('tests/vectors/projection.json').cases;
const prefixCases = cases.filter((c) => c.op === 'select_safe_prefix');
const replayCases = cases.filter((c) => c.op === 'evaluate_replay');
const byName = (name) => cases.find((c) => c.name === name).input;

/** Asserts that `fn` throws a ContextfoldError with `code`. */
function throwsCode(fn, code) {
  assert.throws(fn, (error) => {
    assert.ok(error instanceof ContextfoldError, `not a ContextfoldError: ${error}`);
    assert.equal(error.code, code, error.message);
    return true;
  });
}

test('the vector file has prefix and replay cases', () => {
  assert.ok(prefixCases.length >= 20, `only ${prefixCases.length} prefix cases`);
  assert.ok(replayCases.length >= 12, `only ${replayCases.length} replay cases`);
});

for (const { name, input, expected } of prefixCases) {
  test(`select_safe_prefix vector ${name}`, () => {
    const prefix = selectSafePrefix(input.events, {
      currentTurnId: input.currentTurnId,
      reserveTailTokens: input.reserveTailTokens,
      reserveTailTurns: input.reserveTailTurns,
    });
    assert.deepEqual(prefix, expected.prefix);
    const cuts = safeBoundaries(input.events, input.currentTurnId);
    assert.ok(Array.isArray(cuts), 'a plain array, not a typed array');
    assert.deepEqual(cuts, expected.safeBoundaries);
    if (prefix) assert.ok(cuts.includes(prefix.end), `${prefix.end} is not a safe boundary`);
  });
}

test('known prefixes of session s0 and an impossible reserve in s2', () => {
  const s0 = byName('s0_prefix_plain');
  // The current turn t5 (events 29..36) has settled steps: they are cuts too (active-turn
  // folding), and so are the step ends inside completed turns.
  assert.deepEqual(selectSafePrefix(s0.events, { currentTurnId: 't5' }), { end: 36, turnCount: 5 });
  assert.deepEqual(selectSafePrefix(s0.events), { end: 36, turnCount: 5 });
  assert.deepEqual(selectSafePrefix(s0.events, { currentTurnId: 't5', reserveTailTurns: 2 }), { end: 7, turnCount: 2 });
  assert.deepEqual(safeBoundaries(s0.events, 't5'), [4, 5, 7, 13, 16, 17, 23, 28, 29, 33, 36]);
  assert.deepEqual(safeBoundaries(s0.events), [4, 5, 7, 13, 16, 17, 23, 28, 29, 33, 36]);
  const s2 = byName('s2_prefix_reserve_tokens');
  assert.equal(selectSafePrefix(s2.events, { currentTurnId: 't6', reserveTailTokens: 600 }), null);
});

test('a bigint reserve is read exactly and means the same as its number', () => {
  const s0 = byName('s0_prefix_plain');
  const asNumber = selectSafePrefix(s0.events, { currentTurnId: 't5', reserveTailTokens: 600 });
  const asBigint = selectSafePrefix(s0.events, { currentTurnId: 't5', reserveTailTokens: 600n });
  assert.deepEqual(asBigint, asNumber);
  assert.deepEqual(asNumber, { end: 28, turnCount: 4 });
});

test('a larger reserve never selects a longer prefix', () => {
  const { events } = byName('s1_prefix_plain');
  let previous = Infinity;
  for (const reserveTailTurns of [0, 1, 2, 3, 4, 5, 6, 7]) {
    const prefix = selectSafePrefix(events, { currentTurnId: 't7', reserveTailTurns });
    const end = prefix?.end ?? 0;
    assert.ok(end <= previous, `reserve ${reserveTailTurns}: ${end} > ${previous}`);
    previous = end;
  }
  assert.equal(previous, 0, 'reserving every turn leaves nothing to cover');
});

test('a current turn that is not the suffix of the log is a typed error', () => {
  const { events } = byName('s0_prefix_plain');
  throwsCode(() => selectSafePrefix(events, { currentTurnId: 't1' }), 'log_current_turn_not_suffix');
  throwsCode(() => safeBoundaries(events, 't1'), 'log_current_turn_not_suffix');
});

test('bad prefix arguments are typed errors', () => {
  const { events } = byName('s0_prefix_plain');
  throwsCode(() => selectSafePrefix(events, { currentTurn: 't5' }), 'invalid_argument');
  throwsCode(() => selectSafePrefix(events, { reserveTailTokens: -1 }), 'invalid_argument');
  throwsCode(() => safeBoundaries(events, 5), 'invalid_argument');
  const broken = structuredClone(events);
  broken[3].content = { type: 'no_such_kind' };
  throwsCode(() => safeBoundaries(broken), 'event_unknown_kind');
});

for (const { name, input, expected } of replayCases) {
  test(`evaluate_replay vector ${name}`, () => {
    const result = evaluateReplay({
      events: input.events,
      checkpoint: input.checkpoint,
      currentTurnId: input.currentTurnId,
      model: input.model,
      provider: input.provider,
    });
    assert.equal(result.decision, expected.decision);
    assert.equal(result.code, expected.code);
    assert.deepEqual(result.plan, expected.plan);
    if (result.decision === 'accepted') assert.equal(result.diagnostic, null);
    else assert.equal(result.diagnostic.code, expected.code);
    const match = expected.match.covered === undefined ? null : expected.match;
    if (match) assert.deepEqual(matchCheckpoint(input.checkpoint, input.events), match);
  });
}

test('the replay gate on session s1: accepted, over budget, tampered', () => {
  const input = byName('s1_replay_same_log');
  const { plan } = cases.find((c) => c.name === 's1_replay_same_log').expected;
  const accepted = evaluateReplay(input);
  // The native core's figures, from the vector; the checkpoint is much smaller than its source
  // (3.6x since the summary may fill 75% of the budget after compaction; 6x at 50%).
  assert.deepEqual(accepted, { decision: 'accepted', code: null, plan, diagnostic: null });
  assert.equal(plan.covered, 54);
  assert.ok(plan.checkpointTokens * 3 < plan.sourceTokens, JSON.stringify(plan));
  const small = evaluateReplay({ ...input, model: { contextWindow: 400 } });
  assert.equal(small.code, 'checkpoint_over_budget');
  assert.deepEqual(small.plan, accepted.plan);
  assert.equal(small.diagnostic.tokens.after, plan.replayTokens);
  const events = structuredClone(input.events);
  const edited = events.findIndex((event) => typeof event.content.text === 'string');
  assert.ok(edited >= 0 && edited < 54, 'a covered text event to edit');
  events[edited].content.text += ' (edited)';
  const tampered = evaluateReplay({ ...input, events });
  assert.equal(tampered.code, 'source_hash_mismatch');
  assert.equal(tampered.plan, null);
});

test('a provider-state (V3) checkpoint replays only for its provider, connection and model', () => {
  const input = byName('s1_replay_same_log');
  const { summary: _summary, ...rest } = input.checkpoint;
  const checkpoint = {
    ...rest,
    schemaVersion: 3,
    providerState: {
      kind: 'openai_codex_remote_v2',
      connectionSlug: input.provider.connectionSlug,
      modelId: input.provider.modelId,
      itemId: 'cmp_1',
      encryptedContent: 'opaque',
    },
  };
  const accepted = evaluateReplay({ ...input, checkpoint });
  assert.equal(accepted.decision, 'accepted', JSON.stringify(accepted));
  assert.equal(accepted.plan.covered, 54);
  for (const provider of [undefined, { ...input.provider, modelId: 'another-model' }]) {
    const rejected = evaluateReplay({ ...input, checkpoint, provider });
    assert.equal(rejected.decision, 'rejected');
    assert.equal(rejected.code, 'provider_mismatch');
    assert.equal(rejected.plan, null);
  }
});

test('bad replay input is a typed error, a rejection is not', () => {
  const input = byName('s1_replay_same_log');
  const { checkpoint: _checkpoint, ...withoutCheckpoint } = input;
  throwsCode(() => evaluateReplay(withoutCheckpoint), 'invalid_argument');
  throwsCode(() => evaluateReplay({ ...input, currentTurnId: 't1' }), 'log_current_turn_not_suffix');
  throwsCode(() => evaluateReplay({ ...input, checkpoint: { ...input.checkpoint, schemaVersion: 9 } }),
    'checkpoint_schema_unsupported');
  const events = structuredClone(input.events);
  events[5].seq = events[4].seq;
  throwsCode(() => evaluateReplay({ ...input, events }), 'log_seq_not_increasing');
  assert.equal(evaluateReplay({ ...input, events: input.events.slice(0, 30) }).code, 'coverage_miss');
});
