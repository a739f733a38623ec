// Browser entry point of `contextfold` (ESM): the wasm module is fetched and instantiated with a
// top-level await before any export is usable.
import init, * as raw from './dist/web/contextfold_wasm.js';
import { createApi } from './api.js';

await init({ module_or_path: new URL('./dist/web/contextfold_wasm_bg.wasm', import.meta.url) });

export const {
  ContextfoldError, CompactionSession, EventLog, compact, project, projectForRequest, providerFailure, calibrate, usageFact, digestPrefix, prefixDigests, canonicalEventJson, ledgerRows, ledgerTokensEstimator, validateLog, importModelMessages, importOpenAIChat, importOpenAIResponses, importAnthropic, importSessionFile, matchCheckpoint, selectSafePrefix, safeBoundaries, evaluateReplay, parseCheckpoint, checkSuccessor, validateSummary, recoverCheckpoint, extractiveSummary, contextBudget, prepareDue, mergeCircuits, estimateEvents, hashEngine,
} = createApi(raw);
