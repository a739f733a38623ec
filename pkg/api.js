// The public API of `contextfold`, built over the raw wasm-bindgen exports (Node or web build).
// This file converts errors and drives the compaction transaction asynchronously (values cross
// the boundary through values.js); every decision is the Rust core's.
import {
  ContextfoldError, convertError, decode, decodeProjection, encode, encodeEvents, encodeObjects, jsonlBytes, projectInput, useUtf16ToString,
  withoutCounter,
} from './values.js';
import { usageFact } from './usage.js';
import { HeldStrings } from './held-strings.js';
import { LastLog } from './last-log.js';
import { withUncheckedTape } from './tape.js';

export { ContextfoldError };

/**
 * Upper bound on the effects of one compaction: a safety net only. The core bounds a
 * transaction itself: at most 64 rolling steps (`MAX_ROLLING_STEPS`), each a summarize (with at
 * most one repair and one overflow retry) or native call and one append.
 */
const MAX_COMPACTION_STEPS = 64 * 4 + 16;

const ABORTED = Symbol('aborted');

function guard(fn) {
  return (...args) => {
    try {
      return fn(...args);
    } catch (error) {
      throw convertError(error);
    }
  };
}

/** Resolves like `promise`, or rejects with ABORTED as soon as `signal` aborts. */
function abortable(promise, signal) {
  if (!signal) return Promise.resolve(promise);
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(ABORTED);
      return;
    }
    const onAbort = () => reject(ABORTED);
    signal.addEventListener('abort', onAbort, { once: true });
    Promise.resolve(promise).then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

const FAILURE_KINDS = new Set(['rejected', 'overflow', 'auth', 'billing', 'rate_limited', 'unavailable', 'cancelled']);

/**
 * Classifies an error thrown by a host's provider call as the core's ProviderFailure.
 * An explicit `kind` wins; else the HTTP `statusCode`/`status` (as the AI SDK's APICallError
 * carries it) decides; anything else counts as `unavailable` (retryable class).
 */
export function providerFailure(error) {
  const message = String(error?.message ?? error ?? 'provider call failed');
  if (FAILURE_KINDS.has(error?.kind)) return { kind: error.kind, message };
  if (error?.name === 'AbortError') return { kind: 'cancelled', message };
  const status = Number(error?.statusCode ?? error?.status);
  const overflow = /context[_ -]?length|context window|too many tokens|maximum context|prompt is too long/i.test(message);
  if (overflow || status === 413) return { kind: 'overflow', message };
  if (status === 401 || status === 403) return { kind: 'auth', message };
  if (status === 402) return { kind: 'billing', message };
  if (status === 429) return { kind: 'rate_limited', message };
  if (status >= 400 && status < 500) return { kind: 'rejected', message };
  return { kind: 'unavailable', message };
}

/** `input` without its `events` (which go to wasm as their own argument). */
function withoutEvents({ events: _events, ...options }) {
  return options;
}

function randomCheckpointId() {
  return `cp-${globalThis.crypto.randomUUID()}`;
}

/**
 * Builds the public API over a raw wasm-bindgen module. `options.utf16ToString`: a faster way
 * than `TextDecoder` to turn UTF-16 code units (a `Uint16Array`) into a string.
 */
export function createApi(raw, options = {}) {
  if (options.utf16ToString) useUtf16ToString(options.utf16ToString);
  const projectLog = new LastLog(raw);
  const digestLog = new LastLog(raw);

  /** A projection of the raw EventLog `log` with its held strings put back. */
  function projectHeld(log, held, optionsText, count) {
    const result = decodeProjection(log.project(optionsText, count));
    const shared = result.sharedStrings;
    if (shared === undefined) return result;
    delete result.sharedStrings;
    if (!held.restore(result.messages, shared)) {
      throw new ContextfoldError('shared_strings_lost', 'a projection named strings the wrapper does not hold');
    }
    return result;
  }

  /** `project(input)`: over the hidden log of the last call's events when it can (last-log.js). */
  const project = guard((input) => {
    const [plain, count] = withoutCounter(input);
    if (plain !== null && typeof plain === 'object' && typeof plain.toJSON !== 'function') {
      const { events, ...options } = plain;
      const optionsText = encode(options);
      const log = typeof optionsText === 'string' ? projectLog.over(events) : undefined;
      if (log !== undefined) {
        try {
          return projectHeld(log, projectLog.held, optionsText, count);
        } catch {
          projectLog.forget();
        }
      }
    }
    return projectInput(raw, input);
  });

  /** The wasm logs of the live `EventLog`s, for compactions over them. */
  const rawLogs = new WeakMap();

  /** The core's step-by-step compaction transaction (what `compact()` drives). */
  class CompactionSession {
    #raw;

    constructor(input) {
      try {
        const [plain, count] = withoutCounter(input);
        input = plain;
        const log = input !== null && typeof input === 'object' ? rawLogs.get(input.events) : undefined;
        if (log !== undefined) {
          const events = log();
          if (!events) throw new ContextfoldError('log_freed', 'the event log has been freed');
          this.#raw = events.startCompaction(encode(withoutEvents(input)), count);
          return;
        }
        const events = input !== null && typeof input === 'object' ? input.events : undefined;
        const options = events === undefined ? input : withoutEvents(input);
        this.#raw = new raw.CompactionSession(encode(options), events === undefined ? undefined : encodeEvents(events), count);
      } catch (error) {
        throw convertError(error);
      }
    }

    /** The next step: `{ type: 'summarize' | 'compact-natively' | 'append-checkpoint' | 'done', ... }`. */
    poll() {
      return this.#call(() => decode(this.#raw.poll()));
    }

    /** Reports a summary `{ text, finishReason }` or `{ error }`. */
    handleSummary(result) {
      this.#call(() => this.#raw.handleSummary(encode(result)));
    }

    /** The offline extractive summary the pending summarize step asks for, from the session's own log. */
    extractiveSummary() {
      return this.#call(() => this.#raw.extractiveSummary());
    }

    /** Reports native compaction output `{ items }` or `{ error }`. */
    handleNative(result) {
      this.#call(() => this.#raw.handleNative(encode(result)));
    }

    /** Reports the append: `{}` once durable, or `{ error: { conflict, message } }`. */
    handleAppend(result) {
      this.#call(() => this.#raw.handleAppend(encode(result)));
    }

    /** Cancels before the commit point; true when the transaction will end `cancelled`. */
    cancel() {
      return this.#call(() => this.#raw.cancel());
    }

    /** Ends the session and returns the malformed-input circuit for the next compaction. */
    takeCircuit() {
      return this.#call(() => decode(this.#raw.takeCircuit()));
    }

    /** Frees the wasm memory of the session (idempotent). */
    free() {
      if (this.#raw) this.#raw.free();
      this.#raw = undefined;
    }

    #call(fn) {
      if (!this.#raw) throw new ContextfoldError('session_finished', 'the compaction session has been freed');
      try {
        return fn();
      } catch (error) {
        throw convertError(error);
      }
    }
  }

  /**
   * A session's events kept in wasm memory: each event crosses into wasm once, when appended;
   * `digest()` is kept incrementally and `project()` sends no events across.
   */
  class EventLog {
    #raw = new raw.EventLog();
    #held = new HeldStrings();

    constructor() {
      rawLogs.set(this, () => this.#raw);
    }

    /**
     * Appends events: one, an array, or JSONL (a string or UTF-8 bytes). Validated with the whole
     * log; nothing is appended on error.
     */
    append(events) {
      return this.#call(() => {
        const bytes = jsonlBytes(events);
        if (bytes !== undefined) {
          const length = this.#raw.append(bytes, false);
          this.#held.appended(null, length);
          return length;
        }
        const list = Array.isArray(events) ? events : [events];
        const held = HeldStrings.collect(list);
        const length = withUncheckedTape(
          (checked) => encodeObjects(list, true, checked),
          (encoded) => this.#raw.append(encoded, held !== null),
        );
        this.#held.appended(held, length);
        return length;
      });
    }

    /** The number of events. */
    get length() {
      return this.#call(() => this.#raw.length);
    }

    /** `digestPrefix(events)` of the whole log, without rehashing. */
    digest() {
      return this.#call(() => this.#raw.digest());
    }

    /** A copy of the events. */
    events() {
      return this.#call(() => decode(this.#raw.events()));
    }

    /**
     * `project()` over the log: the same options, without `events`. The long strings of events
     * appended as objects come back as references to the caller's strings (held-strings.js).
     */
    project(options = {}) {
      return this.#call(() => {
        const [plain, count] = withoutCounter(options);
        return projectHeld(this.#raw, this.#held, encode(plain), count);
      });
    }

    /** `projectForRequest()` over the log: the history to send with the next request. */
    projectForRequest(options = {}) {
      return this.project({ ...options, failOpen: true });
    }

    /** Frees the wasm memory of the log (idempotent). */
    free() {
      if (this.#raw) this.#raw.free();
      this.#raw = undefined;
    }

    #call(fn) {
      if (!this.#raw) throw new ContextfoldError('log_freed', 'the event log has been freed');
      try {
        return fn();
      } catch (error) {
        throw convertError(error);
      }
    }
  }

  /**
   * Runs one compaction transaction, performing its effects with `host`.
   * Resolves to the core's outcome `{ outcome, reason, checkpoint?, diagnostics, attempts,
   * failureNote?, tokens }`, the same values as the native CLI's `compact --json`.
   */
  async function compact(input, host, options = {}) {
    const signal = options.signal ?? input.signal;
    if (!host || typeof host.summarize !== 'function' || typeof host.appendCheckpoint !== 'function') {
      throw new ContextfoldError('invalid_argument', 'compact(): host needs summarize() and appendCheckpoint()');
    }
    const { providerOptions, signal: _signal, checkpointId, nowMs, compactor, ...rest } = input;
    let session;
    try {
      session = new CompactionSession({
        ...rest,
        compactor: compactor ?? (typeof host.compactNatively === 'function' ? 'openai-codex-native' : 'text-summary'),
        checkpointId: checkpointId ?? randomCheckpointId(),
        nowMs: nowMs ?? Date.now(),
      });
    } catch (error) {
      throw convertError(error);
    }
    try {
      for (let step = 0; step < MAX_COMPACTION_STEPS; step += 1) {
        if (signal?.aborted) session.cancel();
        const next = session.poll();
        switch (next.type) {
          case 'done':
            if (typeof host.recordCircuit === 'function') await host.recordCircuit(session.takeCircuit());
            return next.outcome;
          case 'summarize': {
            const request = { ...next.request, providerOptions: providerOptions ?? {} };
            const extractiveSummary = () => session.extractiveSummary();
            const result = await perform(() => host.summarize(request, { signal, extractiveSummary }), signal, session);
            if (result === ABORTED) break;
            session.handleSummary(
              result.error
                ? result
                : { text: String(result.value?.text ?? ''), finishReason: String(result.value?.finishReason ?? 'unknown') },
            );
            break;
          }
          case 'compact-natively': {
            if (typeof host.compactNatively !== 'function') {
              session.handleNative({ error: { kind: 'rejected', message: 'the host has no compactNatively()' } });
              break;
            }
            const request = { ...next.request, providerOptions: providerOptions ?? {} };
            const result = await perform(() => host.compactNatively(request, { signal }), signal, session);
            if (result === ABORTED) break;
            const items = Array.isArray(result.value) ? result.value : result.value?.items;
            session.handleNative(result.error ? result : { items: items ?? [] });
            break;
          }
          case 'append-checkpoint': {
            // The durable write is the commit point: it is awaited even if the signal aborts.
            try {
              await host.appendCheckpoint(next.checkpoint);
              session.handleAppend({});
            } catch (error) {
              session.handleAppend({
                error: { conflict: error?.conflict === true, message: String(error?.message ?? error) },
              });
            }
            break;
          }
          default:
            throw new ContextfoldError('unknown_effect', `unknown compaction step ${next.type}`);
        }
      }
      throw new ContextfoldError('compaction_steps_exceeded', `compaction did not finish in ${MAX_COMPACTION_STEPS} steps`);
    } catch (error) {
      throw convertError(error);
    } finally {
      session.free();
    }
  }

  /** Performs one provider effect; on abort cancels the session and returns ABORTED. */
  async function perform(call, signal, session) {
    try {
      return { value: await abortable(call(), signal) };
    } catch (error) {
      if (error === ABORTED || signal?.aborted) {
        if (session.cancel()) return ABORTED;
      }
      return { error: providerFailure(error) };
    }
  }

  /**
   * The history to send with the next model request: `project()` in fail-open mode. Equal to
   * `project()` whenever that fits; when it does not (a compaction failed or could not shrink
   * it enough), the source-matched checkpoint with the newest complete raw turns that fit, the
   * omission reported (`omittedEvents`, `previous_checkpoint_reused`). Never an invented
   * summary, never a widened coverage claim.
   */
  const projectForRequest = (input) => project({ ...input, failOpen: true });

  return {
    ContextfoldError,
    CompactionSession,
    EventLog,
    compact,
    project,
    projectForRequest,
    providerFailure,
    usageFact,
    calibrate: guard((calibration, fact) => decode(raw.calibrate(encode(calibration), encode(fact)))),
    digestPrefix: guard((events) => digestLog.over(events)?.digest() ?? raw.digestPrefix(encodeEvents(events))),
    prefixDigests: guard((events) => raw.prefixDigests(encodeEvents(events))),
    canonicalEventJson: guard((event) => raw.canonicalEventJson(encode(event))),
    ledgerRows: guard((events) => decode(raw.ledgerRows(encodeEvents(events)))),
    ledgerTokensEstimator: () => raw.ledgerTokensEstimator(),
    validateLog: guard((events) => raw.validateLog(encodeEvents(events))),
    importModelMessages: guard((messages, options) => decode(raw.importModelMessages(encode(messages), encode(options)))),
    importOpenAIChat: guard((messages, options) => decode(raw.importOpenAIChat(encode(messages), encode(options)))),
    importAnthropic: guard((body, options) => decode(raw.importAnthropic(encode(body), encode(options)))),
    importOpenAIResponses: guard((input, options) => decode(raw.importOpenAIResponses(encode(input), encode(options)))),
    importSessionFile: guard((text, options) => {
      if (typeof text !== 'string') throw new ContextfoldError('invalid_argument', 'importSessionFile(): `text` must be the file\'s text (a string)');
      return decode(raw.importSessionFile(text, encode(options)));
    }),
    matchCheckpoint: guard((checkpoint, events) => decode(raw.matchCheckpoint(encode(checkpoint), encodeEvents(events)))),
    selectSafePrefix: guard((events, options) => decode(raw.selectSafePrefix(encodeEvents(events), encode(options ?? {})))),
    safeBoundaries: guard((events, currentTurnId) => decode(raw.safeBoundaries(encodeEvents(events), currentTurnId ?? undefined))),
    evaluateReplay: guard((input) => decode(raw.evaluateReplay(encode(input)))),
    parseCheckpoint: guard((checkpoint) => decode(raw.parseCheckpoint(encode(checkpoint)))),
    checkSuccessor: guard((tip, candidate) => raw.checkSuccessor(encode(tip ?? null), encode(candidate))),
    validateSummary: guard((text, finishReason, foldTokens = 0) => decode(raw.validateSummary(text, finishReason ?? 'stop', foldTokens))),
    recoverCheckpoint: guard((sessionId, records, retractions) => decode(raw.recoverCheckpoint(sessionId, encode(records), retractions === undefined ? undefined : encode(retractions)))),
    extractiveSummary: guard((previousSummary, events, targetTokens, { carried, replayed } = {}) =>
      raw.extractiveSummary(
        previousSummary ?? undefined,
        encodeEvents(events),
        targetTokens,
        carried === undefined ? undefined : encodeEvents(carried),
        replayed === undefined ? undefined : encodeEvents(replayed),
      )),
    contextBudget: guard((model) => decode(raw.contextBudget(encode(model ?? null)))),
    prepareDue: guard((historyTokens, model) => raw.prepareDue(Number(historyTokens), encode(model ?? null))),
    mergeCircuits: guard((circuit, other) => decode(raw.mergeCircuits(encode(circuit ?? null), encode(other ?? null)))),
    estimateEvents: guard((events) => raw.estimateEvents(encodeEvents(events))),
    hashEngine: () => (raw.hashEngineIsHost() ? 'host' : 'wasm'),
  };
}
