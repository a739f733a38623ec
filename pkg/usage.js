// Usage facts: what the provider reported for one model request, in the shape the core's
// calibration learns from (`calibrate(calibration, fact)`). Pure conversion, no decision: the
// fact is validated in wasm when it is learned from.

import { ContextfoldError } from './values.js';

/** A count the provider reported, or undefined when it did not say. */
function count(value) {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/**
 * The usage fact of one model request: the request's own uncalibrated estimate (the projection's
 * `uncalibratedTokens` plus the model's `fixedOverheadTokens`, what the request spends outside
 * history) against what the provider reported.
 *
 * `request`: `{ provider, model, fixedOverheadTokens? }`, or a ProviderIdentity (`modelId`).
 * `usage`: the AI SDK's `LanguageModelUsage` of that one request (a step's `usage`, never the
 * `totalUsage` of several steps): `inputTokens` (every input token, cached ones included),
 * `inputTokenDetails.cacheReadTokens` / `.cacheWriteTokens` (or the older `cachedInputTokens`),
 * `outputTokens`; or a fact report as it is (`{ kind: 'response', inputTokens, ... }` or
 * `{ kind: 'overflow', countedTokens?, limitTokens? }`).
 */
export function usageFact(projection, request, usage) {
  const uncalibrated = count(projection?.uncalibratedTokens);
  if (uncalibrated === undefined) {
    throw new ContextfoldError('invalid_usage_fact', 'usageFact(): the projection has no uncalibratedTokens');
  }
  const provider = request?.provider;
  const model = request?.model ?? request?.modelId;
  const fact = {
    provider,
    model,
    estimatedInputTokens: uncalibrated + (count(request?.fixedOverheadTokens) ?? 0),
  };
  if (usage?.kind === 'overflow') {
    return { ...fact, kind: 'overflow', countedTokens: usage.countedTokens, limitTokens: usage.limitTokens };
  }
  const inputTokens = count(usage?.inputTokens);
  if (inputTokens === undefined) {
    throw new ContextfoldError('invalid_usage_fact', 'usageFact(): the provider reported no inputTokens');
  }
  const details = usage.inputTokenDetails ?? {};
  return {
    ...fact,
    kind: 'response',
    inputTokens,
    cachedInputTokens: count(details.cacheReadTokens) ?? count(usage.cachedInputTokens) ?? 0,
    cacheWriteTokens: count(details.cacheWriteTokens) ?? count(usage.cacheWriteTokens) ?? 0,
    outputTokens: count(usage.outputTokens) ?? 0,
  };
}
