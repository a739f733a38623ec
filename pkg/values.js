// How values cross between JavaScript and the raw wasm-bindgen exports: errors, structured
// arguments (JSON text, or a value tape: tape.js), events as JSONL bytes, and
// results (JSON text, UTF-16 code units when large, a projection's long strings sent in a UTF-16
// table). No decision is taken here.

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

/**
 * Encodes a structured argument for the wasm exports: JSON text (one cheap copy across the
 * boundary), or a value tape (tape.js) when it holds a BigInt, which JSON cannot write.
 */
export function encode(value) {
  if (value === undefined) return undefined;
  try {
    return JSON.stringify(value);
  } catch (error) {
    if (error instanceof TypeError) return exactTape(value);
    throw error;
  }
}

/**
 * Encodes events given as an array of objects: their tape when it carries them (tape.js; in
 * its shared buffer with `shared`; `checked: false` for `withUncheckedTape`), else `encode`.
 */
export function encodeObjects(events, shared = false, checked = true) {
  return eventsTape(events, { shared, checked }) ?? encode(events);
}

import { eventsTape, exactTape } from './tape.js';

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
export function jsonlBytes(events) {
  if (events instanceof Uint8Array) return events;
  if (typeof events !== 'string') return undefined;
  if (typeof events.isWellFormed === 'function' && !events.isWellFormed()) {
    const line = loneSurrogateLine(events);
    throw new ContextfoldError('jsonl_lone_surrogate', `events line ${line}: a lone UTF-16 surrogate has no UTF-8 form`, { line });
  }
  return textEncoder.encode(events);
}

/** Encodes an events argument: JSONL bytes (see `jsonlBytes`), else as `encodeObjects`. */
export function encodeEvents(events) {
  return jsonlBytes(events) ?? encodeObjects(events);
}

const utf16Decoder = new TextDecoder('utf-16le');

/**
 * The text of a large JSON result, which wasm hands over as UTF-16 code units (a `Uint16Array`):
 * the entry point's `utf16ToString` (a plain copy in Node), else `TextDecoder('utf-16le')`.
 */
let utf16ToString = (units) => utf16Decoder.decode(units);

/** Sets the entry point's faster `utf16ToString` (see `createApi`). */
export function useUtf16ToString(fn) {
  utf16ToString = fn;
}

/**
 * Decodes a structured result: JSON text (a string, or UTF-16 code units when large), or a value
 * holding BigInts (counts beyond 2^53).
 */
export function decode(result) {
  if (typeof result === 'string') return JSON.parse(result);
  if (result instanceof Uint16Array) return JSON.parse(utf16ToString(result));
  return result;
}

/**
 * Decodes a projection result: as `decode`, or `[memory, address, tableUnits, totalUnits]` when
 * wasm moved its long strings into a table of UTF-16 code units. The table is read straight
 * from the module's memory (valid until the next call into wasm, so it is read first): its first `tableUnits`
 * units hold the long strings, the rest the JSON text of the result, whose `tableStrings` lists
 * where each string goes and its range. The whole becomes one string (one copy), and each long
 * string a slice of it (V8 does not copy slices), which spares the JSON escaping and the
 * `JSON.parse` scan of nearly every byte of the result.
 */
export function decodeProjection(result) {
  if (!Array.isArray(result)) return decode(result);
  const [memory, address, tableUnits, totalUnits] = result;
  const table = utf16ToString(new Uint16Array(memory.buffer, address, totalUnits));
  const projection = JSON.parse(table.slice(tableUnits));
  const strings = projection.tableStrings ?? [];
  for (let i = 0; i < strings.length; i += 1) {
    const { at, start, end } = strings[i];
    let target = projection.messages;
    const last = at.length - 1;
    for (let k = 0; k < last; k += 1) target = target[at[k]];
    target[at[last]] = table.slice(start, end);
  }
  delete projection.tableStrings;
  return projection;
}

/** `project()`: the options as JSON text, the events beside them (`encodeEvents`). */
export function projectInput(raw, input) {
  const [plain, count] = withoutCounter(input);
  if (plain === null || typeof plain !== 'object') return decodeProjection(raw.project(encode(plain), undefined, count));
  const { events, ...options } = plain;
  return decodeProjection(raw.project(encode(options), events === undefined ? undefined : encodeEvents(events), count));
}

/**
 * `[input without countTokens, countTokens]`: the counting function cannot travel as JSON, so
 * it goes to wasm as its own argument (`undefined` without one).
 */
export function withoutCounter(input) {
  if (input === null || typeof input !== 'object' || !Object.hasOwn(input, 'countTokens')) return [input, undefined];
  const { countTokens, ...rest } = input;
  if (countTokens === undefined || countTokens === null) return [rest, undefined];
  if (typeof countTokens !== 'function') {
    throw new ContextfoldError('invalid_argument', 'countTokens must be a function (text) => number');
  }
  return [rest, countTokens];
}

export function convertError(error) {
  if (error instanceof ContextfoldError) return error;
  if (error && typeof error === 'object' && typeof error.code === 'string' && error.name === 'ContextfoldError') {
    return new ContextfoldError(error.code, error.message, { line: error.line });
  }
  if (error instanceof WebAssembly.RuntimeError) {
    return new ContextfoldError('internal_error', `contextfold panicked: ${error.message}`, { cause: error });
  }
  return error;
}
