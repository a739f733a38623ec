// Compile-only check of pkg/ai-sdk.d.ts itself (`npx tsc -p types`, with the library checks on);
// types/ai-sdk.ts checks it against the real `ai` types (`npx tsc -p types/tsconfig.ai.json`).
import { contextfold, toProviderPrompt, type Folding, type Summarizer } from 'contextfold/ai-sdk';
import { MemoryStore } from 'contextfold/stores/memory';

async function main(): Promise<void> {
  const store = await MemoryStore.open({ sessionId: 's' });
  const summarizer: Summarizer = 'extractive';
  const folding: Folding = contextfold({ store, model: { contextWindow: 8_000 }, summarizer, onCompaction: (outcome) => void outcome.outcome });
  const step = await folding.prepareStep({ stepNumber: 0, steps: [], model: 'm', messages: [{ role: 'user', content: 'hi' }] });
  const prompt = toProviderPrompt(step.messages, 'v3');
  void prompt.length;
  void folding.middleware.specificationVersion;
  // @ts-expect-error: a summarizer is a model, a function or 'extractive'
  contextfold({ store, model: {}, summarizer: 42 });
  // @ts-expect-error: the store is required
  contextfold({ model: {} });
}
void main;
