// `contextfold/ai-sdk` with `backgroundPreparation` (issue 39) on Node 20 with ai@6: a tool loop
// whose model takes longer per step than the summarizer takes per summary, so the checkpoint
// prepared at the soft threshold is ready when the hard trigger fires. The step at the hard
// trigger must not call the summarizer; and a prepared checkpoint that no longer serves (another
// writer recorded one meanwhile, the window shrank) must be refused by the core and the
// compaction run in the foreground; a held checkpoint for an older tip is superseded by a newer
// preparation, and a provider overflow supersedes what was prepared; a preparation that fails
// must never reach the agent, and its malformed-input circuit still reaches the store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { APICallError, generateText, stepCountIs, tool, wrapLanguageModel } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';
import { compact, digestPrefix, matchCheckpoint } from 'contextfold';
import { MemoryStore } from 'contextfold/stores/memory';
import { contextfold } from 'contextfold/ai-sdk';

const TASK = 'Find every caller of `parse_case` in src/ and make `cargo test -p lexer` pass again.';
const WINDOW = 8000;
/** Each agent step: the model answers after this long (longer than a summary takes). */
const STEP_MS = 300;
/** Each summary: the summarizer answers after this long. */
const SUMMARY_MS = 150;
/** The window of the model the agent switches to: the prepared checkpoint with what followed it does not fit its budget, a summarizer request still does. */
const SMALL_WINDOW = 1500;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A tool output of about `chars` characters: grep lines of the step's search. */
function grepOutput(step, chars) {
  const line = (i) => `src/lexer/case_${step}_${i}.rs:${100 + i}: let token = parse_case(input, Mode::Strict${i % 7});\n`;
  let text = '';
  for (let i = 0; text.length < chars; i += 1) text += line(i);
  return text;
}

/** A valid summary (the template's sections) of about 300 tokens. */
function summaryText(n) {
  const done = Array.from({ length: 8 }, (_, i) => `- Searched src/lexer for callers of parse_case (batch ${n}.${i}); each grep found Mode::Strict call sites that still pass the old flag.`);
  return ['## Goal', `- ${TASK}`, '## Done and In Progress', ...done, '## Next Steps', '- Update the remaining call sites in src/lexer/case_*.rs, then run `cargo test -p lexer`.', '## Critical Context', '- parse_case(input, Mode) changed its signature; the tests fail to compile until every caller is updated.'].join('\n');
}

/**
 * A summarizer taking `SUMMARY_MS` per summary, counting its calls; `fail(n)` says whether the
 * n-th call (1-based) throws as an unavailable provider would.
 */
function slowSummarizer({ fail = () => false } = {}) {
  const calls = [];
  const fn = async (request, { signal }) => {
    calls.push(request.purpose);
    const n = calls.length;
    await sleep(SUMMARY_MS);
    if (signal?.aborted) throw Object.assign(new Error('aborted'), { name: 'AbortError' });
    if (fail(n)) throw Object.assign(new Error('503 Service Unavailable from the summarizer'), { statusCode: 503 });
    return { text: summaryText(n), finishReason: 'stop' };
  };
  return { fn, calls };
}

/** The agent's model: one tool call per step, answered after `STEP_MS` (unless `refuse()` says to refuse it as too long). */
function slowModel(refuse = () => false) {
  let step = 0;
  return new MockLanguageModelV3({
    doGenerate: async () => {
      await sleep(STEP_MS);
      if (refuse()) {
        throw new APICallError({ message: "This model's maximum context length is 8000 tokens", url: 'mock', requestBodyValues: {}, statusCode: 400, responseBody: '{"error":{"code":"context_length_exceeded"}}', isRetryable: false });
      }
      const n = step;
      step += 1;
      return {
        content: [{ type: 'tool-call', toolCallId: `call_${n}`, toolName: 'grep', input: JSON.stringify({ pattern: `case_${n}` }) }],
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage: { inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: undefined, text: undefined, reasoning: undefined } },
        warnings: [],
      };
    },
  });
}

/**
 * Runs the tool loop with `backgroundPreparation` until `stop(run)` says so (at most 60 steps).
 * `outputChars(step, run)`: the size of step `step`'s tool output; `beforeStep(run)` runs before
 * each `prepareStep`. Records, per step, the summarizer calls made while its `prepareStep` ran,
 * and every compaction with what it was told.
 */
async function agentLoop({ sessionId, summarizer, stop, outputChars = () => 2400, beforeStep = () => {}, refuse }) {
  const store = await MemoryStore.open({ sessionId });
  const run = { store, steps: [], compactions: [], settled: [] };
  run.folding = contextfold({
    store,
    model: { contextWindow: WINDOW },
    summarizer: summarizer.fn,
    backgroundPreparation: true,
    onCompaction: (outcome, info) => run.compactions.push({ step: run.steps.length, outcome, info }),
    onPreparation: (settled) => run.settled.push(settled),
  });
  const tools = {
    grep: tool({
      inputSchema: z.object({ pattern: z.string() }),
      execute: async ({ pattern }) => {
        const step = Number(pattern.split('_').at(-1));
        return grepOutput(step, await outputChars(step, run));
      },
    }),
  };
  const prepareStep = async (options) => {
    await beforeStep(run);
    const before = summarizer.calls.length;
    const started = Date.now();
    const result = await run.folding.prepareStep(options);
    run.steps.push({ summarizerCalls: summarizer.calls.length - before, ms: Date.now() - started, preparations: run.folding.preparations });
    return result;
  };
  const model = refuse ? wrapLanguageModel({ model: slowModel(() => refuse(run)), middleware: run.folding.overflowGuardV3 }) : slowModel();
  run.result = await generateText({
    model, tools, maxRetries: 0, prepareStep,
    stopWhen: [stepCountIs(60), () => stop(run)],
    messages: [{ role: 'user', content: TASK }],
  });
  await run.folding.awaitPreparation();
  return run;
}

/** The compactions' diagnostics with `code`. */
function diagnostics(entry, code) {
  return entry.outcome.diagnostics.filter((diagnostic) => diagnostic.code === code);
}

/** Every recorded checkpoint proves its prefix of the stored events. */
function assertCheckpointsVerify(store) {
  const events = store.log.events();
  for (const { payload } of store.snapshot().records) {
    assert.equal(matchCheckpoint(payload, events).covered, payload.coverage.eventCount);
    assert.equal(payload.coverage.sourceDigest, digestPrefix(events.slice(0, payload.coverage.eventCount)));
  }
}

test('background preparation: the step at the hard trigger adopts the checkpoint prepared meanwhile and calls no summarizer', async () => {
  const summarizer = slowSummarizer();
  const run = await agentLoop({ sessionId: 'bg-used', summarizer, stop: (r) => r.compactions.length > 0 });
  const { store, folding, compactions } = run;
  assert.equal(compactions.length, 1, 'the hard trigger fired once');
  const [hard] = compactions;
  assert.equal(hard.outcome.outcome, 'recorded', JSON.stringify(hard.outcome));
  assert.equal(diagnostics(hard, 'prepared_checkpoint_used').length, 1, JSON.stringify(hard.outcome.diagnostics));
  assert.equal(hard.info.preparation, 'held', 'the preparation had finished between steps');
  assert.equal(hard.info.summarizerTokens, 0);
  // The one summary was written in the background, before the hard trigger: its step called
  // no summarizer.
  assert.equal(summarizer.calls.length, 1);
  const hardStep = run.steps[hard.step];
  assert.equal(hardStep.summarizerCalls, 0);
  assert.ok(run.steps.every((step) => step.summarizerCalls === 0), 'no step waited for a summary');
  const stats = folding.preparations;
  assert.deepEqual(
    { started: stats.started, prepared: stats.prepared, used: stats.used, wasted: stats.wasted, failed: stats.failed, held: stats.held },
    { started: 1, prepared: 1, used: 1, wasted: 0, failed: 0, held: 0 },
  );
  assert.ok(stats.tokens > 0 && stats.usedTokens === stats.tokens && stats.wastedTokens === 0);
  assert.deepEqual(run.settled.map((settled) => settled.fate), ['used']);
  assert.equal(store.checkpoint.checkpointId, hard.outcome.checkpoint.checkpointId);
  assert.ok(store.checkpoint.checkpointId.startsWith('cp-prepared-'));
  assert.ok(folding.lastProjection.fits, 'the request after the adoption fits');
  assertCheckpointsVerify(store);
  console.log(`AISDK_BACKGROUND used steps=${run.steps.length} hard_step=${hard.step} hard_step_ms=${run.steps[hard.step].ms} summarizer_calls=${summarizer.calls.length} prepared_tokens=${stats.tokens}`);
  await store.close();
});

test('background preparation: a checkpoint another writer recorded meanwhile makes the prepared one refused; the compaction runs in the foreground', async () => {
  const summarizer = slowSummarizer();
  let other = null;
  const run = await agentLoop({
    sessionId: 'bg-race',
    summarizer,
    stop: (r) => r.compactions.length > 0,
    // Once a checkpoint is held, another writer compacts the same store (a manual compaction),
    // and this step's result is large: the hard trigger fires before any step sees the new tip.
    outputChars: async (step, r) => {
      if (other || r.folding.preparations.held !== 1) return 2400;
      other = await compact({ events: r.store.log, checkpoint: r.store.checkpoint, model: { contextWindow: WINDOW }, trigger: 'manual', summarizerLabel: 'extractive' }, {
        summarize: async (request, { extractiveSummary }) => ({ text: extractiveSummary(), finishReason: 'stop' }),
        appendCheckpoint: (checkpoint) => r.store.appendCheckpoint(checkpoint),
      });
      assert.equal(other.outcome, 'recorded');
      return 22_000;
    },
  });
  const { store, folding, compactions } = run;
  assert.ok(other, 'the other writer recorded a checkpoint');
  assert.equal(compactions.length, 1);
  const [hard] = compactions;
  assert.equal(diagnostics(hard, 'prepared_checkpoint_used').length, 0);
  const [refused] = diagnostics(hard, 'prepared_checkpoint_rejected');
  assert.ok(refused, JSON.stringify(hard.outcome.diagnostics));
  assert.ok(refused.detail.includes(other.checkpoint.checkpointId), refused.detail);
  // The foreground compaction ran: a second summary, written in the step that needed it.
  assert.equal(summarizer.calls.length, 2);
  assert.equal(run.steps[hard.step].summarizerCalls, 1);
  assert.ok(hard.info.summarizerTokens > 0);
  assert.equal(hard.outcome.outcome, 'recorded', JSON.stringify(hard.outcome));
  assert.equal(hard.outcome.checkpoint.previousCheckpointId, other.checkpoint.checkpointId);
  const stats = folding.preparations;
  assert.deepEqual({ prepared: stats.prepared, used: stats.used, wasted: stats.wasted, held: stats.held }, { prepared: 1, used: 0, wasted: 1, held: 0 });
  assert.equal(stats.wastedTokens, stats.tokens);
  assert.deepEqual(run.settled.map((settled) => settled.fate), ['wasted']);
  assertCheckpointsVerify(store);
  await store.close();
});

test('background preparation: after a switch to a much smaller window the prepared checkpoint is judged against the new budget and refused', async () => {
  const summarizer = slowSummarizer();
  let switched = false;
  const run = await agentLoop({
    sessionId: 'bg-window',
    summarizer,
    stop: (r) => r.compactions.length > 0,
    beforeStep: (r) => {
      if (!switched && r.folding.preparations.held === 1) {
        r.folding.model = { contextWindow: SMALL_WINDOW };
        switched = true;
      }
    },
  });
  const { folding, compactions } = run;
  assert.ok(switched);
  assert.equal(compactions.length, 1);
  const [hard] = compactions;
  assert.equal(diagnostics(hard, 'prepared_checkpoint_used').length, 0);
  const [refused] = diagnostics(hard, 'prepared_checkpoint_rejected');
  assert.ok(refused, JSON.stringify(hard.outcome.diagnostics));
  assert.match(refused.detail, /over the \d+ budget/);
  assert.equal(refused.detail.includes(`over the ${hard.outcome.tokens.budget} budget`), true, refused.detail);
  assert.ok(summarizer.calls.length >= 2, 'the foreground compaction called the summarizer');
  assert.ok(run.steps[hard.step].summarizerCalls >= 1);
  assert.equal(folding.preparations.wasted, 1);
  assert.equal(folding.preparations.used, 0);
  await run.store.close();
});

test('background preparation: a summarizer failing in the background is never seen by the agent', async () => {
  // The first summary (the preparation's) fails; later ones succeed.
  const summarizer = slowSummarizer({ fail: (n) => n === 1 });
  const run = await agentLoop({ sessionId: 'bg-failed', summarizer, stop: (r) => r.folding.preparations.prepared > 0 });
  const { folding } = run;
  const stats = folding.preparations;
  assert.equal(stats.failed, 1);
  assert.equal(stats.started, 2, 'the next step at the soft threshold prepared again');
  assert.equal(stats.prepared, 1);
  assert.deepEqual(run.settled.map((settled) => [settled.fate, settled.detail]), [['failed', 'provider_unavailable']]);
  // Every step went on: none threw, none compacted, none waited for a summary.
  assert.equal(run.result.steps.length, run.steps.length);
  assert.equal(folding.stats.failures, 0);
  assert.equal(run.compactions.length, 0);
  assert.ok(run.steps.every((step) => step.summarizerCalls === 0));
  assert.equal(run.store.snapshot().records.length, 0, 'a preparation records nothing');
  await run.store.close();
});

test('background preparation: a malformed summary in the background still arms the session circuit', async () => {
  const calls = [];
  const summarizer = {
    calls,
    fn: async (request) => {
      calls.push(request.purpose);
      await sleep(20);
      return { text: 'Sure! I summarized the session.', finishReason: 'stop' };
    },
  };
  const run = await agentLoop({ sessionId: 'bg-malformed', summarizer, stop: (r) => r.folding.preparations.failed > 0 });
  const stats = run.folding.preparations;
  assert.equal(stats.failed, 1);
  assert.match(run.settled[0].detail, /^malformed_summary_/);
  assert.equal(calls.length, 2, 'the summary and its one repair');
  assert.equal(run.store.circuit?.fingerprints?.length, 1, 'the preparation\'s circuit was merged into the store\'s');
  await run.store.close();
});

test('background preparation: a held checkpoint that no longer succeeds the tip is superseded by a newer preparation, which the hard trigger adopts', async () => {
  const summarizer = slowSummarizer();
  let other = null;
  const run = await agentLoop({
    sessionId: 'bg-newer',
    summarizer,
    stop: (r) => r.compactions.length > 0,
    // Once a checkpoint is held, another writer folds everything: the next steps fit again, and
    // at the soft threshold the held checkpoint (which succeeds no longer the tip) is replaced.
    outputChars: async (step, r) => {
      if (!other && r.folding.preparations.held === 1) {
        other = await compact({ events: r.store.log, checkpoint: r.store.checkpoint, model: { contextWindow: WINDOW }, trigger: 'manual', summarizerLabel: 'extractive' }, {
          summarize: async (request, { extractiveSummary }) => ({ text: extractiveSummary(), finishReason: 'stop' }),
          appendCheckpoint: (checkpoint) => r.store.appendCheckpoint(checkpoint),
        });
      }
      return 2400;
    },
  });
  const { folding, compactions } = run;
  assert.equal(other?.outcome, 'recorded');
  const stats = folding.preparations;
  assert.deepEqual(
    { started: stats.started, prepared: stats.prepared, superseded: stats.superseded, wasted: stats.wasted, used: stats.used },
    { started: 2, prepared: 2, superseded: 1, wasted: 1, used: 1 },
  );
  assert.deepEqual(run.settled.map((settled) => settled.fate), ['superseded', 'used']);
  const [hard] = compactions;
  assert.equal(diagnostics(hard, 'prepared_checkpoint_used').length, 1, JSON.stringify(hard.outcome.diagnostics));
  assert.equal(hard.outcome.checkpoint.previousCheckpointId, other.checkpoint.checkpointId);
  assert.equal(run.steps[hard.step].summarizerCalls, 0);
  assertCheckpointsVerify(run.store);
  await run.store.close();
});

test('background preparation: a provider overflow supersedes what was prepared; the overflow compaction runs in the foreground', async () => {
  const summarizer = slowSummarizer();
  let refused = 0;
  const run = await agentLoop({
    sessionId: 'bg-overflow',
    summarizer,
    stop: (r) => r.compactions.length > 0,
    // The provider refuses the first request sent while a checkpoint is held.
    refuse: (r) => {
      if (refused > 0 || r.folding.preparations.held !== 1) return false;
      refused += 1;
      return true;
    },
  });
  const { folding, compactions } = run;
  assert.equal(refused, 1);
  assert.equal(folding.stats.overflows, 1);
  const [overflow] = compactions;
  assert.equal(overflow.info.trigger, 'overflow');
  assert.equal(diagnostics(overflow, 'prepared_checkpoint_used').length, 0);
  assert.ok(overflow.info.summarizerTokens > 0, 'the overflow compaction called the summarizer');
  const stats = folding.preparations;
  assert.deepEqual({ prepared: stats.prepared, superseded: stats.superseded, wasted: stats.wasted, held: stats.held }, { prepared: 1, superseded: 1, wasted: 1, held: 0 });
  assert.deepEqual(run.settled.map((settled) => settled.fate), ['superseded']);
  await run.store.close();
});
