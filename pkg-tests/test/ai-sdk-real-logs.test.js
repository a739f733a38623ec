// Real public agent trajectories (tests/trajectories/: SWE-agent, OpenHands, Moatless,
// mini-swe-agent; MIT, sources in docs/trajectories.md) replayed through `contextfold/ai-sdk`'s
// prepareStep at an 8,000-token window: each trajectory's messages (its events projected whole
// as AI SDK ModelMessages) arrive as an agent loop would hand them over, one step at a time
// (ai@6's `messages`: the conversation so far). Every request must fit the history budget, keep
// tool calls paired and the turn's task verbatim, and every recorded checkpoint must verify.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { matchCheckpoint, project } from 'contextfold';
import { MemoryStore } from 'contextfold/stores/memory';
import { contextfold } from 'contextfold/ai-sdk';
import { repoRoot, toolPairs } from './helpers.js';

const WINDOW = 8000;
const ROOT = path.join(repoRoot, 'tests', 'trajectories');

function trajectories() {
  return readdirSync(ROOT, { withFileTypes: true }).filter((d) => d.isDirectory() && d.name !== 'multimodal')
    .flatMap((d) => readdirSync(path.join(ROOT, d.name)).filter((f) => f.endsWith('.jsonl')).sort().map((f) => path.join(d.name, f)));
}

/** The text of a user message. */
const userText = (message) => (typeof message.content === 'string' ? message.content : message.content.filter((p) => p.type === 'text').map((p) => p.text).join(''));

test('real trajectories through prepareStep at 8,000 tokens: every request fits, pairs its tools, keeps the task', async () => {
  const files = trajectories();
  assert.ok(files.length >= 15, `${files.length} trajectories`);
  const totals = { trajectories: 0, steps: 0, checkpoints: 0, worst: 0, irreducible: 0 };
  for (const file of files) {
    const events = readFileSync(path.join(ROOT, file), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
    const messages = project({ events, model: { contextWindow: 100_000_000 }, format: 'ai-sdk' }).messages;
    const store = await MemoryStore.open({ sessionId: 'real' });
    const folding = contextfold({ store, model: { contextWindow: WINDOW }, summarizer: 'extractive' });
    let task = null;
    let step = 0;
    for (let end = 1; end <= messages.length; end += 1) {
      const last = messages[end - 1];
      if (last.role === 'user') task = userText(last);
      // A step ends after the tool results (or a user message); the loop hands over the rest.
      const boundary = last.role === 'tool' || last.role === 'user' || end === messages.length;
      if (!boundary || task === null) continue;
      const { messages: sent } = await folding.prepareStep({ stepNumber: step, messages: messages.slice(0, end), model: { provider: 'replay', modelId: 'real' }, steps: [] });
      step += 1;
      const projection = folding.lastProjection;
      if (!projection.fits) {
        // Allowed only when what may never be folded (the system notes and the turn's own user
        // messages, its live head) does not fit by itself: SWE-agent's 19,000-character
        // demonstration turn at an 8,000-token window.
        const stored = store.log.events();
        const turn = stored.at(-1).turnId;
        const minimum = stored.filter((e) => e.content.type === 'system_note' || (e.turnId === turn && e.content.type === 'user_text'));
        assert.equal(project({ events: minimum, model: { contextWindow: WINDOW } }).fits, false,
          `${file} step ${step}: ${projection.estimatedTokens} tokens over the ${projection.historyBudget} budget`);
        totals.irreducible += 1;
      }
      if (projection.fits) totals.worst = Math.max(totals.worst, projection.estimatedTokens);
      assert.doesNotThrow(() => toolPairs(sent), `${file} step ${step}: tool calls paired`);
      const users = sent.filter((m) => m.role === 'user').map(userText);
      assert.ok(users.some((text) => text.includes(task.slice(0, 200))), `${file} step ${step}: the turn's task is sent`);
    }
    const stored = store.log.events();
    const checkpoints = store.snapshot().records.map((record) => record.payload);
    for (const checkpoint of checkpoints) {
      assert.equal(matchCheckpoint(checkpoint, stored).covered, checkpoint.coverage.eventCount, `${file}: ${checkpoint.checkpointId} verifies`);
    }
    assert.equal(folding.stats.failures, 0, `${file}: no compaction error`);
    totals.trajectories += 1;
    totals.steps += step;
    totals.checkpoints += checkpoints.length;
    await store.close();
  }
  console.log(`AISDK_REAL_LOGS ${JSON.stringify(totals)}`);
});
