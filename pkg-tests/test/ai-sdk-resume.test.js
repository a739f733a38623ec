// Resuming an AI SDK agent from its JSONL file store on Node 20 with ai@6 (the Node 24 run with
// ai@7, `@ai-sdk/openai` and SQLite: node24/test/ai-sdk-resume.test.js). A scripted model whose
// every part carries `providerMetadata` (as `@ai-sdk/openai`'s Responses item ids do), so the
// stored events keep `providerOptions` that `store.modelMessages()` cannot give back. Through
// `prepareStep` and through the middleware (which sees the re-sent conversation in every
// request), 3 processes of 40 steps each in an 8,000-token window: each process reopens the store,
// resumes from `store.modelMessages()` plus a new user message, and starts from the calibration
// the previous one ended with.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generateText, stepCountIs, wrapLanguageModel } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { JsonlFileStore } from 'contextfold/stores/jsonl';
import { contextfold } from 'contextfold/ai-sdk';
import { toolPairs } from './helpers.js';
import { promptTokens, tools } from './build-log-agent.js';

const WINDOW = 8000;
const STEPS = 40;
const PROCESSES = 3;
const TASK = 'Fix the failing build: `cargo build` stops with a type error in the expression parser.';

/** A scripted model: tool calls, then an answer at each process's last step; every part has item ids. */
function scriptedModel(state) {
  return new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      toolPairs(prompt); // throws on an unpaired call or result
      const tokens = promptTokens(prompt);
      state.requests.push(tokens);
      const n = state.requests.length;
      const last = n % STEPS === 0;
      const meta = (kind) => ({ openai: { itemId: `${kind}_${n}` } });
      const content = last
        ? [{ type: 'text', text: `Step ${n}: the build passes.`, providerMetadata: meta('msg') }]
        : [{ type: 'tool-call', toolCallId: `call_${n}`, toolName: 'run_shell', input: JSON.stringify({ command: `cargo build -p crate_${n}` }), providerMetadata: meta('fc') }];
      return { content, finishReason: { unified: last ? 'stop' : 'tool-calls', raw: undefined }, usage: { inputTokens: { total: tokens, noCache: tokens, cacheRead: 0, cacheWrite: undefined }, outputTokens: { total: 9, text: 9, reasoning: undefined } }, warnings: [] };
    },
  });
}

for (const surface of ['prepareStep', 'middleware']) {
  test(`an agent resumed from its JSONL store ${PROCESSES - 1} times continues (${surface}, ai@6): no history_diverged, no duplicate event, calibration kept`, async () => {
    const directory = mkdtempSync(path.join(tmpdir(), 'contextfold-resume-'));
    const state = { requests: [] };
    const model = scriptedModel(state);
    let before = null;
    let stored = 0;
    let compactions = 0;
    try {
      for (let process = 0; process < PROCESSES; process += 1) {
        const store = await JsonlFileStore.open({ directory, sessionId: 'resume' });
        try {
          const folding = contextfold({ store, model: { contextWindow: WINDOW }, summarizer: 'extractive' });
          assert.deepEqual(folding.calibration, before, `process ${process} starts from the calibration the last one ended with`);
          assert.equal(store.log.length, stored);
          const content = process === 0 ? TASK : `Go on (process ${process + 1}).`;
          const messages = [...store.modelMessages(), { role: 'user', content }];
          const result = await generateText({
            model: surface === 'middleware' ? wrapLanguageModel({ model, middleware: folding.middlewareV3 }) : model,
            tools, stopWhen: stepCountIs(STEPS), messages,
            ...(surface === 'prepareStep' ? { prepareStep: folding.prepareStep } : {}),
          });
          if (surface === 'prepareStep') await folding.finish(result);
          assert.equal(result.steps.length, STEPS);
          // The new user message and the steps' messages, once each (the middleware stores a
          // call's last answer with the next request, so it is not among them).
          const added = store.log.length - stored;
          assert.equal(added, 1 + (STEPS - 1) * 2 + (surface === 'prepareStep' ? 1 : 0), `process ${process} added ${added} events`);
          assert.equal(folding.stats.overBudget, 0);
          compactions += folding.stats.compactions;
          stored = store.log.length;
          before = folding.calibration;
          assert.deepEqual(store.calibration, before);
        } finally {
          await store.close();
        }
      }
      assert.ok(compactions >= PROCESSES, `${compactions} compactions`);
      assert.equal(state.requests.length, STEPS * PROCESSES);
      assert.ok(state.requests.every((tokens) => tokens <= WINDOW), `largest request ${Math.max(...state.requests)} tokens`);
      const store = await JsonlFileStore.open({ directory, sessionId: 'resume' });
      try {
        const ids = store.log.events().map((event) => event.runtimeEventId);
        assert.equal(new Set(ids).size, ids.length);
        assert.equal(store.usageFacts.length, STEPS * PROCESSES);
        assert.deepEqual(store.calibration, before);
      } finally {
        await store.close();
      }
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
}
