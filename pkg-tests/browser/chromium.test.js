// The web build of `contextfold` in headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core) produces the same digests as the native core's vectors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { CHROMIUM, FLAGS, startServer } from './static-server.js';
import { readRepoJson } from '../test/helpers.js';


const PAGE = `<!doctype html><meta charset="utf-8"><title>contextfold</title>
<script type="module">
  try {
    const cf = await import('/pkg/browser.js');
    const vectors = await (await fetch('/tests/vectors/digest.json')).json();
    const results = vectors.cases.map((c) => ({
      name: c.name,
      digest: cf.digestPrefix(c.events),
      prefixDigests: cf.prefixDigests(c.events),
      logDigests: (() => {
        const log = new cf.EventLog();
        const digests = c.events.map((event) => { log.append(event); return log.digest(); });
        log.free();
        return digests;
      })(),
    }));
    let code = null;
    try { cf.validateLog([{}]); } catch (error) { code = error instanceof cf.ContextfoldError ? error.code : 'not-typed'; }
    const projected = cf.project({ events: vectors.cases[0].events, format: 'ai-sdk' }).messages.length;
    const big = Array.from({ length: 40 }, (_, i) => ({ sessionId: 's', runId: 'r', turnId: 't' + i, runtimeEventId: 'e' + i, seq: i + 1, content: { type: 'user_text', text: ('\\u6d4b\\u8bd5 \\ud83e\\udd80 \\u00e9 ' + i + ' ').repeat(400) } }));
    const bigJsonl = big.map((e) => JSON.stringify(e)).join('\\n');
    const fromArray = JSON.stringify(cf.project({ events: big }));
    const jsonlSame = fromArray === JSON.stringify(cf.project({ events: new TextEncoder().encode(bigJsonl) }))
      && cf.digestPrefix(bigJsonl) === cf.digestPrefix(big);
    const bigLog = new cf.EventLog();
    bigLog.append(bigJsonl);
    const logSame = JSON.stringify(bigLog.project({})) === fromArray && JSON.stringify(bigLog.events()) === JSON.stringify(big);
    bigLog.free();
    let lineError = null;
    try { cf.digestPrefix('\\n{oops}'); } catch (error) { lineError = [error.code, error.line]; }
    window.__done({ results, code, projected, engine: cf.hashEngine(), jsonlSame, logSame, lineError, bigLength: fromArray.length });
  } catch (error) {
    window.__done({ error: String(error && error.stack || error) });
  }
</script>`;


test('the web build in headless Chromium reproduces the digest vectors', { timeout: 120_000 }, async () => {
  const vectors = readRepoJson('tests/vectors/digest.json');
  const { server, origin } = await startServer(PAGE, ['pkg', 'tests/vectors']);
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
  try {
    const page = await browser.newPage();
    const outcome = new Promise((resolve) => page.exposeFunction('__done', resolve));
    const errors = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.goto(origin + '/');
    let timer;
    const result = await Promise.race([
      outcome,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`page timed out: ${errors}`)), 60_000);
      }),
    ]).finally(() => clearTimeout(timer));
    assert.equal(result.error, undefined, result.error);
    assert.equal(result.results.length, vectors.cases.length);
    result.results.forEach((got, index) => {
      const expected = vectors.cases[index];
      assert.equal(got.name, expected.name);
      assert.equal(got.digest, expected.digest, expected.name);
      assert.deepEqual(got.prefixDigests, expected.prefixDigests, expected.name);
      assert.deepEqual(got.logDigests, expected.prefixDigests, `${expected.name} (EventLog)`);
    });
    assert.equal(result.code, 'event_missing_kind');
    assert.ok(result.projected > 0);
    // No incremental SHA-256 in browsers: the digests above came from the wasm engine.
    assert.equal(result.engine, 'wasm');
    // JSONL input, and large results through TextDecoder('utf-16le') and the string table.
    assert.ok(result.bigLength > 128 * 1024, String(result.bigLength));
    assert.equal(result.jsonlSame, true);
    assert.equal(result.logSame, true);
    assert.deepEqual(result.lineError, ['event_syntax', 2]);
  } finally {
    await browser.close();
    await new Promise((resolve) => server.close(resolve));
  }
});
