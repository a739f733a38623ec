// Types of `contextfold/stores/indexeddb` (browsers).
import type { EventLog, HistoryCompactCheckpoint, JsonValue, RuntimeEvent, Diagnostic } from '../index.js';
import type { SessionStore } from './memory.js';

/**
 * A session in the IndexedDB database `name` (object stores `events`, key [sessionId, seq], and
 * `records`): every append is one readwrite transaction with durability 'strict' and resolves
 * once it commits; one writer per session, by the Web Lock `contextfold:<name>:<sessionId>`.
 */
export class IndexedDbStore implements SessionStore {
  /**
   * Opens `sessionId` in the database `name` (created if needed). Throws `store_locked` while
   * another tab or store has the session open, `store_unsupported_runtime` without IndexedDB,
   * and `store_corrupt` when the stored events are not a valid log.
   */
  static open(options: { name: string; sessionId: string }): Promise<IndexedDbStore>;
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
