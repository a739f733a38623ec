// Types of `contextfold/stores/memory` and of the store interface every store implements.
import type { Calibration, CheckpointRetraction, EventLog, HistoryCompactCheckpoint, JsonValue, ModelMessage, RuntimeEvent, Diagnostic, UsageFact } from '../index.js';

/** A recorded checkpoint event, as stores keep them (the native ledger's AgentRun row). */
export interface CheckpointRecord { eventId: string; sessionId: string; recordedAtMs: number; payload: HistoryCompactCheckpoint }

/** A recorded usage fact (the native ledger's `model_usage_recorded` AgentRun row). */
export interface UsageRecord { eventId: string; sessionId: string; recordedAtMs: number; payload: UsageFact }

/**
 * A session's durable state (docs/npm.md#stores): every store — memory, JSONL file, node:sqlite,
 * IndexedDB — implements it.
 */
export interface SessionStore {
  /** The session every event and checkpoint of this store belongs to. */
  readonly sessionId: string;
  /** Every stored event, in order, validated by the core: project and compact over it. */
  readonly log: EventLog;
  /** The current checkpoint (the core's recovery selection over the recorded ones), or null. */
  readonly checkpoint: HistoryCompactCheckpoint | null;
  /** The malformed-input circuit last recorded, or null. */
  readonly circuit: JsonValue | null;
  /** What the recovery at open reported (recorded checkpoints it skipped, and why). */
  readonly recoveryDiagnostics: Diagnostic[];
  /** The usage facts recorded for this session, in record order (a copy). */
  readonly usageFacts: UsageFact[];
  /**
   * The calibration the recorded usage facts teach (the core's `calibrate` over them in record
   * order, as the native host computes it), or null before the first fact. `contextfold/ai-sdk`
   * starts from it.
   */
  readonly calibration: Calibration | null;
  /**
   * The whole stored conversation as AI SDK `ModelMessage[]` (every event, no checkpoint). To
   * resume an agent after a restart, pass them plus the new user message to the next call
   * through `contextfold/ai-sdk`: only the new message is appended.
   */
  modelMessages(): ModelMessage[];
  /**
   * Records one usage fact ({@link usageFact}) and learns from it; resolves once durable. SQLite
   * and PostgreSQL write a `model_usage_recorded` AgentRun event, as the native host does.
   * Throws `invalid_usage_fact` (nothing written) for a value that is not a fact.
   */
  recordUsage(fact: UsageFact): Promise<void>;
  /**
   * Appends events after the stored ones; checked with the whole log (nothing appended on
   * error); resolves once durable. After a failed write every call throws `store_write_failed`.
   */
  appendEvents(events: RuntimeEvent | RuntimeEvent[]): Promise<void>;
  /**
   * Compare-and-swap: appends `checkpoint` when it is a valid successor of the current one, else
   * throws `successor_conflict` with `conflict: true` (what `compact()`'s host expects).
   */
  appendCheckpoint(checkpoint: HistoryCompactCheckpoint): Promise<void>;
  /** Records the session's malformed-input circuit (`compact()`'s `host.recordCircuit`). */
  recordCircuit(circuit: JsonValue): Promise<void>;
  /**
   * Records how a background preparation of `contextfold/ai-sdk` ended. The SQLite store writes
   * it as a `preparation_settled` AgentRun event (as the native runtime does); the other stores
   * keep nothing.
   */
  recordPreparation?(settled: { fate: 'used' | 'superseded' | 'wasted' | 'failed'; checkpointId: string | null; summarizerTokens: number; detail: string | null }): Promise<void>;
  /** Every recorded checkpoint, in record order, as `contextfold checkpoints` lists them. */
  checkpoints(): Array<RecordedCheckpointSummary | { eventId: string; error: { code: string; message: string } }>;
  /**
   * What `contextfold verify` checks, over this store's log: each recorded checkpoint against
   * the events it claims to cover, and the current checkpoint against recovery. Writes nothing.
   */
  verify(): Promise<StoreVerification>;
  /**
   * Takes a compaction back without touching history (`contextfold checkpoints --retract ID
   * --reason TEXT`): records a retraction of `checkpointId` (and so of every checkpoint built on
   * it); the previous valid checkpoint, or none (the raw source), becomes current. Resolves to
   * it once durable. SQLite and PostgreSQL write the host's `checkpoint_retracted` AgentRun
   * event and move the projection row, so the native CLI sees it. Throws `invalid_argument`,
   * `checkpoint_not_found` or `checkpoint_already_retracted` (nothing written).
   */
  retractCheckpoint(checkpointId: string, reason: string): Promise<HistoryCompactCheckpoint | null>;
  /** Every retraction recorded, in record order (a copy). */
  readonly retractions: CheckpointRetraction[];
  /** Waits for pending writes and releases the storage (idempotent). */
  close(): Promise<void>;
}

/** One recorded checkpoint of {@link SessionStore.checkpoints}. */
export interface RecordedCheckpointSummary {
  eventId: string;
  recordedAtMs: number;
  checkpointId: string;
  schemaVersion: number;
  eventCount: number;
  turnCount: number;
  estimatedTokens: number;
  previousCheckpointId: string | null;
  producedBy: string | null;
  /** Whether it is the store's current checkpoint. */
  current: boolean;
  /** Why it was taken back (a retraction of it, or of a checkpoint it was built on), or null. */
  retracted: string | null;
}

/** What {@link SessionStore.verify} found. */
export interface StoreVerification {
  /** Every checkpoint matches its coverage and the current checkpoint is recovery's. */
  ok: boolean;
  /** Events in the log. */
  events: number;
  /** One result per recorded checkpoint (`code`: the core's mismatch code, e.g. `source_hash_mismatch`). */
  checkpoints: Array<{ eventId: string; checkpointId: string | null; ok: boolean; code?: string; detail?: string; retracted?: string }>;
  /** Every retraction recorded, in record order. */
  retractions: CheckpointRetraction[];
  /** The current checkpoint against the core's recovery over the records. */
  projection: { ok: boolean; checkpointId: string | null; recoveredTip: string | null };
}

/** What a {@link MemoryStore} holds, as plain JSON (`usage`: its usage fact records). */
export interface StoreSnapshot { events: RuntimeEvent[]; records: CheckpointRecord[]; retractions?: CheckpointRetraction[]; circuit: JsonValue | null; usage?: UsageRecord[] }

/** A session kept in memory only (no durability). */
export interface MemoryStore extends SessionStore {
  /** The stored state: events, recorded checkpoint events, circuit and usage fact records. */
  snapshot(): StoreSnapshot;
}
/** Opens a {@link MemoryStore}: empty, or restored from a `snapshot()`. */
export declare const MemoryStore: {
  open(options: { sessionId: string; snapshot?: StoreSnapshot }): Promise<MemoryStore>;
};
