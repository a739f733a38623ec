// Types of `contextfold/stores/sqlite` (Node 22.5 and later: `node:sqlite`).
import type { EventLog, HistoryCompactCheckpoint, JsonValue, RuntimeEvent, Diagnostic } from '../index.js';
import type { SessionStore } from './memory.js';

/** The AgentRun kind the circuit is recorded under (as the native host records it). */
export const COMPACTION_OUTCOME: 'compaction_outcome_recorded';

/**
 * A session in a SQLite ledger in the native host's schema, so `contextfold verify --deep`
 * checks it and a ledger written by `contextfold` opens here. Every append is one BEGIN
 * IMMEDIATE transaction (WAL, `synchronous=FULL`), durable when it resolves; checkpoints are
 * compared and swapped against the file's tip inside that transaction.
 */
export class SqliteStore implements SessionStore {
  /**
   * Opens (creating and migrating it if needed) the ledger at `path` for `sessionId`. Throws
   * `store_unsupported_runtime` without `node:sqlite` (Node < 22.5), `store_schema_too_new`,
   * `store_locked` while another JS writer has the session open, `store_estimator_mismatch`,
   * and `store_corrupt` when a row disagrees with its keys or the events are not a valid log.
   */
  static open(options: { path: string; sessionId: string }): Promise<SqliteStore>;
  /** The ledger file. */
  readonly path: string;
  readonly sessionId: string;
  readonly log: EventLog;
  readonly checkpoint: HistoryCompactCheckpoint | null;
  readonly circuit: JsonValue | null;
  readonly recoveryDiagnostics: Diagnostic[];
  appendEvents(events: RuntimeEvent | RuntimeEvent[]): Promise<void>;
  appendCheckpoint(checkpoint: HistoryCompactCheckpoint): Promise<void>;
  recordCircuit(circuit: JsonValue): Promise<void>;
  close(): Promise<void>;
}
