// The stateless `project(input)` and `digestPrefix(events)` over events given as an array of
// objects. An agent passes the same array again and again, a few events longer each time, so
// each function keeps the events of its last call in one hidden wasm `EventLog`, keyed by each
// event's JSON text (an event the caller changed in place is always seen): a call whose events
// extend the last call's appends only the new ones, and the log projects (its long strings
// shared back, held-strings.js; the checkpoint's prefix verified once) or digests (kept
// incrementally). Other events start a new log. Whatever the log refuses (an invalid log, a
// value JSON cannot write, a projection error) goes the plain way, the whole input as JSON
// text, so results and errors are those of the plain way.
import { HeldStrings } from './held-strings.js';

/** Fewer events than this go the plain way: a log is not worth keeping for them. */
const MIN_LOGGED_EVENTS = 64;

export class LastLog {
  #module;
  #raw;
  #texts = [];
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
    const texts = new Array(events.length);
    try {
      for (let i = 0; i < events.length; i += 1) {
        texts[i] = JSON.stringify(events[i]);
        if (typeof texts[i] !== 'string') return undefined;
      }
    } catch {
      return undefined;
    }
    const kept = this.#texts;
    let extends_ = this.#raw !== undefined && texts.length >= kept.length;
    for (let i = 0; extends_ && i < kept.length; i += 1) extends_ = texts[i] === kept[i];
    if (!extends_) this.#reset(new this.#module.EventLog());
    const first = this.#texts.length;
    if (first === texts.length) return this.#raw;
    const fresh = events.slice(first);
    const held = HeldStrings.collect(fresh);
    try {
      this.#raw.append(`[${texts.slice(first).join(',')}]`, held !== null);
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
  }
}
