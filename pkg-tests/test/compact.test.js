// compact() with a JS host must produce the native core's outcome for the same input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventLog, compact, extractiveSummary, matchCheckpoint, mergeCircuits, prepareDue, project, projectForRequest, ContextfoldError } from 'contextfold';
import { sessionEvents } from '../stores/session.js';
import { compactionFixture } from './helpers.js';

const fixture = compactionFixture();

/** A host whose summarizer is the package's extractive summarizer, with an in-memory ledger. */
function extractiveHost(events, kind = 'extractive') {
  const ledger = [];
  const requests = [];
  return {
    ledger,
    requests,
    async summarize(request) {
      requests.push(request);
      if (kind === 'truncated') return { text: '## Goal\n- fix the tests', finishReason: 'length' };
      const fold = events.slice(request.fold.start, request.fold.end);
      return { text: extractiveSummary(request.previousSummary, fold, request.targetTokens), finishReason: 'stop' };
    },
    async appendCheckpoint(checkpoint) {
      await new Promise((resolve) => setTimeout(resolve, 1));
      ledger.push(structuredClone(checkpoint));
    },
  };
}

for (const fixtureCase of fixture.cases) {
  test(`compact() equals the native core: ${fixtureCase.name}`, async () => {
    const host = extractiveHost(fixtureCase.input.events, fixtureCase.summarizer);
    const outcome = await compact(fixtureCase.input, host);
    assert.deepEqual(outcome, fixtureCase.expected);
    if (outcome.outcome === 'recorded') {
      assert.deepEqual(host.ledger, [outcome.checkpoint]);
      const { covered } = matchCheckpoint(outcome.checkpoint, fixtureCase.input.events);
      assert.equal(covered, outcome.checkpoint.coverage.eventCount);
      for (const request of host.requests) {
        assert.ok(request.messages.length > 0 && request.messages.every((m) => typeof m.role === 'string'));
        assert.deepEqual(request.providerOptions, {});
      }
    } else {
      assert.deepEqual(host.ledger, []);
    }
  });
}

test('a recorded checkpoint shrinks the projection under the budget', async () => {
  const rolling = fixture.cases.find((c) => c.name === 'rolling_pre_turn');
  const without = project({ events: rolling.input.events, model: rolling.input.model });
  const withCheckpoint = project({
    events: rolling.input.events,
    model: rolling.input.model,
    checkpoint: rolling.expected.checkpoint,
  });
  assert.equal(without.fits, false);
  assert.equal(withCheckpoint.fits, true);
  // Over the budget, the projection says so with its figures; within it, it does not.
  const over = without.diagnostics.filter((d) => d.code === 'projection_over_budget');
  assert.equal(over.length, 1);
  assert.deepEqual(over[0].tokens, { before: without.estimatedTokens, after: without.estimatedTokens, budget: without.historyBudget });
  assert.equal(withCheckpoint.diagnostics.some((d) => d.code === 'projection_over_budget'), false);
  assert.equal(withCheckpoint.checkpoint.checkpointId, rolling.expected.checkpoint.checkpointId);
  assert.ok(withCheckpoint.estimatedTokens < without.estimatedTokens);
});

test('an AbortSignal cancels before anything is persisted', async () => {
  const initial = fixture.cases.find((c) => c.name === 'initial_manual');
  const controller = new AbortController();
  const ledger = [];
  const host = {
    summarize: () => {
      setTimeout(() => controller.abort(), 5);
      return new Promise(() => {}); // a provider call that never answers
    },
    appendCheckpoint: async (checkpoint) => ledger.push(checkpoint),
  };
  const outcome = await compact(initial.input, host, { signal: controller.signal });
  assert.equal(outcome.outcome, 'cancelled');
  assert.equal(outcome.reason, 'cancelled');
  assert.equal(outcome.checkpoint, undefined);
  assert.deepEqual(ledger, []);
});

test('provider errors are classified and the session fails open', async () => {
  const initial = fixture.cases.find((c) => c.name === 'initial_manual');
  const ledger = [];
  const host = {
    summarize: async () => {
      throw Object.assign(new Error('Invalid API key'), { statusCode: 401 });
    },
    appendCheckpoint: async (checkpoint) => ledger.push(checkpoint),
  };
  const outcome = await compact(initial.input, host);
  assert.equal(outcome.outcome, 'failed_open');
  assert.equal(outcome.reason, 'provider_auth');
  assert.deepEqual(ledger, []);
  assert.equal(outcome.failureNote?.type, 'runtime_note');
});

test('a failed append is reported, never a recorded checkpoint', async () => {
  const initial = fixture.cases.find((c) => c.name === 'initial_manual');
  const host = extractiveHost(initial.input.events);
  host.appendCheckpoint = async () => {
    throw Object.assign(new Error('another writer won'), { conflict: true });
  };
  const outcome = await compact(initial.input, host);
  assert.notEqual(outcome.outcome, 'recorded');
  assert.equal(outcome.checkpoint, undefined);
});

test('bad input rejects with a typed ContextfoldError', async () => {
  const initial = fixture.cases.find((c) => c.name === 'initial_manual');
  const events = structuredClone(initial.input.events);
  events[3].seq = events[2].seq;
  await assert.rejects(
    compact({ ...initial.input, events }, extractiveHost(events)),
    (error) => error instanceof ContextfoldError && error.code === 'log_seq_not_increasing',
  );
  await assert.rejects(
    compact({ ...initial.input, trigger: 'sometimes' }, extractiveHost(events)),
    (error) => error instanceof ContextfoldError && error.code === 'invalid_argument',
  );
});

test('compactNatively: the Responses request goes out and a V3 checkpoint is recorded', async () => {
  const initial = fixture.cases.find((c) => c.name === 'initial_manual');
  const provider = { provider: 'openai-codex', connectionSlug: 'codex', modelId: 'gpt-5-codex' };
  const ledger = [];
  const native = [];
  const host = {
    summarize: async () => {
      throw new Error('the native compactor should answer first');
    },
    async compactNatively(request, { signal }) {
      assert.ok(signal === undefined || signal instanceof AbortSignal);
      native.push(request);
      return [{ type: 'compaction', id: 'cmp_42', encrypted_content: 'gAAAA-opaque' }];
    },
    appendCheckpoint: async (checkpoint) => ledger.push(structuredClone(checkpoint)),
  };
  const outcome = await compact({ ...initial.input, provider, providerOptions: { openai: { store: false } } }, host);
  assert.equal(outcome.outcome, 'recorded', JSON.stringify(outcome.diagnostics));
  assert.equal(native.length, 1);
  assert.deepEqual(native[0].providerOptions, { openai: { store: false } });
  assert.deepEqual(native[0].input.at(-1), { type: 'compaction_trigger' });
  assert.equal(outcome.checkpoint.schemaVersion, 3);
  assert.equal(outcome.checkpoint.providerState.itemId, 'cmp_42');
  assert.deepEqual(ledger, [outcome.checkpoint]);
  // The V3 checkpoint replays as the AI SDK's OpenAI compaction part, never as text.
  const projection = project({ events: initial.input.events, checkpoint: outcome.checkpoint, provider, model: initial.input.model });
  assert.deepEqual(projection.messages[0].content, [{
    type: 'custom', kind: 'openai.compaction', providerOptions: { openai: { itemId: 'cmp_42', encryptedContent: 'gAAAA-opaque' } },
  }]);
});

test('after a failed rolling compaction, projectForRequest fails open on the old checkpoint', async () => {
  const rolling = fixture.cases.find((c) => c.name === 'rolling_pre_turn');
  const host = {
    summarize: async () => { throw Object.assign(new Error('upstream down'), { statusCode: 503 }); },
    appendCheckpoint: async () => { throw new Error('nothing may be appended'); },
  };
  const outcome = await compact(rolling.input, host);
  assert.equal(outcome.outcome, 'failed_open', JSON.stringify(outcome.diagnostics.map((d) => d.code)));
  assert.ok(outcome.diagnostics.some((d) => d.code === 'previous_checkpoint_reused'));
  const input = {
    events: rolling.input.events,
    model: rolling.input.model,
    currentTurnId: rolling.input.currentTurnId,
    provider: rolling.input.provider,
    checkpoint: rolling.input.checkpoint,
  };
  const normal = project(input);
  assert.equal(normal.fits, false, 'the old checkpoint plus the new turns is over the budget');
  const sent = projectForRequest(input);
  assert.equal(sent.fits, true);
  assert.equal(sent.checkpoint.checkpointId, rolling.input.checkpoint.checkpointId);
  assert.ok(sent.omittedEvents > 0);
  assert.ok(sent.diagnostics.some((d) => d.code === 'previous_checkpoint_reused'));
  assert.equal(sent.estimatedTokens, outcome.tokens.after, 'the outcome figure is the fail-open projection, measured');
  // A projection that fits is the same in both modes.
  const fitting = { ...input, model: { contextWindow: 400000 } };
  assert.deepEqual(projectForRequest(fitting), project(fitting));
  const log = new EventLog();
  log.append(rolling.input.events);
  const { events: _events, ...options } = input;
  assert.deepEqual(log.projectForRequest(options), sent);
  log.free();
});

test('compact() over an EventLog equals compact() over the same events', async () => {
  for (const fixtureCase of fixture.cases) {
    const log = new EventLog();
    log.append(fixtureCase.input.events);
    const host = extractiveHost(fixtureCase.input.events, fixtureCase.summarizer);
    const outcome = await compact({ ...fixtureCase.input, events: log }, host);
    assert.deepEqual(outcome, fixtureCase.expected, fixtureCase.name);
    log.free();
    await assert.rejects(
      compact({ ...fixtureCase.input, events: log }, host),
      (error) => error instanceof ContextfoldError && error.code === 'log_freed',
    );
  }
});

test('the circuit a host records keeps a failed input from being dispatched again', async () => {
  const initial = fixture.cases.find((c) => c.name === 'initial_manual');
  let stored;
  let dispatched = 0;
  const host = {
    summarize: async () => {
      dispatched += 1;
      return { text: '## Goal\nfix it\n## Later\nstuff', finishReason: 'stop' };
    },
    appendCheckpoint: async () => { throw new Error('nothing may be appended'); },
    recordCircuit: async (circuit) => { stored = JSON.parse(JSON.stringify(circuit)); },
  };
  const first = await compact(initial.input, host);
  assert.equal(first.outcome, 'failed_open');
  assert.equal(dispatched, 2, 'the request and its one repair');
  assert.ok(stored.fingerprints.length === 1);
  // A "restart": only the stored JSON carries over.
  const again = await compact({ ...initial.input, circuit: stored }, host);
  assert.equal(again.reason, 'malformed_summary_circuit_open');
  assert.equal(dispatched, 2, 'never dispatched again');
  const otherModel = await compact({ ...initial.input, circuit: stored, model: { contextWindow: initial.input.model.contextWindow + 1000 } }, host);
  assert.notEqual(otherModel.reason, 'malformed_summary_circuit_open', 'a changed budget is eligible again');
});

test('a summary in the seed\'s own section names (## Progress with ### Done / ### In Progress) is recorded', async () => {
  const initial = fixture.cases.find((c) => c.name === 'initial_manual');
  const detail = Array.from({ length: 30 }, (_, n) => `- step ${n}: ran \`cargo test\` and fixed case ${n} in src/parser.rs`).join('\n');
  const text = [
    '# Summary', '',
    '## Goal', 'Make the parser tests pass without changing the public API.', '',
    '## Progress', '### Done', detail, '### In Progress', '- the last failing case, `parse_block`', '',
    '## Key Decisions', '- fix the parser, never the tests', '',
    '## Next Steps', '1. rerun the suite', '',
    '## Critical Context', '- failing command: `cargo test -p parser parse_block`', '',
  ].join('\n');
  const ledger = [];
  const outcome = await compact(initial.input, {
    summarize: async () => ({ text, finishReason: 'stop' }),
    appendCheckpoint: async (checkpoint) => { ledger.push(checkpoint); },
  });
  assert.equal(outcome.outcome, 'recorded', JSON.stringify(outcome.diagnostics));
  assert.equal(ledger.length, 1);
});

test('trigger prepare builds a checkpoint it does not record; a later pre-turn compaction adopts it without a summarizer call, unless the tip moved', async () => {
  const six = sessionEvents('s', 6);
  const model = { contextWindow: 4500 };
  const measured = project({ events: six, model, currentTurnId: 't5' });
  assert.ok(measured.fits && prepareDue(measured.estimatedTokens, model), 'at the soft threshold, within the budget');
  assert.equal(prepareDue(measured.estimatedTokens / 2, model), false);
  const host = extractiveHost(six);
  const prepared = await compact({ events: six, model, trigger: 'prepare', currentTurnId: 't5', checkpointId: 'cp-prepared' }, host);
  assert.equal(prepared.outcome, 'prepared');
  assert.equal(prepared.checkpoint.checkpointId, 'cp-prepared');
  assert.equal(host.requests.length, 1);
  assert.deepEqual(host.ledger, [], 'a preparation records nothing');
  // Two turns later the history is over the budget: the prepared checkpoint serves.
  const eight = sessionEvents('s', 8);
  assert.equal(project({ events: eight, model, currentTurnId: 't7' }).fits, false);
  const later = extractiveHost(eight);
  const adopted = await compact({ events: eight, model, trigger: 'pre-turn', currentTurnId: 't7', prepared: prepared.checkpoint }, later);
  assert.equal(adopted.outcome, 'recorded');
  assert.ok(adopted.diagnostics.some((d) => d.code === 'prepared_checkpoint_used'));
  assert.equal(later.requests.length, 0, 'no summarizer call');
  assert.deepEqual(later.ledger, [prepared.checkpoint]);
  assert.equal(project({ events: eight, model, currentTurnId: 't7', checkpoint: adopted.checkpoint }).fits, true);
  // Once another writer's checkpoint is the tip, the prepared one no longer succeeds it:
  // refused, and the compaction runs as without it.
  const other = await compact({ events: six, model, trigger: 'manual', currentTurnId: 't5', checkpointId: 'cp-other' }, extractiveHost(six));
  assert.equal(other.outcome, 'recorded');
  const longer = sessionEvents('s', 13);
  assert.equal(project({ events: longer, model, currentTurnId: 't12', checkpoint: other.checkpoint }).fits, false);
  const raced = extractiveHost(longer);
  const refused = await compact({ events: longer, model, trigger: 'pre-turn', currentTurnId: 't12', checkpoint: other.checkpoint, prepared: prepared.checkpoint }, raced);
  assert.ok(refused.diagnostics.some((d) => d.code === 'prepared_checkpoint_rejected' && d.detail.includes('cp-prepared')), JSON.stringify(refused.diagnostics));
  assert.equal(refused.diagnostics.some((d) => d.code === 'prepared_checkpoint_used'), false);
  assert.ok(raced.requests.length > 0, 'the summarizer ran in the foreground');
  assert.equal(refused.checkpoint?.previousCheckpointId, 'cp-other');
  // An overflow never adopts.
  const overflow = await compact({ events: eight, model, trigger: 'overflow', currentTurnId: 't7', prepared: prepared.checkpoint }, extractiveHost(eight));
  assert.equal(overflow.diagnostics.some((d) => d.code.startsWith('prepared_checkpoint')), false);
});

test('mergeCircuits: the fingerprints of both circuits, oldest first, each once', () => {
  const fp = (n) => `sha256:${n.toString(16).padStart(64, '0')}`;
  assert.deepEqual(mergeCircuits(null, undefined), { fingerprints: [] });
  assert.deepEqual(mergeCircuits({ fingerprints: [fp(1), fp(2)] }, { fingerprints: [fp(2), fp(3)] }), { fingerprints: [fp(1), fp(2), fp(3)] });
  const full = { fingerprints: Array.from({ length: 16 }, (_, i) => fp(i)) };
  assert.deepEqual(mergeCircuits(full, { fingerprints: [fp(99)] }).fingerprints, [...full.fingerprints.slice(1), fp(99)]);
  assert.throws(() => mergeCircuits({ fingerprints: 'x' }, null), (error) => error instanceof ContextfoldError && error.code === 'invalid_argument');
});
