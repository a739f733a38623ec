// Background preparation for `Folding` (issue 39), as the native runtime does it
// (host/src/runtime/prepare.rs). A step whose projection fits but has reached the model's soft
// threshold (the core's `prepareDue`) starts a `compact()` with trigger `prepare` that the step
// does not wait for; the core hands its checkpoint back unrecorded and it is held here. When a
// later step's projection does not fit, the held checkpoint (or the one still in flight,
// awaited) goes into that compaction as `prepared`: the core appends it, through the store's
// compare-and-swap, only if it still succeeds the tip, matches the log and fits the request
// being built, and otherwise compacts as if nothing had been prepared. So a preparation records
// nothing itself: a process that ends during one leaves nothing behind.
//
// At most one preparation at a time: a newer one, or an overflow compaction, supersedes (aborts
// or drops) what was prepared. A failed preparation is never seen by the agent: no step throws
// or waits for it; its malformed-input circuit is still merged into the store's. Every
// preparation ends one way, counted in the stats with its summarizer tokens and recorded as a
// `preparation_settled` event where the store keeps AgentRun events: `used`, `superseded`,
// `wasted` (built, then refused when needed) or `failed`.
import { mergeCircuits, prepareDue } from 'contextfold';

/** The AgentRun kind a preparation's end is recorded under (the native ledger's). */
export const PREPARATION_SETTLED = 'preparation_settled';

/** Waits for `promise`, or until `signal` aborts (then resolves without its value). */
function unlessAborted(promise, signal) {
  if (!signal) return promise;
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const onAbort = () => resolve();
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}

/** The background preparations of one `Folding`, and how each ended. */
export class Preparations {
  #store;
  #onSettled;
  /** The preparation running: `{ controller, meter, done }`, or null. */
  #inFlight = null;
  /** The prepared checkpoint held until a compaction needs it: `{ checkpoint, tokens }`, or null. */
  #held = null;
  #stats = { started: 0, prepared: 0, used: 0, superseded: 0, wasted: 0, failed: 0, held: 0, tokens: 0, usedTokens: 0, wastedTokens: 0, heldTokens: 0 };

  /** `onSettled(settled, stats)`: called once for each preparation's end (errors ignored). */
  constructor(store, onSettled) {
    this.#store = store;
    this.#onSettled = onSettled;
  }

  /**
   * Preparations so far, by how they ended, with the summarizer tokens they spent (estimated:
   * each request's input and its answer): `used + wasted` of the `prepared` ones were settled,
   * `held` are still held; `superseded` counts those aborted in flight too.
   */
  get stats() {
    return { ...this.#stats };
  }

  /** Resolves once the preparation in flight, if any, has ended and been taken in. */
  settled() {
    return this.#inFlight?.done ?? Promise.resolve();
  }

  /**
   * After a step whose projection fits: when `historyTokens` (its `estimatedTokens`) has reached
   * the soft threshold of `model` and nothing is in flight or held for the current tip, starts
   * `run(signal, meter)` — a `compact()` with trigger `prepare` resolving `{ outcome, circuit }`,
   * adding its summarizer tokens to `meter.tokens` — and returns without waiting for it.
   */
  startIfDue(historyTokens, model, run) {
    if (this.#inFlight || !prepareDue(historyTokens, model)) return;
    if (this.#held) {
      const tip = this.#store.checkpoint?.checkpointId ?? null;
      if ((this.#held.checkpoint.previousCheckpointId ?? null) === tip) return;
      // Held for an older tip, it can no longer succeed: a newer one replaces it.
      this.supersede();
    }
    const flight = { controller: new AbortController(), meter: { tokens: 0 } };
    this.#stats.started += 1;
    this.#inFlight = flight;
    // The transaction starts now, over the log as it stands; its provider calls start on a later
    // turn of the event loop (the host's `background`), and nothing here waits for them.
    flight.done = (async () => run(flight.controller.signal, flight.meter))().then(
      (result) => this.#finished(flight, result),
      (error) => this.#finished(flight, { error }),
    );
  }

  /**
   * The prepared checkpoint for a compaction needed now: the held one, or the one in flight
   * (awaited, unless `signal` aborts first). `state`: what preparation had ready, `'none'`,
   * `'in_flight'` or `'held'` (the native `PreparationState`).
   */
  async take(signal) {
    const state = this.#inFlight ? 'in_flight' : this.#held ? 'held' : 'none';
    if (this.#inFlight) await unlessAborted(this.#inFlight.done, signal);
    const held = this.#held;
    this.#held = null;
    if (held) {
      this.#stats.held -= 1;
      this.#stats.heldTokens -= held.tokens;
    }
    return { held, state };
  }

  /**
   * Settles the checkpoint `take` gave once its compaction is over: `used` when the core adopted
   * it (`prepared_checkpoint_used`), else `wasted` (refused, or the compaction threw: `outcome`
   * null).
   */
  settle(held, outcome) {
    if (!held) return;
    const diagnostics = outcome?.diagnostics ?? [];
    if (diagnostics.some((d) => d.code === 'prepared_checkpoint_used')) {
      this.#account('used', held.tokens, held.checkpoint, null);
      return;
    }
    const refused = diagnostics.find((d) => d.code === 'prepared_checkpoint_rejected');
    this.#account('wasted', held.tokens, held.checkpoint, refused?.detail ?? outcome?.reason ?? 'compaction_error');
  }

  /**
   * Drops what was prepared: aborts the preparation in flight and the held checkpoint (a
   * compaction records a checkpoint without it, or a newer preparation starts).
   */
  supersede() {
    const flight = this.#inFlight;
    const held = this.#held;
    this.#inFlight = null;
    this.#held = null;
    if (flight) {
      flight.controller.abort();
      this.#account('superseded', 0, null, null);
    }
    if (held) {
      this.#stats.held -= 1;
      this.#stats.heldTokens -= held.tokens;
      this.#account('superseded', held.tokens, held.checkpoint, null);
    }
  }

  /**
   * Takes an ended preparation in: its circuit merged into the store's, its checkpoint held, a
   * failure counted (never thrown: the agent does not see it). A superseded one is dropped.
   */
  async #finished(flight, result) {
    const tokens = flight.meter.tokens;
    if (result.circuit) {
      try {
        const merged = mergeCircuits(this.#store.circuit, result.circuit);
        if (JSON.stringify(merged) !== JSON.stringify(mergeCircuits(this.#store.circuit, null))) {
          await this.#store.recordCircuit(merged);
        }
      } catch {
        // A store that cannot write says so at the agent's next append.
      }
    }
    if (this.#inFlight !== flight) return;
    this.#inFlight = null;
    const outcome = result.outcome;
    if (outcome?.outcome === 'prepared' && outcome.checkpoint) {
      const stats = this.#stats;
      stats.prepared += 1;
      stats.tokens += tokens;
      stats.held += 1;
      stats.heldTokens += tokens;
      this.#held = { checkpoint: outcome.checkpoint, tokens };
    } else if (outcome?.outcome !== 'skipped') {
      this.#stats.tokens += tokens;
      const detail = outcome ? outcome.reason : String(result.error?.code ?? result.error?.message ?? result.error);
      this.#account('failed', tokens, null, detail);
    }
  }

  /**
   * Counts one preparation's end, records it as a `preparation_settled` event when the store
   * keeps them (`recordPreparation`), and reports it (best effort: never fails a step).
   */
  #account(fate, tokens, checkpoint, detail) {
    const stats = this.#stats;
    if (fate === 'used') {
      stats.used += 1;
      stats.usedTokens += tokens;
    } else if (fate === 'superseded') {
      stats.superseded += 1;
      stats.wastedTokens += tokens;
      if (checkpoint) stats.wasted += 1;
    } else if (fate === 'wasted') {
      stats.wasted += 1;
      stats.wastedTokens += tokens;
    } else {
      stats.failed += 1;
      stats.wastedTokens += tokens;
    }
    const settled = { fate, checkpointId: checkpoint?.checkpointId ?? null, summarizerTokens: tokens, detail };
    if (typeof this.#store.recordPreparation === 'function') {
      Promise.resolve()
        .then(() => this.#store.recordPreparation(settled))
        .catch(() => {});
    }
    try {
      this.#onSettled?.(settled, this.stats);
    } catch {
      // The caller's callback never fails the agent's step.
    }
  }
}
