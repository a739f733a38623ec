// The stateless `project(input)` and `digestPrefix(events)` over events given as an array of
// objects. An agent passes the same array again and again, a few events longer each time, so
// each function keeps the events of its last call in one hidden wasm `EventLog`, with a copy of
// each event's plain data (its strings shared: JS strings are immutable). A call compares its
// events with those copies (the same strings compare by identity first, so an unchanged event
// costs a walk over its fields, not a scan of its text), so an event the caller changed in place
// is always seen: a call whose events extend the last call's appends only the new ones (their
// value tape, tape.js, or else their JSON text), and the log projects (its long strings shared
// back, held-strings.js; the checkpoint's prefix verified once) or digests (kept incrementally). Other events start a new
// log. Whatever the log refuses (an invalid log, a value JSON cannot write or that is not plain
// data, a projection error) goes the plain way, the whole input as JSON text, so results and
// errors are those of the plain way. Memory: one call's events, in wasm and as the copies.
import { HeldStrings } from './held-strings.js';
import { eventsTape, withUncheckedTape } from './tape.js';

/** Fewer events than this go the plain way: a log is not worth keeping for them. */
const MIN_LOGGED_EVENTS = 64;

/** A value whose JSON only `JSON.stringify` itself knows (a `toJSON`, a class instance). */
const notPlain = Symbol('not plain data');

export class LastLog {
  #module;
  #raw;
  /** Copies of the plain data of the log's events. */
  #copies = [];
  #held = new HeldStrings();

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
    try {
      const kept = this.#copies;
      let extending = this.#raw !== undefined && events.length >= kept.length;
      for (let i = 0; extending && i < kept.length; i += 1) extending = same(kept[i], events[i]);
      if (!extending) this.#reset(new this.#module.EventLog());
      const first = this.#copies.length;
      if (first === events.length) return this.#raw;
      const fresh = events.slice(first);
      const held = HeldStrings.collect(fresh);
      // The tape writer copies the events as it writes them (one walk, not two).
      let copies = [];
      const encode = (checked) => {
        copies = [];
        return eventsTape(fresh, { shared: true, checked, copies }) ?? JSON.stringify(fresh);
      };
      withUncheckedTape(encode, (encoded) => this.#raw.append(encoded, held !== null));
      if (copies.length !== fresh.length) copies = fresh.map(copy);
      this.#held.appended(held, events.length);
      for (const c of copies) this.#copies.push(c);
      return this.#raw;
    } catch {
      // Not plain data, a value JSON cannot write (TypeError), or the log refused the events.
      this.#reset(undefined);
      return undefined;
    }
  }

  /** Forgets the log (after an error in its use). */
  forget() {
    this.#reset(undefined);
  }

  #reset(raw) {
    this.#raw?.free();
    this.#raw = raw;
    this.#copies = [];
    this.#held = new HeldStrings();
  }
}

function plainObject(value) {
  const proto = Object.getPrototypeOf(value);
  return (proto === Object.prototype || proto === null) && typeof value.toJSON !== 'function';
}

/** A copy of the plain data `value` (strings shared); throws `notPlain` for anything else. */
function copy(value) {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(copy);
  if (!plainObject(value)) throw notPlain;
  const out = {};
  for (const key of Object.keys(value)) out[key] = copy(value[key]);
  return out;
}

/** Whether `value` is the plain data `kept` (a copy) holds: the same keys in the same order. */
function same(kept, value) {
  if (kept === value) return true;
  if (kept === null || value === null || typeof kept !== 'object' || typeof value !== 'object') return false;
  if (Array.isArray(kept)) {
    if (!Array.isArray(value) || value.length !== kept.length) return false;
    for (let i = 0; i < kept.length; i += 1) if (!same(kept[i], value[i])) return false;
    return true;
  }
  if (Array.isArray(value) || !plainObject(value)) return false;
  const keys = Object.keys(kept);
  const valueKeys = Object.keys(value);
  if (keys.length !== valueKeys.length) return false;
  for (let i = 0; i < keys.length; i += 1) {
    if (keys[i] !== valueKeys[i] || !same(kept[keys[i]], value[keys[i]])) return false;
  }
  return true;
}
