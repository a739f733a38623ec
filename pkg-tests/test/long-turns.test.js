// Long agent turns through the npm package, mid-turn: seeded generated sessions at 4k, 16k and 128k.
// Every step's request fits after at most one compaction (or a typed reason says why it cannot),
// carries the task verbatim, and every recorded checkpoint verifies against the final log
// (test/long-turn-driver.js). The windows and sources are split over test/long-turns*.test.js
// so that Node runs them side by side.
import { test } from 'node:test';
import { checkGeneratedAt } from './long-turn-driver.js';

test('generated long turns fit every step at 4k, 16k and 128k', () => checkGeneratedAt([4000, 16000, 128000]));
