// The `compact()` host of `contextfold/ai-sdk`: the summarizer of the caller's choice (an AI SDK
// language model called through its own `doGenerate`, a function, or the offline extractive
// summary), provider-native compaction through an `@ai-sdk/openai` Responses model, and the
// store's compare-and-swap checkpoint append and circuit record.
import { ContextfoldError } from 'contextfold';
import { compactionItems, contentText, finishReasonOf, responsesItemsToPrompt, toProviderPrompt } from './prompt.js';

/** Whether `model` is an AI SDK language model object (it has `doGenerate`). */
function isLanguageModel(value) {
  return typeof value === 'object' && value !== null && typeof value.doGenerate === 'function';
}

/**
 * Normalizes the `summarizer` option: `'extractive'`, a function `(request, { signal }) =>
 * { text, finishReason } | string`, or a language model. Throws `invalid_argument` otherwise.
 */
export function requireSummarizer(summarizer) {
  if (summarizer === 'extractive') return { kind: 'extractive', label: 'extractive' };
  if (typeof summarizer === 'function') return { kind: 'function', fn: summarizer, label: undefined };
  if (isLanguageModel(summarizer)) return { kind: 'model', model: summarizer, label: undefined };
  throw new ContextfoldError('invalid_argument', "contextfold(): `summarizer` must be an AI SDK language model, a function, or 'extractive'");
}

/**
 * Whether requests to `model` compact natively: `native: 'auto'` for an `@ai-sdk/openai`
 * Responses model (`provider` `openai.responses`), `native: true` for any language model.
 */
export function nativeCapable(model, native) {
  if (!isLanguageModel(model)) return false;
  if (native === true) return true;
  return native === 'auto' && typeof model.provider === 'string' && model.provider.endsWith('.responses') && model.provider.startsWith('openai');
}

/** Calls a language model with a summarize request; resolves `{ text, finishReason }`. */
async function summarizeWithModel(model, request, signal) {
  const version = model.specificationVersion === 'v3' || model.specificationVersion === 'v2' ? 'v3' : 'v4';
  const result = await model.doGenerate({
    prompt: toProviderPrompt(request.messages, version),
    providerOptions: request.providerOptions,
    abortSignal: signal,
  });
  return { text: contentText(result.content), finishReason: finishReasonOf(result) ?? 'stop' };
}

/**
 * Sends the native compaction request through the Responses model itself: the input items
 * (without the terminal trigger) as its prompt, `compactionTrigger: true` so `@ai-sdk/openai`
 * appends `{ type: 'compaction_trigger' }`, and `store: false` so every item travels inline;
 * resolves the `compaction` output items the model returned.
 */
async function compactWithModel(model, request, signal) {
  const result = await model.doGenerate({
    prompt: responsesItemsToPrompt(request.input),
    providerOptions: { ...request.providerOptions, openai: { ...request.providerOptions?.openai, compactionTrigger: true, store: false } },
    abortSignal: signal,
  });
  return compactionItems(result.content);
}

/** The `compact()` host over `store` (see `CompactionHost` in the package's types). */
export function makeHost({ store, summarizer, nativeModel }) {
  const host = {
    async summarize(request, { signal, extractiveSummary } = {}) {
      switch (summarizer.kind) {
        case 'extractive':
          return { text: extractiveSummary(), finishReason: 'stop' };
        case 'function': {
          const result = await summarizer.fn(request, { signal });
          return typeof result === 'string' ? { text: result, finishReason: 'stop' } : result;
        }
        default:
          return summarizeWithModel(summarizer.model, request, signal);
      }
    },
    appendCheckpoint: (checkpoint) => store.appendCheckpoint(checkpoint),
    recordCircuit: (circuit) => store.recordCircuit(circuit),
  };
  if (nativeModel) host.compactNatively = (request, { signal } = {}) => compactWithModel(nativeModel, request, signal);
  return host;
}
