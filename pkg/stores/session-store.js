// The part every store shares: a session's events held in a wasm `EventLog` (each append checked
// by the core together with the whole log), the current checkpoint recovered from the recorded
// checkpoints with the core's selection, and the compare-and-swap rule of a checkpoint append
// (the core's successor rule, the same as the native ledger's). A concrete store only persists:
// `persistEvents`, `persistCheckpoint`, `persistCircuit`, `persistUsage` resolve once their
// write is durable. The session's usage facts (what the provider reported for each request) are
// kept beside the events, outside their digest, as the native ledger keeps them: the store's
// `calibration` is the core's calibration learned from them in record order.
import { ContextfoldError, EventLog, calibrate, checkSuccessor, recoverCheckpoint } from 'contextfold';
import { listCheckpoints, retractionFor, verifyRecords } from './inspection.js';

/** The AgentRun kind of a recorded checkpoint (the native ledger's `agent_run_events.kind`). */
export const CHECKPOINT_RECORDED = 'history_compact_checkpoint_recorded';

/** The AgentRun kind of a usage fact (the native ledger's `model_usage_recorded`). */
export const USAGE_RECORDED = 'model_usage_recorded';

/** A context window no stored conversation reaches: `modelMessages()` projects every event. */
const UNBOUNDED_WINDOW = Number.MAX_SAFE_INTEGER;

/** The calibration `facts` teach, in order (the host's `Calibration::from_facts`). */
export function calibrationOf(facts) {
  return facts.reduce((calibration, fact) => calibrate(calibration, fact), null);
}

/** Throws `invalid_argument` unless `sessionId` is a non-empty string. */
export function requireSessionId(sessionId) {
  if (typeof sessionId !== 'string' || sessionId === '') {
    throw new ContextfoldError('invalid_argument', 'a store needs a non-empty sessionId');
  }
  return sessionId;
}

/**
 * A session's durable state behind the store interface of `docs/npm.md#stores`. Subclasses
 * implement the three `persist*` methods and `closeStorage`, and call `restore` once with what
 * they read at open.
 */
export class SessionStore {
  /** The session every event and checkpoint of this store belongs to. */
  sessionId;
  #log = new EventLog();
  #checkpoint = null;
  /** Every recorded checkpoint event, in record order (what `checkpoints()` and `verify()` read). */
  #records = [];
  /** Every retraction (`checkpoint_retracted`), in record order. */
  #retractions = [];
  #checkpointEventId = null;
  #circuit = null;
  /** The usage facts recorded, in record order, and the calibration they teach. */
  #usage = [];
  #calibration = null;
  #recoveryDiagnostics = [];
  #broken = null;
  #queue = Promise.resolve();
  #closed = false;

  constructor(sessionId) {
    this.sessionId = requireSessionId(sessionId);
  }

  /** Every stored event, in order, validated (a wasm `EventLog`: project and compact over it). */
  get log() {
    return this.#log;
  }

  /** The current checkpoint (the core's recovery selection over the recorded ones), or null. */
  get checkpoint() {
    return this.#checkpoint;
  }

  /** The malformed-input circuit last recorded, or null. */
  get circuit() {
    return this.#circuit;
  }

  /** The usage facts recorded for this session, in record order (a copy). */
  get usageFacts() {
    return this.#usage.slice();
  }

  /**
   * The calibration the recorded usage facts teach (the core's `calibrate` over them in record
   * order, as the native host computes it), or null before the first fact. `contextfold/ai-sdk`
   * starts from it when it opens the session.
   */
  get calibration() {
    return this.#calibration;
  }

  /**
   * The whole stored conversation as AI SDK `ModelMessage[]` (every event, no checkpoint: the
   * messages the agent exchanged, not a projection). To resume an agent after a restart, pass
   * them with the new user message to the next call through `contextfold/ai-sdk`: the adapter
   * finds them equal to the stored events and appends only what is new.
   */
  modelMessages() {
    if (this.#log.length === 0) return [];
    return this.#log.project({ model: { contextWindow: UNBOUNDED_WINDOW }, format: 'ai-sdk' }).messages;
  }

  /** The recovery's diagnostics at open (recorded checkpoints it skipped, and why). */
  get recoveryDiagnostics() {
    return this.#recoveryDiagnostics;
  }

  /**
   * Loads what the storage holds (once at open; again through `catchUp`): `events` (array or
   * JSONL) appended to the log, `records` (recorded checkpoint events `{ eventId, sessionId,
   * recordedAtMs, payload }`) and `retractions` (`{ eventId, sessionId, recordedAtMs,
   * checkpointId, reason }`) through the core's recovery, the last `circuit`, and `usage` (every
   * recorded usage fact, in order; left as it is when undefined). Throws the core's code when the
   * stored events are invalid, `store_corrupt` when the current checkpoint covers more events
   * than were stored or a usage fact is not one.
   */
  restore({ events, records = [], retractions = [], circuit = null, usage }) {
    if (events !== undefined && (typeof events === 'string' ? events.length > 0 : events.length > 0)) {
      this.#log.append(events);
    }
    const recovery = recoverCheckpoint(this.sessionId, records, retractions);
    const covered = Number(recovery.checkpoint?.coverage?.eventCount ?? 0);
    if (covered > this.#log.length) {
      throw new ContextfoldError('store_corrupt', `the current checkpoint ${recovery.checkpoint.checkpointId} covers ${covered} events; the storage holds ${this.#log.length}`);
    }
    this.#checkpoint = recovery.checkpoint;
    this.#checkpointEventId = recovery.eventId;
    this.#recoveryDiagnostics = recovery.diagnostics;
    this.#records = records.slice();
    this.#retractions = retractions.slice();
    this.#circuit = circuit;
    if (usage !== undefined) {
      try {
        this.#calibration = calibrationOf(usage);
      } catch (cause) {
        throw new ContextfoldError('store_corrupt', `a recorded usage fact is not one: ${cause?.message ?? cause}`, { cause });
      }
      this.#usage = usage.slice();
    }
  }

  /**
   * Appends events after the stored ones: checked by the core with the whole log (nothing is
   * appended on error), then written; resolves once the write is durable. When the write itself
   * fails the store refuses every later call (`store_write_failed`): reopen it to read what the
   * storage holds.
   */
  appendEvents(events) {
    return this.#serialized(async () => {
      const batch = Array.isArray(events) ? events : [events];
      if (batch.length === 0) return;
      for (const event of batch) {
        if (event?.sessionId !== this.sessionId) {
          throw new ContextfoldError('store_session_mismatch', `event ${event?.runtimeEventId} belongs to session ${event?.sessionId}, not ${this.sessionId}`);
        }
      }
      const before = this.#log.length;
      this.#log.append(batch);
      try {
        await this.#durably(() => this.persistEvents(batch, before));
      } catch (error) {
        // A refusal the storage made before writing anything (`conflict: true`: another writer
        // appended first) leaves the store usable: the log goes back to the stored events.
        if (error?.conflict === true) this.#keepFirst(before);
        throw error;
      }
    });
  }

  /**
   * The log holding only its first `count` events: a new EventLog (the old one is left to the
   * garbage collector, not freed, since a caller may still hold it).
   */
  #keepFirst(count) {
    const kept = this.#log.events().slice(0, count);
    const log = new EventLog();
    if (kept.length > 0) log.append(kept);
    this.#log = log;
  }

  /**
   * For stores that several writers share (PostgreSQL): after every earlier call of this store,
   * `read()` resolves to what the storage holds beyond this store's log — `{ events }` (those
   * after the log's last), `records` (every recorded checkpoint event) and `circuit` — which
   * then goes through `restore`. Resolves to the number of events added.
   */
  catchUp(read) {
    return this.#serialized(async () => {
      const before = this.#log.length;
      this.restore(await read());
      return this.#log.length - before;
    });
  }

  /**
   * Appends `checkpoint` when it is a valid successor of the current one (compare-and-swap);
   * otherwise throws `successor_conflict` with `conflict: true`, as `compact()` expects. A
   * checkpoint of another session or covering more events than the log holds is refused too.
   */
  appendCheckpoint(checkpoint) {
    return this.#serialized(async () => {
      if (checkpoint?.sessionId !== this.sessionId) {
        throw new ContextfoldError('store_session_mismatch', `checkpoint ${checkpoint?.checkpointId} belongs to session ${checkpoint?.sessionId}, not ${this.sessionId}`);
      }
      if (Number(checkpoint.coverage?.eventCount) > this.#log.length) {
        throw new ContextfoldError('checkpoint_beyond_log', `checkpoint ${checkpoint.checkpointId} covers ${checkpoint.coverage.eventCount} events; the store holds ${this.#log.length}`);
      }
      try {
        checkSuccessor(this.#checkpoint, checkpoint);
      } catch (error) {
        error.conflict = true;
        throw error;
      }
      const record = {
        eventId: `${CHECKPOINT_RECORDED}:${checkpoint.checkpointId}`,
        sessionId: this.sessionId,
        recordedAtMs: Date.now(),
        payload: checkpoint,
      };
      await this.#durably(() => this.persistCheckpoint(record));
      this.#checkpoint = checkpoint;
      this.#checkpointEventId = record.eventId;
      this.#records.push(record);
    });
  }

  /** Records the session's malformed-input circuit (`compact()`'s `host.recordCircuit`). */
  recordCircuit(circuit) {
    return this.#serialized(async () => {
      await this.#durably(() => this.persistCircuit(circuit));
      this.#circuit = circuit;
    });
  }

  /**
   * Records one usage fact (`usageFact()`: what the provider reported for one request) and
   * learns from it: `calibration` moves on once the write is durable. SQLite and PostgreSQL
   * write it as a `model_usage_recorded` AgentRun event with the fact as payload, as the native
   * host does, so `contextfold` sees the same calibration. Throws `invalid_usage_fact` (nothing
   * written) for a value that is not a fact.
   */
  recordUsage(fact) {
    return this.#serialized(async () => {
      const payload = JSON.parse(JSON.stringify(fact ?? null));
      const calibration = calibrate(this.#calibration, payload);
      const recordedAtMs = Date.now();
      const record = { eventId: `usage-${recordedAtMs}-${globalThis.crypto.randomUUID()}`, sessionId: this.sessionId, recordedAtMs, payload };
      await this.#durably(() => this.persistUsage(record));
      this.#usage.push(payload);
      this.#calibration = calibration;
    });
  }

  /**
   * Records how a background preparation ended (`contextfold/ai-sdk`, `backgroundPreparation`):
   * `{ fate, checkpointId, summarizerTokens, detail }`. A store that keeps AgentRun events writes
   * it as one (SQLite: kind `preparation_settled`, as the native runtime does); the others keep
   * nothing. Resolves once durable.
   */
  recordPreparation(settled) {
    return this.#serialized(() => this.#durably(() => this.persistPreparation(settled)));
  }

  /** Waits for pending writes, releases the storage and frees the log (idempotent). */
  close() {
    if (this.#closed) return this.#queue;
    this.#closed = true;
    const closing = this.#queue.then(() => this.closeStorage()).finally(() => this.#log.free());
    this.#queue = closing;
    return closing;
  }

  /**
   * Every recorded checkpoint, in record order, as `contextfold checkpoints` lists them:
   * `{ eventId, recordedAtMs, checkpointId, schemaVersion, eventCount, turnCount,
   * estimatedTokens, previousCheckpointId, producedBy, current, retracted }` (`retracted`: why it
   * was taken back, or null), or `{ eventId, error: { code, message } }` for a record that is
   * not a checkpoint.
   */
  checkpoints() {
    return listCheckpoints(this.sessionId, this.#records, this.#retractions, this.#checkpointEventId);
  }

  /** Every retraction recorded, in record order (a copy). */
  get retractions() {
    return this.#retractions.slice();
  }

  /**
   * Checks what `contextfold verify` checks, over this store's log: every recorded checkpoint
   * against the events it claims to cover (count, boundary, turns, digest: the core's
   * `matchCheckpoint`), and the current checkpoint against the core's recovery over the records
   * and retractions. Resolves to `{ ok, events, checkpoints: [{ eventId, checkpointId, ok, code?,
   * detail?, retracted? }], retractions, projection: { ok, checkpointId, recoveredTip } }`;
   * nothing is written.
   */
  verify() {
    return this.#serialized(async () => verifyRecords(this.sessionId, this.#log.events(), this.#records, this.#retractions, this.#checkpoint));
  }

  /**
   * Takes a compaction back without touching history (`contextfold checkpoints --retract ID
   * --reason TEXT`): records a retraction of `checkpointId`, which takes back every checkpoint
   * built on it too, and makes the previous valid checkpoint (or none: the raw source) current.
   * Resolves to the new current checkpoint once the retraction is durable. Throws
   * `invalid_argument`, `checkpoint_not_found` or `checkpoint_already_retracted` (nothing
   * written).
   */
  retractCheckpoint(checkpointId, reason) {
    return this.#serialized(async () => {
      const retraction = retractionFor(this.sessionId, this.#records, this.#retractions, checkpointId, reason);
      await this.#durably(() => this.persistRetraction(retraction));
      this.#retractions.push(retraction);
      const recovery = recoverCheckpoint(this.sessionId, this.#records, this.#retractions);
      this.#checkpoint = recovery.checkpoint;
      this.#checkpointEventId = recovery.eventId;
      return this.#checkpoint;
    });
  }

  /** The id of the recorded checkpoint event the current checkpoint came from, or null. */
  get checkpointEventId() {
    return this.#checkpointEventId;
  }

  /** Subclass: durably write `events` (which follow the first `before` stored events). */
  async persistEvents(_events, _before) {
    throw new ContextfoldError('not_implemented', 'persistEvents');
  }

  /** Subclass: durably write one recorded checkpoint event. */
  async persistCheckpoint(_record) {
    throw new ContextfoldError('not_implemented', 'persistCheckpoint');
  }

  /** Subclass: durably write the circuit. */
  async persistCircuit(_circuit) {
    throw new ContextfoldError('not_implemented', 'persistCircuit');
  }

  /**
   * Subclass: durably write one retraction `{ eventId, sessionId, recordedAtMs, checkpointId,
   * reason }` (a store sharing the native schema moves its projection row in the same write).
   */
  async persistRetraction(_retraction) {
    throw new ContextfoldError('not_implemented', 'persistRetraction');
  }

  /** Subclass: durably write one usage fact record `{ eventId, sessionId, recordedAtMs, payload }`. */
  async persistUsage(_record) {
    throw new ContextfoldError('not_implemented', 'persistUsage');
  }

  /** Subclass, optional: durably write one preparation's end (default: not kept). */
  async persistPreparation(_settled) {}

  /** Subclass: release files, locks and connections. */
  async closeStorage() {}

  /** Runs `fn` after every earlier call of this store, one at a time. */
  #serialized(fn) {
    const run = this.#queue.then(() => {
      if (this.#closed) throw new ContextfoldError('store_closed', 'the store has been closed');
      if (this.#broken) throw this.#broken;
      return fn();
    });
    this.#queue = run.catch(() => {});
    return run;
  }

  /**
   * Runs a subclass write. A failed write breaks the store (`store_write_failed`), except a
   * refusal the storage made before writing anything: a compare-and-swap the storage itself
   * checked (`conflict: true`, e.g. another writer's checkpoint in a shared SQLite file) is
   * thrown as it is and the store stays usable.
   */
  async #durably(write) {
    try {
      await write();
    } catch (cause) {
      if (cause?.conflict === true) throw cause;
      this.#broken = new ContextfoldError('store_write_failed', `a write failed; reopen the store: ${cause?.message ?? cause}`, { cause });
      throw this.#broken;
    }
  }
}
