// Types of `contextfold/ai-sdk` (hand-written). They are structural: nothing here imports `ai`
// or `@ai-sdk/provider`, so the same declarations serve ai@6 (LanguageModelV3) and ai@7
// (LanguageModelV4) users.
import type {
  Calibration, CompactionOutcome, JsonObject, JsonValue, ModelFacts, ModelMessage, Projection,
  ProviderIdentity, SummarizeRequest, Trigger,
} from './index.js';
import type { SessionStore } from './stores/memory.js';

/** The part of an AI SDK language model (`LanguageModelV2`/`V3`/`V4`) this adapter calls. */
export interface LanguageModelLike {
  readonly specificationVersion: string;
  readonly provider: string;
  readonly modelId: string;
  doGenerate(options: any): PromiseLike<any>;
}

/**
 * Who writes the summaries: an AI SDK language model (called through its own `doGenerate` with
 * the request's messages), a function, or `'extractive'` (offline: copied from the event log).
 */
export type Summarizer =
  | LanguageModelLike
  | ((request: SummarizeRequest, options: { signal?: AbortSignal }) => Promise<{ text: string; finishReason?: string } | string>)
  | 'extractive';

/** Options of {@link contextfold}. */
export interface FoldingOptions {
  /** Where the session's events, checkpoints and circuit live (`contextfold/stores/*`). */
  store: SessionStore;
  /**
   * The request model's facts: `contextWindow` (tokens) and, when the requests carry a large
   * system prompt or tool catalog the adapter cannot see, `fixedOverheadTokens`.
   */
  model: ModelFacts;
  /** Default `'extractive'`. */
  summarizer?: Summarizer;
  /**
   * The identity requests are measured and checkpointed under. Default: from the step's model
   * (`{ provider: model.provider, connectionSlug: model.provider, modelId: model.modelId }`;
   * `provider: 'openai-codex'` when compacting natively).
   */
  provider?: ProviderIdentity;
  /**
   * How the first messages of a call relate to the stored events: `'full'` (the whole
   * conversation so far, as passed before or as `store.modelMessages()` gives it back after a
   * restart), `'new'` (only what follows), `'auto'` (default: `'full'` when their first message
   * is the stored log's first).
   */
  history?: 'auto' | 'full' | 'new';
  /**
   * Provider-native compaction: `'auto'` (default) for an `@ai-sdk/openai` Responses model
   * (provider `openai.responses`), `true` for any model, `false` never.
   */
  native?: 'auto' | boolean;
  /** Counts the tokens of one text (e.g. js-tiktoken) instead of the built-in estimate. */
  countTokens?: (text: string) => number;
  /**
   * The calibration to start from. Default: the store's (`store.calibration`, learned from the
   * usage facts it recorded), so a session reopened after a restart starts where it left off.
   */
  calibration?: Calibration | null;
  /** Called after every compaction with its outcome (or `{ outcome: 'error', error }`). */
  onCompaction?: (outcome: CompactionOutcome | { outcome: 'error'; reason: string; error: unknown; diagnostics: [] }, info: CompactionInfo) => void;
  /**
   * Prepare the next checkpoint between steps (default `false`): a step whose projection fits
   * but has reached the soft threshold (`prepareDue`: `model.prepareAtPercent`, default 80% of
   * the history budget) starts a compaction with trigger `prepare` that no step waits for; the
   * step whose projection no longer fits hands its checkpoint (held, or awaited if still in
   * flight) to its compaction, which appends it without calling the summarizer when it still
   * serves. See `folding.preparations`.
   */
  backgroundPreparation?: boolean;
  /** Called once when each background preparation ends (best effort: a throw is ignored). */
  onPreparation?: (settled: PreparationSettled, stats: PreparationStats) => void;
}

/** What `onCompaction` is told besides the outcome. */
export interface CompactionInfo {
  trigger: Trigger;
  /**
   * What background preparation had ready: `'held'` (a finished preparation's checkpoint),
   * `'in_flight'` (the compaction waited for what was left of one), or `'none'`.
   */
  preparation: 'none' | 'in_flight' | 'held';
  /** Summarizer tokens this compaction spent (estimated; 0 when it adopted a prepared checkpoint). */
  summarizerTokens: number;
  /** The background preparations so far. */
  preparations: PreparationStats;
}

/** Background preparations by how they ended (the native runtime's `PreparationStats`). */
export interface PreparationStats {
  started: number;
  /** Preparations that built a checkpoint. */
  prepared: number;
  /** Prepared checkpoints a compaction adopted. */
  used: number;
  /** Preparations replaced by a newer one or by an overflow compaction (aborted in flight, or dropped while held). */
  superseded: number;
  /** Prepared checkpoints that were not used: refused when needed, or superseded. */
  wasted: number;
  /** Preparations that ended without a checkpoint (a provider failure, a malformed summary); never seen by the agent. */
  failed: number;
  /** Prepared checkpoints still held. */
  held: number;
  /** Summarizer tokens of every preparation (estimated: each request's input and its answer). */
  tokens: number;
  usedTokens: number;
  /** Of `tokens`, those that bought nothing: wasted, superseded after they finished, or failed. */
  wastedTokens: number;
  heldTokens: number;
}

/** How one background preparation ended (the native `preparation_settled` AgentRun event). */
export interface PreparationSettled {
  fate: 'used' | 'superseded' | 'wasted' | 'failed';
  /** The prepared checkpoint (null: none was built). */
  checkpointId: string | null;
  summarizerTokens: number;
  /** Why it was wasted or failed (a reason code or the refusal's detail), else null. */
  detail: string | null;
}

/** What `prepareStep` returns: the projected history, plus the settings it needs. */
export interface FoldedStep {
  /**
   * The projected history: AI SDK `ModelMessage`s (the package's {@link ModelMessage} shapes),
   * typed loosely so that ai@6's and ai@7's own `ModelMessage` types both accept it.
   */
  messages: any[];
  /**
   * ai@7: the call's instructions followed by the projection's system messages (a V2
   * checkpoint) as `SystemModelMessage`s (typed loosely, like `messages`).
   */
  instructions?: any[];
  /** `{ openai: { store: false } }` when a V3 checkpoint replays inline. */
  providerOptions?: { openai: { store: false } };
}

/** Counters of a {@link Folding}. */
export interface FoldingStats {
  steps: number;
  compactions: number;
  checkpoints: number;
  /** Compactions that threw (the request then reuses the last checkpoint: fail-open). */
  failures: number;
  usageFacts: number;
  /** Provider overflow refusals the middleware answered (compaction with trigger `overflow`, one retry). */
  overflows: number;
  /**
   * Requests sent although their projection did not fit the history budget (the core's
   * fail-open projection: the live head and newest steps could not shrink further).
   */
  overBudget: number;
  /** The reason code of the last compaction (or its error code), or null. */
  lastOutcome: string | null;
}

/** A language-model middleware (`transformParams`, `wrapGenerate`, `wrapStream`). */
export interface FoldingMiddleware<V extends 'v3' | 'v4'> {
  readonly specificationVersion: V;
  transformParams(options: { type: 'generate' | 'stream'; params: any; model: any }): PromiseLike<any>;
  wrapGenerate(options: { doGenerate: () => PromiseLike<any>; doStream: () => PromiseLike<any>; params: any; model: any }): PromiseLike<any>;
  wrapStream(options: { doGenerate: () => PromiseLike<any>; doStream: () => PromiseLike<any>; params: any; model: any }): PromiseLike<any>;
}

/**
 * The overflow guard for a model driven by `prepareStep` (no `transformParams`: the request is
 * sent as `prepareStep` shaped it unless the provider refuses it as too long).
 */
export interface OverflowGuard<V extends 'v3' | 'v4'> {
  readonly specificationVersion: V;
  wrapGenerate(options: { doGenerate: () => PromiseLike<any>; doStream: () => PromiseLike<any>; params: any; model: any }): PromiseLike<any>;
  wrapStream(options: { doGenerate: () => PromiseLike<any>; doStream: () => PromiseLike<any>; params: any; model: any }): PromiseLike<any>;
}

/** One session's compaction driver for the AI SDK. One call at a time per session. */
export class Folding {
  constructor(options: FoldingOptions);
  /** The store this driver appends to. */
  readonly store: SessionStore;
  /**
   * The calibration learned so far: the `calibration` option or the store's at first, then each
   * step's usage (every usage fact is recorded in the store too, `store.recordUsage`).
   */
  readonly calibration: Calibration | null;
  /**
   * The request model's facts; set them when the agent switches to a model with another window
   * (the next step measures, and judges a prepared checkpoint, against the new budget).
   */
  model: ModelFacts;
  /** Background preparations so far (all zero without `backgroundPreparation`). */
  readonly preparations: PreparationStats;
  /**
   * Resolves once the preparation in flight, if any, has ended (a host shutting down, a test).
   * Steps never wait for it unless the compaction they need can use it.
   */
  awaitPreparation(): Promise<void>;
  /** Counters since construction. */
  readonly stats: FoldingStats;
  /** The projection sent with the last request, or null. */
  readonly lastProjection: Projection | null;
  /**
   * `prepareStep` for `generateText`, `streamText` and `ToolLoopAgent` (bound: pass it as is).
   * Appends the step's new messages as events, compacts when the projection does not fit
   * (trigger `pre-turn` at step 0, `mid-turn` later) and returns the history to send.
   */
  prepareStep(options: {
    stepNumber: number;
    steps: readonly { usage?: unknown }[];
    model: unknown;
    messages: readonly any[];
    initialMessages?: readonly any[];
    responseMessages?: readonly any[];
    instructions?: unknown;
    initialInstructions?: unknown;
  }): Promise<FoldedStep>;
  /**
   * Appends the call's final response messages (the last step has no `prepareStep` after it)
   * and records its usage: `await folding.finish(result)` with a generateText or streamText result.
   */
  finish(result: { responseMessages?: unknown; response?: unknown; steps?: unknown }): Promise<void>;
  /** The middleware for ai@7's `wrapLanguageModel` (LanguageModelV4). */
  readonly middleware: FoldingMiddleware<'v4'>;
  /** The same middleware for ai@6 (LanguageModelV3). */
  readonly middlewareV3: FoldingMiddleware<'v3'>;
  /**
   * With `prepareStep`: `wrapLanguageModel({ model, middleware: folding.overflowGuard })`. A
   * request the provider refuses as too long is answered by a compaction with trigger
   * `overflow` and sent once more (the call's instructions kept); nothing else changes.
   */
  readonly overflowGuard: OverflowGuard<'v4'>;
  /** The same guard for ai@6 (LanguageModelV3). */
  readonly overflowGuardV3: OverflowGuard<'v3'>;
}

/** Creates the compaction driver of one session. */
export function contextfold(options: FoldingOptions): Folding;
export default contextfold;

/** `ModelMessage[]` → a provider-level prompt (`'v4'` default, or `'v3'`). */
export function toProviderPrompt(messages: ModelMessage[], version?: 'v3' | 'v4'): JsonObject[];
/** A provider-level prompt → `ModelMessage[]` as `importModelMessages` reads them. */
export function fromProviderPrompt(prompt: readonly any[]): ModelMessage[];
/** OpenAI Responses input items (a native compaction request) → a provider-level prompt. */
export function responsesItemsToPrompt(items: JsonValue[]): JsonObject[];
