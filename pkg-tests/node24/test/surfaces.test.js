// Every way into `contextfold/ai-sdk` under ai@7, against the loopback provider: generateText
// with an Anthropic model and an LLM summarizer, streamText over the Responses API's SSE, the
// ToolLoopAgent class, the language-model middleware without prepareStep, a conversation of two
// calls, background preparation over a SQLite ledger, and the control run without contextfold
// that the server refuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { APICallError, ToolLoopAgent, generateText, stepCountIs, streamText, wrapLanguageModel } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { ContextfoldError } from 'contextfold';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MemoryStore } from 'contextfold/stores/memory';
import { SqliteStore } from 'contextfold/stores/sqlite';
import { contextfold } from 'contextfold/ai-sdk';
import { startProvider } from './loopback-provider.js';
import { agentTools, scriptedAgent } from './agent-tools.js';
import { assertCheckpoints, assertRequests, figures } from './checks.js';

const TASK = 'Fix the failing build of the workspace: find the type error in the parser and make `cargo build` pass.';
const WINDOW = 8000;
/** The native CLI (scripts/test-npm.sh builds it and sets CONTEXTFOLD_BIN). */
const CONTEXTFOLD_BIN = process.env.CONTEXTFOLD_BIN
  ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '../../../target/debug/contextfold');

/** Runs `body` with a fresh provider and store (`openStore`, default in memory); checks and reports the run. */
async function run(name, steps, body, openStore = (sessionId) => MemoryStore.open({ sessionId })) {
  const provider = await startProvider({ window: WINDOW, task: TASK, agent: scriptedAgent(steps) });
  const store = await openStore(name);
  try {
    const openai = createOpenAI({ baseURL: provider.url, apiKey: 'test-key' });
    const anthropic = createAnthropic({ baseURL: provider.url, apiKey: 'test-key' });
    const out = await body({ openai, anthropic, store, provider });
    assertRequests(provider.state);
    const checkpoints = assertCheckpoints(store);
    console.log(`AISDK_RUN ${name} ${JSON.stringify({ ...figures(provider.state, checkpoints), ...out?.folding?.stats })}`);
    // Every request fits the history budget, not only the window (before the calibration
    // ignored tiny first requests, the stream run sent 7 of 40 over it).
    if (out?.folding) assert.equal(out.folding.stats.overBudget, 0, 'requests over the history budget');
    return { checkpoints, state: provider.state, store, ...out };
  } finally {
    await store.close();
    await provider.close();
  }
}

test('generateText, Anthropic Messages, an LLM summarizer (V2 checkpoints), a SQLite ledger: 200 steps, no overflow, verify --deep passes', async () => {
  const ledger = path.join(mkdtempSync(path.join(tmpdir(), 'cf-agent-')), 'agent.sqlite');
  const { checkpoints, state, folding } = await run('anthropic-llm', 200, async ({ openai, anthropic, store }) => {
    const folding = contextfold({ store, model: { contextWindow: WINDOW }, summarizer: openai.responses('gpt-cheap') });
    const result = await generateText({
      model: anthropic('claude-loop'), maxOutputTokens: 1024, tools: agentTools(), stopWhen: stepCountIs(200),
      instructions: 'You are a careful coding agent.',
      messages: [{ role: 'user', content: TASK }], prepareStep: folding.prepareStep,
    });
    assert.equal(result.steps.length, 200);
    return { folding };
  }, (sessionId) => SqliteStore.open({ path: ledger, sessionId }));
  assert.ok(checkpoints.length > 5 && checkpoints.every((cp) => cp.schemaVersion === 2 && cp.summary.includes('## Goal')));
  // The native CLI checks the ledger the agent wrote: every checkpoint's digest and every row.
  const verified = JSON.parse(execFileSync(CONTEXTFOLD_BIN, ['--json', 'verify', '--deep', '--db', ledger, '--session', 'anthropic-llm'], { encoding: 'utf8' }));
  assert.equal(verified.events, state.requests.length > 0 ? verified.rows.checked : -1);
  assert.equal(verified.checkpoints.length, checkpoints.length, 'verify saw every recorded checkpoint');
  assert.ok(verified.checkpoints.every((c) => c.ok), 'every checkpoint verifies natively');
  console.log(`AISDK_VERIFY events=${verified.events} rows=${verified.rows.checked} checkpoints=${verified.checkpoints.length} ok=${verified.checkpoints.filter((c) => c.ok).length}`);
  assert.ok(state.summaries > 0 && state.requests.every((r) => r.protocol === 'anthropic' || r.kind === 'summarize'));
  assert.equal(folding.stats.failures, 0);
});

test('backgroundPreparation: generateText, Anthropic, an LLM summarizer, a SQLite ledger: the hard triggers adopt checkpoints prepared between steps, preparation_settled events are recorded, verify --deep passes', async () => {
  const ledger = path.join(mkdtempSync(path.join(tmpdir(), 'cf-background-')), 'agent.sqlite');
  const compactions = [];
  const settled = [];
  const { checkpoints, folding } = await run('background', 120, async ({ openai, anthropic, store }) => {
    const folding = contextfold({
      store, model: { contextWindow: WINDOW }, summarizer: openai.responses('gpt-cheap'), backgroundPreparation: true,
      onCompaction: (outcome, info) => compactions.push({ outcome, info }),
      onPreparation: (end) => settled.push(end),
    });
    const result = await generateText({
      model: anthropic('claude-loop'), maxOutputTokens: 1024, tools: agentTools(), stopWhen: stepCountIs(120),
      instructions: 'You are a careful coding agent.',
      messages: [{ role: 'user', content: TASK }], prepareStep: folding.prepareStep,
    });
    assert.equal(result.steps.length, 120);
    await folding.awaitPreparation();
    return { folding };
  }, (sessionId) => SqliteStore.open({ path: ledger, sessionId }));
  const stats = folding.preparations;
  const adopted = compactions.filter(({ outcome }) => outcome.diagnostics.some((d) => d.code === 'prepared_checkpoint_used'));
  assert.ok(stats.used > 0 && adopted.length === stats.used, JSON.stringify(stats));
  assert.ok(adopted.every(({ outcome, info }) => outcome.outcome === 'recorded' && info.summarizerTokens === 0 && info.preparation !== 'none'));
  assert.equal(stats.prepared, stats.used + stats.wasted + stats.held, JSON.stringify(stats));
  assert.equal(stats.failed, 0);
  const fates = (fate) => settled.filter((end) => end.fate === fate);
  assert.deepEqual([fates('used').length, fates('superseded').length, fates('failed').length], [stats.used, stats.superseded, stats.failed]);
  assert.equal(fates('wasted').length + fates('superseded').filter((end) => end.checkpointId).length, stats.wasted);
  assert.ok(checkpoints.length >= stats.used && checkpoints.some((cp) => cp.checkpointId.startsWith('cp-prepared-')));
  const { DatabaseSync } = await import('node:sqlite');
  const db = new DatabaseSync(ledger);
  const recorded = db.prepare("SELECT payload_json FROM agent_run_events WHERE session_id = 'background' AND kind = 'preparation_settled' ORDER BY ordinal").all().map((row) => JSON.parse(row.payload_json));
  db.close();
  assert.deepEqual(recorded, settled, 'every preparation\'s end is in the ledger, as the native runtime records it');
  const verified = JSON.parse(execFileSync(CONTEXTFOLD_BIN, ['--json', 'verify', '--deep', '--db', ledger, '--session', 'background'], { encoding: 'utf8' }));
  assert.ok(verified.checkpoints.length === checkpoints.length && verified.checkpoints.every((c) => c.ok));
  console.log(`AISDK_BACKGROUND_AI7 ${JSON.stringify({ compactions: compactions.length, ...stats })}`);
});

test('streamText over the Responses SSE stream', async () => {
  const { checkpoints, state } = await run('stream', 40, async ({ openai, store }) => {
    const folding = contextfold({ store, model: { contextWindow: WINDOW }, summarizer: 'extractive', native: false });
    const result = streamText({
      model: openai.responses('gpt-loop'), tools: agentTools(), stopWhen: stepCountIs(40),
      messages: [{ role: 'user', content: TASK }], prepareStep: folding.prepareStep,
      onError: ({ error }) => { throw error; },
    });
    let text = '';
    for await (const delta of result.textStream) text += delta;
    assert.match(text, /build passes/);
    await folding.finish(result);
    assert.equal((await result.steps).length, 40);
    return { folding };
  });
  assert.ok(state.requests.every((r) => r.stream) && checkpoints.length > 0);
});

test('the ToolLoopAgent class', async () => {
  const { checkpoints } = await run('agent', 40, async ({ anthropic, store }) => {
    const folding = contextfold({ store, model: { contextWindow: WINDOW }, summarizer: 'extractive' });
    const agent = new ToolLoopAgent({
      model: anthropic('claude-loop'), maxOutputTokens: 1024, instructions: 'You are a careful coding agent.', tools: agentTools(),
      stopWhen: stepCountIs(40), prepareStep: folding.prepareStep,
    });
    const result = await agent.generate({ prompt: TASK });
    assert.equal(result.steps.length, 40);
    await folding.finish(result);
    // A second call with only the new message (history 'auto' → 'new'): it opens turn-1 after
    // the stored answer of the first.
    const next = await agent.generate({ prompt: 'Now summarize what you changed.' });
    await folding.finish(next);
    const events = store.log.events();
    const answer = events.findIndex((e) => e.content.type === 'assistant_text' && e.content.text.includes('build passes'));
    const second = events.findIndex((e) => e.content.type === 'user_text' && e.content.text.startsWith('Now summarize'));
    assert.ok(answer > 0 && second === answer + 1, 'the first answer is stored before the second prompt');
    assert.equal(events[second].turnId, 'turn-1');
    assert.equal(events.at(-1).content.type, 'assistant_text');
    return { folding };
  });
  assert.ok(checkpoints.length > 0);
});

test('the middleware (wrapLanguageModel, no prepareStep)', async () => {
  const { checkpoints, folding } = await run('middleware', 60, async ({ openai, store }) => {
    const folding = contextfold({ store, model: { contextWindow: WINDOW }, summarizer: 'extractive' });
    const model = wrapLanguageModel({ model: openai.responses('gpt-loop'), middleware: folding.middleware });
    const result = await generateText({ model, tools: agentTools(), stopWhen: stepCountIs(60), messages: [{ role: 'user', content: TASK }] });
    assert.equal(result.steps.length, 60);
    return { folding };
  });
  assert.ok(checkpoints.length > 0 && checkpoints.every((cp) => cp.schemaVersion === 3), 'native through the middleware too');
  assert.ok(folding.stats.usageFacts >= 59, 'the middleware records each response usage');
});

test('a provider that refuses native compaction: the core falls back to the text summarizer', async () => {
  const provider = await startProvider({ window: WINDOW, task: TASK, agent: scriptedAgent(40), refuseCompaction: true });
  const store = await MemoryStore.open({ sessionId: 'native-refused' });
  try {
    const openai = createOpenAI({ baseURL: provider.url, apiKey: 'test-key' });
    const folding = contextfold({ store, model: { contextWindow: WINDOW }, summarizer: 'extractive' });
    const result = await generateText({ model: openai.responses('gpt-loop'), tools: agentTools(), stopWhen: stepCountIs(40), maxRetries: 0, messages: [{ role: 'user', content: TASK }], prepareStep: folding.prepareStep });
    assert.equal(result.steps.length, 40);
    const refused = provider.state.refused;
    assert.ok(refused.length > 0 && refused.every((r) => r.compactionRefused), 'only compaction requests were refused');
    const checkpoints = assertCheckpoints(store);
    assert.ok(checkpoints.length > 0 && checkpoints.every((cp) => cp.schemaVersion === 2), 'text-summary checkpoints');
    provider.state.refused = [];
    assertRequests(provider.state);
  } finally {
    await store.close();
    await provider.close();
  }
});

test('the middleware answers a provider overflow: compacts with trigger overflow and retries once', async () => {
  // The provider's real window (5,000) is smaller than the one declared (8,000).
  const provider = await startProvider({ window: 5000, task: TASK, agent: scriptedAgent(60) });
  const store = await MemoryStore.open({ sessionId: 'overflow' });
  try {
    const openai = createOpenAI({ baseURL: provider.url, apiKey: 'test-key' });
    const triggers = [];
    const folding = contextfold({ store, model: { contextWindow: WINDOW }, summarizer: 'extractive', native: false, onCompaction: (o) => triggers.push(o.checkpoint?.highWater.name) });
    const model = wrapLanguageModel({ model: openai.responses('gpt-loop'), middleware: folding.middleware });
    const result = await generateText({ model, tools: agentTools(), stopWhen: stepCountIs(60), maxRetries: 0, messages: [{ role: 'user', content: TASK }] });
    assert.equal(result.steps.length, 60);
    assert.ok(provider.state.refused.length > 0, 'the provider refused some requests');
    assert.equal(folding.stats.overflows, provider.state.refused.length, 'each refusal was answered once');
    assert.ok(triggers.includes('overflow'), 'a checkpoint records the overflow trigger');
    const checkpoints = assertCheckpoints(store);
    console.log(`AISDK_OVERFLOW refused=${provider.state.refused.length} retried=${folding.stats.overflows} checkpoints=${checkpoints.length} accepted=${provider.state.requests.length}`);
  } finally {
    await store.close();
    await provider.close();
  }
});

test('prepareStep with the overflow guard answers a provider overflow and keeps the instructions', async () => {
  // The provider's real window (5,000) is smaller than the one declared (8,000).
  const instructions = 'You are a careful coding agent working in the repository.';
  const provider = await startProvider({ window: 5000, task: TASK, agent: scriptedAgent(60), instructions });
  const store = await MemoryStore.open({ sessionId: 'overflow-guard' });
  try {
    const openai = createOpenAI({ baseURL: provider.url, apiKey: 'test-key' });
    const triggers = [];
    const folding = contextfold({ store, model: { contextWindow: WINDOW }, summarizer: 'extractive', native: false, onCompaction: (o) => triggers.push(o.checkpoint?.highWater.name) });
    const model = wrapLanguageModel({ model: openai.responses('gpt-loop'), middleware: folding.overflowGuard });
    const result = await generateText({ model, instructions, tools: agentTools(), stopWhen: stepCountIs(60), maxRetries: 0, messages: [{ role: 'user', content: TASK }], prepareStep: folding.prepareStep });
    assert.equal(result.steps.length, 60);
    await folding.finish(result);
    assert.ok(provider.state.refused.length > 0, 'the provider refused some requests');
    assert.equal(folding.stats.overflows, provider.state.refused.length, 'each refusal was answered once');
    assert.ok(triggers.includes('overflow'), 'a checkpoint records the overflow trigger');
    const agentRequests = provider.state.requests.filter((request) => request.kind === 'agent');
    assert.equal(agentRequests.length, 60, 'every step was sent and accepted');
    assert.ok(agentRequests.every((request) => request.hasInstructions), 'every accepted request carries the instructions');
    const checkpoints = assertCheckpoints(store);
    console.log(`AISDK_OVERFLOW_GUARD refused=${provider.state.refused.length} retried=${folding.stats.overflows} checkpoints=${checkpoints.length} accepted=${provider.state.requests.length}`);
    provider.state.refused = [];
    assertRequests(provider.state);
  } finally {
    await store.close();
    await provider.close();
  }
});

test('two calls of one conversation: the second extends the stored events; a changed history is refused', async () => {
  await run('conversation', 30, async ({ anthropic, store }) => {
    const folding = contextfold({ store, model: { contextWindow: WINDOW }, summarizer: 'extractive' });
    const settings = { model: anthropic('claude-loop'), maxOutputTokens: 1024, tools: agentTools(), prepareStep: folding.prepareStep };
    const messages = [{ role: 'user', content: TASK }];
    const first = await generateText({ ...settings, stopWhen: stepCountIs(10), messages });
    const afterFirst = store.log.length;
    messages.push(...first.responseMessages, { role: 'user', content: `${TASK} Also run the tests.` });
    await generateText({ ...settings, stopWhen: stepCountIs(5), messages });
    const events = store.log.events();
    assert.ok(events.length > afterFirst);
    assert.deepEqual([...new Set(events.map((e) => e.turnId))], ['turn-0', 'turn-1']);
    assert.deepEqual(events.map((e) => e.seq), events.map((_, i) => i + 1));
    const changed = [{ role: 'user', content: TASK }, { role: 'assistant', content: 'something else' }, ...messages.slice(1)];
    await assert.rejects(generateText({ ...settings, stopWhen: stepCountIs(1), messages: changed }), (error) => error instanceof ContextfoldError && error.code === 'history_diverged');
    return { folding };
  });
});

test('control: the same loop without contextfold is refused by the provider', async () => {
  const provider = await startProvider({ window: WINDOW, task: TASK, agent: scriptedAgent(200) });
  try {
    const openai = createOpenAI({ baseURL: provider.url, apiKey: 'test-key' });
    await assert.rejects(
      generateText({ model: openai.responses('gpt-loop'), tools: agentTools(), stopWhen: stepCountIs(200), maxRetries: 0, messages: [{ role: 'user', content: TASK }] }),
      (error) => APICallError.isInstance(error) && error.statusCode === 400 && /context window/.test(error.message),
    );
    assert.equal(provider.state.refused.length, 1);
    console.log(`AISDK_CONTROL refused_at_request=${provider.state.requests.length + 1} tokens=${provider.state.refused[0].tokens}`);
  } finally {
    await provider.close();
  }
});
