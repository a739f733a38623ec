// Compile-only check of pkg/ai-sdk.d.ts against the real ai@6 types (`npx tsc -p types`):
// `folding.prepareStep` is a `prepareStep`, `folding.middlewareV3` a LanguageModelV3 middleware.
import { generateText, streamText, stepCountIs, wrapLanguageModel, type LanguageModel } from 'ai';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { contextfold, Folding, type FoldingOptions, type FoldingStats } from 'contextfold/ai-sdk';
import { MemoryStore } from 'contextfold/stores/memory';
import type { Calibration } from 'contextfold';

declare const model: LanguageModelV3;
declare const cheap: LanguageModelV3;

async function main(): Promise<void> {
  const store = await MemoryStore.open({ sessionId: 's' });
  const options: FoldingOptions = { store, model: { contextWindow: 128_000 }, summarizer: cheap };
  const folding: Folding = contextfold(options);
  const offline = contextfold({ store, model: { contextWindow: 8_000 }, summarizer: 'extractive', native: false, history: 'full' });
  const custom = contextfold({ store, model: { contextWindow: 8_000 }, summarizer: async (request) => request.previousSummary ?? 'x' });

  const result = await generateText({ model, messages: [{ role: 'user', content: 'hi' }], stopWhen: stepCountIs(5), prepareStep: folding.prepareStep });
  await folding.finish(result);
  const streamed = streamText({ model, prompt: 'hi', prepareStep: offline.prepareStep });
  await offline.finish(streamed);

  const wrapped: LanguageModel = wrapLanguageModel({ model, middleware: custom.middlewareV3 });
  void wrapped;
  const stats: FoldingStats = folding.stats;
  const calibration: Calibration | null = folding.calibration;
  void stats.checkpoints;
  void calibration;
  await store.close();
}
void main;
