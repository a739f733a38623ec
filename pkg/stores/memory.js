// A store that keeps a session in memory: the interface of every store, without durability
// (tests, short-lived agents, and the reference the durable stores are compared with).
import { SessionStore } from './session-store.js';

/** A session held in memory only; `snapshot()` gives what a durable store would have written. */
export class MemoryStore extends SessionStore {
  #records = [];
  #usage = [];
  #retractions = [];

  /** Opens an empty session, or one restored from `snapshot` (a `snapshot()` of another store). */
  static async open({ sessionId, snapshot } = {}) {
    const store = new MemoryStore(sessionId);
    if (snapshot) {
      store.#records = [...snapshot.records];
      store.#usage = [...(snapshot.usage ?? [])];
      store.#retractions = [...(snapshot.retractions ?? [])];
      store.restore({ events: snapshot.events, records: snapshot.records, retractions: store.#retractions, circuit: snapshot.circuit, usage: store.#usage.map((record) => record.payload) });
    }
    return store;
  }

  /** The stored state: events, recorded checkpoint events, retractions, circuit and usage fact records, as plain JSON. */
  snapshot() {
    return { events: this.log.events(), records: [...this.#records], retractions: [...this.#retractions], circuit: this.circuit, usage: [...this.#usage] };
  }

  async persistEvents() {}

  async persistCheckpoint(record) {
    this.#records.push(record);
  }

  async persistCircuit() {}

  async persistRetraction(retraction) {
    this.#retractions.push(retraction);
  }

  async persistUsage(record) {
    this.#usage.push(record);
  }
}
