// Drives one long agent turn through the npm package as an agent host would: the task and its
// live head appended first, then one model step at a time; after each step the host evaluates
// mid-turn (project; compact when it does not fit: at most one transaction a step) and builds
// the next request with projectForRequest(). Shared by test/long-turns*.test.js and
// bench/long-turns.js.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import { EventLog, compact, estimateEvents, matchCheckpoint } from 'contextfold';
import { repoRoot } from './helpers.js';

export const WINDOWS = [4000, 8000, 16000, 128000];
const PROVIDER = { provider: 'local', connectionSlug: 'c', modelId: 'm' };
const HEAD_TYPES = new Set(['user_text', 'system_note', 'runtime_note']);

/** Parses RuntimeEvent JSON Lines. */
export function readJsonl(file) {
  return readFileSync(file, 'utf8').split('\n').filter((line) => line.trim() !== '').map((line) => JSON.parse(line));
}

/** The committed real trajectories (`tests/trajectories/<source>/*.jsonl`). */
export function trajectoryFiles() {
  const root = path.join(repoRoot, 'tests', 'trajectories');
  const files = [];
  for (const source of readdirSync(root, { withFileTypes: true })) {
    if (!source.isDirectory()) continue;
    for (const file of readdirSync(path.join(root, source.name))) {
      if (file.endsWith('.jsonl')) files.push(path.join(root, source.name, file));
    }
  }
  return files.sort();
}

/** Seeded sessions written by `gen-long-turn` (scripts/test-npm.sh writes them). */
export function generatedFiles(dir = process.env.LONG_TURN_DIR ?? path.join(repoRoot, 'target', 'long-turns')) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort().map((f) => path.join(dir, f));
}

/** Consecutive events of one model step (results join the step that made their calls). */
function steps(events) {
  const out = [];
  for (const event of events) {
    const last = out.at(-1)?.at(-1);
    const result = event.content.type === 'tool_result' || event.content.type === 'hosted_tool_result';
    const starts = last === undefined
      || (!result && (event.responseId === undefined || event.responseId === null || last.responseId !== event.responseId));
    if (starts) out.push([]);
    out.at(-1).push(event);
  }
  return out;
}

/** A host whose summarizer is the package's extractive summary, over an in-memory ledger. */
function extractiveHost(all) {
  const ledger = [];
  return {
    ledger,
    async summarize(_request, { extractiveSummary }) {
      return { text: extractiveSummary(), finishReason: 'stop' };
    },
    async appendCheckpoint(checkpoint) {
      ledger.push(structuredClone(checkpoint));
    },
  };
}

/**
 * Drives the last turn of `events` (its task: the turn's first user text) at `window` tokens. `windowed`: present
 * the summarizer as one with an input window (no `extractive` label), like an LLM.
 * Returns the figures and throws on any broken guarantee.
 */
export async function driveLongTurn(events, window, { windowed = false } = {}) {
  // The long turn is the session's last; its task is the turn's first user text.
  const turnId = events.at(-1).turnId;
  const taskIndex = events.findIndex((e) => e.turnId === turnId && e.content.type === 'user_text');
  const task = events[taskIndex];
  const turnStart = events.findIndex((e) => e.turnId === turnId);
  const head = events.slice(turnStart).filter((e) => e.turnId === turnId && HEAD_TYPES.has(e.content.type));
  const headTokens = estimateEvents(head);
  const model = { contextWindow: window };
  const log = new EventLog();
  const all = []; // the host's own copy, as an agent keeps its history
  const host = extractiveHost(all);
  const run = { steps: 0, compactions: 0, checkpoints: 0, maxRequest: 0, minimumExceeded: 0, overBudget: 0, ms: 0 };
  const started = performance.now();
  let checkpoint = null;
  try {
    log.append(events.slice(0, taskIndex + 1));
    all.push(...events.slice(0, taskIndex + 1));
    for (const step of steps(events.slice(taskIndex + 1))) {
      run.steps += 1;
      log.append(step);
      all.push(...step);
      const options = { currentTurnId: turnId, model, provider: PROVIDER, checkpoint, format: 'neutral' };
      let last = null;
      if (!log.project(options).fits) {
        last = await compact({
          events: log, // the EventLog: its events are not sent across again
          checkpoint,
          model,
          provider: PROVIDER,
          trigger: 'mid-turn',
          currentTurnId: turnId,
          summarizerLabel: windowed ? undefined : 'extractive',
          checkpointId: `cp-${run.steps}`,
          nowMs: 1_800_000_000_000 + run.steps,
        }, host);
        run.compactions += 1;
        if (last.checkpoint) checkpoint = last.checkpoint;
        if (last.diagnostics.some((d) => d.code === 'minimum_context_exceeds_budget')) run.minimumExceeded += 1;
      }
      const sent = log.projectForRequest({ ...options, checkpoint });
      run.maxRequest = Math.max(run.maxRequest, sent.estimatedTokens);
      if (!JSON.stringify(sent.messages).includes(JSON.stringify(task.content.text).slice(1, -1))) {
        throw new Error(`window ${window}, step ${run.steps}: the task is not in the request`);
      }
      if (!sent.fits) {
        // Allowed only with a typed reason when the live head (system prompt and task, replayed
        // verbatim) leaves less than a third of the budget.
        const typed = run.minimumExceeded > 0 || last?.reason === 'context_budget_exhausted';
        if (!typed || headTokens * 3 < sent.historyBudget * 2) {
          throw new Error(`window ${window}, step ${run.steps}: request of ${sent.estimatedTokens} tokens over ${sent.historyBudget} (head ${headTokens}, last ${last?.outcome}/${last?.reason})`);
        }
        run.overBudget += 1;
      }
    }
    for (const recorded of host.ledger) {
      const { covered } = matchCheckpoint(recorded, all);
      if (covered !== recorded.coverage.eventCount) throw new Error(`${recorded.checkpointId} does not verify`);
      run.checkpoints += 1;
    }
  } finally {
    log.free();
  }
  run.ms = Math.round(performance.now() - started);
  return run;
}

/** One `LONG_TURN` report line (the same shape as the native test's). */
export function reportLine(source, window, summarizer, run) {
  return `LONG_TURN runtime=npm source=${source} window=${window} summarizer=${summarizer} steps=${run.steps} compactions=${run.compactions} checkpoints=${run.checkpoints} max_request_tokens=${run.maxRequest} minimum_exceeded=${run.minimumExceeded} over_budget_steps=${run.overBudget} ms=${run.ms}`;
}

/**
 * The seeded generated sessions at each of `windows`: every request fits (the windowed
 * summarizer at 8k too, or a typed reason says why not), the task alone fits, small windows
 * compact. The windows are split over test files so that Node runs them side by side.
 */
export async function checkGeneratedAt(windows) {
  const files = generatedFiles();
  assert.ok(files.length >= 1, 'scripts/test-npm.sh writes the generated sessions (LONG_TURN_DIR)');
  for (const file of files) {
    const events = readJsonl(file);
    for (const window of windows) {
      // The windowed summarizer (rolling steps, like an LLM) at 8k; bench/long-turns.js runs
      // it at every window, with 1,000-step sessions.
      for (const windowed of window === 8000 ? [false, true] : [false]) {
        const run = await driveLongTurn(events, window, { windowed });
        console.log(reportLine(path.basename(file, '.jsonl'), window, windowed ? 'windowed' : 'extractive', run));
        assert.equal(run.minimumExceeded, 0, 'the task alone fits every window');
        if (!windowed) assert.equal(run.overBudget, 0, 'every request fits');
        assert.ok(window > 16000 || run.checkpoints > 0, 'small windows compact');
      }
    }
  }
}
