// Compile-only check of pkg/ai-sdk.d.ts against the real ai@7 types (`npx tsc -p types`):
// `folding.prepareStep` fits generateText, streamText and ToolLoopAgent; `folding.middleware`
// and `folding.overflowGuard` are LanguageModelV4 middlewares; an AI SDK model is a summarizer.
import { generateText, streamText, stepCountIs, ToolLoopAgent, wrapLanguageModel, type LanguageModelMiddleware } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { contextfold } from 'contextfold/ai-sdk';
import { MemoryStore } from 'contextfold/stores/memory';

async function main(): Promise<void> {
  const openai = createOpenAI({ apiKey: 'k' });
  const anthropic = createAnthropic({ apiKey: 'k' });
  const store = await MemoryStore.open({ sessionId: 's' });
  const folding = contextfold({ store, model: { contextWindow: 128_000 }, summarizer: openai('gpt-5-mini') });
  const result = await generateText({ model: openai.responses('gpt-5'), messages: [{ role: 'user', content: 'hi' }], stopWhen: stepCountIs(5), prepareStep: folding.prepareStep });
  await folding.finish(result);
  await folding.finish(streamText({ model: anthropic('claude-sonnet-4-5'), prompt: 'hi', prepareStep: folding.prepareStep }));
  const agent = new ToolLoopAgent({ model: anthropic('claude-sonnet-4-5'), prepareStep: folding.prepareStep, stopWhen: stepCountIs(3) });
  await agent.generate({ prompt: 'hi' });
  const middleware: LanguageModelMiddleware = folding.middleware;
  const wrapped = wrapLanguageModel({ model: openai.responses('gpt-5'), middleware });
  void wrapped.modelId;
  const guard: LanguageModelMiddleware = folding.overflowGuard;
  const guarded = wrapLanguageModel({ model: openai.responses('gpt-5'), middleware: guard });
  await generateText({ model: guarded, messages: [{ role: 'user', content: 'hi' }], prepareStep: folding.prepareStep });
}
void main;
