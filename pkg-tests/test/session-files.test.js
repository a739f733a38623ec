// `importSessionFile`: every agent session file under tests/agent-files/ (Claude Code transcripts,
// Codex rollouts, Cline histories) read with `format: 'auto'` gives the format, the events, the
// usage facts and the linked sessions the native `contextfold import --format auto` gives (the
// same core reader). The native binary comes from CONTEXTFOLD_BIN (default target/debug/contextfold).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ContextfoldError, importSessionFile, validateLog } from 'contextfold';
import { repoRoot } from './helpers.js';

const run = promisify(execFile);
const BIN = process.env.CONTEXTFOLD_BIN ?? path.join(repoRoot, 'target', 'debug', 'contextfold');
const NO_BIN = existsSync(BIN) ? false : `no contextfold binary at ${BIN} (set CONTEXTFOLD_BIN; scripts/test-npm.sh builds it)`;
const FORMAT_OF_DIR = { 'claude-code': 'claude-code', codex: 'codex-rollout', cline: 'cline' };

const scratch = await mkdtemp(path.join(tmpdir(), 'contextfold-session-files-'));
test.after(() => rm(scratch, { recursive: true, force: true }));

/** Every session file of the fixtures (README.md files aside), with the format its folder holds. */
const files = Object.entries(FORMAT_OF_DIR).flatMap(([dir, format]) => {
  const folder = path.join(repoRoot, 'tests', 'agent-files', dir);
  if (!existsSync(folder)) return [];
  return readdirSync(folder)
    .filter((name) => name !== 'README.md')
    .map((name) => ({ file: path.join(folder, name), name: `${dir}/${name}`, format }));
});

test('the fixtures hold Claude Code and Codex files', () => {
  assert.ok(files.some((f) => f.format === 'claude-code'));
  assert.ok(files.some((f) => f.format === 'codex-rollout'));
});

let counter = 0;
for (const { file, name, format } of files) {
  test(`importSessionFile(auto) = contextfold import --format auto: ${name}`, { skip: NO_BIN }, async () => {
    const text = readFileSync(file, 'utf8');
    const imported = importSessionFile(text, { sessionId: 's', format: 'auto' });
    assert.equal(imported.format, format);
    validateLog(imported.events);
    // The format named explicitly reads the same.
    assert.deepEqual(importSessionFile(text, { sessionId: 's', format }), imported);

    const db = path.join(scratch, `ledger-${(counter += 1)}.sqlite`);
    const { stdout } = await run(BIN, ['import', '--json', '--db', db, '--session', 's', '--format', 'auto', file], { maxBuffer: 64 << 20 });
    const native = JSON.parse(stdout);
    assert.equal(native.format, imported.format);
    assert.equal(native.imported, imported.events.length);
    // The CLI counts the usage facts it recorded: the main session's and every linked one's.
    assert.equal(native.usageFacts, imported.usage.length + imported.linked.reduce((sum, linked) => sum + linked.usage.length, 0));
    assert.deepEqual(native.diagnostics, imported.diagnostics);
    assert.deepEqual(native.linked, imported.linked.map((linked) => ({ session: linked.sessionId, imported: linked.events.length })));
  });
}

test('a file read as another format is session_file_unsupported', () => {
  const claude = files.find((f) => f.format === 'claude-code');
  const text = readFileSync(claude.file, 'utf8');
  assert.throws(() => importSessionFile(text, { sessionId: 's', format: 'codex-rollout' }), (error) => {
    assert.ok(error instanceof ContextfoldError);
    assert.equal(error.code, 'session_file_unsupported');
    return true;
  });
});

test('no reader recognizes it, or a format name that does not exist', () => {
  assert.throws(() => importSessionFile('{"hello":"world"}\n', { sessionId: 's' }), { code: 'session_file_unknown_format' });
  assert.throws(() => importSessionFile('', { sessionId: 's', format: 'auto' }), { code: 'session_file_unknown_format' });
  assert.throws(() => importSessionFile('{}', { sessionId: 's', format: 'gemini' }), { code: 'invalid_argument' });
  assert.throws(() => importSessionFile(Buffer.from('{}'), { sessionId: 's' }), { code: 'invalid_argument' });
});
