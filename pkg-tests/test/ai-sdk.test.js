// The real `ai` package (v6) accepts the projected ModelMessage[]; imports round-trip.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateText } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { digestPrefix, importModelMessages, project, ContextfoldError } from 'contextfold';
import { compactionFixture, toolPairs } from './helpers.js';

const rolling = compactionFixture().cases.find((c) => c.name === 'rolling_pre_turn');

function mockModel() {
  const calls = [];
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => {
      calls.push(options);
      return {
        content: [{ type: 'text', text: 'continuing' }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage: {
          inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: 1, text: 1, reasoning: undefined },
        },
        warnings: [],
      };
    },
  });
  return { model, calls };
}

test('generateText receives the checkpoint text and paired tool calls/results', async () => {
  const projection = project({
    events: rolling.input.events,
    checkpoint: rolling.expected.checkpoint,
    model: rolling.input.model,
    format: 'ai-sdk',
  });
  assert.equal(projection.checkpoint.checkpointId, rolling.expected.checkpoint.checkpointId);
  const pairs = toolPairs(projection.messages);
  assert.ok(pairs.length > 0, 'the raw tail keeps tool calls');

  const { model, calls } = mockModel();
  const result = await generateText({ model, messages: projection.messages });
  assert.equal(result.text, 'continuing');
  assert.equal(calls.length, 1);
  const prompt = calls[0].prompt;
  const system = prompt.filter((m) => m.role === 'system').map((m) => m.content).join('\n');
  assert.ok(system.includes(rolling.expected.checkpoint.summary), 'the model sees the checkpoint summary');

  const called = prompt.flatMap((m) => (m.role === 'assistant' ? m.content : []))
    .filter((p) => p.type === 'tool-call').map((p) => p.toolCallId);
  const answered = prompt.flatMap((m) => (m.role === 'tool' ? m.content : []))
    .filter((p) => p.type === 'tool-result').map((p) => p.toolCallId);
  assert.deepEqual(called, pairs);
  assert.deepEqual(answered, pairs);
});

test('ModelMessage[] import → project round-trips (text, reasoning, every output kind)', () => {
  const messages = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: [{ type: 'text', text: 'Fix the build.' }] },
    {
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'Run the build.', providerOptions: { anthropic: { signature: 'sig' } } },
        { type: 'text', text: 'Running it.' },
        { type: 'tool-call', toolCallId: 'c1', toolName: 'shell', input: { cmd: 'make' } },
        { type: 'tool-call', toolCallId: 'c2', toolName: 'read', input: { path: 'a.rs' } },
        { type: 'tool-call', toolCallId: 'c3', toolName: 'shell', input: { cmd: 'rm -rf /' } },
        { type: 'tool-call', toolCallId: 'c4', toolName: 'shot', input: {} },
        { type: 'tool-call', toolCallId: 'c5', toolName: 'lint', input: {} },
        { type: 'tool-call', toolCallId: 'c6', toolName: 'lint', input: {} },
      ],
    },
    {
      role: 'tool',
      content: [
        { type: 'tool-result', toolCallId: 'c1', toolName: 'shell', output: { type: 'text', value: 'ok' } },
        { type: 'tool-result', toolCallId: 'c2', toolName: 'read', output: { type: 'json', value: { lines: 3 } } },
        { type: 'tool-result', toolCallId: 'c3', toolName: 'shell', output: { type: 'execution-denied', reason: 'dangerous' } },
        { type: 'tool-result', toolCallId: 'c4', toolName: 'shot', output: { type: 'content', value: [{ type: 'text', text: 'img' }] } },
        { type: 'tool-result', toolCallId: 'c5', toolName: 'lint', output: { type: 'error-text', value: 'boom' } },
        { type: 'tool-result', toolCallId: 'c6', toolName: 'lint', output: { type: 'error-json', value: { e: 1 } } },
      ],
    },
    { role: 'assistant', content: 'Done.' },
    { role: 'user', content: 'Thanks', providerOptions: { openai: { user: 'u1' } } },
  ];
  const events = importModelMessages(messages, { sessionId: 's1' });
  assert.equal(events.length, 18);
  assert.equal(events[2].content.type, 'reasoning');
  assert.deepEqual(events[2].content.providerData, { anthropic: { signature: 'sig' } });
  assert.deepEqual(events.at(-1).metadata, { messageProviderOptions: { openai: { user: 'u1' } } });
  assert.equal(events.at(-1).turnId, 'turn-1');
  assert.match(digestPrefix(events), /^sha256:[0-9a-f]{64}$/);

  const projected = project({ events, format: 'ai-sdk' }).messages;
  // Provider options outside reasoning live in event metadata only (see docs/npm.md).
  const expected = structuredClone(messages);
  delete expected.at(-1).providerOptions;
  expected[1].content = 'Fix the build.';
  expected[4].content = [{ type: 'text', text: 'Done.' }];
  assert.deepEqual(projected, expected);
});

test('a V3 checkpoint projects as the OpenAI compaction part, never as text', () => {
  const events = rolling.input.events.slice(0, 8);
  const identity = { provider: 'openai-codex', connectionSlug: 'codex', modelId: 'gpt-5-codex' };
  const checkpoint = {
    schemaVersion: 3,
    checkpointId: 'cp-v3',
    sessionId: events[0].sessionId,
    createdAtMs: 1,
    highWater: { name: 'manual', seq: events[3].seq },
    coverage: {
      eventCount: 4,
      turnCount: 1,
      through: { runId: events[3].runId, turnId: events[3].turnId, runtimeEventId: events[3].runtimeEventId },
      sourceDigest: digestPrefix(events.slice(0, 4)),
    },
    providerState: {
      kind: 'openai_codex_remote_v2', connectionSlug: 'codex', modelId: 'gpt-5-codex',
      itemId: 'cmp_1', encryptedContent: 'gAAAA-secret',
    },
    limitations: [],
    estimatedTokens: 50,
  };
  const projection = project({ events, checkpoint, provider: identity, model: { contextWindow: 200000 } });
  assert.equal(projection.checkpoint?.schemaVersion, 3);
  assert.deepEqual(projection.messages[0], {
    role: 'assistant',
    content: [{
      type: 'custom',
      kind: 'openai.compaction',
      providerOptions: { openai: { itemId: 'cmp_1', encryptedContent: 'gAAAA-secret' } },
    }],
  });
  assert.ok(!JSON.stringify(projection.messages.slice(1)).includes('gAAAA-secret'));
  const responses = project({ events, checkpoint, provider: identity, format: 'openai-responses', model: { contextWindow: 200000 } });
  assert.deepEqual(responses.messages[0], { type: 'compaction', id: 'cmp_1', encrypted_content: 'gAAAA-secret' });
  assert.throws(
    () => project({ events, checkpoint, provider: identity, format: 'openai-chat', model: { contextWindow: 200000 } }),
    (error) => error instanceof ContextfoldError && typeof error.code === 'string',
  );
});

test('unsupported parts are typed errors, never dropped', () => {
  assert.throws(
    () => importModelMessages([{ role: 'user', content: [{ type: 'tool-approval-response', approvalId: 'a' }] }], { sessionId: 's' }),
    (error) => error instanceof ContextfoldError && error.code === 'ai_sdk_unsupported_part',
  );
  assert.throws(
    () => importModelMessages([{ role: 'user', content: [{ type: 'image', image: 'AAAA' }] }], { sessionId: 's' }),
    (error) => error instanceof ContextfoldError && error.code === 'attachment_media_type_mismatch',
  );
  assert.throws(
    () => importModelMessages([{ role: 'tool', content: [{ type: 'tool-result', toolCallId: 'x', toolName: 't', output: { type: 'text', value: '' } }] }], { sessionId: 's' }),
    (error) => error.code === 'ai_sdk_unknown_tool_call_id',
  );
});
