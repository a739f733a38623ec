// Replays the shared golden vectors (tests/vectors/*.json) through the built npm package
// `contextfold` in Node, the way tests/tests/behaviour.rs replays them on the native core and
// host/tests/component_conformance.rs in wasmtime. Prints
//   node (pkg): N/N vectors passed
// and exits 1 on any difference. Vector ops the package does not export are counted as
// skipped and named on that line (never as passed). Run after building pkg/:
//   node pkg-tests/conformance.mjs [--verbose]
// The op shapes are documented in tests/src/ops.rs and tests/src/transcript.rs.
import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';

const api = await import('contextfold').catch(() => import(new URL('../pkg/node.js', import.meta.url)));
const verbose = process.argv.includes('--verbose');

function readVectors(name) {
  return JSON.parse(readFileSync(new URL(`../tests/vectors/${name}`, import.meta.url), 'utf8'));
}

/** Runs `fn`; a thrown package error becomes `{ error: code }`, as the native reference does. */
function codeOf(fn) {
  try {
    return { value: fn() };
  } catch (error) {
    if (typeof error?.code === 'string') return { error: error.code };
    throw error;
  }
}

// ----- ops --------------------------------------------------------------------------------

function digestCase(vector) {
  return {
    prefixDigests: api.prefixDigests(vector.events),
    digest: api.digestPrefix(vector.events),
    canonical: vector.events.map((event) => api.canonicalEventJson(event)),
  };
}

function project(input) {
  const result = codeOf(() => api.project({
    events: input.events,
    checkpoint: input.checkpoint ?? null,
    model: input.model,
    currentTurnId: input.currentTurnId ?? undefined,
    provider: input.provider ?? undefined,
    failOpen: input.failOpen ?? false,
    format: 'neutral',
  }));
  if (result.error) return { error: result.error };
  // The package always carries `checkpoint` (null when none); the core omits it then.
  const { checkpoint, ...rest } = result.value;
  return checkpoint == null ? rest : { ...rest, checkpoint };
}

function validateSummary(input) {
  const result = codeOf(() => api.validateSummary(input.text ?? '', input.finish ?? '', input.foldTokens ?? 0));
  return result.error ? { defect: result.error } : { estimatedTokens: result.value.estimatedTokens };
}

function selectSafePrefix(input) {
  const options = {
    currentTurnId: input.currentTurnId ?? undefined,
    reserveTailTokens: input.reserveTailTokens ?? 0,
    reserveTailTurns: input.reserveTailTurns ?? 0,
  };
  const prefix = codeOf(() => api.selectSafePrefix(input.events, options));
  if (prefix.error) return { error: prefix.error };
  const cuts = codeOf(() => api.safeBoundaries(input.events, options.currentTurnId));
  if (cuts.error) return { error: cuts.error };
  const p = prefix.value;
  return { prefix: p ? { end: p.end, turnCount: p.turnCount } : null, safeBoundaries: cuts.value };
}

function evaluateReplay(input) {
  const matched = codeOf(() => api.matchCheckpoint(input.checkpoint, input.events));
  const decision = codeOf(() => api.evaluateReplay({
    events: input.events,
    checkpoint: input.checkpoint,
    currentTurnId: input.currentTurnId ?? undefined,
    model: input.model,
    provider: input.provider ?? undefined,
  }));
  if (decision.error) return { error: decision.error };
  return {
    match: matched.error ? { mismatch: matched.error } : { covered: matched.value.covered },
    decision: decision.value.decision,
    code: decision.value.code ?? null,
    plan: decision.value.plan ?? null,
  };
}

/** The text of a provider-neutral message (`parts`) or an AI SDK ModelMessage (`content`). */
function messageText(message) {
  const parts = typeof message.content === 'string'
    ? [{ type: 'text', text: message.content }]
    : (message.parts ?? message.content ?? []);
  return parts.filter((part) => part.type === 'text').map((part) => part.text).join('\n');
}

/**
 * The package hands summary requests out as AI SDK ModelMessages (the core's vectors hold
 * provider-neutral messages): compare roles and text, every other field exactly.
 */
function summarizeEffect(next, expected) {
  const { messages, ...fields } = expected?.request ?? {};
  const request = Object.fromEntries(Object.keys(fields).map((key) => [key, next.request[key]]));
  const same = isDeepStrictEqual(request, fields) && Array.isArray(messages) && messages.length === next.request.messages.length
    && messages.every((message, i) => message.role === next.request.messages[i].role
      && messageText(message) === messageText(next.request.messages[i]));
  return {
    effect: 'summarize',
    request: same ? expected.request : { ...request, messages: next.request.messages },
    previousSummary: next.request.previousSummary ?? null,
    foldStart: next.request.fold.start,
    foldEnd: next.request.fold.end,
    targetTokens: next.request.targetTokens,
  };
}

/** Drives a transcript through `CompactionSession` with its scripted answers. */
function transcript(input, expected) {
  const created = codeOf(() => new api.CompactionSession({
    trigger: input.trigger,
    events: input.events,
    currentTurnId: input.currentTurnId ?? undefined,
    checkpoint: input.checkpoint ?? null,
    model: input.model,
    provider: input.provider,
    compactor: input.compactor,
    checkpointId: input.checkpointId ?? '',
    nowMs: input.nowMs ?? 0,
    summarizerLabel: input.summarizerLabel ?? undefined,
    circuit: input.circuit ?? undefined,
  }));
  if (created.error) return { error: created.error };
  const session = created.value;
  const script = [...(input.script ?? [])];
  const effects = [];
  try {
    for (;;) {
      const next = session.poll();
      if (next.type === 'done') {
        return { effects, outcome: next.outcome, circuit: session.takeCircuit() };
      }
      const entry = script.shift();
      if (!entry) return { error: 'script_exhausted' };
      if (next.type === 'summarize') {
        effects.push(summarizeEffect(next, expected?.effects?.[effects.length]));
        if (entry.cancel) session.cancel();
        else if (entry.failure) session.handleSummary({ error: entry.failure });
        else if (entry.summary === 'extractive') {
          const fold = input.events.slice(next.request.fold.start, next.request.fold.end);
          const text = api.extractiveSummary(next.request.previousSummary, fold, next.request.targetTokens);
          session.handleSummary({ text, finishReason: 'stop' });
        } else session.handleSummary({ text: entry.summary.text ?? '', finishReason: entry.summary.finish ?? '' });
      } else if (next.type === 'compact-natively') {
        effects.push({ effect: 'compact_natively', request: next.request });
        if (entry.cancel) session.cancel();
        else if (entry.failure) session.handleNative({ error: entry.failure });
        else session.handleNative({ items: entry.native });
      } else if (next.type === 'append-checkpoint') {
        effects.push({ effect: 'append_checkpoint', checkpoint: next.checkpoint });
        session.handleAppend(entry.append === 'ok' ? {} : { error: entry.append });
      } else {
        return { error: `unknown_step:${next.type}` };
      }
    }
  } catch (error) {
    if (typeof error?.code === 'string') return { error: error.code };
    throw error;
  } finally {
    session.free();
  }
}

// ----- replay -----------------------------------------------------------------------------

const OPS = {
  project: { run: project },
  validate_summary: { run: validateSummary },
  compaction: { run: transcript },
  select_safe_prefix: { run: selectSafePrefix, needs: ['selectSafePrefix', 'safeBoundaries'] },
  evaluate_replay: { run: evaluateReplay, needs: ['evaluateReplay', 'matchCheckpoint'] },
};

let total = 0;
const failed = [];
const skipped = new Map();

function check(name, got, expected) {
  total += 1;
  if (isDeepStrictEqual(got, expected)) return;
  failed.push(name);
  if (verbose || failed.length === 1) {
    console.error(`mismatch ${name}:\n got      ${JSON.stringify(got).slice(0, 2000)}\n expected ${JSON.stringify(expected).slice(0, 2000)}`);
  }
}

for (const vector of readVectors('digest.json').cases) {
  const { prefixDigests, digest, canonical } = vector;
  check(`digest ${vector.name}`, digestCase(vector), { prefixDigests, digest, canonical });
}
for (const file of ['projection.json', 'compaction.json']) {
  for (const vector of readVectors(file).cases) {
    const op = OPS[vector.op];
    if (op?.needs?.some((name) => typeof api[name] !== 'function')) {
      skipped.set(vector.op, (skipped.get(vector.op) ?? 0) + 1);
      continue;
    }
    const got = op ? op.run(vector.input, vector.expected) : { error: `unknown_op:${vector.op}` };
    check(`${vector.op} ${vector.name}`, got, vector.expected);
  }
}

const skippedCount = [...skipped.values()].reduce((a, b) => a + b, 0);
const note = skippedCount
  ? ` (${skippedCount} skipped: the package exports no ${[...skipped.keys()].join(', ')})`
  : '';
console.log(`node (pkg): ${total - failed.length}/${total} vectors passed${note}`);
if (failed.length) {
  console.error(`node mismatches: ${failed.join(', ')}`);
  process.exit(1);
}
if (total < 150) {
  console.error(`only ${total} vectors replayed`);
  process.exit(1);
}
