// Compile-only check of pkg/ai-sdk.d.ts against the real ai@6 types (`npx tsc -p types`):
// `folding.prepareStep` is a `prepareStep`, `folding.middlewareV3` a LanguageModelV3 middleware.
import { generateText, streamText, stepCountIs, wrapLanguageModel, type LanguageModel } from 'ai';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { contextfold, Folding, type FoldingOptions, type FoldingStats, type PreparationStats, type PreparationSettled } from 'contextfold/ai-sdk';
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

  const settled: PreparationSettled[] = [];
  const background = contextfold({
    store, model: { contextWindow: 8_000, prepareAtPercent: 65 }, summarizer: cheap, backgroundPreparation: true,
    onPreparation: (end) => settled.push(end),
    onCompaction: (outcome, info) => void [outcome.outcome, info.preparation, info.summarizerTokens, info.preparations.used],
  });
  await generateText({ model, prompt: 'hi', prepareStep: background.prepareStep });
  background.model = { contextWindow: 4_000 };
  await background.awaitPreparation();
  const preparations: PreparationStats = background.preparations;
  void [preparations.wastedTokens, settled.map((end) => end.fate)];
  await store.close();
}
void main;
