// Runs examples/ai-sdk-agent (its packages installed by scripts/test-npm.sh) so it cannot rot:
// it must finish, print the final answer, and record checkpoints that all verify.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const example = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'examples', 'ai-sdk-agent');

test('examples/ai-sdk-agent runs and its checkpoints verify', () => {
  const out = execFileSync(process.execPath, ['index.js'], { cwd: example, encoding: 'utf8' });
  assert.match(out, /^Final answer: Fixed: /m);
  const [, steps, checkpoints, verified] = out.match(/Steps: (\d+); events stored: \d+; checkpoints: (\d+) \((\d+) verified/);
  assert.equal(Number(steps), 30);
  assert.ok(Number(checkpoints) > 0);
  assert.equal(verified, checkpoints);
  assert.match(out, /"failures":0/);
});
