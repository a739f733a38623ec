// Shared helpers of the package tests: repository paths and fixtures.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

/** Root of the repository (pkg-tests/..). */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Reads a JSON file relative to the repository root. */
export function readRepoJson(relative) {
  return JSON.parse(readFileSync(path.join(repoRoot, relative), 'utf8'));
}

/** The native compaction fixture written by tests/tests/native_compaction.rs. */
export function compactionFixture() {
  return readRepoJson('tests/fixtures/compaction.json');
}

/** Checks AI SDK / provider-neutral pairing: every tool call answered by exactly one result
 *  before the next user or assistant message, and no result without a call. Returns the pairs. */
export function toolPairs(messages) {
  const pairs = [];
  let open = new Map();
  for (const message of messages) {
    const parts = Array.isArray(message.content) ? message.content : [];
    if (message.role === 'tool') {
      for (const part of parts) {
        if (part.type !== 'tool-result') continue;
        if (!open.has(part.toolCallId)) throw new Error(`result without an open call: ${part.toolCallId}`);
        open.delete(part.toolCallId);
        pairs.push(part.toolCallId);
      }
      continue;
    }
    if (open.size > 0) throw new Error(`unanswered calls before a ${message.role} message: ${[...open.keys()]}`);
    open = new Map();
    for (const part of parts) {
      if (part.type === 'tool-call' && !part.providerExecuted) open.set(part.toolCallId, part);
    }
  }
  if (open.size > 0) throw new Error(`unanswered calls at the end: ${[...open.keys()]}`);
  return pairs;
}
