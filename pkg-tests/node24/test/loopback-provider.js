// A loopback model provider on 127.0.0.1 that speaks the real wire protocols the AI SDK's
// providers send: the OpenAI Responses API (`POST /v1/responses`, JSON and SSE streaming, the
// `compaction_trigger` input item answered with a `compaction` output item) and the Anthropic
// Messages API (`POST /v1/messages`). Every request's input is counted with js-tiktoken
// (o200k_base) and refused with the provider's own overflow error when it exceeds the window;
// every accepted request is recorded with its checks: tool calls paired, the task present.
import http from 'node:http';
import { getEncoding } from 'js-tiktoken';

let ids = 0;
/** Deterministic ids for the server's items. */
function nextId() {
  ids += 1;
  return ids;
}

const encoding = getEncoding('o200k_base');

/** Tokens of a text (o200k_base). */
export function countText(text) {
  return text ? encoding.encode(text).length : 0;
}

/** The text an issued compaction item stands for (the server "decrypts" its own items). */
function decodeCompaction(encrypted) {
  try {
    return JSON.parse(Buffer.from(encrypted, 'base64').toString('utf8'));
  } catch {
    return null;
  }
}

/** The texts of a Responses request, the task check's haystack, and its pairing. */
function readResponsesInput(body, issued) {
  const texts = [];
  const calls = new Set();
  let unpaired = 0;
  let badCompaction = 0;
  let replayed = 0;
  let items = 0;
  if (body.instructions) texts.push(body.instructions);
  const input = typeof body.input === 'string' ? [{ type: 'message', role: 'user', content: body.input }] : body.input;
  for (const item of input) {
    items += 1;
    switch (item.type) {
      case 'message':
      case undefined:
        texts.push(typeof item.content === 'string' ? item.content : item.content.map((part) => part.text ?? '').join(''));
        break;
      case 'function_call':
        calls.add(item.call_id);
        texts.push(item.name, item.arguments);
        break;
      case 'function_call_output':
        if (!calls.delete(item.call_id)) unpaired += 1;
        texts.push(typeof item.output === 'string' ? item.output : JSON.stringify(item.output));
        break;
      case 'compaction': {
        const state = issued.get(item.id);
        if (!state || state.encrypted !== item.encrypted_content) badCompaction += 1;
        replayed += 1;
        texts.push(decodeCompaction(item.encrypted_content)?.summary ?? item.encrypted_content);
        break;
      }
      case 'compaction_trigger':
        break;
      default:
        texts.push(JSON.stringify(item));
    }
  }
  unpaired += calls.size;
  return { texts, unpaired, badCompaction, replayed, items, trigger: input.at(-1)?.type === 'compaction_trigger' };
}

/** The same for an Anthropic Messages request. */
function readAnthropicInput(body) {
  const texts = [];
  const calls = new Set();
  let unpaired = 0;
  let items = 0;
  const system = Array.isArray(body.system) ? body.system.map((block) => block.text).join('\n') : body.system;
  if (system) texts.push(system);
  for (const message of body.messages) {
    const blocks = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
    if (message.role === 'assistant' && calls.size > 0) unpaired += calls.size;
    if (message.role === 'assistant') calls.clear();
    for (const block of blocks) {
      items += 1;
      if (block.type === 'text') texts.push(block.text);
      else if (block.type === 'tool_use') { calls.add(block.id); texts.push(block.name, JSON.stringify(block.input)); }
      else if (block.type === 'tool_result') {
        if (!calls.delete(block.tool_use_id)) unpaired += 1;
        texts.push(typeof block.content === 'string' ? block.content : JSON.stringify(block.content));
      } else texts.push(JSON.stringify(block));
    }
  }
  unpaired += calls.size;
  return { texts, unpaired, badCompaction: 0, replayed: 0, items, trigger: false };
}

/** A summary in the core's template, long enough for a large fold, quoting the task. */
function templateSummary(task, texts) {
  const paths = [...new Set(texts.join('\n').match(/src\/[a-z0-9_/]+\.rs/g) ?? [])].slice(-12);
  return [
    '## Goal', `- ${task}`,
    '## Done and In Progress', `- Read and ran ${texts.length} items so far; files: ${paths.join(', ') || 'none yet'}.`,
    '## Key Decisions', '- Keep the public API stable while fixing the build.',
    '## Next Steps', '- Continue reading the remaining modules and rerun `cargo build`.',
    '## Critical Context', ...paths.map((p) => `- \`${p}\` was inspected; no error pinned to it yet.`),
    '- The build command is `cargo build --workspace`; its last error was in the parser module.',
  ].join('\n');
}

/**
 * Starts the server. `window`: the context window in tokens; `task`: the text every agent
 * request must hold; `agent(step, kind)`: the scripted reply of agent step `step` —
 * `{ tool, input }` for a tool call or `{ text }` for the final answer. `refuseCompaction`:
 * answer every compaction request with a 400 (a provider without the feature).
 */
export async function startProvider({ window, task, agent, refuseCompaction = false, instructions = null }) {
  const state = {
    requests: [], refused: [], issued: new Map(), agentSteps: 0, compactions: 0, summaries: 0,
  };
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => { raw += chunk; });
    req.on('end', () => {
      try {
        handle(req, res, JSON.parse(raw));
      } catch (error) {
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: String(error?.stack ?? error), type: 'server_error', code: 'server_error' } }));
      }
    });
  });

  function handle(req, res, body) {
    const anthropic = req.url.endsWith('/messages');
    if (!anthropic && !req.url.endsWith('/responses')) {
      res.writeHead(404).end();
      return;
    }
    const read = anthropic ? readAnthropicInput(body) : readResponsesInput(body, state.issued);
    const toolTokens = body.tools ? countText(JSON.stringify(body.tools)) : 0;
    const tokens = read.texts.reduce((sum, text) => sum + countText(text), 0) + 3 * read.items + toolTokens;
    const kind = read.trigger ? 'compaction' : String(body.model).includes('cheap') ? 'summarize' : 'agent';
    const record = { protocol: anthropic ? 'anthropic' : 'openai', kind, tokens, items: read.items, unpaired: read.unpaired, badCompaction: read.badCompaction, replayed: read.replayed, hasTask: read.texts.some((t) => t.includes(task)), hasInstructions: instructions !== null && read.texts.some((t) => t.includes(instructions)), stream: body.stream === true };
    if (refuseCompaction && read.trigger) {
      state.refused.push({ ...record, compactionRefused: true });
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'Unsupported input item type: compaction_trigger', type: 'invalid_request_error', param: 'input', code: 'invalid_value' } }));
      return;
    }
    if (tokens > window) {
      state.refused.push(record);
      const error = anthropic
        ? { type: 'error', error: { type: 'invalid_request_error', message: `prompt is too long: ${tokens} tokens > ${window} maximum` } }
        : { error: { message: `Your input exceeds the context window of this model (${tokens} > ${window} tokens). Please adjust your input and try again.`, type: 'invalid_request_error', param: 'input', code: 'context_length_exceeded' } };
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify(error));
      return;
    }
    state.requests.push(record);
    let reply;
    if (kind === 'compaction') {
      state.compactions += 1;
      const id = `cmp_${state.compactions}`;
      const encrypted = Buffer.from(JSON.stringify({ summary: templateSummary(task, read.texts) })).toString('base64');
      state.issued.set(id, { encrypted });
      reply = { compaction: { id, encrypted } };
    } else if (kind === 'summarize') {
      state.summaries += 1;
      reply = { text: templateSummary(task, read.texts) };
    } else {
      reply = agent(state.agentSteps, record);
      state.agentSteps += 1;
    }
    const usage = { input: tokens, output: 12 };
    if (anthropic) sendAnthropic(res, body, reply, usage);
    else if (body.stream) streamResponses(res, body, reply, usage);
    else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(responsesBody(body, reply, usage, nextId())));
  }

  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return { state, url: `http://127.0.0.1:${port}/v1`, close: () => new Promise((resolve) => server.close(resolve)) };
}

function responsesItem(reply, n) {
  if (reply.compaction) return { type: 'compaction', id: reply.compaction.id, encrypted_content: reply.compaction.encrypted };
  if (reply.tool) return { type: 'function_call', id: `fc_${n}`, call_id: `call_${n}`, name: reply.tool, arguments: JSON.stringify(reply.input), status: 'completed' };
  return { type: 'message', role: 'assistant', id: `msg_${n}`, status: 'completed', content: [{ type: 'output_text', text: reply.text, annotations: [] }] };
}

function responsesUsage(usage) {
  return { input_tokens: usage.input, input_tokens_details: { cached_tokens: 0 }, output_tokens: usage.output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: usage.input + usage.output };
}

function responsesBody(body, reply, usage, n) {
  return { id: `resp_${n}`, object: 'response', created_at: 1_800_000_000, model: body.model, status: 'completed', output: [responsesItem(reply, n)], usage: responsesUsage(usage) };
}

/** The Responses streaming form: SSE events as the API sends them. */
function streamResponses(res, body, reply, usage) {
  const n = nextId();
  const item = responsesItem(reply, n);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  let seq = 0;
  const send = (event) => res.write(`event: ${event.type}\ndata: ${JSON.stringify({ ...event, sequence_number: seq++ })}\n\n`);
  const response = { id: `resp_${n}`, object: 'response', created_at: 1_800_000_000, model: body.model, status: 'in_progress', output: [] };
  send({ type: 'response.created', response });
  if (item.type === 'message') {
    send({ type: 'response.output_item.added', output_index: 0, item: { ...item, status: 'in_progress', content: [] } });
    for (const delta of reply.text.match(/.{1,16}/gs)) send({ type: 'response.output_text.delta', item_id: item.id, output_index: 0, content_index: 0, delta });
  } else if (item.type === 'function_call') {
    send({ type: 'response.output_item.added', output_index: 0, item: { ...item, arguments: '', status: 'in_progress' } });
    send({ type: 'response.function_call_arguments.delta', item_id: item.id, output_index: 0, delta: item.arguments });
  } else {
    send({ type: 'response.output_item.added', output_index: 0, item });
  }
  send({ type: 'response.output_item.done', output_index: 0, item });
  send({ type: 'response.completed', response: { ...response, status: 'completed', output: [item], usage: responsesUsage(usage) } });
  res.end('data: [DONE]\n\n');
}

function sendAnthropic(res, body, reply, usage) {
  const content = reply.tool
    ? [{ type: 'tool_use', id: `toolu_${nextId()}`, name: reply.tool, input: reply.input }]
    : [{ type: 'text', text: reply.text }];
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
    id: `msg_${nextId()}`, type: 'message', role: 'assistant', model: body.model, content,
    stop_reason: reply.tool ? 'tool_use' : 'end_turn', stop_sequence: null,
    usage: { input_tokens: usage.input, output_tokens: usage.output, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
  }));
}
