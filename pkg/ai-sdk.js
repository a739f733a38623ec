// `contextfold/ai-sdk`: context compaction for the AI SDK (`ai` 6 and 7). One object per session
// plugs into `generateText`, `streamText` and `ToolLoopAgent` through `prepareStep`, or into any
// model through `wrapLanguageModel({ model, middleware: folding.middleware })`.
import { Folding } from './ai-sdk/folding.js';

export { Folding };
export { toProviderPrompt, fromProviderPrompt, responsesItemsToPrompt } from './ai-sdk/prompt.js';

/**
 * Creates the compaction driver of one session: `{ store, model: { contextWindow }, summarizer,
 * provider?, history?, native?, countTokens?, calibration?, onCompaction? }` (docs/npm.md).
 */
export function contextfold(options) {
  return new Folding(options);
}

export default contextfold;
