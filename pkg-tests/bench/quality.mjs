// Continuation quality of the npm AI SDK adapter (issue 37, point 1): the real trajectories of
// tests/trajectories/ replayed through `contextfold/ai-sdk`'s prepareStep with the offline
// extractive summarizer (as test/ai-sdk-real-logs.test.js drives them), at each window. Writes
// one JSON line per request that replays a checkpoint ({type: "request", source, window,
// covered, tokens, budget, messages}) and one per run ({type: "run", source, window, steps,
// compactions, events}: the store's log, append-only, so each request's folded events are its
// first `covered`). bench/quality.sh scores them with the core's artifacts
// (host/tests/quality/continuation_quality.rs, `continuation_quality_of_the_npm_adapter`).
//
//   node bench/quality.mjs --out FILE [--windows 4000,8000]
import { createWriteStream, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { project } from 'contextfold';
import { MemoryStore } from 'contextfold/stores/memory';
import { contextfold } from 'contextfold/ai-sdk';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : fallback;
};
const out = createWriteStream(option('--out', 'quality-npm.jsonl'));
const windows = option('--windows', '4000,8000,16000,32000').split(',').map(Number);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'tests', 'trajectories');
const files = readdirSync(root, { withFileTypes: true })
  .filter((d) => d.isDirectory() && d.name !== 'multimodal')
  .flatMap((d) => readdirSync(path.join(root, d.name)).filter((f) => f.endsWith('.jsonl')).sort().map((f) => path.join(d.name, f)));
const write = (record) => new Promise((resolve) => {
  if (out.write(`${JSON.stringify(record)}\n`)) resolve();
  else out.once('drain', resolve);
});

for (const file of files) {
  const source = file.replace(/\.jsonl$/, '');
  const events = readFileSync(path.join(root, file), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
  // The trajectory as an agent loop hands it over: its messages, one step at a time.
  const messages = project({ events, model: { contextWindow: 100_000_000 }, format: 'ai-sdk' }).messages;
  for (const window of windows) {
    const store = await MemoryStore.open({ sessionId: 'real' });
    const folding = contextfold({ store, model: { contextWindow: window }, summarizer: 'extractive' });
    let steps = 0;
    let seenUser = false;
    for (let end = 1; end <= messages.length; end += 1) {
      const last = messages[end - 1];
      seenUser ||= last.role === 'user';
      const boundary = last.role === 'tool' || last.role === 'user' || end === messages.length;
      if (!boundary || !seenUser) continue;
      const { messages: sent } = await folding.prepareStep({ stepNumber: steps, messages: messages.slice(0, end), model: { provider: 'replay', modelId: 'real' }, steps: [] });
      steps += 1;
      const projection = folding.lastProjection;
      const covered = projection.checkpoint?.coveredEvents ?? 0;
      if (covered > 0) {
        await write({ type: 'request', source, window, covered, tokens: projection.estimatedTokens, budget: projection.historyBudget, messages: sent });
      }
    }
    await write({ type: 'run', source, window, steps, compactions: folding.stats.compactions, events: store.log.events() });
    await store.close();
    console.error(`${source} at ${window}: ${steps} steps, ${folding.stats.compactions} compactions`);
  }
}
await new Promise((resolve) => out.end(resolve));
