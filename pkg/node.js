// Node entry point of `contextfold` (ESM): the wasm module is loaded synchronously. Digests
// hash through node:crypto (SHA-NI where the CPU has it) instead of the portable SHA-256 compiled
// into the module: the module hands it its canonical bytes in 16 KiB chunks (same digests). Large
// JSON results arrive as UTF-16 code units, turned into a string by Buffer (a copy).
import { createHash } from 'node:crypto';
import * as raw from './dist/node/contextfold_wasm.js';
import { createApi } from './api.js';

raw.useHashFactory(() => createHash('sha256'));

/** UTF-16 code units to a string with one copy (Node's UTF-8 and TextDecoder paths are slower). */
const utf16ToString = (units) => Buffer.from(units.buffer, units.byteOffset, units.byteLength).toString('ucs2');

export const {
  ContextfoldError, CompactionSession, EventLog, compact, project, projectForRequest, providerFailure, calibrate, usageFact, digestPrefix, prefixDigests, canonicalEventJson, ledgerRows, ledgerTokensEstimator, validateLog, importModelMessages, importOpenAIChat, importOpenAIResponses, importAnthropic, importSessionFile, matchCheckpoint, selectSafePrefix, safeBoundaries, evaluateReplay, parseCheckpoint, checkSuccessor, validateSummary, recoverCheckpoint, extractiveSummary, contextBudget, prepareDue, mergeCircuits, estimateEvents, hashEngine,
} = createApi(raw, { utf16ToString });
