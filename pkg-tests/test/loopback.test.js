// A real provider (@ai-sdk/openai-compatible) sends the projection to an OpenAI-compatible
// server on 127.0.0.1; every tool message of the request pairs with a call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { generateText } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { project, importOpenAIChat } from 'contextfold';
import { compactionFixture } from './helpers.js';

const rolling = compactionFixture().cases.find((c) => c.name === 'rolling_pre_turn');

/** Starts a Chat Completions server on loopback that records each request body. */
async function startServer() {
  const bodies = [];
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => { text += chunk; });
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
        res.writeHead(404).end();
        return;
      }
      bodies.push(JSON.parse(text));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({
        id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'mock-model',
        choices: [{ index: 0, message: { role: 'assistant', content: 'next step' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
      }));
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, bodies, url: `http://127.0.0.1:${server.address().port}/v1` };
}

/** Every tool message answers a call of the assistant message before it, each call once. */
function assertChatPairing(messages) {
  let open = new Set();
  let answered = 0;
  for (const message of messages) {
    if (message.role === 'tool') {
      assert.ok(open.delete(message.tool_call_id), `tool message ${message.tool_call_id} has no open call`);
      answered += 1;
      continue;
    }
    assert.equal(open.size, 0, `calls left unanswered before a ${message.role} message`);
    open = new Set((message.tool_calls ?? []).map((call) => call.id));
  }
  assert.equal(open.size, 0);
  return answered;
}

test('the openai-compatible provider sends a request whose tool messages all pair', async () => {
  const { server, bodies, url } = await startServer();
  try {
    const provider = createOpenAICompatible({ name: 'loopback', baseURL: url, apiKey: 'test-key' });
    const projection = project({
      events: rolling.input.events,
      checkpoint: rolling.expected.checkpoint,
      model: rolling.input.model,
    });
    const result = await generateText({ model: provider('mock-model'), messages: projection.messages, maxRetries: 0 });
    assert.equal(result.text, 'next step');
    assert.equal(bodies.length, 1);
    const sent = bodies[0].messages;
    assert.ok(assertChatPairing(sent) > 0, 'the request carries tool results');
    assert.ok(sent.some((m) => m.role === 'system' && m.content.includes(rolling.expected.checkpoint.summary)));

    // The wire request imports back into events that project to the same chat messages.
    const events = importOpenAIChat(sent, { sessionId: 'reimport' });
    const chat = project({ events, format: 'openai-chat' }).messages;
    assert.equal(assertChatPairing(chat), assertChatPairing(sent));
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});
