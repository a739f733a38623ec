// `contextfold/ai-sdk` with ai@6 on Node 20: prepareStep in a tool loop over MockLanguageModelV3
// (a window enforced by counting each prompt with js-tiktoken and refusing with the provider's
// overflow error), an LLM summarizer called through its own doGenerate, the overflow guard over a
// window smaller than declared, streamText, and the V3 middleware over @ai-sdk/openai-compatible
// against a Chat Completions server on loopback.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { APICallError, generateText, stepCountIs, streamText, wrapLanguageModel } from 'ai';
import { MockLanguageModelV3, simulateReadableStream } from 'ai/test';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { digestPrefix, matchCheckpoint } from 'contextfold';
import { MemoryStore } from 'contextfold/stores/memory';
import { contextfold } from 'contextfold/ai-sdk';
import { toolPairs } from './helpers.js';
import { encoding, promptTokens, tools } from './build-log-agent.js';

const TASK = 'Fix the failing build: find the type error in the parser and make `cargo build` pass.';
const WINDOW = 8000;

/** A scripted V3 model refusing prompts over the window; records each prompt's checks. */
function windowedModel(steps, { stream = false, window = WINDOW, system = null } = {}) {
  const seen = [];
  const refused = [];
  const respond = (options) => {
    const tokens = promptTokens(options.prompt);
    if (tokens > window) refused.push(tokens);
    if (tokens > window) throw new APICallError({ message: `This model's maximum context length is ${window} tokens, your messages resulted in ${tokens} tokens`, url: 'mock', requestBodyValues: {}, statusCode: 400, responseBody: '{"error":{"code":"context_length_exceeded"}}', isRetryable: false });
    const step = seen.length;
    toolPairs(options.prompt); // throws on an unpaired call or result
    const hasSystem = system !== null && options.prompt.some((message) => message.role === 'system' && message.content.includes(system));
    seen.push({ tokens, hasTask: JSON.stringify(options.prompt).includes(TASK), hasSystem });
    const last = step >= steps - 1;
    const content = last ? [{ type: 'text', text: 'The build passes.' }] : [{ type: 'tool-call', toolCallId: `call_${step}`, toolName: 'run_shell', input: JSON.stringify({ command: `cargo build -p crate_${step}` }) }];
    return { content, finishReason: { unified: last ? 'stop' : 'tool-calls', raw: undefined }, usage: { inputTokens: { total: tokens, noCache: tokens, cacheRead: 0, cacheWrite: undefined }, outputTokens: { total: 9, text: 9, reasoning: undefined } }, warnings: [] };
  };
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => respond(options),
    doStream: async (options) => {
      const { content, finishReason, usage } = respond(options);
      const chunks = [{ type: 'stream-start', warnings: [] }];
      for (const part of content) {
        if (part.type === 'text') chunks.push({ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: part.text }, { type: 'text-end', id: 't' });
        else chunks.push(part);
      }
      chunks.push({ type: 'finish', finishReason, usage });
      return { stream: simulateReadableStream({ chunks }) };
    },
  });
  return { model, seen, refused, stream };
}

function assertCheckpoints(store) {
  const events = store.log.events();
  const checkpoints = store.snapshot().records.map((record) => record.payload);
  for (const checkpoint of checkpoints) {
    assert.equal(matchCheckpoint(checkpoint, events).covered, checkpoint.coverage.eventCount);
    assert.equal(checkpoint.coverage.sourceDigest, digestPrefix(events.slice(0, checkpoint.coverage.eventCount)));
  }
  return checkpoints;
}

test('ai@6 prepareStep: 120 tool steps in 8,000 tokens, an LLM summarizer, no overflow', async () => {
  const { model, seen } = windowedModel(120);
  const summaries = [];
  const summarizer = new MockLanguageModelV3({
    doGenerate: async (options) => {
      summaries.push(promptTokens(options.prompt));
      const text = ['## Goal', `- ${TASK}`, '## Done and In Progress', `- Ran ${summaries.length * 10} builds; each failed in the parser.`, '## Next Steps', '- Fix `parse_expr` in src/parser.rs.', '## Critical Context', '- error[E0308] mismatched types in src/parser.rs:120.'].join('\n');
      return { content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: 'stop' }, usage: { inputTokens: { total: 1 }, outputTokens: { total: 1 } }, warnings: [] };
    },
  });
  const store = await MemoryStore.open({ sessionId: 'v6-loop' });
  const folding = contextfold({ store, model: { contextWindow: WINDOW }, summarizer });
  const result = await generateText({ model, tools, stopWhen: stepCountIs(120), messages: [{ role: 'user', content: TASK }], prepareStep: folding.prepareStep });
  await folding.finish(result);
  assert.equal(result.steps.length, 120);
  assert.equal(seen.length, 120);
  assert.ok(seen.every((request) => request.hasTask), 'the task is in every request');
  const checkpoints = assertCheckpoints(store);
  assert.ok(checkpoints.length > 5 && summaries.length >= checkpoints.length);
  assert.equal(store.log.length, 1 + 119 * 2 + 1, 'every step is stored once');
  assert.ok(folding.calibration.models.length === 1);
  console.log(`AISDK_V6 prepareStep steps=120 checkpoints=${checkpoints.length} max_request_tokens=${Math.max(...seen.map((r) => r.tokens))} summaries=${summaries.length}`);
  await store.close();
});

test('ai@6 prepareStep with overflowGuardV3: a provider window smaller than declared, every refusal answered once, the system prompt kept', async () => {
  const system = 'You are a careful coding agent working in the repository.';
  const { model, seen, refused } = windowedModel(60, { window: 5000, system });
  const store = await MemoryStore.open({ sessionId: 'v6-guard' });
  const folding = contextfold({ store, model: { contextWindow: WINDOW }, summarizer: 'extractive' });
  const guarded = wrapLanguageModel({ model, middleware: folding.overflowGuardV3 });
  const result = await generateText({ model: guarded, system, tools, stopWhen: stepCountIs(60), maxRetries: 0, messages: [{ role: 'user', content: TASK }], prepareStep: folding.prepareStep });
  await folding.finish(result);
  assert.equal(result.steps.length, 60);
  assert.ok(refused.length > 0, 'the provider refused some requests');
  assert.equal(folding.stats.overflows, refused.length, 'each refusal was answered once');
  assert.equal(folding.stats.steps, 60, 'a retried request is the same step, counted once');
  assert.equal(seen.length, 60, 'every step was accepted');
  assert.ok(seen.every((request) => request.hasTask && request.hasSystem), 'the task and the system prompt are in every accepted request');
  assertCheckpoints(store);
  console.log(`AISDK_V6_OVERFLOW_GUARD refused=${refused.length} retried=${folding.stats.overflows} accepted=${seen.length}`);
  await store.close();
});

test('ai@6 streamText with prepareStep', async () => {
  const { model, seen } = windowedModel(40);
  const store = await MemoryStore.open({ sessionId: 'v6-stream' });
  const folding = contextfold({ store, model: { contextWindow: WINDOW }, summarizer: 'extractive' });
  const result = streamText({ model, tools, stopWhen: stepCountIs(40), messages: [{ role: 'user', content: TASK }], prepareStep: folding.prepareStep, onError: ({ error }) => { throw error; } });
  let text = '';
  for await (const delta of result.textStream) text += delta;
  await folding.finish(result);
  assert.equal(text, 'The build passes.');
  assert.equal(seen.length, 40);
  assert.ok(assertCheckpoints(store).length > 0);
  await store.close();
});

/** Calls of the Chat Completions request left unanswered, plus tool messages answering none. */
function unpairedChat(messages) {
  let open = new Set();
  let unpaired = 0;
  for (const message of messages) {
    if (message.role === 'tool') {
      if (!open.delete(message.tool_call_id)) unpaired += 1;
      continue;
    }
    unpaired += open.size;
    open = new Set((message.tool_calls ?? []).map((call) => call.id));
  }
  return unpaired + open.size;
}

/** A Chat Completions server on loopback with a window: refuses larger requests (400). */
async function chatServer(steps) {
  const state = { requests: [], refused: 0 };
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => { raw += chunk; });
    req.on('end', () => {
      const body = JSON.parse(raw);
      const tokens = body.messages.reduce((sum, m) => sum + 3 + encoding.encode(typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? '')).length + encoding.encode(JSON.stringify(m.tool_calls ?? '')).length, 0);
      if (tokens > WINDOW) {
        state.refused += 1;
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `maximum context length is ${WINDOW} tokens; you requested ${tokens}`, type: 'invalid_request_error', code: 'context_length_exceeded' } }));
        return;
      }
      const step = state.requests.length;
      state.requests.push({ tokens, hasTask: raw.includes('find the type error'), unpaired: unpairedChat(body.messages) });
      const last = step >= steps - 1;
      const message = last ? { role: 'assistant', content: 'The build passes.' } : { role: 'assistant', content: null, tool_calls: [{ id: `call_${step}`, type: 'function', function: { name: 'run_shell', arguments: JSON.stringify({ command: `cargo build -p crate_${step}` }) } }] };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: `c${step}`, object: 'chat.completion', created: 1, model: body.model, choices: [{ index: 0, message, finish_reason: last ? 'stop' : 'tool_calls' }], usage: { prompt_tokens: tokens, completion_tokens: 9, total_tokens: tokens + 9 } }));
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { state, url: `http://127.0.0.1:${server.address().port}/v1`, close: () => new Promise((resolve) => server.close(resolve)) };
}

test('ai@6 middlewareV3 over @ai-sdk/openai-compatible on loopback: 60 steps, no overflow', async () => {
  const server = await chatServer(60);
  const store = await MemoryStore.open({ sessionId: 'v6-middleware' });
  try {
    const folding = contextfold({ store, model: { contextWindow: WINDOW }, summarizer: 'extractive' });
    const provider = createOpenAICompatible({ name: 'loopback', baseURL: server.url, apiKey: 'test-key' });
    const model = wrapLanguageModel({ model: provider('loop-model'), middleware: folding.middlewareV3 });
    const result = await generateText({ model, tools, stopWhen: stepCountIs(60), maxRetries: 0, messages: [{ role: 'user', content: TASK }] });
    assert.equal(result.steps.length, 60);
    assert.equal(server.state.refused, 0);
    assert.ok(server.state.requests.every((r) => r.hasTask));
    assert.ok(server.state.requests.every((r) => r.unpaired === 0), 'every tool call of every request is answered');
    assert.ok(assertCheckpoints(store).length > 0);
    assert.ok(folding.stats.usageFacts >= 59);
  } finally {
    await store.close();
    await server.close();
  }
});
