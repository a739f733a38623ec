// Long agent turns through the npm package, mid-turn: the real public trajectories (tests/trajectories/,
// docs/trajectories.md) at 4k, 8k, 16k and 128k.
// Every step's request fits after at most one compaction (or a typed reason says why it cannot),
// carries the task verbatim, and every recorded checkpoint verifies against the final log
// (test/long-turn-driver.js). The windows and sources are split over test/long-turns*.test.js
// so that Node runs them side by side.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { WINDOWS, driveLongTurn, readJsonl, reportLine, trajectoryFiles } from './long-turn-driver.js';

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
