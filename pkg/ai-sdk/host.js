// The `compact()` host of `contextfold/ai-sdk`: the summarizer of the caller's choice (an AI SDK
// language model called through its own `doGenerate`, a function, or the offline extractive
// summary), provider-native compaction through an `@ai-sdk/openai` Responses model, and the
// store's compare-and-swap checkpoint append and circuit record.
import { ContextfoldError, mergeCircuits } from 'contextfold';
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

/** Resolves on a later turn of the event loop (a timer), after the current step has returned. */
function nextTurn() {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/**
 * The `compact()` host over `store` (see `CompactionHost` in the package's types). `meter.tokens`
 * counts the summarizer tokens spent (each request's estimated input, and `countText` of each
 * answer); `background`: every provider call starts on a later turn of the event loop, so a
 * preparation started by a step never runs its summarizer (not even the extractive one) inside
 * that step. The circuit is merged into the store's (the core's merge): a preparation may have
 * recorded fingerprints since this compaction read it.
 */
export function makeHost({ store, summarizer, nativeModel, meter = { tokens: 0 }, countText = () => 0, background = false }) {
  const host = {
    async summarize(request, { signal, extractiveSummary } = {}) {
      meter.tokens += Number(request.estimatedInputTokens ?? 0);
      if (background) await nextTurn();
      let answer;
      switch (summarizer.kind) {
        case 'extractive':
          answer = { text: extractiveSummary(), finishReason: 'stop' };
          break;
        case 'function': {
          const result = await summarizer.fn(request, { signal });
          answer = typeof result === 'string' ? { text: result, finishReason: 'stop' } : result;
          break;
        }
        default:
          answer = await summarizeWithModel(summarizer.model, request, signal);
      }
      meter.tokens += countText(String(answer?.text ?? ''));
      return answer;
    },
    appendCheckpoint: (checkpoint) => store.appendCheckpoint(checkpoint),
    recordCircuit: (circuit) => store.recordCircuit(mergeCircuits(store.circuit, circuit)),
  };
  if (nativeModel) {
    host.compactNatively = async (request, { signal } = {}) => {
      meter.tokens += Number(request.estimatedInputTokens ?? 0);
      if (background) await nextTurn();
      return compactWithModel(nativeModel, request, signal);
    };
  }
  return host;
}
