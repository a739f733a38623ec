// Node entry point of `contextfold` (ESM): the wasm module is loaded synchronously.
import * as raw from './dist/node/contextfold_wasm.js';
import { createApi } from './api.js';

export const {
  ContextfoldError, CompactionSession, EventLog, compact, project, providerFailure, digestPrefix, prefixDigests, canonicalEventJson, validateLog, importModelMessages, importOpenAIChat, importAnthropic, matchCheckpoint, selectSafePrefix, safeBoundaries, evaluateReplay, parseCheckpoint, validateSummary, recoverCheckpoint, extractiveSummary, contextBudget, estimateEvents,
} = createApi(raw);
