// Types of `contextfold/stores/indexeddb` (browsers).
import type { SessionStore } from './memory.js';

/**
 * A session in the IndexedDB database `name` (object stores `events`, key [sessionId, seq], and
 * `records`): every append is one readwrite transaction with durability 'strict' and resolves
 * once it commits; one writer per session, by the Web Lock `contextfold:<name>:<sessionId>`.
 */
export interface IndexedDbStore extends SessionStore {}
/** Opens a {@link IndexedDbStore}. */
export declare const IndexedDbStore: {
  /**
   * Opens `sessionId` in the database `name` (created if needed). Throws `store_locked` while
   * another tab or store has the session open, `store_unsupported_runtime` without IndexedDB,
   * and `store_corrupt` when the stored events are not a valid log.
   */
  open(options: { name: string; sessionId: string }): Promise<IndexedDbStore>;
};
