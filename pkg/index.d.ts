// Type declarations of the npm package `contextfold` (hand-written; they describe the JSON the
// Rust core reads and writes, documented in docs/events.md, docs/digest.md and docs/npm.md).

/** Any JSON value (tool inputs and outputs, provider options, metadata). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/**
 * A 64-bit count or id number (`seq`, `createdAtMs`, token counts): a JS number. A `bigint`
 * input is read exactly, and a result beyond 2^53 from such an input comes back as a `bigint`
 * (exact); integral numbers beyond 2^53 written as numbers are read as the nearest integer.
 */
export type Count = number;

/** Stable snake_case reason code (e.g. `checkpoint_recorded`, `source_hash_mismatch`). */
export type ReasonCode = string;

/**
 * An image or file, content-addressed (docs/events.md#attachments): the bytes are inline
 * (`data`, padded base64), in the session archive (neither `data` nor `url`), or at `url`.
 */
export interface Attachment {
  mediaType: string;
  byteLength?: Count;
  sha256?: string;
  name?: string;
  width?: number;
  height?: number;
  detail?: 'low' | 'high' | 'auto' | string;
  data?: string;
  url?: string;
}

/** The payload of a RuntimeEvent, tagged by `type`. */
export type EventContent =
  | { type: 'user_text'; text: string; attachments?: Attachment[] }
  | { type: 'assistant_text'; text: string }
  | { type: 'reasoning'; text: string; providerData?: JsonValue }
  | { type: 'tool_call'; callId: string; toolName: string; input: JsonValue }
  | { type: 'tool_result'; callId: string; toolName: string; output: JsonValue; isError?: boolean; attachments?: Attachment[] }
  | { type: 'hosted_tool_call'; callId: string; toolName: string; input: JsonValue }
  | { type: 'hosted_tool_result'; callId: string; toolName: string; output: JsonValue; isError?: boolean }
  | { type: 'system_note'; text: string }
  | { type: 'runtime_note'; code: string; text: string };

/** One ordered, immutable fact of a session (docs/events.md). */
export interface RuntimeEvent {
  sessionId: string;
  runId: string;
  turnId: string;
  runtimeEventId: string;
  seq: Count | bigint;
  createdAtMs?: Count | bigint;
  responseId?: string;
  partial?: boolean;
  pinned?: boolean;
  content: EventContent;
  metadata?: JsonObject;
}

/** The identity of one event, a checkpoint's `through` boundary. */
export interface Boundary { runId: string; turnId: string; runtimeEventId: string }

/** Provider-native compact state (schema V3). */
export interface ProviderState {
  kind: 'openai_codex_remote_v2';
  connectionSlug: string;
  modelId: string;
  itemId: string;
  encryptedContent: string;
}

/** A durable projection of an ordered prefix of the log: V2 (summary) or V3 (provider state). */
export interface HistoryCompactCheckpoint {
  schemaVersion: 2 | 3;
  checkpointId: string;
  sessionId: string;
  createdAtMs: Count;
  highWater: { name: 'manual' | 'pre_turn' | 'mid_turn' | 'overflow' | string; seq: Count };
  coverage: { eventCount: Count; turnCount: Count; through: Boundary; sourceDigest: string };
  summary?: string;
  providerState?: ProviderState;
  limitations: string[];
  estimatedTokens: Count;
  previousCheckpointId?: string;
  producedBy?: string;
  /** How the projection was made and what it kept (metadata; nothing replays from it). */
  manifest?: ProjectionManifest;
}

/** Kept and looked-for artifacts of one class. */
export interface ArtifactScore {
  kept: number;
  total: number;
}

/** Scores per artifact class, and pooled. */
export interface ArtifactScores {
  constraint: ArtifactScore;
  plan: ArtifactScore;
  error: ArtifactScore;
  command: ArtifactScore;
  path: ArtifactScore;
  identifier: ArtifactScore;
  overall: ArtifactScore;
}

/** A checkpoint's projection manifest (version 1, see docs/events.md). */
export interface ProjectionManifest {
  version: number;
  /** `extractive`, `text-summary:<model>`, `openai-codex:<model>`, or the caller's label. */
  summarizer: string;
  /** The summarizer prompt's version (text summaries only). */
  promptVersion?: number;
  /** `sha256:<hex>` of the summarizer request's purpose, roles and instructions. */
  requestShape: string;
  /** The token estimator's name, e.g. `chars-v1`, `pieces-v1 x1.082`, `countTokens`. */
  estimator: string;
  /** The quality gate's record (text summaries only). */
  quality?: {
    gateVersion: number;
    thresholdPercent: number;
    before: ArtifactScores;
    after: ArtifactScores;
    covered: ArtifactScore;
    chainBestPercent: number;
    lost: string[];
    appended: number;
    repairRequested: boolean;
    recompacted: boolean;
  };
}

/** What the runtime knows about the selected model. Other keys are ignored. */
export interface ModelFacts {
  contextWindow?: number;
  fixedOverheadTokens?: number;
  /** Share of the budget (0-90%) an automatic compaction keeps raw; default 25. */
  rawTailSharePercent?: number;
  /** Share of the budget (0-90%) the request right after a compaction may fill; default 75. */
  afterCompactionSharePercent?: number;
  /** Share of the budget at which background preparation starts ({@link prepareDue}); default 80. */
  prepareAtPercent?: number;
  [key: string]: unknown;
}

/** The provider, connection and model in use (V3 checkpoints replay only on a match). */
export interface ProviderIdentity { provider: string; connectionSlug: string; modelId: string }

/** Token figures attached to a decision. */
export interface TokenFigures { before: Count; after: Count; budget: Count }

/** One decision, with a stable code. */
export interface Diagnostic { code: ReasonCode; detail: string; tokens?: TokenFigures }

/**
 * Who emitted the Compact command. `prepare`: a background preparation at the soft threshold
 * ({@link prepareDue}); it records nothing and ends `prepared` with the checkpoint, which a later
 * `pre-turn` / `mid-turn` compaction adopts when passed as `prepared`.
 */
export type Trigger = 'manual' | 'pre-turn' | 'mid-turn' | 'overflow' | 'prepare';

/** Output kinds of an AI SDK tool result. */
export type ToolResultOutput =
  | { type: 'text' | 'error-text'; value: string; providerOptions?: JsonObject }
  | { type: 'json' | 'error-json'; value: JsonValue; providerOptions?: JsonObject }
  | { type: 'execution-denied'; reason?: string; providerOptions?: JsonObject }
  | { type: 'content'; value: JsonValue[]; providerOptions?: JsonObject };

/** An AI SDK (v5/v6) content part as this package reads and writes it. */
export type ModelMessagePart =
  | { type: 'text'; text: string; providerOptions?: JsonObject }
  | { type: 'reasoning'; text: string; providerOptions?: JsonObject }
  | { type: 'image'; image: string; mediaType?: string; providerOptions?: JsonObject }
  | { type: 'file'; data: string; mediaType: string; filename?: string; providerOptions?: JsonObject }
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: JsonValue; providerExecuted?: boolean; providerOptions?: JsonObject }
  | { type: 'tool-result'; toolCallId: string; toolName: string; output: ToolResultOutput; providerOptions?: JsonObject }
  | { type: 'custom'; kind: 'openai.compaction'; providerOptions: { openai: { itemId: string; encryptedContent: string } } };

/** An AI SDK `ModelMessage` (structurally compatible with `ai`'s type). */
export type ModelMessage =
  | { role: 'system'; content: string; providerOptions?: JsonObject }
  | { role: 'user'; content: string | ModelMessagePart[]; providerOptions?: JsonObject }
  | { role: 'assistant'; content: string | ModelMessagePart[]; providerOptions?: JsonObject }
  | { role: 'tool'; content: ModelMessagePart[]; providerOptions?: JsonObject };

/** A provider-neutral message (format `neutral`). */
export interface NeutralMessage { role: 'system' | 'user' | 'assistant' | 'tool'; parts: JsonObject[] }

/** Where imported events get their ids: defaults `run-`, `turn-`, `evt-`, `resp-`, 1, 0. */
export interface ImportOptions {
  sessionId: string;
  runIdPrefix?: string;
  turnIdPrefix?: string;
  eventIdPrefix?: string;
  responseIdPrefix?: string;
  firstSeq?: number;
  firstTurn?: number;
}

/**
 * Events as the functions that read them take them: an array, or JSONL — one RuntimeEvent per
 * line, blank lines skipped (a ledger export, the `contextfold` CLI's files) — as a string or as
 * UTF-8 bytes (e.g. `fs.readFileSync(path)`). A bad line throws a {@link ContextfoldError} with
 * the core's code (`event_syntax`, `event_unknown_kind`, …) and its 1-based `line`; bytes that
 * are not UTF-8 throw `jsonl_invalid_utf8`, a string with a lone surrogate `jsonl_lone_surrogate`.
 */
export type EventsInput = RuntimeEvent[] | string | Uint8Array;

/** The learned calibration ratios (the core's `Calibration`): a store keeps it (`store.calibration`), or keep it as JSON and pass it back. */
export interface Calibration {
  /** One entry per provider and model, least recently updated first. */
  models: { provider: string; model: string; samplesPermille: number[] }[];
}

/** What one model request taught about the provider's count (the core's `UsageFact`). */
export type UsageFact = {
  /** The request's provider (`provider.provider`). */
  provider: string;
  /** The request's model (`provider.modelId`). */
  model: string;
  /** The request's own uncalibrated estimate of its input (see {@link usageFact}). */
  estimatedInputTokens: number;
} & (
  | { kind: 'response'; inputTokens: number; cachedInputTokens?: number; cacheWriteTokens?: number; outputTokens?: number }
  | { kind: 'overflow'; countedTokens?: number; limitTokens?: number }
);

/** How tokens are measured: the caller's counter and the calibration, both optional. */
export interface Measurement {
  /**
   * The calibration learned from usage facts ({@link calibrate}): every estimate is scaled by
   * its ratio for `provider.provider` / `provider.modelId` (1.0 without a provider or a sample).
   */
  calibration?: Calibration | null;
  /**
   * Counts the tokens of one text (e.g. js-tiktoken's `encode(text).length`), called instead of
   * the built-in characters-based estimate for every text measured (calibration applies on top).
   * A throw, or a result that is not a finite number ≥ 0, fails the call with
   * `count_tokens_failed`.
   */
  countTokens?: ((text: string) => number) | null;
}

/** Wire format of projected messages. */
export type ProjectionFormat = 'ai-sdk' | 'openai-chat' | 'openai-responses' | 'anthropic' | 'neutral';

/** Input of {@link project}. */
export interface ProjectInput<F extends ProjectionFormat = 'ai-sdk'> extends Measurement {
  events: EventsInput;
  checkpoint?: HistoryCompactCheckpoint | null;
  model?: ModelFacts;
  currentTurnId?: string | null;
  format?: F;
  provider?: ProviderIdentity;
  /**
   * Fail-open mode (what {@link projectForRequest} sets): when the projection does not fit, reuse
   * a source-matched checkpoint with the newest complete turns that fit. A projection that fits
   * is the same either way.
   */
  failOpen?: boolean;
}

/** Messages of each format. */
export interface FormatMessages {
  'ai-sdk': ModelMessage[];
  'openai-chat': JsonObject[];
  'openai-responses': JsonObject[];
  anthropic: JsonObject[];
  neutral: NeutralMessage[];
}

/** The history of the next request. */
export interface Projection<F extends ProjectionFormat = 'ai-sdk'> {
  messages: FormatMessages[F];
  /** Anthropic only: the leading system text (top-level `system`), or null. */
  system?: string | null;
  /** Estimated tokens of `messages`, calibrated: `fits` compares it with the budget. */
  estimatedTokens: Count;
  /** `messages` measured without the calibration: the request's own estimate a usage fact records. */
  uncalibratedTokens: Count;
  /** The calibration ratio `estimatedTokens` was measured with, in thousandths (1000: none). */
  ratioPermille: number;
  historyBudget: Count;
  /** `estimatedTokens <= historyBudget`; when false, `diagnostics` holds one `projection_over_budget`. */
  fits: boolean;
  checkpoint: { checkpointId: string; schemaVersion: number; coveredEvents: Count } | null;
  omittedEvents: Count;
  diagnostics: Diagnostic[];
}

/** A summarize effect: ready-to-send AI SDK messages plus the caller's provider options. */
export interface SummarizeRequest {
  purpose: 'initial' | 'rolling' | 'repair' | 'retention_repair';
  messages: ModelMessage[];
  providerOptions: JsonObject;
  estimatedInputTokens: Count;
  omittedToolResults: Count;
  repairReserveTokens: Count;
  /**
   * Payloads other than tool results sent as a marker naming their archive address, because one
   * event alone was larger than the summarizer's window (absent when none).
   */
  omittedPayloads?: { runtimeEventId: string; address: string }[];
  previousSummary: string | null;
  /** Newly folded events: `events.slice(fold.start, fold.end)` (for offline summarizers). */
  fold: { start: number; end: number };
  /**
   * Indexes of the covered events the checkpoint's requests replay verbatim right after the
   * summary (the live head: the split turn's user messages and notes); a summary need not
   * repeat them.
   */
  replayedHead: number[];
  /**
   * Indexes of events before `fold.start` that the previous checkpoint left to its live head
   * and this one no longer replays: summarize them as if folded now.
   */
  carried: number[];
  targetTokens: Count;
}

/** The second argument of `CompactionHost.summarize`. */
export interface SummarizeOptions {
  signal?: AbortSignal;
  /**
   * The offline extractive summary this request asks for, computed from the transaction's own
   * log (what `{ kind: 'extractive' }` summarizers answer).
   */
  extractiveSummary(): string;
}

/** A native compaction effect: Responses API input items ending in `compaction_trigger`. */
export interface NativeCompactionRequest {
  input: JsonValue[];
  estimatedInputTokens: Count;
  omittedToolResults: Count;
  interruptedCalls: Count;
  loweredHostedCalls: Count;
  droppedHostedCalls: Count;
  providerOptions: JsonObject;
}

/** What `compact()` needs from its host. Throwing from a provider call reports a failure. */
export interface CompactionHost {
  /** Generate a summary; resolve `{ text, finishReason }` (AI SDK or provider spelling). */
  summarize(request: SummarizeRequest, options: SummarizeOptions): Promise<{ text: string; finishReason?: string }>;
  /** Run provider-native compaction; resolve its output items (or `{ items }`). */
  compactNatively?(request: NativeCompactionRequest, options: { signal?: AbortSignal }): Promise<JsonValue[] | { items: JsonValue[] }>;
  /** Durably append the checkpoint; resolve once durable. Throw `{ conflict: true }` on a lost race. */
  appendCheckpoint(checkpoint: HistoryCompactCheckpoint): Promise<void>;
  /**
   * Called once at the end of every compaction with the session's malformed-input circuit: store
   * it (with the outcome) and pass it back as `circuit` to the next `compact()` of the session,
   * also after a restart, so an input that failed is never dispatched again.
   */
  recordCircuit?(circuit: JsonValue): Promise<void> | void;
}

/** Input of {@link compact}. */
export interface CompactInput extends Measurement {
  /** The events, or an {@link EventLog} (its events are not sent across again). */
  events: EventsInput | EventLog;
  checkpoint?: HistoryCompactCheckpoint | null;
  model?: ModelFacts;
  trigger: Trigger;
  provider?: ProviderIdentity;
  currentTurnId?: string | null;
  /** Default: `openai-codex-native` when the host has `compactNatively`, else `text-summary`. */
  compactor?: 'text-summary' | 'openai-codex-native';
  /** Id of the checkpoint this compaction may record (default: a random UUID). */
  checkpointId?: string;
  /** Current time in ms since the epoch (default: `Date.now()`). */
  nowMs?: number;
  /** Recorded as the checkpoint's `producedBy` (e.g. `extractive`). */
  summarizerLabel?: string;
  /** Passed through to every summarize/native request. */
  providerOptions?: JsonObject;
  /** The session backend's malformed-input circuit (from `CompactionSession.takeCircuit()`). */
  circuit?: JsonValue;
  /**
   * A checkpoint a background preparation built (the `checkpoint` of an outcome `prepared`). A
   * `pre-turn` or `mid-turn` compaction that needs to fold appends it instead of calling the
   * summarizer when it still succeeds `checkpoint`, matches the events and fits the request
   * being built (diagnostic `prepared_checkpoint_used`); otherwise it says why
   * (`prepared_checkpoint_rejected`) and compacts as without it. Other triggers ignore it.
   */
  prepared?: HistoryCompactCheckpoint | null;
  signal?: AbortSignal;
}

/** The outcome of one compaction (the same values as the native CLI's `compact --json`). */
export interface CompactionOutcome {
  /** `prepared`: trigger `prepare` built `checkpoint` and recorded nothing. */
  outcome: 'recorded' | 'skipped' | 'failed_open' | 'exhausted' | 'cancelled' | 'prepared';
  reason: ReasonCode;
  checkpoint?: HistoryCompactCheckpoint;
  diagnostics: Diagnostic[];
  attempts: { kind: 'provider_native' | 'text_summary'; dispatches: number; result: ReasonCode }[];
  failureNote?: EventContent;
  tokens: TokenFigures;
}

/** An error from contextfold, carrying the core's stable `code`. */
export class ContextfoldError extends Error {
  constructor(code: string, message: string, options?: { cause?: unknown });
  readonly code: string;
  /** The 1-based line of JSONL events the error is about, when it is about one. */
  readonly line?: number;
}

/** One step of {@link CompactionSession.poll}. */
export type CompactionStep =
  | { type: 'summarize'; request: Omit<SummarizeRequest, 'providerOptions'> }
  | { type: 'compact-natively'; request: Omit<NativeCompactionRequest, 'providerOptions'> }
  | { type: 'append-checkpoint'; checkpoint: HistoryCompactCheckpoint }
  | { type: 'done'; outcome: CompactionOutcome };

/** The core's step-by-step compaction transaction (what `compact()` drives). */
export class CompactionSession {
  constructor(input: Omit<CompactInput, 'providerOptions' | 'signal'> & { checkpointId: string; nowMs: number });
  poll(): CompactionStep;
  handleSummary(result: { text: string; finishReason?: string } | { error: ProviderFailure }): void;
  /** The offline extractive summary the pending `summarize` step asks for (from the session's own log). */
  extractiveSummary(): string;
  handleNative(result: { items: JsonValue[] } | { error: ProviderFailure }): void;
  handleAppend(result: {} | { error: { conflict: boolean; message: string } }): void;
  cancel(): boolean;
  takeCircuit(): JsonValue;
  free(): void;
}

/** A failed provider call, as the core classifies it. */
export interface ProviderFailure {
  kind: 'rejected' | 'overflow' | 'auth' | 'billing' | 'rate_limited' | 'unavailable' | 'cancelled';
  message: string;
}

/**
 * A session's events held in wasm memory: each event crosses into wasm once, when appended;
 * the digest is kept incrementally and `project()` sends no events across.
 */
export class EventLog {
  constructor();
  /**
   * Appends events (one, an array, or JSONL: see {@link EventsInput}); the whole log must stay
   * valid (`log_*` codes), else nothing is appended. Returns the new length.
   */
  append(events: RuntimeEvent | EventsInput): number;
  /** The number of events. */
  readonly length: number;
  /** `digestPrefix` of the whole log, kept incrementally. */
  digest(): string;
  /** A copy of the events. */
  events(): RuntimeEvent[];
  /** {@link project} over the log's events. */
  project<F extends ProjectionFormat = 'ai-sdk'>(options?: Omit<ProjectInput<F>, 'events'>): Projection<F>;
  /** {@link projectForRequest} over the log's events: the history to send next. */
  projectForRequest<F extends ProjectionFormat = 'ai-sdk'>(options?: Omit<ProjectInput<F>, 'events'>): Projection<F>;
  /** Frees the wasm memory (idempotent). */
  free(): void;
}

/** Runs one compaction transaction with the host's provider and storage. */
export function compact(input: CompactInput, host: CompactionHost, options?: { signal?: AbortSignal }): Promise<CompactionOutcome>;
/** Projects the next request's history in the chosen format. */
export function project<F extends ProjectionFormat = 'ai-sdk'>(input: ProjectInput<F>): Projection<F>;
/**
 * The history to send with the next model request: `project()` with `failOpen: true`. Equal to
 * `project()` whenever that fits; when it does not (a compaction failed or could not shrink it
 * enough), the source-matched checkpoint with the newest complete raw turns that fit, the
 * omission reported in `omittedEvents` and a `previous_checkpoint_reused` diagnostic.
 */
export function projectForRequest<F extends ProjectionFormat = 'ai-sdk'>(input: ProjectInput<F>): Projection<F>;
/**
 * Learns from one usage fact: a new calibration (the argument is not changed; `undefined` is an
 * empty one). Throws `invalid_usage_fact` for a bad fact, `invalid_calibration` for a bad
 * calibration.
 */
export function calibrate(calibration: Calibration | null | undefined, fact: UsageFact): Calibration;
/** AI SDK `LanguageModelUsage` of one request (a step's `usage`, not `totalUsage`). */
export interface ReportedUsage {
  inputTokens: number | undefined;
  inputTokenDetails?: { cacheReadTokens?: number; cacheWriteTokens?: number; noCacheTokens?: number };
  /** @deprecated by the AI SDK: `inputTokenDetails.cacheReadTokens`. */
  cachedInputTokens?: number;
  outputTokens?: number;
}
/**
 * The usage fact of one request: `projection.uncalibratedTokens` plus `fixedOverheadTokens`
 * against the provider's reported usage, or an overflow refusal. Throws `invalid_usage_fact`
 * when the projection has no estimate or the usage no `inputTokens`.
 */
export function usageFact(
  projection: Pick<Projection<ProjectionFormat>, 'uncalibratedTokens'>,
  request: { provider: string; model: string; fixedOverheadTokens?: number } | (ProviderIdentity & { fixedOverheadTokens?: number }),
  usage: ReportedUsage | { kind: 'response'; inputTokens: number; cachedInputTokens?: number; cacheWriteTokens?: number; outputTokens?: number } | { kind: 'overflow'; countedTokens?: number; limitTokens?: number },
): UsageFact;
/** Classifies a provider error (kind, HTTP status) as a ProviderFailure. */
export function providerFailure(error: unknown): ProviderFailure;
/** `sha256:<hex>` source digest of the events (docs/digest.md). */
export function digestPrefix(events: EventsInput): string;
/** The digest of every prefix of the events. */
export function prefixDigests(events: EventsInput): string[];
/** The canonical JSON text of one event. */
export function canonicalEventJson(event: RuntimeEvent): string;
/**
 * What a ledger stores for one event (the core's `LedgerRow::of`, byte-identical to the native
 * host's SQLite rows): `json` is the canonical JSON when it parses back to exactly the same
 * event, else the serde JSON (`canonical: false`); `liveHead`, and `tokens` by the estimator
 * {@link ledgerTokensEstimator} names.
 */
export interface LedgerRow { json: string; canonical: boolean; liveHead: boolean; tokens: number }
/** The ledger row of each event, in order. */
export function ledgerRows(events: EventsInput): LedgerRow[];
/** The name of the estimator whose estimates {@link LedgerRow.tokens} holds (`pieces-v1`). */
export function ledgerTokensEstimator(): string;
/** Throws `log_*` codes when a log breaks a structural rule. */
export function validateLog(events: EventsInput): void;
/** AI SDK `ModelMessage[]` (v5/v6) → RuntimeEvents. */
export function importModelMessages(messages: ModelMessage[], options: ImportOptions): RuntimeEvent[];
/** OpenAI Chat Completions messages (or a request body) → RuntimeEvents. */
export function importOpenAIChat(messages: JsonObject[] | { messages: JsonObject[] }, options: ImportOptions): RuntimeEvent[];
/** OpenAI Responses `input` items (or a request body with `input`, `instructions`) → RuntimeEvents. */
export function importOpenAIResponses(input: JsonObject[] | { input: JsonObject[] | string; instructions?: string }, options: ImportOptions): RuntimeEvent[];
/** Anthropic messages (or `{ system, messages }`) → RuntimeEvents. */
export function importAnthropic(body: JsonObject[] | { system?: string | JsonObject[]; messages: JsonObject[] }, options: ImportOptions): RuntimeEvent[];
/** A session file format `importSessionFile` reads (`'auto'`: detected from the first records). */
export type SessionFileFormat = 'claude-code' | 'codex-rollout' | 'cline';
/** Options of {@link importSessionFile}: the ids, and the format (default `'auto'`). */
export interface SessionFileOptions extends ImportOptions {
  format?: SessionFileFormat | 'auto';
}
/** A session file in the event model (the core's `ImportedSession`). */
export interface ImportedSession {
  /** The format that was read (detected, or the one asked for). */
  format: SessionFileFormat;
  /** The main conversation, numbered from the options' ids. */
  events: RuntimeEvent[];
  /** Usage the provider reported for the main conversation's requests, in order (feed {@link calibrate}). */
  usage: UsageFact[];
  /** Runs kept apart from the main conversation (Claude Code subagents, sidechains), each its own session `<sessionId>/<name>`. */
  linked: { sessionId: string; events: RuntimeEvent[]; usage: UsageFact[] }[];
  /** Records skipped on purpose: 1-based `line`, stable `code`, `detail`. */
  diagnostics: { line: number; code: string; detail: string }[];
}
/**
 * An agent's session file, read as the agent wrote it: a Claude Code transcript (`<session>.jsonl`),
 * a Codex CLI rollout (`rollout-*.jsonl`) or a Cline / Roo Code `api_conversation_history.json`,
 * the same reading as `contextfold import --format auto`. Throws `session_file_unknown_format`
 * (auto detection found none), `session_file_syntax`, `session_file_shape`,
 * `session_file_unsupported` (a record the format does not hold, e.g. the file read as another
 * format), `session_file_call_pairing`, `session_file_attachment`, and `invalid_argument` for an
 * unknown format name.
 */
export function importSessionFile(text: string, options: SessionFileOptions): ImportedSession;
/** `{ covered }` when the log starts with the prefix the checkpoint covers; throws the mismatch code otherwise. */
export function matchCheckpoint(checkpoint: HistoryCompactCheckpoint, events: EventsInput): { covered: number };
/** Options of {@link selectSafePrefix}. */
export interface SafePrefixOptions {
  /** The turn being produced now: none of its events is ever covered. */
  currentTurnId?: string | null;
  /** Keep at least this many estimated tokens of the newest prior history raw (default 0). */
  reserveTailTokens?: Count | bigint;
  /** Keep at least this many of the newest completed turns raw (default 0). */
  reserveTailTurns?: number;
}
/** A prefix a checkpoint may cover: `events.slice(0, end)`, holding `turnCount` turns. */
export interface SafePrefix { end: number; turnCount: Count }
/**
 * The largest safe prefix that leaves the reserved tail raw, or `null` when none exists.
 * Throws `log_current_turn_not_suffix` when the current turn is not the log's suffix.
 */
export function selectSafePrefix(events: EventsInput, options?: SafePrefixOptions): SafePrefix | null;
/** Every `p` such that a checkpoint may cover `events.slice(0, p)`, ascending (never 0). */
export function safeBoundaries(events: EventsInput, currentTurnId?: string | null): number[];
/** Input of {@link evaluateReplay}. */
export interface ReplayInput {
  events: RuntimeEvent[];
  checkpoint: HistoryCompactCheckpoint;
  currentTurnId?: string | null;
  model?: ModelFacts;
  /** Needed for a V3 checkpoint to replay (it is bound to its provider, connection and model). */
  provider?: ProviderIdentity | null;
}
/** The token figures of a replay: the checkpoint replaces `events.slice(0, covered)`. */
export interface ReplayPlan {
  covered: number;
  checkpointTokens: Count;
  sourceTokens: Count;
  /** Checkpoint + uncovered raw tail + current turn, as the request will carry them. */
  replayTokens: Count;
  currentTokens: Count;
}
/** The replay gate's decision for the next request. */
export type ReplayDecision =
  | { decision: 'accepted'; code: null; plan: ReplayPlan; diagnostic: null }
  | {
      decision: 'rejected';
      /** e.g. `source_hash_mismatch`, `coverage_miss`, `provider_mismatch`, `replacement_not_smaller`, `checkpoint_over_budget`. */
      code: ReasonCode;
      /** Set when the checkpoint matched the log and failed only on size. */
      plan: ReplayPlan | null;
      diagnostic: Diagnostic;
    };
/**
 * Whether `checkpoint` may replace the start of the log in the next request. A rejection is a
 * result; it throws only on input the core refuses (`log_*`, `checkpoint_*` codes).
 */
export function evaluateReplay(input: ReplayInput): ReplayDecision;
/** Validates and normalizes checkpoint JSON; throws `checkpoint_*` codes. */
export function parseCheckpoint(checkpoint: JsonValue): HistoryCompactCheckpoint;
/**
 * Throws `successor_conflict` unless `candidate` may follow `tip` (the current checkpoint, or
 * null): the compare-and-swap rule of every store's checkpoint append, the native ledger's too.
 */
export function checkSuccessor(tip: HistoryCompactCheckpoint | null, candidate: HistoryCompactCheckpoint): void;
/** Validates a summarizer completion; throws `malformed_summary_*` / `empty_summary` codes. */
export function validateSummary(text: string, finishReason?: string, foldTokens?: number): { text: string; estimatedTokens: Count };
/** Recorded checkpoint event of a ledger. */
export interface RecordedCheckpointEvent { eventId: string; sessionId: string; recordedAtMs: number; payload: JsonValue }
/**
 * A `checkpoint_retracted` event of a ledger: the checkpoint (and every checkpoint built on it)
 * taken back (`contextfold checkpoints --retract`, a store's `retractCheckpoint`).
 */
export interface CheckpointRetraction { eventId: string; sessionId: string; recordedAtMs: number; checkpointId: string; reason: string }
/**
 * Selects the current checkpoint from recorded checkpoint events, skipping retracted ones (and
 * those built on them) as `checkpoint_retracted`.
 */
export function recoverCheckpoint(sessionId: string, records: RecordedCheckpointEvent[], retractions?: CheckpointRetraction[]): {
  checkpoint: HistoryCompactCheckpoint | null;
  eventId: string | null;
  skipped: { eventId: string; reason: string; detail: string }[];
  diagnostics: Diagnostic[];
};
/**
 * The offline extractive summary of `events` rolled forward from `previousSummary`, within about
 * `targetTokens`. `carried`: events before them a previous checkpoint left to its live head,
 * summarized first; `replayed`: the live head replayed right after the summary, named rather
 * than quoted. Inside `compact()`, the host's `summarize` gets the same for its request as
 * `options.extractiveSummary()`.
 */
export function extractiveSummary(
  previousSummary: string | null | undefined,
  events: EventsInput,
  targetTokens: number,
  context?: { carried?: EventsInput; replayed?: EventsInput },
): string;
/** The budget derived from model facts. */
export function contextBudget(model?: ModelFacts | null): { contextWindow: Count; reserve: Count; historyBudget: Count };
/**
 * Whether to prepare the next checkpoint in the background: `historyTokens` (a projection's
 * `estimatedTokens`) has reached the model's soft threshold (`prepareAtPercent`, default 80%,
 * of its history budget). The core's rule, the native runtime's.
 */
export function prepareDue(historyTokens: number, model?: ModelFacts | null): boolean;
/**
 * The malformed-input circuit `circuit` (null: empty) with every fingerprint of `other` added
 * (oldest first, at most 16 kept): for two compactions that ran side by side on copies of one
 * circuit, such as a background preparation beside a foreground compaction.
 */
export function mergeCircuits(circuit: JsonValue | null | undefined, other: JsonValue | null | undefined): JsonValue;
/** Estimated tokens of events with the core's default estimator. */
export function estimateEvents(events: EventsInput): number;
/**
 * Which SHA-256 computes the digests: `'host'` (Node: `node:crypto`, fed the canonical bytes in
 * 16 KiB chunks) or `'wasm'` (browsers: the portable SHA-256 compiled into the module). The
 * digests are the same either way.
 */
export function hashEngine(): 'host' | 'wasm';
