// A session in a PostgreSQL ledger through the `pg` package (Node), in the native host's
// PostgreSQL schema (./postgres-schema.js, the host's DDL verbatim) with the host's rows (the
// core's `LedgerRow::of`, through `ledgerRows`): a Node agent and the native host share one
// database, session by session.
//
// Events go to `runtime_events`, checkpoints to `agent_run_events` (kind
// `history_compact_checkpoint_recorded`) with the `checkpoint_projection` row in the same
// transaction, the circuit into a `compaction_outcome_recorded` event under `circuit`, a
// background preparation's end into a `preparation_settled` event, a usage fact into a
// `model_usage_recorded` event (the fact as payload) — as the SQLite store and the
// host write them. Every write is one transaction that first takes the session's advisory lock
// (`pg_advisory_xact_lock(hashtextextended(session_id, 0))`, the host's key), so writers of one
// session — this store in many processes, and the native host — take turns, and the checks run
// against the database inside the lock: an event append expects the session's last `seq` to be
// the one this store last saw, and a checkpoint append runs the compare-and-swap against the
// database's tip (projection row, else the core's recovery). A writer that lost either race gets
// a typed conflict (`conflict: true`), nothing is written, and the store stays usable:
// `refresh()` reads what the others wrote, then the caller retries.
import { randomUUID } from 'node:crypto';
import { ContextfoldError, checkSuccessor, ledgerRows, parseCheckpoint, recoverCheckpoint } from 'contextfold';
import { CHECKPOINT_RECORDED, SessionStore, USAGE_RECORDED, requireSessionId } from './session-store.js';
import { CHECKPOINT_RETRACTED } from './inspection.js';
import { loadPg, lockSession, query, redactUrl, transaction } from './postgres-client.js';
import { migrate, PG_SCHEMA_VERSION } from './postgres-schema.js';

export { APPEND_ONLY_SQLSTATE } from './postgres-client.js';
export { PG_SCHEMA_VERSION } from './postgres-schema.js';

/** The AgentRun kind the host writes a compaction's outcome (and circuit) under. */
export const COMPACTION_OUTCOME = 'compaction_outcome_recorded';

/** The AgentRun kind the host writes a background preparation's end under. */
export const PREPARATION_SETTLED = 'preparation_settled';

/** Connections of a pool the store opens itself from a connection string. */
export const DEFAULT_POOL_SIZE = 4;

/** Rows per INSERT statement of an event batch (9 parameters each; PostgreSQL allows 65535). */
const INSERT_CHUNK = 1000;

const INSERT_AGENT_RUN =
  'INSERT INTO agent_run_events (event_id, session_id, run_id, kind, recorded_at_ms, payload_json) VALUES ($1, $2, $3, $4, $5, $6)';

/** A refusal made before anything was written: the store stays usable. */
function conflict(code, detail, cause) {
  const error = new ContextfoldError(code, detail, cause ? { cause } : undefined);
  error.conflict = true;
  return error;
}

function corrupt(detail, cause) {
  return new ContextfoldError('store_corrupt', detail, cause ? { cause } : undefined);
}

/** Parses a payload as the host reads it: JSON, else the text itself (recovery skips it). */
function payloadOf(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Whether `error` is the server's unique violation (SQLSTATE 23505). */
const isUniqueViolation = (error) => error?.sqlstate === '23505';

/** A session in a PostgreSQL ledger in the native host's schema (module comment). */
export class PostgresStore extends SessionStore {
  #pool;
  #ownsPool;
  #target;
  /** The session's last `seq` in the database as this store last saw it (null: no event). */
  #lastSeq = null;
  /** The run of the last event (an AgentRun event's `run_id`). */
  #lastRunId = '';

  /** Use {@link PostgresStore.open}. */
  constructor(sessionId, pool, ownsPool, target) {
    super(sessionId);
    this.#pool = pool;
    this.#ownsPool = ownsPool;
    this.#target = target;
  }

  /** The server it writes to, printable (`postgres://user:***@host:port/db`), or null for a given pool. */
  get target() {
    return this.#target;
  }

  /**
   * Opens `sessionId` in the database of `connectionString` (a `postgres://` URL; the store
   * opens a pool of `poolSize` connections and ends it at `close()`) or of `pool` (a `pg.Pool`
   * the caller owns and ends), creating and migrating the schema if needed. `pg`: the `pg`
   * module, when `import('pg')` cannot find it. Throws `store_unsupported_runtime` without
   * `pg`, `storage_config_invalid` for a URL that does not parse, `storage_unavailable` when no
   * connection can be had, `store_schema_too_new` for a database of a newer schema (untouched),
   * `store_estimator_mismatch`, and `store_corrupt` when a row disagrees with its key columns or
   * the events are not a valid log.
   */
  static async open({ connectionString, pool, sessionId, pg, poolSize = DEFAULT_POOL_SIZE } = {}) {
    requireSessionId(sessionId);
    if ((connectionString === undefined) === (pool === undefined)) {
      throw new ContextfoldError('invalid_argument', 'PostgresStore.open needs either a connectionString or a pool');
    }
    let target = null;
    const ownsPool = pool === undefined;
    if (ownsPool) {
      if (typeof connectionString !== 'string') throw new ContextfoldError('invalid_argument', 'connectionString must be a string');
      target = redactUrl(connectionString);
      const Pg = await loadPg(pg);
      pool = new Pg.Pool({ connectionString, max: poolSize });
      // An idle connection that breaks is dropped from the pool; the next call opens another.
      pool.on('error', () => {});
    } else if (typeof pool?.connect !== 'function') {
      throw new ContextfoldError('invalid_argument', 'pool must be a pg.Pool');
    }
    const store = new PostgresStore(sessionId, pool, ownsPool, target);
    try {
      await migrate(pool, target);
      const read = await store.#readAfter(null);
      try {
        store.restore(read);
      } catch (cause) {
        throw cause?.code === 'store_corrupt' ? cause : corrupt(`the stored events are not a valid log: ${cause?.message ?? cause}`, cause);
      }
    } catch (error) {
      if (ownsPool) await pool.end().catch(() => {});
      throw error;
    }
    return store;
  }

  /** The schema version this package writes. */
  static get schemaVersion() {
    return PG_SCHEMA_VERSION;
  }

  /**
   * Reads, in one snapshot, the session's events after `after` (checked against their key
   * columns), its recorded checkpoints and its last circuit, as `restore` takes them; moves
   * this store's view of the last `seq` to the last event read.
   */
  async #readAfter(after) {
    const read = await transaction(this.#pool, 'reading the session', async (client) => {
      const events = await query(
        client,
        'reading events',
        'SELECT seq, runtime_event_id, event_json FROM runtime_events WHERE session_id = $1 AND seq > $2 ORDER BY seq',
        [this.sessionId, after ?? -1],
      );
      const outcome = await query(
        client,
        'reading the latest compaction outcome',
        'SELECT payload_json FROM agent_run_events WHERE session_id = $1 AND kind = $2 ORDER BY ordinal DESC LIMIT 1',
        [this.sessionId, COMPACTION_OUTCOME],
      );
      const usage = await query(
        client,
        'reading the usage facts',
        'SELECT event_id, payload_json FROM agent_run_events WHERE session_id = $1 AND kind = $2 ORDER BY ordinal',
        [this.sessionId, USAGE_RECORDED],
      );
      const records = await this.#records(client);
      return { events: events.rows, records, retractions: await this.#retractions(client), outcome: outcome.rows[0], usage: usage.rows };
    }, { target: this.#target, readOnly: true });
    let last = null;
    for (const row of read.events) {
      try {
        last = JSON.parse(row.event_json);
      } catch (cause) {
        throw corrupt(`the row at seq ${row.seq} is not JSON`, cause);
      }
      if (last?.sessionId !== this.sessionId || last.seq !== Number(row.seq) || last.runtimeEventId !== row.runtime_event_id) {
        throw corrupt(`the row at seq ${row.seq} disagrees with its key columns`);
      }
    }
    let circuit = null;
    if (read.outcome) {
      try {
        circuit = JSON.parse(read.outcome.payload_json).circuit ?? null;
      } catch (cause) {
        throw corrupt('the latest compaction outcome is not JSON', cause);
      }
    }
    if (last !== null) {
      this.#lastSeq = last.seq;
      this.#lastRunId = last.runId ?? '';
    }
    const usage = read.usage.map((row) => {
      try {
        return JSON.parse(row.payload_json);
      } catch (cause) {
        throw corrupt(`usage fact ${row.event_id} is not JSON`, cause);
      }
    });
    const events = read.events.map((row) => row.event_json.replace(/\n/g, ' ')).join('\n');
    return { events, records: read.records, retractions: read.retractions, circuit, usage };
  }

  /**
   * Reads what other writers stored since this store last read or wrote (their events, the
   * current checkpoint, the circuit) into `log`, `checkpoint` and `circuit`, after every earlier
   * call of this store. Call it after a `store_conflict` or `successor_conflict`, then retry.
   * Resolves to the number of events added.
   */
  refresh() {
    return this.catchUp(() => this.#readAfter(this.#lastSeq));
  }

  /** The session's recorded checkpoint events, in record order. */
  async #records(client) {
    const result = await query(
      client,
      'reading the AgentRun ledger',
      'SELECT event_id, recorded_at_ms, payload_json FROM agent_run_events WHERE session_id = $1 AND kind = $2 ORDER BY ordinal',
      [this.sessionId, CHECKPOINT_RECORDED],
    );
    return result.rows.map((row) => ({ eventId: row.event_id, sessionId: this.sessionId, recordedAtMs: Number(row.recorded_at_ms), payload: payloadOf(row.payload_json) }));
  }

  /** The session's retractions (`checkpoint_retracted` events, the host's), in record order. */
  async #retractions(client) {
    const result = await query(
      client,
      'reading the retractions',
      'SELECT event_id, recorded_at_ms, payload_json FROM agent_run_events WHERE session_id = $1 AND kind = $2 ORDER BY ordinal',
      [this.sessionId, CHECKPOINT_RETRACTED],
    );
    return result.rows.map((row) => {
      const payload = payloadOf(row.payload_json);
      return { eventId: row.event_id, sessionId: this.sessionId, recordedAtMs: Number(row.recorded_at_ms), checkpointId: payload?.checkpointId, reason: payload?.reason };
    });
  }

  /**
   * The database's current checkpoint, read under the session's lock as the host reads it: the
   * projection row when it is valid (its JSON parses, agrees with its columns and names an
   * AgentRun event recording it), else the core's recovery over the recorded checkpoints.
   */
  async #storedTip(client) {
    const found = await query(
      client,
      'reading the projection row',
      'SELECT p.checkpoint_id, p.event_count, p.checkpoint_json, a.payload_json FROM checkpoint_projection p ' +
        'LEFT JOIN agent_run_events a ON a.event_id = p.agent_run_event_id AND a.session_id = p.session_id AND a.kind = $2 ' +
        'WHERE p.session_id = $1',
      [this.sessionId, CHECKPOINT_RECORDED],
    );
    const row = found.rows[0];
    if (row) {
      let checkpoint = null;
      try {
        checkpoint = parseCheckpoint(JSON.parse(row.checkpoint_json));
      } catch {
        // a damaged row: recover from the AgentRun ledger
      }
      const recorded = row.payload_json === null ? null : payloadOf(row.payload_json);
      if (
        checkpoint?.sessionId === this.sessionId &&
        checkpoint.checkpointId === row.checkpoint_id &&
        checkpoint.coverage.eventCount === Number(row.event_count) &&
        recorded?.checkpointId === checkpoint.checkpointId
      ) {
        return checkpoint;
      }
    }
    return recoverCheckpoint(this.sessionId, await this.#records(client), await this.#retractions(client)).checkpoint;
  }

  async persistEvents(events, before) {
    const rows = ledgerRows(events);
    await transaction(this.#pool, 'appending events', async (client) => {
      await lockSession(client, this.sessionId);
      const found = await query(client, 'reading the last seq', 'SELECT max(seq) AS seq FROM runtime_events WHERE session_id = $1', [this.sessionId]);
      const last = found.rows[0].seq === null ? null : Number(found.rows[0].seq);
      if (last !== this.#lastSeq) {
        throw conflict('store_conflict', `another writer appended to session ${this.sessionId} (last seq ${last}, this store saw ${this.#lastSeq}; ${before} events held): refresh() and retry`);
      }
      for (let start = 0; start < events.length; start += INSERT_CHUNK) {
        const values = [];
        const tuples = [];
        for (let index = start; index < Math.min(events.length, start + INSERT_CHUNK); index += 1) {
          const [event, row] = [events[index], rows[index]];
          const at = values.length;
          tuples.push(`(${Array.from({ length: 9 }, (_, k) => `$${at + k + 1}`).join(', ')})`);
          values.push(this.sessionId, event.seq, event.runtimeEventId, row.json, row.canonical, event.turnId, event.runId, row.liveHead, row.tokens);
        }
        try {
          await query(
            client,
            'inserting events',
            `INSERT INTO runtime_events (session_id, seq, runtime_event_id, event_json, canonical, turn_id, run_id, live_head, tokens) VALUES ${tuples.join(', ')}`,
            values,
          );
        } catch (error) {
          // Only a writer that does not take the session's lock can get here.
          if (isUniqueViolation(error)) throw conflict('store_conflict', `another writer stored a seq or event id of this batch: ${error.message}`, error);
          throw error;
        }
      }
    }, { target: this.#target });
    this.#lastSeq = Number(events.at(-1).seq);
    this.#lastRunId = events.at(-1).runId;
  }

  async persistCheckpoint(record) {
    const checkpoint = parseCheckpoint(record.payload);
    await transaction(this.#pool, 'appending a checkpoint', async (client) => {
      await lockSession(client, this.sessionId);
      try {
        checkSuccessor(await this.#storedTip(client), checkpoint);
      } catch (error) {
        if (error instanceof ContextfoldError && error.code.startsWith('storage_')) throw error;
        error.conflict = true;
        throw error;
      }
      const json = JSON.stringify(checkpoint);
      try {
        await query(client, 'inserting the checkpoint event', INSERT_AGENT_RUN, [record.eventId, this.sessionId, this.#lastRunId, CHECKPOINT_RECORDED, record.recordedAtMs, json]);
      } catch (error) {
        if (isUniqueViolation(error)) throw conflict('successor_conflict', `checkpoint event ${record.eventId} is already recorded`, error);
        throw error;
      }
      await query(
        client,
        'writing the projection row',
        'INSERT INTO checkpoint_projection (session_id, checkpoint_id, event_count, agent_run_event_id, checkpoint_json) VALUES ($1, $2, $3, $4, $5) ' +
          'ON CONFLICT (session_id) DO UPDATE SET checkpoint_id = excluded.checkpoint_id, event_count = excluded.event_count, ' +
          'agent_run_event_id = excluded.agent_run_event_id, checkpoint_json = excluded.checkpoint_json',
        [this.sessionId, checkpoint.checkpointId, checkpoint.coverage.eventCount, record.eventId, json],
      );
    }, { target: this.#target });
  }

  /**
   * The retraction event and the projection row moved to what recovery then selects, in one
   * transaction under the session's lock, as the host's `PgLedger::retract_checkpoint` writes them.
   */
  async persistRetraction({ eventId, recordedAtMs, checkpointId, reason }) {
    await transaction(this.#pool, 'retracting a checkpoint', async (client) => {
      await lockSession(client, this.sessionId);
      const payload = JSON.stringify({ checkpointId, reason });
      await query(client, 'inserting the retraction', INSERT_AGENT_RUN, [eventId, this.sessionId, 'retraction', CHECKPOINT_RETRACTED, recordedAtMs, payload]);
      const recovery = recoverCheckpoint(this.sessionId, await this.#records(client), await this.#retractions(client));
      await query(client, 'clearing the projection row', 'DELETE FROM checkpoint_projection WHERE session_id = $1', [this.sessionId]);
      if (recovery.checkpoint) {
        const tip = recovery.checkpoint;
        await query(
          client,
          'writing the projection row',
          'INSERT INTO checkpoint_projection (session_id, checkpoint_id, event_count, agent_run_event_id, checkpoint_json) VALUES ($1, $2, $3, $4, $5)',
          [this.sessionId, tip.checkpointId, tip.coverage.eventCount, recovery.eventId, JSON.stringify(tip)],
        );
      }
    }, { target: this.#target });
  }

  /** Inserts one AgentRun event under the session's lock, in its own transaction. */
  #appendAgentRun(operation, eventId, runId, kind, recordedAtMs, payload) {
    return transaction(this.#pool, operation, async (client) => {
      await lockSession(client, this.sessionId);
      await query(client, operation, INSERT_AGENT_RUN, [eventId, this.sessionId, runId, kind, recordedAtMs, JSON.stringify(payload)]);
    }, { target: this.#target });
  }

  async persistCircuit(circuit) {
    await this.#appendAgentRun('recording the circuit', `${COMPACTION_OUTCOME}:${randomUUID()}`, this.#lastRunId, COMPACTION_OUTCOME, Date.now(), { circuit });
  }

  async persistUsage(record) {
    await this.#appendAgentRun('recording a usage fact', record.eventId, this.#lastRunId || 'usage', USAGE_RECORDED, record.recordedAtMs, record.payload);
  }

  async persistPreparation({ fate, checkpointId = null, summarizerTokens = 0, detail = null }) {
    const now = Date.now();
    await this.#appendAgentRun('recording a preparation', `ar-prepare-${now}-${randomUUID()}-${fate}`, this.#lastRunId || 'prepare', PREPARATION_SETTLED, now, {
      fate,
      checkpointId,
      summarizerTokens,
      detail,
    });
  }

  async closeStorage() {
    if (this.#ownsPool) await this.#pool.end();
  }
}
