// Replays the shared golden vectors (tests/vectors/*.json) through the built npm package
// `contextfold` in Node, the way tests/tests/behaviour.rs replays them on the native core and
// host/tests/component/component_conformance.rs in wasmtime. Prints
//   node (pkg): N/N vectors passed
// and exits 1 on any difference. Vector ops the package does not export are counted as
// skipped and named on that line (never as passed). Run after building pkg/:
//   node pkg-tests/conformance.mjs [--verbose]
// With `--component DIR/compactor.js` (the component transpiled by `jco transpile --name
// compactor`, see scripts/conformance.sh) it replays every vector through the WIT exports of
// the real component in Node instead, transcripts through the `compaction-steps` resource as a
// JavaScript host drives it, and prints `component (jco, node): N/N vectors passed`.
// The op shapes are documented in tests/src/ops.rs and tests/src/transcript.rs.
import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';

const api = await import('contextfold')
  .catch(() => import(new URL('../pkg/node.js', import.meta.url)))
  .catch((error) => {
    console.error(`the built npm package is needed (bash scripts/build-pkg.sh): ${error.message}`);
    process.exit(1);
  });
const verbose = process.argv.includes('--verbose');
const componentFlag = process.argv.indexOf('--component');
const jco = componentFlag > 0
  ? await import(new URL(process.argv[componentFlag + 1], `file://${process.cwd()}/`))
  : null;

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
  const { checkpoint, ...rest } = uncalibrated(result.value);
  return checkpoint == null ? rest : { ...rest, checkpoint };
}

/**
 * A projection without its measurement fields, which the core's projection does not carry:
 * without a calibration they must say ratio 1.0 and repeat `estimatedTokens` (otherwise they
 * stay, and the comparison fails).
 */
function uncalibrated(projection) {
  const { uncalibratedTokens, ratioPermille, ...rest } = projection;
  const unit = ratioPermille === 1000 && uncalibratedTokens === rest.estimatedTokens;
  return unit ? rest : projection;
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
          const text = session.extractiveSummary();
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

// ----- the component through jco: the WIT exports as a JavaScript host sees them -----------

/** The core's `FinishReason::parse`: a host classifies the provider's finish string. */
function finishReason(value) {
  const normalized = String(value ?? '').trim().toLowerCase().replaceAll('-', '_');
  if (['stop', 'end_turn', 'stop_sequence'].includes(normalized)) return { tag: 'stop' };
  if (['length', 'max_tokens', 'max_output_tokens'].includes(normalized)) return { tag: 'length' };
  if (['content_filter', 'safety'].includes(normalized)) return { tag: 'content-filter' };
  if (['tool_calls', 'tool_use', 'function_call'].includes(normalized)) return { tag: 'tool-calls' };
  if (['', 'unknown'].includes(normalized)) return { tag: 'unknown' };
  return { tag: 'other', val: String(value).trim() };
}

/** Runs a component call; a WIT error becomes `{ error: code }`, as in the native reference. */
function wit(fn) {
  try {
    return { value: fn() };
  } catch (error) {
    const payload = error?.payload;
    if (payload && typeof payload === 'object') return { error: payload.val?.code ?? payload.code ?? payload.tag };
    throw error;
  }
}

/**
 * The exact text of every digest case's `events` array, by case name. JavaScript numbers
 * cannot hold every u64 (`createdAtMs: 18446744073709551615`), so `JSON.stringify` of the parsed
 * events is not the log a host stores; a JavaScript host hands the component its stored text.
 */
function rawDigestEvents() {
  const text = readFileSync(new URL('../tests/vectors/digest.json', import.meta.url), 'utf8');
  const raw = new Map();
  const pattern = /"name": "([^"]+)",\s*"events": \[/g;
  for (let m = pattern.exec(text); m; m = pattern.exec(text)) {
    const start = m.index + m[0].length - 1;
    let depth = 0;
    let inString = false;
    for (let i = start; i < text.length; i += 1) {
      const c = text[i];
      if (inString) {
        if (c === '\\') i += 1;
        else if (c === '"') inString = false;
      } else if (c === '"') inString = true;
      else if (c === '[' || c === '{') depth += 1;
      else if (c === ']' || c === '}') {
        depth -= 1;
        if (depth === 0) {
          raw.set(m[1], text.slice(start, i + 1));
          break;
        }
      }
    }
  }
  return raw;
}

function componentOps(component) {
  const rawEvents = rawDigestEvents();
  const { projection, compactionSteps } = component;
  const json = (value) => JSON.stringify(value);
  const opt = (value) => (value == null ? undefined : value);
  const model = (input) => ({
    contextWindow: input.model?.contextWindow == null ? undefined : BigInt(input.model.contextWindow),
    fixedOverheadTokens: BigInt(input.model?.fixedOverheadTokens ?? 0),
    prepareAtPercent: input.model?.prepareAtPercent == null ? undefined : BigInt(input.model.prepareAtPercent),
  });
  const plan = (p) => p && {
    covered: Number(p.covered),
    checkpointTokens: Number(p.checkpointTokens),
    sourceTokens: Number(p.sourceTokens),
    replayTokens: Number(p.replayTokens),
    currentTokens: Number(p.currentTokens),
  };
  const failure = (f) => ({ tag: f.kind.replaceAll('_', '-'), val: f.message });
  const result = (r) => (r.error ? { error: r.error } : null);
  return {
    digest: (vector) => {
      const r = wit(() => projection.prefixDigests(rawEvents.get(vector.name) ?? json(vector.events)));
      return result(r) ?? r.value;
    },
    select_safe_prefix: { run: (input) => {
      const events = json(input.events);
      const prefix = wit(() => projection.selectSafePrefix(events, {
        currentTurn: opt(input.currentTurnId),
        reserveTailTokens: BigInt(input.reserveTailTokens ?? 0),
        reserveTailTurns: input.reserveTailTurns ?? 0,
      }));
      if (prefix.error) return { error: prefix.error };
      const cuts = wit(() => projection.safeBoundaries(events, opt(input.currentTurnId)));
      if (cuts.error) return { error: cuts.error };
      const p = prefix.value;
      return {
        prefix: p ? { end: Number(p.end), turnCount: Number(p.turnCount) } : null,
        safeBoundaries: Array.from(cuts.value, Number),
      };
    } },
    evaluate_replay: { run: (input) => {
      const [events, checkpoint] = [json(input.events), json(input.checkpoint)];
      const matched = wit(() => projection.matchCheckpoint(checkpoint, events));
      if (matched.error) return { error: matched.error };
      const decision = wit(() => projection.evaluateReplay({
        events, checkpoint, currentTurn: opt(input.currentTurnId), model: model(input), provider: opt(input.provider),
      }));
      if (decision.error) return { error: decision.error };
      const d = decision.value;
      return {
        match: matched.value.tag === 'ok' ? { covered: Number(matched.value.val) } : { mismatch: matched.value.val.code },
        decision: d.tag,
        code: d.tag === 'rejected' ? d.val.diagnostic.code : null,
        plan: plan(d.tag === 'rejected' ? d.val.plan : d.val) ?? null,
      };
    } },
    project: { run: (input) => {
      const r = wit(() => projection.project({
        events: json(input.events),
        currentTurn: opt(input.currentTurnId),
        checkpoint: input.checkpoint == null ? undefined : json(input.checkpoint),
        model: model(input),
        provider: opt(input.provider),
        failOpen: input.failOpen ?? false,
      }));
      return result(r) ?? uncalibrated(JSON.parse(r.value));
    } },
    validate_summary: { run: (input) => {
      try {
        const tokens = projection.validateSummary(input.text ?? '', finishReason(input.finish), BigInt(input.foldTokens ?? 0));
        return { estimatedTokens: Number(tokens) };
      } catch (error) {
        if (typeof error?.payload?.code === 'string') return { defect: error.payload.code };
        throw error;
      }
    } },
    compaction: { run: (input) => {
      const started = wit(() => compactionSteps.CompactionSession.start({
        trigger: input.trigger,
        events: json(input.events),
        currentTurn: opt(input.currentTurnId),
        checkpoint: input.checkpoint == null ? undefined : json(input.checkpoint),
        model: model(input),
        provider: input.provider,
        compactor: input.compactor,
        checkpointId: input.checkpointId ?? '',
        nowMs: BigInt(input.nowMs ?? 0),
        summarizerLabel: opt(input.summarizerLabel),
        circuitJson: input.circuit == null ? undefined : json(input.circuit),
      }));
      if (started.error) return { error: started.error };
      const session = started.value;
      const script = [...(input.script ?? [])];
      const effects = [];
      const steps = wit(() => {
        for (;;) {
          const step = session.poll();
          if (step.tag === 'done') return step.val;
          const effect = step.val;
          const entry = script.shift();
          if (!entry) return null;
          if (effect.tag === 'summarize') {
            const r = effect.val;
            effects.push({
              effect: 'summarize',
              request: JSON.parse(r.requestJson),
              previousSummary: r.previousSummary ?? null,
              foldStart: Number(r.foldStart),
              foldEnd: Number(r.foldEnd),
              targetTokens: Number(r.targetTokens),
            });
            if (entry.cancel) session.cancel();
            else if (entry.failure) session.resumeSummary({ tag: 'err', val: failure(entry.failure) });
            else if (entry.summary === 'extractive') {
              const context = { carried: JSON.parse(r.carriedEvents), replayed: JSON.parse(r.replayedEvents) };
              const text = api.extractiveSummary(r.previousSummary, JSON.parse(r.foldEvents), Number(r.targetTokens), context);
              session.resumeSummary({ tag: 'ok', val: { text, finish: { tag: 'stop' } } });
            } else {
              const answer = { text: entry.summary.text ?? '', finish: finishReason(entry.summary.finish) };
              session.resumeSummary({ tag: 'ok', val: answer });
            }
          } else if (effect.tag === 'compact-natively') {
            effects.push({ effect: 'compact_natively', request: JSON.parse(effect.val) });
            if (entry.cancel) session.cancel();
            else if (entry.failure) session.resumeNative({ tag: 'err', val: failure(entry.failure) });
            else session.resumeNative({ tag: 'ok', val: entry.native.map((item) => JSON.stringify(item)) });
          } else {
            effects.push({ effect: 'append_checkpoint', checkpoint: JSON.parse(effect.val) });
            const a = entry.append;
            session.resumeAppend(a === 'ok'
              ? { tag: 'ok', val: undefined }
              : { tag: 'err', val: { tag: a.conflict ? 'conflict' : 'failed', val: a.message } });
          }
        }
      });
      session[Symbol.dispose]?.();
      if (steps.error) return { error: steps.error };
      if (!steps.value) return { error: 'script_exhausted' };
      const done = steps.value;
      return { effects, outcome: JSON.parse(done.outcomeJson), circuit: JSON.parse(done.circuitJson) };
    } },
  };
}

// ----- replay -----------------------------------------------------------------------------

const PKG_OPS = {
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

const OPS = jco ? componentOps(jco) : PKG_OPS;
for (const vector of readVectors('digest.json').cases) {
  const { prefixDigests, digest, canonical } = vector;
  if (jco) check(`digest ${vector.name}`, OPS.digest(vector), prefixDigests);
  else check(`digest ${vector.name}`, digestCase(vector), { prefixDigests, digest, canonical });
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
const runtime = jco ? 'component (jco, node)' : 'node (pkg)';
console.log(`${runtime}: ${total - failed.length}/${total} vectors passed${note}`);
if (failed.length) {
  console.error(`${runtime} mismatches: ${failed.join(', ')}`);
  process.exit(1);
}
if (total < 150) {
  console.error(`only ${total} vectors replayed`);
  process.exit(1);
}
