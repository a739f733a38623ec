// Node entry point of `contextfold` (ESM): the wasm module is loaded synchronously. Digests
// hash through node:crypto (SHA-NI where the CPU has it) instead of the portable SHA-256 compiled
// into the module: the module hands it its canonical bytes in 16 KiB chunks (same digests).
import { createHash } from 'node:crypto';
import * as raw from './dist/node/contextfold_wasm.js';
import { createApi } from './api.js';

raw.useHashFactory(() => createHash('sha256'));

export const {
  ContextfoldError, CompactionSession, EventLog, compact, project, providerFailure, digestPrefix, prefixDigests, canonicalEventJson, validateLog, importModelMessages, importOpenAIChat, importAnthropic, matchCheckpoint, selectSafePrefix, safeBoundaries, evaluateReplay, parseCheckpoint, validateSummary, recoverCheckpoint, extractiveSummary, contextBudget, estimateEvents, hashEngine,
} = createApi(raw);
