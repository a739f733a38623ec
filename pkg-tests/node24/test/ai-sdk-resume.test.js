// Issue 41, point 4: an AI SDK agent resumed from its store after a restart. The agent is
// pkg/README.md's Quick start — `generateText` + tools + `prepareStep: folding.prepareStep`,
// `@ai-sdk/openai`'s Responses model, a SQLite store — against the loopback server that counts
// every request with o200k_base and refuses any over the 8,000-token window. It runs 100 steps,
// then every object is dropped (store closed, folding and messages gone) as in a process that
// ends; a fresh store over the same file and a fresh `contextfold(...)` resume from
// `store.modelMessages()` plus a new user message and run 100 more steps. The re-sent messages
// lack the Responses item ids the stored events keep (`providerOptions`, which no projection
// gives back), which made every resume `history_diverged` before the matcher compared them in
// the form the store gives them back; and the calibration learned before the restart is the
// one the resumed agent starts from (the store's usage facts), not a fresh one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { generateText, stepCountIs } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { SqliteStore } from 'contextfold/stores/sqlite';
import { contextfold } from 'contextfold/ai-sdk';
import { startProvider } from './loopback-provider.js';
import { agentTools, scriptedAgent } from './agent-tools.js';
import { assertCheckpoints, assertRequests, figures } from './checks.js';

const TASK = 'Fix the failing build of the workspace: find the type error in the parser and make `cargo build` pass.';
const FOLLOW_UP = 'Go on where you stopped: keep fixing the build until it passes.';
const WINDOW = 8000;
const STEPS = 200;
const RESTART_AT = 100;
const SESSION = 'resume-1';

/**
 * One process of the agent: opens the store, builds the folding as the README does, runs
 * `steps` steps from `messages(store)`, checks the package's estimate of every request it sent
 * against the window, and closes the store. Resolves what it saw.
 */
async function runProcess({ file, openai, messages, steps }) {
  const store = await SqliteStore.open({ path: file, sessionId: SESSION });
  try {
    const folding = contextfold({ store, model: { contextWindow: WINDOW }, summarizer: 'extractive' });
    const opened = { calibration: folding.calibration, events: store.log.length };
    const estimates = [];
    const result = await generateText({
      model: openai.responses('gpt-loop'), tools: agentTools(), stopWhen: stepCountIs(steps),
      messages: messages(store),
      prepareStep: async (options) => {
        const prepared = await folding.prepareStep(options);
        const sent = folding.lastProjection;
        estimates.push({ tokens: sent.estimatedTokens, budget: sent.historyBudget, fits: sent.fits });
        return prepared;
      },
    });
    await folding.finish(result);
    return { opened, estimates, result, calibration: folding.calibration, stats: folding.stats, events: store.log.events() };
  } finally {
    await store.close();
  }
}

test('an AI SDK agent resumed from its SQLite store after step 100 reaches step 200 in 8,000 tokens, its calibration kept', async () => {
  const directory = mkdtempSync(path.join(tmpdir(), 'contextfold-resume-'));
  const file = path.join(directory, 'agent.sqlite');
  const provider = await startProvider({ window: WINDOW, task: TASK, agent: scriptedAgent(STEPS) });
  try {
    const openai = createOpenAI({ baseURL: provider.url, apiKey: 'test-key' });
    const first = await runProcess({ file, openai, steps: RESTART_AT, messages: () => [{ role: 'user', content: TASK }] });
    assert.equal(first.result.steps.length, RESTART_AT);
    assert.ok(first.stats.compactions > 0, 'the first process compacted');
    assert.equal(first.opened.calibration, null, 'a new session starts uncalibrated');

    // The restart: nothing of the first process is used again but the file.
    let resent = null;
    const second = await runProcess({
      file, openai, steps: STEPS - RESTART_AT,
      messages: (store) => {
        resent = store.modelMessages();
        return [...resent, { role: 'user', content: FOLLOW_UP }];
      },
    });
    assert.equal(second.opened.events, first.events.length, 'the reopened store holds every event');
    assert.deepEqual(second.opened.calibration, first.calibration, 'the calibration after the restart is the one before it');
    assert.ok(first.calibration.models[0].samplesPermille.length > 0);
    assert.equal(second.result.steps.length, STEPS - RESTART_AT);
    assert.match(second.result.text, /build passes/);
    assert.ok(second.stats.compactions > 0, 'the resumed process compacted');
    assert.ok(resent.length > RESTART_AT, `${resent.length} messages re-sent`);

    // No duplicate events: the first process's events, unchanged, then the follow-up and the
    // second process's steps (one tool call and its result each, then the final answer).
    const events = second.events;
    assert.deepEqual(events.slice(0, first.events.length), first.events, 'the stored events are kept as they were');
    const added = events.slice(first.events.length);
    assert.deepEqual(added[0].content, { type: 'user_text', text: FOLLOW_UP });
    assert.equal(added.length, 1 + (STEPS - RESTART_AT - 1) * 2 + 1);
    assert.equal(events.filter((event) => event.content.type === 'tool_call').length, STEPS - 1);
    assert.equal(new Set(events.map((event) => event.runtimeEventId)).size, events.length);

    // Every request fits: the server's o200k count (it refuses any over the window) and the
    // package's own estimate of every history it sent.
    assertRequests(provider.state);
    for (const [index, estimate] of [...first.estimates, ...second.estimates].entries()) {
      assert.ok(estimate.fits && estimate.tokens <= estimate.budget && estimate.budget <= WINDOW, `step ${index}: ${JSON.stringify(estimate)}`);
    }
    assert.equal(first.estimates.length + second.estimates.length, STEPS);

    // The calibration is kept where the native host keeps it: `model_usage_recorded` events.
    const db = new DatabaseSync(file, { readOnly: true });
    const facts = db.prepare("SELECT payload_json FROM agent_run_events WHERE session_id = ? AND kind = 'model_usage_recorded' ORDER BY ordinal").all(SESSION);
    db.close();
    assert.equal(facts.length, first.stats.usageFacts + second.stats.usageFacts);
    const reopened = await SqliteStore.open({ path: file, sessionId: SESSION });
    try {
      assert.deepEqual(reopened.calibration, second.calibration);
      assertCheckpoints(reopened);
      const report = { steps: STEPS, restartAt: RESTART_AT, resent: resent.length, ...figures(provider.state, reopened.checkpoints()), usageFacts: facts.length, events: events.length };
      console.log(`AISDK_RESUME ${JSON.stringify(report)}`);
    } finally {
      await reopened.close();
    }
  } finally {
    await provider.close();
    rmSync(directory, { recursive: true, force: true });
  }
});
