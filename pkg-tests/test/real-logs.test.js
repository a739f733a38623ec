// Real public agent logs in their native formats through the built package (sources and
// licences: docs/trajectories.md): SWE-agent reuses tool call ids after their answers,
// mini-swe-agent's LiteLLM log carries `provider_specific_fields` and `tool_calls[].index`,
// Moatless is an Anthropic Messages body. Each imports, keeps the original ids in its events,
// and projects to unique call/result pairs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { importAnthropic, importOpenAIChat, project } from 'contextfold';
import { repoRoot } from './helpers.js';

const native = (file) => JSON.parse(readFileSync(path.join(repoRoot, 'tests', 'trajectories', file), 'utf8'));

const LOGS = [
  ['swe-agent/native/marshmallow-1867-function-calling.openai-chat.json', importOpenAIChat, 35],
  ['mini-swe-agent/native/pvlib-1072-deepseek-chat.openai-chat.json', importOpenAIChat, 223],
  ['moatless/native/django__django-15819.anthropic.json', importAnthropic, 55],
];

for (const [file, importer, count] of LOGS) {
  test(`a real log imports and projects unique pairs: ${file}`, () => {
    const events = importer(native(file), { sessionId: 'real' });
    assert.equal(events.length, count);
    const ids = events.filter((e) => e.content.type === 'tool_call').map((e) => e.content.callId);
    const { messages, diagnostics } = project({ events, model: { contextWindow: 1_000_000 }, format: 'openai-chat' });
    const calls = messages.flatMap((m) => (m.tool_calls ?? []).map((c) => c.id));
    const results = messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id);
    assert.equal(calls.length, ids.length);
    assert.equal(new Set(calls).size, calls.length, 'every projected call id is unique');
    assert.deepEqual([...results].sort(), [...calls].sort(), 'one result per call');
    if (new Set(ids).size < ids.length) {
      assert.ok(diagnostics.some((d) => d.code === 'tool_call_id_renamed'), 'reused ids are renamed in the request');
    }
  });
}
