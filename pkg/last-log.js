// The stateless `project(input)` and `digestPrefix(events)` over events given as an array of
// objects. An agent passes the same array again and again, a few events longer each time, so
// each function keeps the events of its last call in one hidden wasm `EventLog`, keyed by each
// event's JSON text with its long strings replaced by ids (a `Map` keyed by content: V8 caches a
// string's hash, so the same string object costs one lookup, not a scan), so an event the caller
// changed in place is always seen: a call whose events extend the last call's appends only the
// new ones (their plain JSON text), and the log projects (its long strings
// shared back, held-strings.js; the checkpoint's prefix verified once) or digests (kept
// incrementally). Other events start a new log. Whatever the log refuses (an invalid log, a
// value JSON cannot write, a projection error) goes the plain way, the whole input as JSON
// text, so results and errors are those of the plain way.
import { HeldStrings } from './held-strings.js';

/** Fewer events than this go the plain way: a log is not worth keeping for them. */
const MIN_LOGGED_EVENTS = 64;

/** Strings this long (UTF-16 units) or longer are keyed by an id. */
const MIN_KEYED_UNITS = 256;

/** What replaces a long string in a key, before its id. */
const ID_PREFIX = '\u0000\u0001cf:';

/** A value whose JSON only `JSON.stringify` itself knows (a `toJSON`, a class instance). */
const notPlain = Symbol('not plain data');

export class LastLog {
  #module;
  #raw;
  #texts = [];
  #held = new HeldStrings();
  /** Long string → its id in keys (the strings of this log's events). */
  #ids = new Map();

  /** Over the raw wasm-bindgen module. */
  constructor(module) {
    this.#module = module;
  }

  /** The held strings of the log's events (valid after `over`). */
  get held() {
    return this.#held;
  }

  /**
   * The raw `EventLog` holding exactly `events`, or undefined when they are few, not an array
   * of plain data, or refused by the log.
   */
  over(events) {
    if (!Array.isArray(events) || events.length < MIN_LOGGED_EVENTS || typeof events.toJSON === 'function') return undefined;
    let texts = this.#keys(events);
    if (texts === undefined) return undefined;
    const kept = this.#texts;
    let extends_ = this.#raw !== undefined && texts.length >= kept.length;
    for (let i = 0; extends_ && i < kept.length; i += 1) extends_ = texts[i] === kept[i];
    if (!extends_) {
      this.#reset(new this.#module.EventLog());
      texts = this.#keys(events);
    }
    const first = this.#texts.length;
    if (first === texts.length) return this.#raw;
    const fresh = events.slice(first);
    const held = HeldStrings.collect(fresh);
    try {
      const json = JSON.stringify(fresh);
      if (typeof json !== 'string') throw new TypeError('not JSON');
      this.#raw.append(json, held !== null);
    } catch {
      this.#reset(undefined);
      return undefined;
    }
    this.#held.appended(held, texts.length);
    this.#texts = texts;
    return this.#raw;
  }

  /** Forgets the log (after an error in its use). */
  forget() {
    this.#reset(undefined);
  }

  #reset(raw) {
    this.#raw?.free();
    this.#raw = raw;
    this.#texts = [];
    this.#held = new HeldStrings();
    this.#ids = new Map();
  }

  /** The key of each event (its JSON text, long strings as ids), or undefined (not plain data). */
  #keys(events) {
    const keys = new Array(events.length);
    try {
      for (let i = 0; i < events.length; i += 1) {
        keys[i] = JSON.stringify(this.#substitute(events[i]));
        if (typeof keys[i] !== 'string') return undefined;
      }
    } catch (error) {
      if (error === notPlain || error instanceof TypeError) return undefined;
      throw error;
    }
    return keys;
  }

  /** `value` with its long strings replaced by ids (copied only where one is). */
  #substitute(value) {
    if (typeof value === 'string') {
      if (value.length < MIN_KEYED_UNITS) {
        if (value.charCodeAt(0) === 0 && value.startsWith(ID_PREFIX)) throw notPlain;
        return value;
      }
      let id = this.#ids.get(value);
      if (id === undefined) {
        id = `${ID_PREFIX}${this.#ids.size}`;
        this.#ids.set(value, id);
      }
      return id;
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
    if (Object.getPrototypeOf(value) !== Object.prototype || typeof value.toJSON === 'function') throw notPlain;
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
}
