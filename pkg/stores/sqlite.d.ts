// Types of `contextfold/stores/sqlite` (Node 22.5 and later: `node:sqlite`).
import type { SessionStore } from './memory.js';

/** The AgentRun kind the circuit is recorded under (as the native host records it). */
export const COMPACTION_OUTCOME: 'compaction_outcome_recorded';
/** The AgentRun kind a background preparation's end is recorded under (`recordPreparation`). */
export const PREPARATION_SETTLED: 'preparation_settled';

/**
 * A session in a SQLite ledger in the native host's schema, so `contextfold verify --deep`
 * checks it and a ledger written by `contextfold` opens here. Every append is one BEGIN
 * IMMEDIATE transaction (WAL, `synchronous=FULL`), durable when it resolves; checkpoints are
 * compared and swapped against the file's tip inside that transaction.
 */
export interface SqliteStore extends SessionStore {
  /** The ledger file. */
  readonly path: string;
}
/** Opens a {@link SqliteStore}. */
export declare const SqliteStore: {
  /**
   * Opens (creating and migrating it if needed) the ledger at `path` for `sessionId`. Throws
   * `store_unsupported_runtime` without `node:sqlite` (Node < 22.5), `store_schema_too_new`,
   * `store_locked` while another JS writer has the session open, `store_estimator_mismatch`,
   * and `store_corrupt` when a row disagrees with its keys or the events are not a valid log.
   */
  open(options: { path: string; sessionId: string }): Promise<SqliteStore>;
};
