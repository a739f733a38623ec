// The headline: a 200-step tool-using agent loop (`generateText` + tools + `stopWhen:
// stepCountIs(200)`) inside an 8,000-token window, through `@ai-sdk/openai`'s Responses model
// against a loopback server that counts every request with o200k_base and refuses any over the
// window. Provider-native compaction (V3 checkpoints replayed as `openai.compaction` parts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateText, stepCountIs } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { MemoryStore } from 'contextfold/stores/memory';
import { contextfold } from 'contextfold/ai-sdk';
import { startProvider, countText } from './loopback-provider.js';
import { agentTools, scriptedAgent } from './agent-tools.js';
import { assertCheckpoints, assertRequests, figures } from './checks.js';

const TASK = 'Fix the failing build of the workspace: find the type error in the parser and make `cargo build` pass.';
const WINDOW = 8000;
const STEPS = 200;

test('200 steps in 8,000 tokens: OpenAI Responses, native compaction, no overflow', async () => {
  const provider = await startProvider({ window: WINDOW, task: TASK, agent: scriptedAgent(STEPS) });
  const store = await MemoryStore.open({ sessionId: 'loop-openai' });
  try {
    const openai = createOpenAI({ baseURL: provider.url, apiKey: 'test-key' });
    const model = openai.responses('gpt-loop');
    const folding = contextfold({ store, model: { contextWindow: WINDOW }, summarizer: 'extractive' });
    const result = await generateText({
      model, tools: agentTools(), stopWhen: stepCountIs(STEPS),
      messages: [{ role: 'user', content: TASK }],
      prepareStep: folding.prepareStep,
    });
    await folding.finish(result);
    assert.equal(result.steps.length, STEPS);
    assert.match(result.text, /build passes/);
    assertRequests(provider.state);
    const checkpoints = assertCheckpoints(store);
    assert.ok(checkpoints.length > 5, `${checkpoints.length} checkpoints`);
    assert.ok(checkpoints.every((cp) => cp.schemaVersion === 3), 'native compaction records V3 checkpoints');
    assert.ok(provider.state.compactions > 0);
    const replaying = provider.state.requests.filter((r) => r.kind === 'agent' && r.replayed > 0).length;
    assert.ok(replaying > STEPS / 2, `${replaying} agent requests replay an issued compaction item (openai.compaction part)`);
    assert.ok(folding.calibration.models[0].samplesPermille.length > 0, 'the steps calibrated the estimate');
    assert.equal(folding.stats.overBudget, 0, 'every request fits the history budget');
    const report = { steps: result.steps.length, ...figures(provider.state, checkpoints), replayingRequests: replaying, ...folding.stats, events: store.log.length };
    console.log(`AISDK_LOOP protocol=openai-responses compaction=native ${JSON.stringify(report)}`);
  } finally {
    await store.close();
    await provider.close();
  }
});
