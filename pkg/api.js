// The public API of `contextfold`, built over the raw wasm-bindgen exports (Node or web build).
// This file converts errors and drives the compaction transaction asynchronously; every
// decision is the Rust core's.

/** An error from contextfold, carrying the core's stable snake_case `code`. */
export class ContextfoldError extends Error {
  /**
   * @param {string} code stable reason code
   * @param {string} message human-readable detail
   * @param {{ cause?: unknown }} [options]
   */
  constructor(code, message, options) {
    super(message, options);
    this.name = 'ContextfoldError';
    this.code = code;
    /** The 1-based line of JSONL events the error is about, if it is about one. */
    if (options?.line !== undefined) this.line = options.line;
  }
}

/** Upper bound on the steps of one compaction (the core needs far fewer). */
const MAX_COMPACTION_STEPS = 64;

const ABORTED = Symbol('aborted');

function convertError(error) {
  if (error instanceof ContextfoldError) return error;
  if (error && typeof error === 'object' && typeof error.code === 'string' && error.name === 'ContextfoldError') {
    return new ContextfoldError(error.code, error.message, { line: error.line });
  }
  if (error instanceof WebAssembly.RuntimeError) {
    return new ContextfoldError('internal_error', `contextfold panicked: ${error.message}`, { cause: error });
  }
  return error;
}

/**
 * Encodes a structured argument for the wasm exports: JSON text (one cheap copy across the
 * boundary), or the value itself when it holds a BigInt, which JSON cannot write; the Rust side
 * then reads it exactly through serde-wasm-bindgen.
 */
function encode(value) {
  if (value === undefined) return undefined;
  try {
    return JSON.stringify(value);
  } catch (error) {
    if (error instanceof TypeError) return value;
    throw error;
  }
}

const textEncoder = new TextEncoder();

/** The 1-based line of the first lone surrogate of a string that is not well-formed UTF-16. */
function loneSurrogateLine(text) {
  let line = 1;
  for (let i = 0; i < text.length; i += 1) {
    const unit = text.charCodeAt(i);
    if (unit === 10) line += 1;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) i += 1;
    else if (unit >= 0xd800 && unit <= 0xdfff) return line;
  }
  return line;
}

/**
 * Events given as JSONL (one RuntimeEvent per line, a `string` or UTF-8 bytes such as a
 * `Buffer`) as the `Uint8Array` the wasm exports read, or undefined for any other value (an
 * array of events). Bytes cross into wasm with one copy and are checked as UTF-8 there; a string
 * is encoded first, and one with a lone surrogate (no UTF-8 form) is refused rather than
 * silently replaced.
 */
function jsonlBytes(events) {
  if (events instanceof Uint8Array) return events;
  if (typeof events !== 'string') return undefined;
  if (typeof events.isWellFormed === 'function' && !events.isWellFormed()) {
    const line = loneSurrogateLine(events);
    throw new ContextfoldError('jsonl_lone_surrogate', `events line ${line}: a lone UTF-16 surrogate has no UTF-8 form`, { line });
  }
  return textEncoder.encode(events);
}

/** Encodes an events argument: JSONL bytes (see `jsonlBytes`), else JSON text of the array. */
function encodeEvents(events) {
  return jsonlBytes(events) ?? encode(events);
}

const utf16Decoder = new TextDecoder('utf-16le');

/**
 * The text of a large JSON result, which wasm hands over as UTF-16 code units (a `Uint16Array`):
 * the entry point's `utf16ToString` (a plain copy in Node), else `TextDecoder('utf-16le')`.
 */
let utf16ToString = (units) => utf16Decoder.decode(units);

/**
 * Decodes a structured result: JSON text (a string, or UTF-16 code units when large), or a value
 * holding BigInts (counts beyond 2^53).
 */
function decode(result) {
  if (typeof result === 'string') return JSON.parse(result);
  if (result instanceof Uint16Array) return JSON.parse(utf16ToString(result));
  return result;
}

/**
 * Decodes a projection result: as `decode`, or `[json, table]` when wasm moved its long strings
 * into a table of UTF-16 code units (events from JSONL or an EventLog, whose strings JS does not
 * hold): `tableStrings` lists where each goes and its range. The table becomes one string (a
 * copy) and each long string a slice of it (V8 does not copy slices), which spares the JSON
 * escaping and the `JSON.parse` scan of nearly every byte of the result.
 */
function decodeProjection(result) {
  if (!Array.isArray(result)) return decode(result);
  const [json, units] = result;
  const projection = decode(json);
  const table = utf16ToString(units);
  for (const { at, start, end } of projection.tableStrings) {
    let target = projection.messages;
    for (let k = 0; k < at.length - 1; k += 1) target = target[at[k]];
    target[at[at.length - 1]] = table.slice(start, end);
  }
  delete projection.tableStrings;
  return projection;
}

/**
 * Puts the caller's own strings back into a projection whose long strings the core left out
 * (`sharedStrings`: where each goes in `messages`, which event holds it, where, and its UTF-16 length), so
 * that they are not copied back through wasm memory. Returns false, changing nothing, unless
 * every one is found as a string of that length in events that are plain data (a `toJSON`
 * anywhere on the way could have given the core another value than the object holds).
 */
function restoreSharedStrings(result, shared, events) {
  if (!Array.isArray(events) || typeof events.toJSON === 'function' || String.prototype.toJSON !== undefined) return false;
  const strings = new Array(shared.length);
  for (let i = 0; i < shared.length; i += 1) {
    const { event, path, length } = shared[i];
    let value = events[event];
    for (const step of path) {
      if (value === null || typeof value !== 'object' || typeof value.toJSON === 'function') return false;
      value = value[step];
    }
    if (typeof value !== 'string' || value.length !== length) return false;
    strings[i] = value;
  }
  for (let i = 0; i < shared.length; i += 1) {
    const { at } = shared[i];
    let target = result.messages;
    for (let k = 0; k < at.length - 1; k += 1) target = target[at[k]];
    target[at[at.length - 1]] = strings[i];
  }
  return true;
}

/**
 * `project()` over JSON text: the long strings the messages repeat from the events come back as
 * references to the caller's strings (see `restoreSharedStrings`), not as copies.
 */
function projectSharing(raw, input) {
  const bytes = input !== null && typeof input === 'object' ? jsonlBytes(input.events) : undefined;
  if (bytes !== undefined) {
    const { events: _events, ...options } = input;
    return decodeProjection(raw.project(encode(options), false, bytes));
  }
  const text = encode(input);
  if (typeof text !== 'string' || input === null || typeof input !== 'object' || typeof input.toJSON === 'function') {
    return decode(raw.project(text, false));
  }
  const result = decode(raw.project(text, true));
  const shared = result.sharedStrings;
  delete result.sharedStrings;
  if (shared === undefined || restoreSharedStrings(result, shared, input.events)) return result;
  return decode(raw.project(text, false));
}

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

function randomCheckpointId() {
  return `cp-${globalThis.crypto.randomUUID()}`;
}

/**
 * Builds the public API over a raw wasm-bindgen module. `options.utf16ToString`: a faster way
 * than `TextDecoder` to turn UTF-16 code units (a `Uint16Array`) into a string.
 */
export function createApi(raw, options = {}) {
  if (options.utf16ToString) utf16ToString = options.utf16ToString;
  const project = guard((input) => projectSharing(raw, input));

  /** The core's step-by-step compaction transaction (what `compact()` drives). */
  class CompactionSession {
    #raw;

    constructor(input) {
      try {
        const bytes = input !== null && typeof input === 'object' ? jsonlBytes(input.events) : undefined;
        this.#raw = bytes === undefined
          ? new raw.CompactionSession(encode(input))
          : new raw.CompactionSession(encode({ ...input, events: [] }), bytes);
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

    /**
     * Appends events: one, an array, or JSONL (a string or UTF-8 bytes). Validated with the whole
     * log; nothing is appended on error.
     */
    append(events) {
      return this.#call(() => this.#raw.append(jsonlBytes(events) ?? encode(Array.isArray(events) ? events : [events])));
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

    /** `project()` over the log: the same options, without `events`. */
    project(options = {}) {
      return this.#call(() => decodeProjection(this.#raw.project(encode(options))));
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
            return next.outcome;
          case 'summarize': {
            const request = { ...next.request, providerOptions: providerOptions ?? {} };
            const result = await perform(() => host.summarize(request, { signal }), signal, session);
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

  return {
    ContextfoldError,
    CompactionSession,
    EventLog,
    compact,
    project,
    providerFailure,
    digestPrefix: guard((events) => raw.digestPrefix(encodeEvents(events))),
    prefixDigests: guard((events) => raw.prefixDigests(encodeEvents(events))),
    canonicalEventJson: guard((event) => raw.canonicalEventJson(encode(event))),
    validateLog: guard((events) => raw.validateLog(encodeEvents(events))),
    importModelMessages: guard((messages, options) => decode(raw.importModelMessages(encode(messages), encode(options)))),
    importOpenAIChat: guard((messages, options) => decode(raw.importOpenAIChat(encode(messages), encode(options)))),
    importAnthropic: guard((body, options) => decode(raw.importAnthropic(encode(body), encode(options)))),
    matchCheckpoint: guard((checkpoint, events) => decode(raw.matchCheckpoint(encode(checkpoint), encodeEvents(events)))),
    selectSafePrefix: guard((events, options) => decode(raw.selectSafePrefix(encodeEvents(events), encode(options ?? {})))),
    safeBoundaries: guard((events, currentTurnId) => decode(raw.safeBoundaries(encodeEvents(events), currentTurnId ?? undefined))),
    evaluateReplay: guard((input) => decode(raw.evaluateReplay(encode(input)))),
    parseCheckpoint: guard((checkpoint) => decode(raw.parseCheckpoint(encode(checkpoint)))),
    validateSummary: guard((text, finishReason, foldTokens = 0) => decode(raw.validateSummary(text, finishReason ?? 'stop', foldTokens))),
    recoverCheckpoint: guard((sessionId, records) => decode(raw.recoverCheckpoint(sessionId, encode(records)))),
    extractiveSummary: guard((previousSummary, events, targetTokens) =>
      raw.extractiveSummary(previousSummary ?? undefined, encodeEvents(events), targetTokens)),
    contextBudget: guard((model) => decode(raw.contextBudget(encode(model ?? null)))),
    estimateEvents: guard((events) => raw.estimateEvents(encodeEvents(events))),
    hashEngine: () => (raw.hashEngineIsHost() ? 'host' : 'wasm'),
  };
}
