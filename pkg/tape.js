// The value tape: a JS value written into one buffer for wasm to read with serde
// (wasm/contextfold-wasm/src/tape.rs has the layout). Two uses:
//
// - `eventsTape(events)`: events given as plain objects. Their strings go as UTF-8 bytes
//   (`encodeInto`, no JSON escaping and no unescaping in wasm): the stateless `project()` of a
//   session wasm has not seen takes about half the time it took as JSON text
//   (docs/performance.md, npm rows). Only for values whose JSON text means the same value: any
//   other (a `toJSON`, a class instance, a `Map`, a function, a lone surrogate, deep nesting)
//   gives `undefined`, and the caller sends the JSON text, so results and errors stay the text's.
//   `withUncheckedTape` first writes it without checking each string for a lone surrogate:
//   wasm searches the whole tape for U+FFFD instead (`check_strings` in tape.rs), and only when
//   it finds one is the tape written again with the check.
// - `exactTape(value)`: a value `JSON.stringify` cannot write because it holds a `BigInt`; each
//   BigInt goes as an exact integer, a `Map` with string keys as an object.

import { ContextfoldError } from './values.js';

/** How deep arrays and objects may nest (wasm's JSON reader reads 127 levels). */
const MAX_DEPTH = 127;
/** Shorter strings are written by a loop while ASCII: cheaper than `encodeInto`'s call. */
const SHORT = 48;
const I64_MIN = -(2n ** 63n);
const U64_MAX = 2n ** 64n - 1n;

/** Thrown inside a walk for a value the tape does not carry. */
class NotCarried extends Error {}

const encoder = new TextEncoder();
const wellFormed = typeof String.prototype.isWellFormed === 'function';
/** The events tapes' buffer, kept between calls (each tape is read by wasm before the next). */
let shared = new Uint8Array(1 << 16);

/** The first byte of a tape holding a BigInt (`exact`), and of one whose strings are unchecked. */
const EXACT = 1;
const UNCHECKED_STRINGS = 2;
/** The code of wasm's refusal of an unchecked tape holding U+FFFD. */
const UNCHECKED_REFUSED = 'tape_unchecked_strings';

/**
 * A writer of one tape into `buffer` (grown as needed); `checked`: each long or non-ASCII string
 * is checked for a lone surrogate (else wasm checks the tape, `withUncheckedTape`). With
 * `copying`, `write` returns a copy of the value (undefined members kept, as `same` compares
 * keys in last-log.js).
 */
function writer(buffer, exact, checked, copying = false) {
  let bytes = buffer;
  let view = new DataView(bytes.buffer);
  bytes[0] = exact ? EXACT : checked ? 0 : UNCHECKED_STRINGS;
  let at = 1;
  const room = (n) => {
    if (at + n <= bytes.length) return;
    let size = bytes.length * 2;
    while (size < at + n) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(bytes.subarray(0, at));
    bytes = grown;
    view = new DataView(bytes.buffer);
  };
  const count = (n) => {
    view.setUint32(at, n, true);
    at += 4;
  };
  const string = (text) => {
    room(4 + text.length * 3);
    if (text.length < SHORT) {
      let i = 0;
      for (; i < text.length; i += 1) {
        const unit = text.charCodeAt(i);
        if (unit >= 128) break;
        bytes[at + 4 + i] = unit;
      }
      if (i === text.length) {
        count(i);
        at += i;
        return;
      }
    }
    // encodeInto writes a lone surrogate as U+FFFD: such a string goes as JSON text instead.
    if (checked && !text.isWellFormed()) throw new NotCarried();
    const { written } = encoder.encodeInto(text, bytes.subarray(at + 4));
    count(written);
    at += written;
  };
  const tag = (t) => {
    room(9);
    bytes[at] = t;
    at += 1;
  };
  const write = (value, depth) => {
    switch (typeof value) {
      case 'string':
        tag(4);
        string(value);
        return value;
      case 'number':
        if (!Number.isFinite(value)) {
          tag(0);
          return value;
        }
        if (!exact && Number.isInteger(value) && !Number.isSafeInteger(value) && Math.abs(value) < 1e21) {
          // Read from the digits JSON writes, as wasm reads them from JSON text.
          tag(9);
          string(String(value));
          return value;
        }
        tag(3);
        view.setFloat64(at, value, true);
        at += 8;
        return value;
      case 'boolean':
        tag(value ? 2 : 1);
        return value;
      case 'bigint':
        // Events holding one go the exact way (`exactTape`), whose results come back exactly.
        if (!exact || value < I64_MIN || value > U64_MAX) throw new NotCarried();
        tag(value < 0n ? 7 : 8);
        if (value < 0n) view.setBigInt64(at, value, true);
        else view.setBigUint64(at, value, true);
        at += 8;
        return;
      case 'undefined':
        return tag(0);
      case 'object':
        break;
      default:
        throw new NotCarried();
    }
    if (value === null) {
      tag(0);
      return null;
    }
    if (depth === MAX_DEPTH) throw new NotCarried();
    if (Array.isArray(value) && (exact || typeof value.toJSON !== 'function')) {
      tag(5);
      count(value.length);
      if (copying) {
        const out = new Array(value.length);
        for (let i = 0; i < value.length; i += 1) out[i] = write(value[i], depth + 1);
        return out;
      }
      for (let i = 0; i < value.length; i += 1) write(value[i], depth + 1);
      return;
    }
    if (exact && value instanceof Map) {
      for (const key of value.keys()) if (typeof key !== 'string') throw new NotCarried();
      value = Object.fromEntries(value);
    }
    if (exact ? Symbol.iterator in value || value instanceof ArrayBuffer : !plainObject(value)) throw new NotCarried();
    const keys = Object.keys(value);
    tag(6);
    const countAt = at;
    at += 4;
    let n = 0;
    const out = copying ? {} : undefined;
    for (let i = 0; i < keys.length; i += 1) {
      const item = value[keys[i]];
      if (item === undefined) {
        if (copying) out[keys[i]] = undefined;
        continue;
      }
      string(keys[i]);
      const copied = write(item, depth + 1);
      if (copying) out[keys[i]] = copied;
      n += 1;
    }
    view.setUint32(countAt, n, true);
    return out;
  };
  return {
    write,
    done: () => [bytes, at],
  };
}

function plainObject(value) {
  const proto = Object.getPrototypeOf(value);
  return (proto === Object.prototype || proto === null) && typeof value.toJSON !== 'function';
}

/**
 * The tape of an array of events given as plain data, or undefined (send its JSON text). With
 * `shared`, it lies in a buffer the next shared tape reuses: for a caller that hands it to wasm
 * before writing another. `checked: false`: for `withUncheckedTape` only. `copies`: an array
 * that gets a copy of each event's plain data (strings shared), made in the same walk, when
 * the tape is written (last-log.js keeps them).
 */
export function eventsTape(events, { shared: reuse = false, checked = true, copies } = {}) {
  if (!wellFormed || !Array.isArray(events)) return undefined;
  const tape = writer(shared, false, checked, copies !== undefined);
  try {
    const copied = tape.write(events, 0);
    if (copies !== undefined) for (const c of copied) copies.push(c);
  } catch (error) {
    if (error instanceof NotCarried || error instanceof RangeError) return undefined;
    throw error;
  }
  const [bytes, length] = tape.done();
  shared = bytes;
  return new DataView(reuse ? bytes.buffer : bytes.buffer.slice(0, length), 0, length);
}

/**
 * `use(encode(false))`: events encoded by `encode(checked)` as a tape with unchecked strings; if
 * wasm refuses it for a U+FFFD that may be a lone surrogate, `use(encode(true))`.
 */
export function withUncheckedTape(encode, use) {
  try {
    return use(encode(false));
  } catch (error) {
    if (error?.code !== UNCHECKED_REFUSED) throw error;
  }
  return use(encode(true));
}

/** The tape of a value holding a `BigInt` (which JSON text cannot carry). */
export function exactTape(value) {
  const tape = writer(new Uint8Array(1 << 10), true, false);
  try {
    tape.write(value, 0);
  } catch (error) {
    if (!(error instanceof NotCarried || error instanceof RangeError)) throw error;
    throw new ContextfoldError('invalid_argument', 'a value that is not JSON data: only plain objects, arrays, Maps with string keys, strings, numbers, BigInts in i64..=u64, booleans and null', { cause: error });
  }
  const [bytes, length] = tape.done();
  return new DataView(bytes.buffer, 0, length);
}
