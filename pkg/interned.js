// Long strings of events cross into wasm once, then travel as references (the Rust side is
// wasm/contextfold-wasm/src/interned.rs).
//
// An agent projects the same, growing array of event objects on every request. JS strings never
// change, so each string of at least MIN_UNITS UTF-16 units is sent to wasm once, under an id
// keyed by its content (a Map with string keys compares content; V8 caches a string's hash, and
// the same string object compares by identity first). In the events' JSON text the string is
// replaced by a reference, REFERENCE_PREFIX + id, which wasm resolves before the core reads the
// events: results are exactly those of the full text. Nothing is interned (the caller sends the
// full text) when a string of the events starts with the prefix itself, or when the engine cannot
// tell whether a string is well-formed UTF-16 (`isWellFormed`); a string with a lone surrogate is
// never interned, so it fails in the parser exactly as in the full text.
//
// Memory: the interned strings of the last call always stay; the others are released once the
// interned total exceeds twice what the last call used plus RETAINED_SLACK_UNITS, so alternating
// sessions share the cache and a finished one does not pin its strings for long.

/** Strings shorter than this (UTF-16 units) go in the JSON text: their bytes are few. */
export const MIN_UNITS = 256;
/** What replaces an interned string in the JSON text, before its id. */
export const REFERENCE_PREFIX = '\u0000\u0001cf:';
/** Units kept beyond twice the last call's before the unused strings are released. */
export const RETAINED_SLACK_UNITS = 8 * 1024 * 1024;
/** The wasm side could not read the events that way; the full text is sent instead. */
export const UNREADABLE = 'interned_events_unreadable';

const canCheck = typeof String.prototype.isWellFormed === 'function';

/**
 * Why the events cannot travel with references: a value `JSON.stringify` would not write as its
 * own fields, or a string of the caller's that starts with the reference prefix (wasm would read
 * it as a reference).
 */
const cannot = Symbol('events cannot travel with references');

/** The interned strings of one wasm module (see the file comment). */
export class StringInterner {
  #raw;
  /** string → { id, reference, units, call } */
  #entries = new Map();
  #units = 0;
  #slackUnits;
  #minUnits;
  #call = 0;
  /** The text whose events wasm keeps, and the token naming them (see `continuation`). */
  #kept;
  /** Units of the distinct strings the current call refers to. */
  #usedUnits = 0;

  /**
   * @param raw the raw wasm-bindgen module (`internString`, `releaseStrings`)
   * @param {{ slackUnits?: number, minUnits?: number }} [options] units kept beyond twice
   *   the last call's; the shortest string interned
   */
  constructor(raw, { slackUnits = RETAINED_SLACK_UNITS, minUnits = MIN_UNITS } = {}) {
    this.#raw = raw;
    this.#slackUnits = slackUnits;
    this.#minUnits = minUnits;
  }

  /** Number and total UTF-16 units of the strings held (for tests and diagnostics). */
  get size() {
    return { strings: this.#entries.size, units: this.#units };
  }

  /**
   * The JSON text of `events` with its long strings as references, or undefined when the full
   * text must be sent (see the file comment): also when a value is not plain data (a `toJSON`,
   * a class instance, a BigInt), whose JSON form only `JSON.stringify` itself knows.
   */
  encode(events) {
    if (!canCheck || !Array.isArray(events)) return undefined;
    this.#call += 1;
    this.#usedUnits = 0;
    let text;
    try {
      text = JSON.stringify(this.#substitute(events));
    } catch (error) {
      if (error !== cannot && !(error instanceof TypeError)) throw error;
    }
    this.#release();
    return text;
  }

  /** `value` with its long strings replaced by references (copies only where one is). */
  #substitute(value) {
    if (typeof value === 'string') {
      if (value.length < this.#minUnits) {
        if (value.charCodeAt(0) === 0 && value.startsWith(REFERENCE_PREFIX)) throw cannot;
        return value;
      }
      const entry = this.#entries.get(value) ?? this.#add(value);
      if (entry === undefined) return value;
      if (entry.call !== this.#call) {
        entry.call = this.#call;
        this.#usedUnits += entry.units;
      }
      return entry.reference;
    }
    if (value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) {
      let out = value;
      for (let i = 0; i < value.length; i += 1) {
        const item = value[i];
        const replaced = this.#substitute(item);
        if (replaced !== item) {
          if (out === value) out = value.slice();
          out[i] = replaced;
        }
      }
      return out;
    }
    if (Object.getPrototypeOf(value) !== Object.prototype || typeof value.toJSON === 'function') throw cannot;
    let out = value;
    for (const key of Object.keys(value)) {
      const item = value[key];
      const replaced = this.#substitute(item);
      if (replaced !== item) {
        if (out === value) out = { ...value };
        out[key] = replaced;
      }
    }
    return out;
  }

  /**
   * What to send instead of `text` if wasm still keeps the events of the last remembered text
   * (see `remember`): `[token, elements]`, the elements appended since (with the closing `]`),
   * or undefined. wasm answers a token it no longer keeps as unreadable.
   */
  continuation(text) {
    const last = this.#kept;
    if (last === undefined) return undefined;
    if (text === last.text) return [last.token, ''];
    const open = last.text.slice(0, -1);
    if (!text.startsWith(open)) return undefined;
    if (open === '[') return [last.token, text.slice(1)];
    return text.charCodeAt(open.length) === 44 /* , */ ? [last.token, text.slice(open.length + 1)] : undefined;
  }

  /** wasm kept the events of `text` under `token` (undefined: it kept nothing). */
  remember(text, token) {
    this.#kept = token === undefined ? undefined : { text, token };
  }

  /** Sends a well-formed string to wasm (which gives its id); undefined for a lone surrogate. */
  #add(value) {
    if (!value.isWellFormed()) return undefined;
    const id = this.#raw.internString(value);
    const entry = { id, reference: `${REFERENCE_PREFIX}${id}`, units: value.length, call: 0 };
    this.#entries.set(value, entry);
    this.#units += value.length;
    return entry;
  }

  /** Releases the strings the current call did not use once the total is over the bound. */
  #release() {
    if (this.#units <= 2 * this.#usedUnits + this.#slackUnits) return;
    const ids = [];
    for (const [value, entry] of this.#entries) {
      if (entry.call === this.#call) continue;
      ids.push(entry.id);
      this.#units -= entry.units;
      this.#entries.delete(value);
    }
    this.#raw.releaseStrings(Uint32Array.from(ids));
    this.#kept = undefined;
  }
}

/**
 * `run(text)` over the events' JSON text with interned strings, or `fallback()` (the full text)
 * when they cannot travel that way or wasm cannot read them so (see the file comment).
 */
export function withInternedEvents(interner, events, run, fallback) {
  const text = interner?.encode(events);
  if (text !== undefined) {
    try {
      return run(text);
    } catch (error) {
      if (error?.code !== UNREADABLE) throw error;
    }
  }
  return fallback();
}
