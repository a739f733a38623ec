// IndexedDbStore in headless Chromium: the store conformance suite, and reloads of the page in
// the middle of an append loop (acknowledged appends survive; the store reopens consistent).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { CHROMIUM, FLAGS, startServer } from './static-server.js';
import { generator } from '../stores/random.js';

const IMPORTS = {
  contextfold: '/pkg/browser.js',
  'contextfold/stores/indexeddb': '/pkg/stores/indexeddb.js',
};
const PAGE = `<!doctype html><meta charset="utf-8"><title>contextfold stores</title>
<script type="importmap">${JSON.stringify({ imports: IMPORTS })}</script>
<script type="module" src="/pkg-tests/browser/stores-page.js"></script>`;


/** The log lengths after each batch the page appends from `opened` events (its seeded loop). */
function batchBoundaries(seed, opened, upTo) {
  const random = generator(seed);
  const boundaries = [opened];
  for (let length = opened; length < upTo;) {
    length += 4 * (1 + Math.floor(random() * 3));
    boundaries.push(length);
    random(); // the page's compaction draw
  }
  return boundaries;
}

/** Resolves `promise`, or rejects after `ms` with the page's errors. */
function within(promise, ms, errors) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`page timed out: ${errors}`)), ms); }),
  ]).finally(() => clearTimeout(timer));
}

async function withBrowser(fn) {
  const { server, origin } = await startServer(PAGE, ['pkg', 'pkg-tests/stores', 'pkg-tests/browser']);
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
  try {
    await fn(browser, origin);
  } finally {
    await browser.close();
    await new Promise((resolve) => server.close(resolve));
  }
}

test('IndexedDbStore passes the store conformance suite in headless Chromium', { timeout: 120_000 }, async () => {
  await withBrowser(async (browser, origin) => {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    const done = new Promise((resolve) => page.exposeFunction('__done', resolve));
    await page.goto(`${origin}/?mode=conformance`);
    const result = await within(done, 90_000, errors);
    assert.equal(result.error, undefined, result.error);
    assert.ok(result.results.length >= 6);
    for (const { name, ok, error } of result.results) assert.ok(ok, `${name}: ${error}`);
  });
});

test('IndexedDbStore: a reload in the middle of an append loses no acknowledged append', { timeout: 120_000 }, async () => {
  const seed = Number(process.env.STORE_CRASH_SEED ?? 1);
  const random = generator(seed);
  const rounds = 12;
  const started = Date.now();
  await withBrowser(async (browser, origin) => {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    let lines = [];
    let onState = null;
    let onAcks = null;
    await page.exposeFunction('__event', (line) => {
      lines.push(line);
      const acks = lines.filter((l) => l.startsWith('ack ')).length;
      onAcks?.(acks);
    });
    await page.exposeFunction('__state', (state) => onState?.(state));
    await page.exposeFunction('__done', (result) => errors.push(JSON.stringify(result)));
    const pageSeed = seed * 1000;
    let opened = 0;
    let acknowledged = { events: 0, checkpoint: -1 };
    let inflightFound = 0;
    for (let round = 0; round <= rounds; round += 1) {
      const state = new Promise((resolve) => { onState = resolve; });
      const previous = lines;
      lines = [];
      const target = 1 + Math.floor(random() * 5);
      const enough = new Promise((resolve) => { onAcks = (n) => n >= target && resolve(); });
      if (round === 0) await page.goto(`${origin}/?mode=reload&seed=${pageSeed}`);
      else await page.reload({ waitUntil: 'commit' }).catch(() => {});
      const found = await within(state, 30_000, errors);
      // Everything the previous document acknowledged is there; beyond it, only whole batches it
      // began (the page's batches replayed from its seed), never a part of one.
      for (const line of previous) {
        const [word, what, value] = line.split(' ');
        if (word === 'ack' && what === 'events') acknowledged.events = Number(value);
        if (word === 'ack' && what === 'checkpoint') acknowledged.checkpoint = Number(value.slice(3));
      }
      assert.ok(found.length >= acknowledged.events, `round ${round}: ${found.length} events; ${acknowledged.events} were acknowledged`);
      assert.ok(batchBoundaries(pageSeed, opened, found.length).includes(found.length), `round ${round}: ${found.length} events is not a batch boundary`);
      if (found.length > acknowledged.events) inflightFound += 1;
      assert.equal(found.sameEvents, true, `round ${round}: the events are the ones written`);
      assert.equal(found.covered, true, `round ${round}: the checkpoint covers a prefix of the log`);
      const checkpointAt = found.checkpointId === null ? -1 : Number(found.checkpointId.slice(3));
      assert.ok(checkpointAt >= acknowledged.checkpoint && checkpointAt <= found.length, `round ${round}: checkpoint ${found.checkpointId}; cp-${acknowledged.checkpoint} was acknowledged`);
      opened = found.length;
      acknowledged = { events: found.length, checkpoint: checkpointAt };
      if (round === rounds) break;
      // Let the page acknowledge a seeded number of appends, then reload it a seeded moment later.
      await within(enough, 30_000, errors);
      await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 15)));
    }
    const events = opened;
    console.log(`indexeddb reload loop (seed ${seed}): ${JSON.stringify({ rounds, events, inflightFound, ms: Date.now() - started })}`);
  });
});
