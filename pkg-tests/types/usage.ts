// Compile-only check of pkg/index.d.ts (`npx tsc -p types`): the declarations describe the API
// as a TypeScript user calls it.
import {
  compact, project, importModelMessages, digestPrefix, ContextfoldError, EventLog,
  type CompactionHost, type CompactionOutcome, type ModelMessage, type RuntimeEvent,
  selectSafePrefix, safeBoundaries, evaluateReplay,
  type HistoryCompactCheckpoint, type SafePrefix, type ReplayDecision,
  calibrate, usageFact, type Calibration, type UsageFact, prepareDue, mergeCircuits,
  importSessionFile, type ImportedSession,
} from 'contextfold';

declare const events: RuntimeEvent[];

const projection = project({ events, model: { contextWindow: 128_000 }, format: 'ai-sdk' });
const forAi: ModelMessage[] = projection.messages;
const imported: RuntimeEvent[] = importModelMessages(forAi, { sessionId: 's' });
const digest: string = digestPrefix(imported);

const host: CompactionHost = {
  summarize: async (request) => ({ text: request.messages.length > 0 ? digest : '', finishReason: 'stop' }),
  appendCheckpoint: async () => {},
};
const pending: Promise<CompactionOutcome> = compact({ events, trigger: 'pre-turn' }, host);
void pending.catch((error: unknown) => (error instanceof ContextfoldError ? error.code : 'other'));

// Background preparation: the soft threshold, a prepared checkpoint handed to the hard trigger.
const model = { contextWindow: 8_000, prepareAtPercent: 60 };
if (prepareDue(projection.estimatedTokens, model)) {
  void compact({ events, model, trigger: 'prepare' }, host).then(async (prepared) => {
    if (prepared.outcome !== 'prepared') return;
    const circuit = mergeCircuits(null, { fingerprints: [] });
    await compact({ events, model, trigger: 'mid-turn', prepared: prepared.checkpoint, circuit }, host);
  });
}
const chat = project({ events, format: 'openai-chat' });
void chat.messages.length;

const log = new EventLog();
const length: number = log.append(events);
const logDigest: string = log.digest();
const logProjection = log.project({ model: { contextWindow: 128_000 }, format: 'anthropic' });
const system: string | null | undefined = logProjection.system;
void [length, logDigest, system];
log.free();

// Safe-prefix selection and the replay gate.
declare const checkpoint: HistoryCompactCheckpoint;
const prefix: SafePrefix | null = selectSafePrefix(events, { currentTurnId: 't3', reserveTailTurns: 1 });
const cuts: number[] = safeBoundaries(events, prefix ? null : 't3');
const replay: ReplayDecision = evaluateReplay({ events, checkpoint, model: { contextWindow: 8_000 } });
if (replay.decision === 'accepted') {
  const covered: number = replay.plan.covered;
  void covered;
} else {
  const code: string = replay.code;
  const sized: number | undefined = replay.plan?.replayTokens;
  void [code, sized, replay.diagnostic.detail];
}
void cuts;

// Events as JSONL (a ledger export): UTF-8 bytes or a string, wherever events are taken.
declare const ledgerBytes: Uint8Array;
const jsonlDigest: string = digestPrefix(ledgerBytes);
const jsonlProjection = project({ events: `${ledgerBytes.length}`, format: 'ai-sdk' });
log.append(ledgerBytes);
try {
  digestPrefix('{oops}');
} catch (error: unknown) {
  const line: number | undefined = error instanceof ContextfoldError ? error.line : undefined;
  void line;
}
void [jsonlDigest, jsonlProjection.messages];

// Calibration and a counting function: the fact of one request, learned from, passed back.
declare const reported: { inputTokens: number | undefined; inputTokenDetails: { cacheReadTokens: number | undefined } };
let calibration: Calibration | undefined;
const measured = project({ events: [], provider: { provider: 'openai', connectionSlug: 'c', modelId: 'm' }, calibration, countTokens: (text: string) => text.length });
const ratio: number = measured.ratioPermille;
const fact: UsageFact = usageFact(measured, { provider: 'openai', model: 'm', fixedOverheadTokens: 10 }, reported);
calibration = calibrate(calibration, fact);
calibration = calibrate(calibration, { provider: 'openai', model: 'm', estimatedInputTokens: 10, kind: 'overflow', limitTokens: 8 });
void [ratio, measured.uncalibratedTokens, calibration.models.length];

// An agent's session file: its events, and the calibration its usage teaches.
const session: ImportedSession = importSessionFile('{}', { sessionId: 's', format: 'auto' });
const learned: Calibration | null = session.usage.reduce<Calibration | null>((c, fact) => calibrate(c, fact), null);
const linkedEvents: number = session.linked.reduce((n, linked) => n + linked.events.length, session.events.length);
void [learned, linkedEvents, session.format === 'codex-rollout', session.diagnostics[0]?.line];
