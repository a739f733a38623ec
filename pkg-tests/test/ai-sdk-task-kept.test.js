// Issue 37: the agent's task must survive compaction after its turn is over. An AI SDK agent as
// pkg/README.md's Quick start builds it — `contextfold/ai-sdk` in `prepareStep`, the offline
// extractive summarizer — with the durable JSONL file store (reopened for every user turn, as an
// agent process started per message would), an 8,000-token window and a scripted ai@6 model
// running tool steps with 300-1,500-token build logs. The first turn carries the task (about 470
// characters, two rule sentences); later turns start with short follow-ups ("Now also handle
// ..."), so the compactions of those turns fold the task into the summary: it is no longer the
// live turn's opening message, which the projection replays verbatim. Before the extractive
// summarizer quoted the task whole (core 2158e30), it kept a 400-character clip and the task was
// missing from about half the requests.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generateText, stepCountIs, tool } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { getEncoding } from 'js-tiktoken';
import { z } from 'zod';
import { digestPrefix, estimateEvents, matchCheckpoint } from 'contextfold';
import { JsonlFileStore } from 'contextfold/stores/jsonl';
import { contextfold } from 'contextfold/ai-sdk';
import { toolPairs } from './helpers.js';

const encoding = getEncoding('o200k_base');
const WINDOW = 8000;
const SESSION = 'issue-37';
const RULE_MUST = 'You must keep the public API of `parse_expr` unchanged and run `cargo test -p parser` after every edit.';
const RULE_NEVER = 'Never edit files under vendor/ or change Cargo.lock by hand.';
const TASK = 'Fix the failing build: `cargo build` stops with a type error in the expression parser (src/parser/expr.rs), '
  + 'and the nightly CI job reports the same failure. Find where the mismatched types come from, fix the parser, '
  + `and report which crates were affected. ${RULE_MUST} ${RULE_NEVER} When the build passes, summarize the root cause.`;
/** Later user turns: each starts a new turn, so the task is no longer the live turn's head. */
const FOLLOW_UPS = [
  'Now also handle the lexer warnings in src/lexer.rs.',
  'Now also handle the failing doc tests in the parser crate.',
  'Now also handle the clippy lints the CI job reports.',
  'Now also handle the benchmark crate that does not compile.',
];
const STEPS_PER_TURN = 40; // 39 tool steps and a final answer

/** Tool output of 300-1,500 tokens: lines of a build log. */
function output(step) {
  const lines = 10 + ((step * 37) % 40);
  return Array.from({ length: lines }, (_, i) => `   Compiling crate_${step}_${i} v0.${i % 7}.${step} (src/module_${i}/parser_${step}.rs) error[E0${300 + ((i * step) % 300)}]`).join('\n');
}

const tools = {
  run_shell: tool({ inputSchema: z.object({ command: z.string() }), execute: async ({ command }) => `$ ${command}\n${output(Number(command.split('_').at(-1)))}` }),
};

/** The texts of a provider-level prompt (system contents, text parts, tool inputs and outputs). */
function promptTexts(prompt) {
  const texts = [];
  for (const message of prompt) {
    const parts = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
    for (const part of parts) {
      texts.push(part.text ?? (part.type === 'tool-call' ? JSON.stringify(part.input) : part.type === 'tool-result' ? JSON.stringify(part.output) : JSON.stringify(part)));
    }
  }
  return texts;
}

/** Estimated tokens of a text with the core's estimator. */
function coreTokens(text) {
  return estimateEvents([{ sessionId: 's', runId: 'r', turnId: 't', runtimeEventId: 'e', seq: 1, content: { type: 'system_note', text } }]);
}

/** A scripted ai@6 model: `STEPS_PER_TURN - 1` tool calls, then an answer; records every prompt. */
function scriptedModel(state) {
  return new MockLanguageModelV3({
    doGenerate: async (options) => {
      const texts = promptTexts(options.prompt);
      const tokens = texts.reduce((sum, text) => sum + encoding.encode(text).length + 3, 0);
      toolPairs(options.prompt); // throws on an unpaired call or result
      const joined = texts.join('\n');
      const summary = texts.find((text) => text.includes('## Goal')) ?? null;
      state.requests.push({
        turn: state.turn,
        tokens,
        afterCompaction: state.compactions.length > 0,
        summaryTokens: summary === null ? null : coreTokens(summary),
        hasTask: joined.includes(TASK),
        hasRules: joined.includes(RULE_MUST) && joined.includes(RULE_NEVER),
      });
      const step = state.turnStep;
      state.turnStep += 1;
      const last = step >= STEPS_PER_TURN - 1;
      const call = state.requests.length;
      const content = last
        ? [{ type: 'text', text: `Turn ${state.turn + 1} is done: the build passes.` }]
        : [{ type: 'tool-call', toolCallId: `call_${call}`, toolName: 'run_shell', input: JSON.stringify({ command: `cargo build -p crate_${call}` }) }];
      return { content, finishReason: { unified: last ? 'stop' : 'tool-calls', raw: undefined }, usage: { inputTokens: { total: tokens, noCache: tokens, cacheRead: 0, cacheWrite: undefined }, outputTokens: { total: 9, text: 9, reasoning: undefined } }, warnings: [] };
    },
  });
}

test('issue 37: an AI SDK agent over a JSONL store keeps the whole task in every request after compaction, across 5 user turns at 8,000 tokens', async () => {
  assert.ok(TASK.length >= 440 && TASK.length <= 500, `the task is about 470 characters (${TASK.length})`);
  const directory = mkdtempSync(path.join(tmpdir(), 'contextfold-issue37-'));
  const state = { turn: 0, turnStep: 0, requests: [], compactions: [] };
  const model = scriptedModel(state);
  let calibration = null;
  const stats = { compactions: 0, checkpoints: 0, failures: 0, overBudget: 0 };
  try {
    for (const [turn, content] of [TASK, ...FOLLOW_UPS].entries()) {
      state.turn = turn;
      state.turnStep = 0;
      // A durable store, opened again for every user message (the session lives on disk).
      const store = await JsonlFileStore.open({ directory, sessionId: SESSION });
      try {
        const folding = contextfold({
          store,
          model: { contextWindow: WINDOW },
          summarizer: 'extractive',
          calibration,
          onCompaction: (outcome) => state.compactions.push({ turn, outcome: outcome.outcome, reason: outcome.reason }),
        });
        const result = await generateText({
          model, tools, stopWhen: stepCountIs(STEPS_PER_TURN),
          messages: [{ role: 'user', content }], prepareStep: folding.prepareStep,
        });
        await folding.finish(result);
        assert.equal(result.steps.length, STEPS_PER_TURN);
        calibration = folding.calibration;
        for (const key of Object.keys(stats)) stats[key] += folding.stats[key];
      } finally {
        await store.close();
      }
    }

    // Every compaction recorded a checkpoint, durably: the files hold one per compaction, each
    // verifies against the stored events, and a reopened store recovers the last one.
    const store = await JsonlFileStore.open({ directory, sessionId: SESSION });
    let checkpoints;
    try {
      const events = store.log.events();
      assert.equal(events.length, 1 + FOLLOW_UPS.length + (STEPS_PER_TURN - 1) * 2 * (1 + FOLLOW_UPS.length) + (1 + FOLLOW_UPS.length), 'every message is stored once');
      checkpoints = readFileSync(path.join(directory, `${SESSION}.records.jsonl`), 'utf8').split('\n').filter((line) => line !== '')
        .map((line) => JSON.parse(line)).filter((line) => line.type === 'checkpoint').map((line) => line.record.payload);
      for (const checkpoint of checkpoints) {
        assert.equal(matchCheckpoint(checkpoint, events).covered, checkpoint.coverage.eventCount);
        assert.equal(checkpoint.coverage.sourceDigest, digestPrefix(events.slice(0, checkpoint.coverage.eventCount)));
      }
      assert.equal(store.checkpoint?.checkpointId, checkpoints.at(-1)?.checkpointId, 'the last checkpoint is recovered');
    } finally {
      await store.close();
    }

    const requests = state.requests;
    const after = requests.filter((r) => r.afterCompaction);
    const later = after.filter((r) => r.turn > 0);
    // The whole task is required wherever the summary in the request is at least twice the
    // task's size (its target was then at least that: the task took at most half of it);
    // otherwise both rule sentences are.
    const taskTokens = coreTokens(TASK);
    const wholeRequired = after.filter((r) => r.summaryTokens === null || r.summaryTokens >= 2 * taskTokens);
    const figures = {
      requests: requests.length,
      afterFirstCompaction: after.length,
      withTask: after.filter((r) => r.hasTask).length,
      withoutTask: after.filter((r) => !r.hasTask).length,
      laterTurnsWithTask: later.filter((r) => r.hasTask).length,
      laterTurnsWithoutTask: later.filter((r) => !r.hasTask).length,
      withoutRules: after.filter((r) => !r.hasRules).length,
      wholeTaskRequired: wholeRequired.length,
      compactions: state.compactions.length,
      compactionsInLaterTurns: state.compactions.filter((c) => c.turn > 0).length,
      recorded: state.compactions.filter((c) => c.outcome === 'recorded').length,
      checkpoints: checkpoints.length,
      maxRequestTokens: Math.max(...requests.map((r) => r.tokens)),
      overWindow: requests.filter((r) => r.tokens > WINDOW).length,
    };
    console.log(`ISSUE37_TASK_KEPT ${Object.entries(figures).map(([k, v]) => `${k}=${v}`).join(' ')} task_chars=${TASK.length} task_tokens=${taskTokens}`);

    assert.equal(requests.length, STEPS_PER_TURN * (1 + FOLLOW_UPS.length));
    assert.ok(figures.compactionsInLaterTurns > 0, 'compactions happen after the task stopped being the live head');
    assert.ok(later.length > 0, 'requests of later turns follow a compaction');
    assert.equal(figures.overWindow, 0, `every request fits the window (largest ${figures.maxRequestTokens} tokens)`);
    assert.equal(stats.overBudget, 0, 'no request went out over the history budget');
    assert.equal(stats.failures, 0, 'no compaction failed');
    assert.equal(stats.compactions, state.compactions.length);
    assert.ok(state.compactions.every((c) => c.outcome === 'recorded'), `every compaction recorded a checkpoint: ${JSON.stringify(state.compactions.filter((c) => c.outcome !== 'recorded'))}`);
    assert.equal(checkpoints.length, state.compactions.length, 'one durable checkpoint per compaction');
    assert.equal(figures.withoutRules, 0, `both rule sentences are in every request after the first compaction (missing from ${figures.withoutRules} of ${after.length})`);
    const missing = wholeRequired.filter((r) => !r.hasTask).length;
    assert.equal(missing, 0, `the whole task is in every request after the first compaction (missing from ${missing} of ${wholeRequired.length})`);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});
