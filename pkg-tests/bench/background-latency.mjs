// What the npm AI SDK adapter's step hook adds to an agent step that needs a compaction,
// foreground only against `backgroundPreparation: true` (issue 39): the native bench
// (host/tests/quality/background_latency.rs) for `contextfold/ai-sdk`, with real timers.
//
// The real long trajectories (the same rule: the task turn of tests/trajectories/*/*.jsonl has at
// least 50 model steps, steps as host/tests/quality_support's `step_ranges`) replayed through
// `folding.prepareStep` as pkg/ as built by scripts/build-pkg.sh runs it, called the way ai@6's
// `generateText` calls it (`await prepareStep({ model, steps, stepNumber, messages })`, the
// conversation so far; `model` a language model of the `ai` package): one call for the task turn,
// its input first, then one step per model step, each after a model call of
// BENCH_MODEL_LATENCY_MS (default 2500; a `setTimeout`). The summarizer answers the extractive
// summary (the offline one bench/quality.mjs uses, `extractiveSummary` of the request's events)
// BENCH_SUMMARIZER_LATENCY_MS (default 2000) after it is called. Each step reports the previous
// request's usage as the provider would if the estimator counted exactly (its `uncalibratedTokens`;
// reporting the calibrated estimate instead would feed the calibration its own margin back, a
// ratio rising every step), so the calibration settles at its margin over 1.0. A step's added latency: the wall-clock time (`performance.now()`) its `prepareStep`
// took, for the steps at which a compaction was needed; tagged `h` when a finished preparation
// was held as the step began, `f` when one was in flight, `n` when none. BENCH_PREPARE_AT_PERCENT
// sets the soft threshold (default: the core's).
//
// Every trajectory × window × mode runs in a child process of its own (`--run`), all at once by
// default (`--jobs`): they sleep nearly all the time, and no run's wasm compute sits on another's
// event loop. Prints one `LATENCY runtime=npm ...` line per run (bench/background.sh's format),
// then a table per window and mode. Exits 1 when a background row misses the goal (the steps with
// a finished preparation: p95 at most GOAL_HELD_P95_MS; wasted at most GOAL_WASTED_PERCENT of the
// summarizer tokens) or found no finished preparation at all. BENCH_BACKGROUND_PREPARATION=0 runs
// the background rows with the option off (the proof that the bench can fail).
//
//   cd pkg-tests && node bench/background-latency.mjs [--windows 8000,16000]
//       [--modes foreground,background] [--sources WORD] [--jobs N]
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Issue 39: p95 of the steps that found a finished preparation, and the wasted share. */
const GOAL_HELD_P95_MS = 50;
const GOAL_WASTED_PERCENT = 10;
/** Trajectories whose task turn has fewer model steps are left out (the native rule). */
const MIN_STEPS = 50;

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : fallback;
};
const envMs = (name, fallback) => Number(process.env[name] ?? fallback);
const summarizerMs = envMs('BENCH_SUMMARIZER_LATENCY_MS', 2000);
const modelMs = envMs('BENCH_MODEL_LATENCY_MS', 2500);
const softPercent = process.env.BENCH_PREPARE_AT_PERCENT;
const self = fileURLToPath(import.meta.url);
const root = path.resolve(path.dirname(self), '..', '..', 'tests', 'trajectories');

function loadEvents(file) {
  return readFileSync(path.join(root, file), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
}

const TURN_TEXT = new Set(['user_text', 'system_note', 'runtime_note']);

/**
 * The model steps of `events` as `[start, end)` index pairs: consecutive events of one response
 * with the results of its calls; a user text or note is a step of its own (`step_ranges`).
 */
function stepRanges(events) {
  const out = [];
  events.forEach((event, index) => {
    const isResult = event.content.type === 'tool_result' || event.content.type === 'hosted_tool_result';
    const previous = events[index - 1];
    const joins = index > 0 && out.length > 0 && (isResult || (event.responseId != null
      && previous.responseId === event.responseId && !TURN_TEXT.has(previous.content.type)));
    if (joins) out.at(-1)[1] = index + 1;
    else out.push([index, index + 1]);
  });
  return out;
}

/** The task (the first user text, `task_index` of `first_task_turn`) and the steps after it. */
function taskSteps(events) {
  const task = events.findIndex((e) => e.content.type === 'user_text');
  return { task, steps: stepRanges(events.slice(task + 1)) };
}

/** Nearest rank, as bench/background.sh. */
function rank(values, percent) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.min(sorted.length, Math.ceil((sorted.length * percent) / 100))) - 1];
}

function abortable(ms, signal) {
  return new Promise((resolve, reject) => {
    const aborted = () => Object.assign(new Error('aborted'), { name: 'AbortError' });
    if (signal?.aborted) return reject(aborted());
    const onAbort = () => {
      clearTimeout(timer);
      reject(aborted());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** One trajectory at one window in one mode; prints its `LATENCY` line. */
async function runOne(file, window, mode) {
  const { extractiveSummary, project } = await import('contextfold');
  const { MemoryStore } = await import('contextfold/stores/memory');
  const { contextfold } = await import('contextfold/ai-sdk');
  const { MockLanguageModelV3 } = await import('ai/test');
  const events = loadEvents(file);
  const { task, steps } = taskSteps(events);
  // The conversation as the agent loop hands it over after each step: the messages of the log up
  // to that step's end (each a prefix of the next, checked).
  const messagesOf = (end) => project({ events: events.slice(0, end), model: { contextWindow: 100_000_000 }, format: 'ai-sdk' }).messages;
  const all = messagesOf(events.length);
  const counts = [task + 1, ...steps.map(([, end]) => task + 1 + end)].map((end) => {
    const messages = messagesOf(end);
    if (JSON.stringify(messages) !== JSON.stringify(all.slice(0, messages.length))) {
      throw new Error(`${file}: the messages up to event ${end} are not a prefix of the whole conversation`);
    }
    return messages.length;
  });

  const store = await MemoryStore.open({ sessionId: events[0].sessionId });
  // The summarizer: the extractive summary of the request's events, answered `summarizerMs` after
  // the call (its own computation included in that time).
  const summarizer = async (request, { signal } = {}) => {
    const started = performance.now();
    const log = store.log.events();
    const pick = (indexes) => indexes.map((i) => log[i]).filter(Boolean);
    const text = extractiveSummary(request.previousSummary, log.slice(request.fold.start, request.fold.end), request.targetTokens, {
      carried: pick(request.carried),
      replayed: pick(request.replayedHead),
    });
    await abortable(Math.max(0, summarizerMs - (performance.now() - started)), signal);
    return { text, finishReason: 'stop' };
  };
  const background = mode === 'background' && process.env.BENCH_BACKGROUND_PREPARATION !== '0';
  let compaction = null;
  const folding = contextfold({
    store,
    model: { contextWindow: window, ...(softPercent ? { prepareAtPercent: Number(softPercent) } : {}) },
    summarizer,
    backgroundPreparation: background,
    onCompaction: (outcome, info) => {
      compaction = { outcome, info };
    },
  });
  const model = new MockLanguageModelV3({ provider: 'replay', modelId: 'trajectory' });
  const stepResults = [];
  let foregroundTokens = 0;
  /** Why prepared checkpoints were refused when needed (`prepared_checkpoint_rejected`), by reason code. */
  const refused = new Map();

  /** One `prepareStep`, timed; `{ ms, tag }` when it compacted, else null. */
  const step = async (stepNumber) => {
    const options = { model, steps: [...stepResults], stepNumber, messages: all.slice(0, counts[stepNumber]), experimental_context: undefined };
    const heldAtStart = folding.preparations.held > 0;
    compaction = null;
    const started = performance.now();
    await folding.prepareStep(options);
    const ms = performance.now() - started;
    const inputTokens = folding.lastProjection.uncalibratedTokens;
    stepResults.push({ stepNumber, usage: { inputTokens, outputTokens: 0, totalTokens: inputTokens } });
    if (!compaction) return null;
    foregroundTokens += compaction.info.summarizerTokens;
    const rejection = compaction.outcome.diagnostics?.find((d) => d.code === 'prepared_checkpoint_rejected');
    if (rejection) {
      // The detail ends with the core's reason code in parentheses: `(checkpoint_over_budget)`.
      const why = /\(([a-z_]+)\)\s*$/.exec(String(rejection.detail ?? ''))?.[1] ?? 'other';
      refused.set(why, (refused.get(why) ?? 0) + 1);
    }
    const state = compaction.info.preparation;
    const tag = state === 'held' && heldAtStart ? 'h' : state === 'none' ? 'n' : 'f';
    return { ms, tag };
  };

  // The call's input (the task): not a model step, as in the native bench (reported apart).
  const callStart = await step(0);
  const waited = [];
  for (let k = 1; k < counts.length; k += 1) {
    await abortable(modelMs); // The model writes this step.
    const result = await step(k);
    if (result) waited.push(`${result.ms.toFixed(1)}${result.tag}`);
  }
  await folding.awaitPreparation();
  const p = folding.preparations;
  const fields = {
    runtime: 'npm',
    source: file.replace(/\.jsonl$/, ''),
    window,
    mode,
    soft: softPercent ?? 'default',
    steps: steps.length,
    summarizer_ms: summarizerMs,
    model_ms: modelMs,
    started: p.started,
    prepared: p.prepared,
    used: p.used,
    superseded: p.superseded,
    wasted: p.wasted + p.held,
    failed: p.failed,
    preparation_tokens: p.tokens,
    wasted_tokens: p.wastedTokens + p.heldTokens,
    foreground_tokens: foregroundTokens,
    refused: refused.size ? [...refused].map(([why, n]) => `${why}:${n}`).join(',') : '-',
    call_start: callStart ? `${callStart.ms.toFixed(1)}${callStart.tag}` : '-',
    waited: waited.length ? waited.join(',') : '-',
  };
  console.log(`LATENCY ${Object.entries(fields).map(([k, v]) => `${k}=${v}`).join(' ')}`);
  await store.close();
}

/** Runs `command` per run, `jobs` at once; resolves the stdout of each. */
async function inChildren(runs, jobs) {
  const outputs = new Array(runs.length);
  let next = 0;
  const worker = async () => {
    while (next < runs.length) {
      const index = next++;
      const [file, window, mode] = runs[index];
      const started = Date.now();
      outputs[index] = await new Promise((resolve, reject) => {
        const child = spawn(process.execPath, [self, '--run', file, String(window), mode], { stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        child.stdout.on('data', (chunk) => { out += chunk; });
        child.on('error', reject);
        child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${file} ${window} ${mode}: exit ${code}`))));
      });
      process.stdout.write(outputs[index]);
      console.error(`${file} at ${window}, ${mode}: ${Math.round((Date.now() - started) / 1000)} s`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(jobs, runs.length) }, worker));
  return outputs;
}

function parseLatency(text) {
  const match = text.match(/LATENCY((?: [\w@-]+=\S+)+)/);
  return match ? Object.fromEntries(match[1].trim().split(' ').map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)])) : null;
}

/** Per window and mode: the steps that needed a compaction, their latencies, the preparations. */
function summarize(lines) {
  const ms = (value) => (value === null ? '-' : value.toFixed(0));
  const rows = [];
  console.log('\n| window | mode | steps | steps needing a compaction | p50 ms | p95 ms | max ms | with a finished preparation | their p50 ms | their p95 ms | their max ms | prepared | used | superseded | wasted | failed | wasted share of summarizer tokens | refused when needed |');
  console.log('| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
  for (const window of [...new Set(lines.map((f) => Number(f.window)))].sort((a, b) => a - b)) {
    for (const mode of ['foreground', 'background']) {
      const fs = lines.filter((f) => Number(f.window) === window && f.mode === mode);
      if (fs.length === 0) continue;
      const waited = fs.flatMap((f) => (f.waited === '-' ? [] : f.waited.split(',')));
      const every = waited.map((w) => Number(w.slice(0, -1)));
      const held = waited.filter((w) => w.endsWith('h')).map((w) => Number(w.slice(0, -1)));
      const total = (key) => fs.reduce((sum, f) => sum + Number(f[key]), 0);
      const spent = total('preparation_tokens') + total('foreground_tokens');
      const share = spent ? (100 * total('wasted_tokens')) / spent : null;
      const maxOf = (values) => (values.length ? Math.max(...values) : null);
      const reasons = new Map();
      for (const [why, n] of fs.flatMap((f) => (f.refused && f.refused !== '-' ? f.refused.split(',') : [])).map((r) => r.split(':'))) {
        reasons.set(why, (reasons.get(why) ?? 0) + Number(n));
      }
      const refused = reasons.size ? [...reasons].map(([why, n]) => `${n} ${why}`).join(', ') : '-';
      console.log(`| ${window} | ${mode} | ${total('steps')} | ${every.length} | ${ms(rank(every, 50))} | ${ms(rank(every, 95))} | ${ms(maxOf(every))} | ${held.length} | ${ms(rank(held, 50))} | ${ms(rank(held, 95))} | ${ms(maxOf(held))} | ${total('prepared')} | ${total('used')} | ${total('superseded')} | ${total('wasted')} | ${total('failed')} | ${share === null ? '-' : `${share.toFixed(1)}%`} | ${refused} |`);
      rows.push({ window, mode, heldP95: rank(held, 95), held: held.length, share });
    }
  }
  return rows;
}

if (args[0] === '--run') {
  await runOne(args[1], Number(args[2]), args[3]);
} else {
  const windows = option('--windows', '8000,16000').split(',').map(Number);
  const modes = option('--modes', 'foreground,background').split(',');
  const word = option('--sources', '');
  const files = readdirSync(root, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .flatMap((d) => readdirSync(path.join(root, d.name)).filter((f) => f.endsWith('.jsonl')).sort().map((f) => path.join(d.name, f)))
    .filter((file) => file.includes(word));
  const long = files.map((file) => ({ file, steps: taskSteps(loadEvents(file)).steps.length })).filter((t) => t.steps >= MIN_STEPS);
  // The longest first, so that with fewer jobs than runs the last to start are the shortest.
  long.sort((a, b) => b.steps - a.steps);
  console.error(`${long.length} trajectories with at least ${MIN_STEPS} steps: ${long.map((t) => `${t.file} (${t.steps})`).join(', ')}; summarizer ${summarizerMs} ms, model ${modelMs} ms`);
  const runs = long.flatMap(({ file }) => windows.flatMap((window) => modes.map((mode) => [file, window, mode])));
  const outputs = await inChildren(runs, Number(option('--jobs', String(runs.length))));
  const rows = summarize(outputs.map(parseLatency).filter(Boolean));
  let failed = false;
  for (const row of rows.filter((r) => r.mode === 'background')) {
    const met = row.held > 0 && row.heldP95 <= GOAL_HELD_P95_MS && (row.share ?? 0) <= GOAL_WASTED_PERCENT;
    failed ||= !met;
    console.log(`GOAL runtime=npm window=${row.window} held_steps=${row.held} held_p95_ms=${row.heldP95 === null ? '-' : row.heldP95.toFixed(1)} (goal <= ${GOAL_HELD_P95_MS}) wasted_share=${row.share === null ? '-' : row.share.toFixed(1)}% (goal <= ${GOAL_WASTED_PERCENT}%): ${met ? 'met' : 'missed'}`);
  }
  process.exitCode = failed ? 1 : 0;
}
