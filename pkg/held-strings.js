// The long strings of an `EventLog`'s events, held in JS so that a projection of the log puts
// them back by reference instead of copying them out of wasm memory.
//
// A projection repeats the events' texts and tool outputs verbatim: nearly all of its bytes.
// Events appended as JS objects already exist as JS strings, so when `append` is given objects
// that are plain data, the log keeps a reference to each long string of their `content` (its
// `text`, `input` and `output`: where wasm looks, see wasm/contextfold-wasm/src/shared_strings.rs)
// by its path. JS strings are immutable and only references are kept, so a caller changing its
// objects after the append changes nothing here. A projection then leaves those strings out
// (`sharedStrings`: per string, which event holds it, where, its UTF-16 length and where it
// goes) and they
// are put back from here; the strings of events appended as JSONL still come through the UTF-16
// table (values.js, `decodeProjection`).

/**
 * Fewer UTF-16 units than this means fewer than 256 UTF-8 bytes (a unit is at most 3 bytes), the
 * least wasm shares; a longer string may still be shorter than that in bytes and is held anyway.
 */
const MIN_HELD_UNITS = 86;

/** The places in an event's `content` wasm shares strings from. */
const SHARED_FIELDS = ['text', 'input', 'output'];
/** The path key of a string that is the field itself (most are), written once. */
const FIELD_KEYS = Object.fromEntries(SHARED_FIELDS.map((field) => [field, JSON.stringify(['content', field])]));

/** Per event of a log: `[pathKey, string]` pairs of its long strings, or null when not held. */
export class HeldStrings {
  #events = [];
  #any = false;

  /** Whether any event's strings are held (else a projection need not ask to share). */
  get any() {
    return this.#any;
  }

  /**
   * The long strings of `events` (an array of events about to be appended), or null when they
   * are not plain data: a `toJSON` anywhere could give wasm another value than the object holds.
   */
  static collect(events) {
    if (typeof events.toJSON === 'function' || String.prototype.toJSON !== undefined) return null;
    const held = new Array(events.length);
    for (let i = 0; i < events.length; i += 1) {
      const event = events[i];
      const pairs = [];
      if (!plainObject(event)) return null;
      const content = event.content;
      if (content !== null && typeof content === 'object') {
        if (!plainObject(content)) return null;
        for (const field of SHARED_FIELDS) {
          if (!Object.hasOwn(content, field)) continue;
          const value = content[field];
          if (typeof value === 'string') {
            if (value.length >= MIN_HELD_UNITS) pairs.push([FIELD_KEYS[field], value]);
          } else if (!collectValue(value, ['content', field], pairs)) return null;
        }
      }
      held[i] = pairs;
    }
    return held;
  }

  /** Records the events just appended (the log is now `length` long): `held` from `collect`. */
  appended(held, length) {
    const first = this.#events.length;
    for (let i = 0; first + i < length; i += 1) {
      const pairs = held?.[i] ?? null;
      this.#events.push(pairs);
      if (pairs !== null) this.#any = true;
    }
  }

  /**
   * Puts the held strings listed in `shared` back into `messages`. Returns false, changing
   * nothing, unless every one is held with the length wasm gives (never, unless wasm and this
   * file disagree on which strings they hold).
   */
  restore(messages, shared) {
    const strings = new Array(shared.length);
    for (let i = 0; i < shared.length; i += 1) {
      // [event, path (its JSON text: the key of `collect`), length, where it goes]
      const [event, key, length] = shared[i];
      const pairs = this.#events[event];
      if (!pairs) return false;
      const pair = pairs.find((candidate) => candidate[0] === key);
      if (pair === undefined || pair[1].length !== length) return false;
      strings[i] = pair[1];
    }
    for (let i = 0; i < shared.length; i += 1) {
      const at = shared[i][3];
      let target = messages;
      const last = at.length - 1;
      for (let k = 0; k < last; k += 1) target = target[at[k]];
      target[at[last]] = strings[i];
    }
    return true;
  }
}

function plainObject(value) {
  return value !== null && typeof value === 'object' && typeof value.toJSON !== 'function';
}

/** Adds the long strings of `value` at `path` to `pairs`; false when it is not plain data. */
function collectValue(value, path, pairs) {
  if (typeof value === 'string') {
    if (value.length >= MIN_HELD_UNITS) pairs.push([JSON.stringify(path), value]);
    return true;
  }
  if (value === null || typeof value !== 'object') return true;
  if (typeof value.toJSON === 'function') return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) {
      path.push(i);
      const plain = collectValue(value[i], path, pairs);
      path.pop();
      if (!plain) return false;
    }
    return true;
  }
  for (const key of Object.keys(value)) {
    path.push(key);
    const plain = collectValue(value[key], path, pairs);
    path.pop();
    if (!plain) return false;
  }
  return true;
}
