// Types of `contextfold/stores/jsonl` (Node only).
import type { SessionStore } from './memory.js';

/** What an open repaired: a torn tail (an append a crash interrupted, never acknowledged). */
export interface StorageRepair {
  /** `torn_tail_truncated`. */
  code: 'torn_tail_truncated';
  /** The file that was cut back to its last committed line. */
  file: string;
  /** How many bytes were removed. */
  bytes: number;
}

/**
 * A session in JSON Lines files in a directory (`<session>.events.jsonl`, one RuntimeEvent per
 * line; `<session>.records.jsonl`, commits, checkpoints and circuits): every append is on disk
 * (`datasync`) before it resolves, an event batch is all or nothing, a torn tail is truncated at
 * open, and one process at a time may write a session (`<session>.lock`).
 */
export interface JsonlFileStore extends SessionStore {
  /** What the open repaired (empty when the files ended on a committed line). */
  readonly storageDiagnostics: StorageRepair[];
}
/** Opens a {@link JsonlFileStore}. */
export declare const JsonlFileStore: {
  /**
   * Opens (creating them if needed) the files of `sessionId` in `directory`. Throws
   * `store_locked` while another live writer has them open and `store_corrupt` when a committed
   * line does not parse, committed events are missing, or the events are not a valid log.
   */
  open(options: { directory: string; sessionId: string }): Promise<JsonlFileStore>;
};
