// A session in IndexedDB, for browsers (docs/npm.md#stores). The database `name` holds any number
// of sessions in two object stores:
//
//   events   key [sessionId, seq]; value { sessionId, seq, json } (`json`: the event as the
//            ledger stores it, `ledgerRows`)
//   records  auto-incremented key; value { sessionId, type: 'checkpoint', record } or
//            { sessionId, type: 'circuit', circuit } or { sessionId, type: 'usage', record } (a
//            usage fact, `payload` the fact) or { sessionId, type: 'retraction', retraction } (a
//            checkpoint taken back); index `bySession`
//
// Every append is one readwrite transaction with durability 'strict' and resolves on its
// `complete` event: committed to disk, or not at all (a reload or crash in the middle of it
// leaves the previous state). Inside it an event append checks that the session's last stored
// seq is the one this store last saw. One writer per session: the Web Lock
// `contextfold:<name>:<sessionId>` (requested with ifAvailable) is held while the store is open;
// a second open, in this tab or another, throws `store_locked`.
import { ContextfoldError, ledgerRows } from 'contextfold';
import { SessionStore, requireSessionId } from './session-store.js';

const EVENTS = 'events';
const RECORDS = 'records';
const BY_SESSION = 'bySession';

/** The promise of an IDBRequest. */
const settled = (request) => new Promise((resolve, reject) => {
  request.onsuccess = () => resolve(request.result);
  request.onerror = () => reject(request.error);
});

/** Resolves when `tx` commits; rejects when it aborts or fails. */
const committed = (tx) => new Promise((resolve, reject) => {
  tx.oncomplete = () => resolve();
  tx.onerror = () => reject(tx.error ?? new Error('the transaction failed'));
  tx.onabort = () => reject(tx.error ?? new Error('the transaction was aborted'));
});

/** Opens (creating or upgrading) the database `name`. */
function openDatabase(name) {
  const request = indexedDB.open(name, 1);
  request.onupgradeneeded = () => {
    const db = request.result;
    if (!db.objectStoreNames.contains(EVENTS)) db.createObjectStore(EVENTS, { keyPath: ['sessionId', 'seq'] });
    if (!db.objectStoreNames.contains(RECORDS)) {
      db.createObjectStore(RECORDS, { autoIncrement: true }).createIndex(BY_SESSION, 'sessionId');
    }
  };
  return settled(request);
}

/**
 * Takes the Web Lock `lockName` if nobody holds it: resolves to a release function, or throws
 * `store_locked`. Without the Web Locks API (older browsers, some workers) nothing is locked.
 */
async function acquireWebLock(lockName) {
  if (typeof navigator === 'undefined' || !navigator.locks?.request) return async () => {};
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  const granted = await new Promise((resolve, reject) => {
    navigator.locks
      .request(lockName, { ifAvailable: true }, (lock) => {
        resolve(lock !== null);
        return lock === null ? undefined : held;
      })
      .catch(reject);
  });
  if (!granted) throw new ContextfoldError('store_locked', `another writer holds ${lockName}; close it first`);
  return async () => release();
}

/** A session kept in IndexedDB, each append one strict-durability transaction, single writer. */
export class IndexedDbStore extends SessionStore {
  #db;
  #release;
  /** The session's last seq as this store last saw it (null: no event). */
  #lastSeq = null;

  /** Use {@link IndexedDbStore.open}. */
  constructor(sessionId, db, release) {
    super(sessionId);
    this.#db = db;
    this.#release = release;
  }

  /**
   * Opens `sessionId` in the database `name` (created if needed). Throws `store_locked` while
   * another writer has the session open, `store_unsupported_runtime` without IndexedDB, and
   * `store_corrupt` when the stored events are not a valid log.
   */
  static async open({ name, sessionId } = {}) {
    requireSessionId(sessionId);
    if (typeof name !== 'string' || name === '') throw new ContextfoldError('invalid_argument', 'IndexedDbStore.open needs a database name');
    if (typeof indexedDB === 'undefined') throw new ContextfoldError('store_unsupported_runtime', 'IndexedDB is not available here');
    const release = await acquireWebLock(`contextfold:${name}:${sessionId}`);
    let db;
    try {
      db = await openDatabase(name);
      // Another tab upgrading the database: let it (this store then fails its next write).
      db.onversionchange = () => db.close();
      const store = new IndexedDbStore(sessionId, db, release);
      await store.#load();
      return store;
    } catch (error) {
      db?.close();
      await release();
      throw error;
    }
  }

  /** Reads the session's events in seq order, its checkpoints and its last circuit. */
  async #load() {
    const tx = this.#db.transaction([EVENTS, RECORDS], 'readonly');
    const range = IDBKeyRange.bound([this.sessionId, -Infinity], [this.sessionId, Infinity]);
    const [rows, values] = await Promise.all([
      settled(tx.objectStore(EVENTS).getAll(range)),
      settled(tx.objectStore(RECORDS).index(BY_SESSION).getAll(IDBKeyRange.only(this.sessionId))),
    ]);
    const records = [];
    let circuit = null;
    const usage = [];
    const retractions = [];
    for (const value of values) {
      if (value.type === 'checkpoint') records.push(value.record);
      else if (value.type === 'circuit') circuit = value.circuit ?? null;
      else if (value.type === 'usage') usage.push(value.record.payload);
      else if (value.type === 'retraction') retractions.push(value.retraction);
    }
    try {
      this.restore({ events: rows.map((row) => row.json).join('\n'), records, retractions, circuit, usage });
    } catch (cause) {
      throw new ContextfoldError('store_corrupt', `the stored events are not a valid log: ${cause?.message ?? cause}`, { cause });
    }
    this.#lastSeq = rows.length === 0 ? null : rows.at(-1).seq;
  }

  /** A strict-durability readwrite transaction over `stores`. */
  #write(stores) {
    return this.#db.transaction(stores, 'readwrite', { durability: 'strict' });
  }

  async persistEvents(events) {
    const rows = ledgerRows(events);
    const tx = this.#write([EVENTS, RECORDS]);
    const done = committed(tx);
    const store = tx.objectStore(EVENTS);
    const range = IDBKeyRange.bound([this.sessionId, -Infinity], [this.sessionId, Infinity]);
    const cursor = store.openKeyCursor(range, 'prev');
    cursor.onsuccess = () => {
      const last = cursor.result ? cursor.result.key[1] : null;
      if (last !== this.#lastSeq) {
        tx.abort();
        return;
      }
      for (const [index, event] of events.entries()) {
        store.add({ sessionId: this.sessionId, seq: event.seq, json: rows[index].json });
      }
    };
    try {
      await done;
    } catch (cause) {
      throw new ContextfoldError('store_conflict', `the events were not committed (another writer, or the database closed): ${cause?.message ?? cause}`, { cause });
    }
    this.#lastSeq = events.at(-1).seq;
  }

  async persistCheckpoint(record) {
    const tx = this.#write([RECORDS]);
    const done = committed(tx);
    tx.objectStore(RECORDS).add({ sessionId: this.sessionId, type: 'checkpoint', record });
    await done;
  }

  async persistCircuit(circuit) {
    const tx = this.#write([RECORDS]);
    const done = committed(tx);
    tx.objectStore(RECORDS).add({ sessionId: this.sessionId, type: 'circuit', circuit });
    await done;
  }

  async persistRetraction(retraction) {
    const tx = this.#write([RECORDS]);
    const done = committed(tx);
    tx.objectStore(RECORDS).add({ sessionId: this.sessionId, type: 'retraction', retraction });
    await done;
  }

  async persistUsage(record) {
    const tx = this.#write([RECORDS]);
    const done = committed(tx);
    tx.objectStore(RECORDS).add({ sessionId: this.sessionId, type: 'usage', record });
    await done;
  }

  async closeStorage() {
    this.#db.close();
    await this.#release();
  }
}
