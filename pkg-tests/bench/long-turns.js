// Long agent turns through the npm package, the long run (scripts/long-turns.sh runs it; the
// results are in docs/performance.md): every seeded session in LONG_TURN_DIR (the script writes
// two 60-step ones and one of 1,000 steps) with the extractive and the windowed summarizer at
// every window, and every real trajectory of tests/trajectories/ at every window. Prints one
// LONG_TURN line per run and fails on any broken guarantee (test/long-turn-driver.js).
import path from 'node:path';
import { WINDOWS, driveLongTurn, generatedFiles, readJsonl, reportLine, trajectoryFiles } from '../test/long-turn-driver.js';

// `LONG_TURN_WINDOWS=16000,128000` runs a subset of the windows.
const windows = process.env.LONG_TURN_WINDOWS ? process.env.LONG_TURN_WINDOWS.split(',').map(Number) : WINDOWS;
const generated = generatedFiles();
if (generated.length === 0) throw new Error('no generated sessions: set LONG_TURN_DIR (scripts/long-turns.sh)');
for (const file of generated) {
  const events = readJsonl(file);
  for (const window of windows) {
    for (const windowed of [false, true]) {
      const run = await driveLongTurn(events, window, { windowed });
      console.log(reportLine(path.basename(file, '.jsonl'), window, windowed ? 'windowed' : 'extractive', run));
      if (run.minimumExceeded > 0 || run.overBudget > 0) throw new Error(`${file} at ${window}: a request over budget`);
    }
  }
}
for (const file of trajectoryFiles()) {
  const events = readJsonl(file);
  for (const window of windows) {
    console.log(reportLine(path.basename(file, '.jsonl'), window, 'extractive', await driveLongTurn(events, window)));
  }
}
