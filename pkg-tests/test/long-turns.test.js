// Long agent turns through the npm package, mid-turn, at windows of 4k, 8k, 16k and 128k: real
// public trajectories (tests/trajectories/, docs/trajectories.md) and seeded generated sessions.
// Every step's request fits after at most one compaction (or a typed reason says why it cannot),
// carries the task verbatim, and every recorded checkpoint verifies against the final log.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { WINDOWS, driveLongTurn, generatedFiles, readJsonl, reportLine, trajectoryFiles } from './long-turn-driver.js';

test('generated long turns fit every step at every window', async () => {
  const files = generatedFiles();
  assert.ok(files.length >= 1, 'scripts/test-npm.sh writes the generated sessions (LONG_TURN_DIR)');
  for (const file of files) {
    const events = readJsonl(file);
    for (const window of WINDOWS) {
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
});

test('real agent trajectories fit every step at every window', async () => {
  const files = trajectoryFiles();
  assert.ok(files.length >= 10, 'the trajectories are committed');
  let compactions = 0;
  for (const file of files) {
    const events = readJsonl(file);
    for (const window of WINDOWS) {
      const run = await driveLongTurn(events, window);
      compactions += run.compactions;
      console.log(reportLine(path.basename(file, '.jsonl'), window, 'extractive', run));
    }
  }
  assert.ok(compactions > 0);
});
