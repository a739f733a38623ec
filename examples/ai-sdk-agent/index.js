// A coding agent whose history never outgrows a 4,000-token window: the AI SDK's generateText
// tool loop with contextfold folding the history between steps. Runs offline: the model is the
// AI SDK's own MockLanguageModelV4 playing a scripted agent, the summaries are extractive
// (copied from the event log), and the session lives in a MemoryStore.
import { generateText, stepCountIs, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';
import { matchCheckpoint } from 'contextfold';
import { MemoryStore } from 'contextfold/stores/memory';
import { contextfold } from 'contextfold/ai-sdk';

const WINDOW = 4000;
const STEPS = 30;
const TASK = 'The build fails in src/parser.rs. Find the type error and fix it.';

// A fake repository: each file is a few hundred tokens of source.
const file = (path) => Array.from({ length: 40 }, (_, i) => `fn ${path.replace(/\W/g, '_')}_${i}(x: u32) -> u32 { x + ${i} } // line ${i}`).join('\n');
const tools = {
  read_file: tool({ description: 'Read a file.', inputSchema: z.object({ path: z.string() }), execute: async ({ path }) => file(path) }),
};

// The scripted model: reads one file per step, then answers. It reports usage like a provider
// (about 4 characters a token), which calibrates contextfold's estimate.
let calls = 0;
const model = new MockLanguageModelV4({
  doGenerate: async ({ prompt }) => {
    const done = calls >= STEPS - 1;
    calls += 1;
    const content = done
      ? [{ type: 'text', text: 'Fixed: src/parser.rs returned u32 where usize was expected; `cargo build` passes.' }]
      : [{ type: 'tool-call', toolCallId: `call-${calls}`, toolName: 'read_file', input: JSON.stringify({ path: `src/module_${calls}.rs` }) }];
    const inputTokens = Math.ceil(JSON.stringify(prompt).length / 4);
    return {
      content, warnings: [],
      finishReason: { unified: done ? 'stop' : 'tool-calls', raw: undefined },
      usage: { inputTokens: { total: inputTokens, noCache: inputTokens, cacheRead: 0, cacheWrite: undefined }, outputTokens: { total: 20, text: 20, reasoning: undefined } },
    };
  },
});

const store = await MemoryStore.open({ sessionId: 'example-session' });
const folding = contextfold({
  store,
  model: { contextWindow: WINDOW },
  summarizer: 'extractive',
  onCompaction: (outcome) => {
    const cp = outcome.checkpoint;
    console.log(`  compaction: ${outcome.outcome} (${outcome.reason})${cp ? ` -> checkpoint ${cp.checkpointId.slice(0, 8)} covers ${cp.coverage.eventCount} events, ${cp.estimatedTokens} tokens` : ''}`);
  },
});

console.log(`Task: ${TASK}\nWindow: ${WINDOW} tokens\n`);
const result = await generateText({
  model,
  tools,
  stopWhen: stepCountIs(STEPS),
  messages: [{ role: 'user', content: TASK }],
  prepareStep: folding.prepareStep,
  onStepFinish: (step) => {
    const sent = folding.lastProjection;
    const action = step.toolCalls.map((c) => `${c.toolName}(${c.input.path})`).join(', ') || 'answer';
    console.log(`step ${String(step.stepNumber ?? '').padStart(2)}: ${action.padEnd(28)} request ${sent.estimatedTokens} tokens${sent.checkpoint ? `, from checkpoint ${sent.checkpoint.checkpointId.slice(0, 8)}` : ''}`);
  },
});
await folding.finish(result);

const events = store.log.events();
const checkpoints = store.snapshot().records.map((r) => r.payload);
const verified = checkpoints.filter((cp) => matchCheckpoint(cp, events).covered === cp.coverage.eventCount).length;
console.log(`\nFinal answer: ${result.text}`);
console.log(`Steps: ${result.steps.length}; events stored: ${events.length}; checkpoints: ${checkpoints.length} (${verified} verified against the log)`);
console.log(`Stats: ${JSON.stringify(folding.stats)}`);
await store.close();
