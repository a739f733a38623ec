// A session in a SQLite ledger through `node:sqlite` (Node 22.5 and later), in the native host's
// schema (./sqlite-schema.js) with the host's rows (the core's `LedgerRow::of`, through
// `ledgerRows`): `contextfold verify --deep` checks a ledger written here, and a ledger written by
// `contextfold` opens here.
//
// Events go to `runtime_events`, checkpoints to `agent_run_events` (kind
// `history_compact_checkpoint_recorded`) with the `checkpoint_projection` row in the same
// transaction, the circuit into a `compaction_outcome_recorded` event under `circuit` (where the
// host keeps it), a background preparation's end into a `preparation_settled` event, a usage
// fact into a `model_usage_recorded` event with the fact as payload (the host's). Every
// write is one BEGIN IMMEDIATE transaction in WAL mode with `synchronous=FULL`: durable when it
// resolves. Inside it the store checks the file, not only its memory: an event append expects
// the session's last `seq` to be the one it last saw, and a checkpoint append runs the
// compare-and-swap against the file's tip (projection row, else the core's recovery), so another
// writer (a `contextfold` run on the same file) can never be overwritten. One JS writer per
// session holds `<path>-<session>.lock` (./lock-file.js).
import { randomUUID } from 'node:crypto';
import { ContextfoldError, checkSuccessor, ledgerRows, ledgerTokensEstimator, parseCheckpoint, recoverCheckpoint } from 'contextfold';
import { CHECKPOINT_RECORDED, SessionStore, USAGE_RECORDED, requireSessionId } from './session-store.js';
import { CHECKPOINT_RETRACTED } from './inspection.js';
import { acquireLock } from './lock-file.js';
import { BUSY_TIMEOUT_MS, PAGE_SIZE, TOKENS_ESTIMATOR_KEY, migrate, refuseNewer, rollback, userVersion } from './sqlite-schema.js';

/** The AgentRun kind the host writes a compaction's outcome (and circuit) under. */
export const COMPACTION_OUTCOME = 'compaction_outcome_recorded';

/** The AgentRun kind the host writes a background preparation's end under. */
export const PREPARATION_SETTLED = 'preparation_settled';

/** `node:sqlite`'s `DatabaseSync`, or `store_unsupported_runtime` where it does not exist. */
async function databaseSync() {
  try {
    return (await import('node:sqlite')).DatabaseSync;
  } catch (cause) {
    throw new ContextfoldError(
      'store_unsupported_runtime',
      `node:sqlite is not available in Node ${process.versions.node}: SqliteStore needs Node 22.5 or later (22.5-22.12 with --experimental-sqlite)`,
      { cause },
    );
  }
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

/** A session in a SQLite ledger in the native host's schema (module comment). */
export class SqliteStore extends SessionStore {
  #db;
  #release;
  /** The session's last `seq` in the file as this store last saw it (null: no event). */
  #lastSeq = null;
  /** The run of the last event (an AgentRun event's `run_id`). */
  #lastRunId = '';

  /** The ledger file. */
  path;

  /** Use {@link SqliteStore.open}. */
  constructor(sessionId, path, db, release) {
    super(sessionId);
    this.path = path;
    this.#db = db;
    this.#release = release;
  }

  /**
   * Opens (creating and migrating it if needed) the ledger at `path` for `sessionId`. Throws
   * `store_unsupported_runtime` without `node:sqlite`, `store_schema_too_new` for a file of a
   * newer schema (untouched), `store_locked` while another JS writer has the session open, and
   * `store_corrupt` when a row disagrees with its key columns or the events are not a valid log.
   */
  static async open({ path, sessionId } = {}) {
    const DatabaseSync = await databaseSync();
    requireSessionId(sessionId);
    if (typeof path !== 'string' || path === '') {
      throw new ContextfoldError('invalid_argument', 'SqliteStore.open needs a path');
    }
    const release = await acquireLock(`${path}-${encodeURIComponent(sessionId)}.lock`);
    let db;
    try {
      db = new DatabaseSync(path);
      db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
      const found = userVersion(db);
      refuseNewer(found);
      // A new file gets the host's 16 KiB pages (only an empty file can change it, before WAL).
      if (found === 0) db.exec(`PRAGMA page_size = ${PAGE_SIZE}`);
      const mode = db.prepare('PRAGMA journal_mode = WAL').get().journal_mode;
      if (String(mode).toLowerCase() !== 'wal') throw new ContextfoldError('store_write_failed', `journal_mode is ${mode}, not wal`);
      db.exec('PRAGMA synchronous = FULL');
      migrate(db);
      const estimator = db.prepare('SELECT value FROM ledger_meta WHERE key = ?').get(TOKENS_ESTIMATOR_KEY)?.value;
      if (estimator !== undefined && estimator !== ledgerTokensEstimator()) {
        throw new ContextfoldError('store_estimator_mismatch', `the ledger's tokens are by ${estimator}; this package writes ${ledgerTokensEstimator()}`);
      }
      const store = new SqliteStore(sessionId, path, db, release);
      store.#load();
      return store;
    } catch (error) {
      db?.close();
      await release();
      throw error;
    }
  }

  /** Reads the session's rows in `seq` order, its recorded checkpoints and its last circuit. */
  #load() {
    const rows = this.#db
      .prepare('SELECT seq, runtime_event_id, event_json FROM runtime_events WHERE session_id = ? ORDER BY seq')
      .all(this.sessionId);
    let last = null;
    for (const row of rows) {
      try {
        last = JSON.parse(row.event_json);
      } catch (cause) {
        throw corrupt(`the row at seq ${row.seq} is not JSON`, cause);
      }
      if (last?.sessionId !== this.sessionId || last.seq !== Number(row.seq) || last.runtimeEventId !== row.runtime_event_id) {
        throw corrupt(`the row at seq ${row.seq} disagrees with its key columns`);
      }
    }
    const outcome = this.#db
      .prepare('SELECT payload_json FROM agent_run_events WHERE session_id = ? AND kind = ? ORDER BY ordinal DESC LIMIT 1')
      .get(this.sessionId, COMPACTION_OUTCOME);
    let circuit = null;
    if (outcome) {
      try {
        circuit = JSON.parse(outcome.payload_json).circuit ?? null;
      } catch (cause) {
        throw corrupt('the latest compaction outcome is not JSON', cause);
      }
    }
    const usage = this.#db
      .prepare('SELECT event_id, payload_json FROM agent_run_events WHERE session_id = ? AND kind = ? ORDER BY ordinal')
      .all(this.sessionId, USAGE_RECORDED)
      .map((row) => {
        try {
          return JSON.parse(row.payload_json);
        } catch (cause) {
          throw corrupt(`usage fact ${row.event_id} is not JSON`, cause);
        }
      });
    try {
      this.restore({ events: rows.map((row) => row.event_json.replace(/\n/g, ' ')).join('\n'), records: this.#records(), retractions: this.#retractions(), circuit, usage });
    } catch (cause) {
      throw corrupt(`the stored events are not a valid log: ${cause?.message ?? cause}`, cause);
    }
    this.#lastSeq = last === null ? null : last.seq;
    this.#lastRunId = last?.runId ?? '';
  }

  /** The session's recorded checkpoint events, in record order. */
  #records() {
    return this.#db
      .prepare('SELECT event_id, recorded_at_ms, payload_json FROM agent_run_events WHERE session_id = ? AND kind = ? ORDER BY ordinal')
      .all(this.sessionId, CHECKPOINT_RECORDED)
      .map((row) => ({ eventId: row.event_id, sessionId: this.sessionId, recordedAtMs: Number(row.recorded_at_ms), payload: payloadOf(row.payload_json) }));
  }

  /** The session's retractions (`checkpoint_retracted` events, the host's), in record order. */
  #retractions() {
    return this.#db
      .prepare('SELECT event_id, recorded_at_ms, payload_json FROM agent_run_events WHERE session_id = ? AND kind = ? ORDER BY ordinal')
      .all(this.sessionId, CHECKPOINT_RETRACTED)
      .map((row) => {
        const payload = payloadOf(row.payload_json);
        return { eventId: row.event_id, sessionId: this.sessionId, recordedAtMs: Number(row.recorded_at_ms), checkpointId: payload?.checkpointId, reason: payload?.reason };
      });
  }

  /** Runs `write` in one BEGIN IMMEDIATE transaction; rolls back when it throws. */
  #transaction(write) {
    this.#db.exec('BEGIN IMMEDIATE');
    try {
      write();
      this.#db.exec('COMMIT');
    } catch (error) {
      rollback(this.#db);
      throw error;
    }
  }

  /**
   * The file's current checkpoint, read inside a transaction as the host reads it: the
   * projection row when it is valid (its JSON parses, agrees with its columns and names an
   * AgentRun event recording it), else the core's recovery over the recorded checkpoints.
   */
  #storedTip() {
    const row = this.#db
      .prepare('SELECT checkpoint_id, event_count, agent_run_event_id, checkpoint_json FROM checkpoint_projection WHERE session_id = ?')
      .get(this.sessionId);
    if (row) {
      let checkpoint = null;
      try {
        checkpoint = parseCheckpoint(JSON.parse(row.checkpoint_json));
      } catch {
        // a damaged row: recover from the AgentRun ledger
      }
      if (checkpoint?.sessionId === this.sessionId && checkpoint.checkpointId === row.checkpoint_id && checkpoint.coverage.eventCount === Number(row.event_count)) {
        const recorded = this.#db
          .prepare("SELECT json_extract(payload_json, '$.checkpointId') AS id FROM agent_run_events WHERE event_id = ? AND session_id = ? AND kind = ?")
          .get(row.agent_run_event_id, this.sessionId, CHECKPOINT_RECORDED);
        if (recorded?.id === checkpoint.checkpointId) return checkpoint;
      }
    }
    return recoverCheckpoint(this.sessionId, this.#records(), this.#retractions()).checkpoint;
  }

  async persistEvents(events, before) {
    const rows = ledgerRows(events);
    this.#transaction(() => {
      const found = this.#db.prepare('SELECT max(seq) AS seq FROM runtime_events WHERE session_id = ?').get(this.sessionId).seq;
      if ((found ?? null) !== this.#lastSeq) {
        throw new ContextfoldError('store_conflict', `another writer appended to session ${this.sessionId} (last seq ${found}, expected ${this.#lastSeq}; ${before} events held); reopen the store`);
      }
      const insert = this.#db.prepare(
        'INSERT INTO runtime_events (session_id, seq, runtime_event_id, event_json, canonical, turn_id, run_id, live_head, tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
      );
      for (const [index, event] of events.entries()) {
        const row = rows[index];
        insert.run(this.sessionId, BigInt(event.seq), event.runtimeEventId, row.json, row.canonical ? 1 : 0, event.turnId, event.runId, row.liveHead ? 1 : 0, BigInt(row.tokens));
      }
    });
    this.#lastSeq = Number(events.at(-1).seq);
    this.#lastRunId = events.at(-1).runId;
  }

  async persistCheckpoint(record) {
    const checkpoint = parseCheckpoint(record.payload);
    this.#transaction(() => {
      try {
        checkSuccessor(this.#storedTip(), checkpoint);
      } catch (error) {
        error.conflict = true;
        throw error;
      }
      this.#db
        .prepare('INSERT INTO agent_run_events (event_id, session_id, run_id, kind, recorded_at_ms, payload_json) VALUES (?, ?, ?, ?, ?, ?)')
        .run(record.eventId, this.sessionId, this.#lastRunId, CHECKPOINT_RECORDED, BigInt(record.recordedAtMs), JSON.stringify(checkpoint));
      this.#db
        .prepare(
          'INSERT INTO checkpoint_projection (session_id, checkpoint_id, event_count, agent_run_event_id, checkpoint_json) VALUES (?, ?, ?, ?, ?) ' +
            'ON CONFLICT (session_id) DO UPDATE SET checkpoint_id = excluded.checkpoint_id, event_count = excluded.event_count, ' +
            'agent_run_event_id = excluded.agent_run_event_id, checkpoint_json = excluded.checkpoint_json',
        )
        .run(this.sessionId, checkpoint.checkpointId, BigInt(checkpoint.coverage.eventCount), record.eventId, JSON.stringify(checkpoint));
    });
  }

  /**
   * The retraction event and the projection row moved to what recovery then selects, in one
   * transaction, as the host's `Store::retract_checkpoint` writes them.
   */
  async persistRetraction({ eventId, recordedAtMs, checkpointId, reason }) {
    this.#transaction(() => {
      this.#db
        .prepare('INSERT INTO agent_run_events (event_id, session_id, run_id, kind, recorded_at_ms, payload_json) VALUES (?, ?, ?, ?, ?, ?)')
        .run(eventId, this.sessionId, 'retraction', CHECKPOINT_RETRACTED, BigInt(recordedAtMs), JSON.stringify({ checkpointId, reason }));
      const recovery = recoverCheckpoint(this.sessionId, this.#records(), this.#retractions());
      this.#db.prepare('DELETE FROM checkpoint_projection WHERE session_id = ?').run(this.sessionId);
      if (recovery.checkpoint) {
        const tip = recovery.checkpoint;
        this.#db
          .prepare('INSERT INTO checkpoint_projection (session_id, checkpoint_id, event_count, agent_run_event_id, checkpoint_json) VALUES (?, ?, ?, ?, ?)')
          .run(this.sessionId, tip.checkpointId, BigInt(tip.coverage.eventCount), recovery.eventId, JSON.stringify(tip));
      }
    });
  }

  async persistCircuit(circuit) {
    this.#db
      .prepare('INSERT INTO agent_run_events (event_id, session_id, run_id, kind, recorded_at_ms, payload_json) VALUES (?, ?, ?, ?, ?, ?)')
      .run(`${COMPACTION_OUTCOME}:${randomUUID()}`, this.sessionId, this.#lastRunId, COMPACTION_OUTCOME, BigInt(Date.now()), JSON.stringify({ circuit }));
  }

  async persistUsage(record) {
    this.#db
      .prepare('INSERT INTO agent_run_events (event_id, session_id, run_id, kind, recorded_at_ms, payload_json) VALUES (?, ?, ?, ?, ?, ?)')
      .run(record.eventId, this.sessionId, this.#lastRunId || 'usage', USAGE_RECORDED, BigInt(record.recordedAtMs), JSON.stringify(record.payload));
  }

  async persistPreparation({ fate, checkpointId = null, summarizerTokens = 0, detail = null }) {
    const now = Date.now();
    this.#db
      .prepare('INSERT INTO agent_run_events (event_id, session_id, run_id, kind, recorded_at_ms, payload_json) VALUES (?, ?, ?, ?, ?, ?)')
      .run(`ar-prepare-${now}-${randomUUID()}-${fate}`, this.sessionId, this.#lastRunId || 'prepare', PREPARATION_SETTLED, BigInt(now), JSON.stringify({ fate, checkpointId, summarizerTokens, detail }));
  }

  async closeStorage() {
    this.#db.close();
    await this.#release();
  }
}
