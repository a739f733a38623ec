// Types of `contextfold/stores/postgres` (Node, with the `pg` package installed beside it).
import type { SessionStore } from './memory.js';

/** The AgentRun kind the circuit is recorded under (as the native host records it). */
export const COMPACTION_OUTCOME: 'compaction_outcome_recorded';
/** The AgentRun kind a background preparation's end is recorded under (`recordPreparation`). */
export const PREPARATION_SETTLED: 'preparation_settled';
/** The SQLSTATE the ledger's append-only triggers raise (`storage_append_only`). */
export const APPEND_ONLY_SQLSTATE: 'CFA01';
/** The PostgreSQL ledger schema version this package writes (the native host's). */
export const PG_SCHEMA_VERSION: number;
/** Connections of the pool a store opens from a connection string. */
export const DEFAULT_POOL_SIZE: number;

/** What the store uses of a `pg.Pool` (any `pg` 8 pool is one). */
export interface PgPoolLike {
  connect(): Promise<{
    query(text: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
    release(error?: unknown): void;
  }>;
  end(): Promise<void>;
}

/**
 * Codes of a PostgreSQL failure, as the native host's `PgError` gives them. A failed write
 * rejects with `store_write_failed` whose `cause` is the typed error (the store must be reopened);
 * a failed open rejects with the typed error itself.
 */
export type PostgresErrorCode =
  | 'storage_config_invalid'
  | 'storage_unavailable'
  | 'storage_connection_lost'
  | 'storage_serialization_failure'
  | 'storage_disk_full'
  | 'storage_statement_timeout'
  | 'storage_append_only'
  | 'storage_permission_denied'
  | 'storage_postgres';

/** The extra fields of a ContextfoldError with a {@link PostgresErrorCode}. */
export interface PostgresErrorFields {
  readonly code: PostgresErrorCode;
  /** Whether the same call may succeed when repeated (a new connection, a new transaction). */
  readonly retryable: boolean;
  /** The SQLSTATE the server reported, or null. */
  readonly sqlstate: string | null;
  /** What the store was doing. */
  readonly operation: string;
}

/**
 * A session in a PostgreSQL ledger in the native host's schema and rows, which many writers
 * share: every write is one transaction under the session's advisory lock, checked against the
 * database inside it. Another writer's append first is `store_conflict` and a lost checkpoint
 * compare-and-swap `successor_conflict` (both `conflict: true`, nothing written, the store
 * usable): call {@link PostgresStore.refresh} and retry.
 */
export interface PostgresStore extends SessionStore {
  /** The server, printable (`postgres://user:***@host:port/db`), or null for a given pool. */
  readonly target: string | null;
  /**
   * Reads what other writers stored since this store last read or wrote into `log`,
   * `checkpoint` and `circuit`; resolves to the number of events added.
   */
  refresh(): Promise<number>;
  recordPreparation(settled: { fate: 'used' | 'superseded' | 'wasted' | 'failed'; checkpointId: string | null; summarizerTokens: number; detail: string | null }): Promise<void>;
}

/** The options of {@link PostgresStore.open}: a connection string or a pool, not both. */
export type PostgresStoreOptions = { sessionId: string; pg?: unknown } & (
  | { connectionString: string; pool?: undefined; poolSize?: number }
  | { pool: PgPoolLike; connectionString?: undefined }
);

/** Opens a {@link PostgresStore}. */
export declare const PostgresStore: {
  /**
   * Opens `sessionId` in the database of `connectionString` (the store's own pool, ended at
   * `close()`) or of `pool` (the caller's, never ended by the store), creating and migrating
   * the schema if needed. Throws `store_unsupported_runtime` without `pg`,
   * `storage_config_invalid`, `storage_unavailable`, `store_schema_too_new` (the database is
   * left untouched), `store_estimator_mismatch`, and `store_corrupt`.
   */
  open(options: PostgresStoreOptions): Promise<PostgresStore>;
  /** The schema version this package writes. */
  readonly schemaVersion: number;
};
