// A plain JavaScript implementation of the source digest and the AI SDK projection, the
// baseline of bench/run.mjs: JCS canonicalization + node:crypto SHA-256 (docs/digest.md), and
// the core's grouping of events into ModelMessages for logs of user text, tool calls and
// results, and assistant text (what the benchmark's sessions hold).
import { createHash } from 'node:crypto';

const DOMAIN_PREFIX = 'contextfold-source-v1\n';
const OPTIONAL = ['createdAtMs', 'responseId', 'metadata'];
const FLAGS = ['partial', 'pinned'];

/** RFC 8785 canonical JSON: JSON.stringify with keys sorted by UTF-16 code units. */
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The event as the core reads it: null optionals and false flags left out. */
function normalized(event) {
  const out = { ...event };
  for (const key of OPTIONAL) if (out[key] == null) delete out[key];
  for (const key of FLAGS) if (!out[key]) delete out[key];
  const content = { ...event.content };
  if (content.providerData == null) delete content.providerData;
  if (!content.isError) delete content.isError;
  out.content = content;
  return out;
}

/** The source digest of the events, in plain JS. */
export function plainDigest(events) {
  const hash = createHash('sha256').update(DOMAIN_PREFIX);
  for (const event of events) hash.update(`${canonical(normalized(event))}\n`);
  return `sha256:${hash.digest('hex')}`;
}

/** Tokens of a text as the core's character estimator counts them. */
function estimateText(text) {
  let ascii = 0;
  let other = 0;
  for (const ch of text) {
    if (ch.codePointAt(0) < 128) ascii += 1;
    else other += 1;
  }
  return Math.ceil(ascii / 4) + other;
}

function toolOutput(output, isError) {
  if (typeof output === 'string') return { type: isError ? 'error-text' : 'text', value: output };
  return { type: isError ? 'error-json' : 'json', value: output };
}

/**
 * Projects events (no checkpoint) as AI SDK ModelMessages: one user message per user text, one
 * assistant message per response, tool results in one tool message after their call.
 */
export function plainProject(events, contextWindow) {
  const messages = [];
  let assistant = null;
  let tool = null;
  let tokens = 0;
  for (const event of events) {
    const { content } = event;
    switch (content.type) {
      case 'user_text':
        assistant = null;
        tool = null;
        tokens += estimateText(content.text) + 4;
        messages.push({ role: 'user', content: content.text });
        break;
      case 'assistant_text':
      case 'tool_call': {
        if (!assistant || assistant.responseId !== event.responseId || tool) {
          assistant = { responseId: event.responseId, message: { role: 'assistant', content: [] } };
          tool = null;
          messages.push(assistant.message);
          tokens += 4;
        }
        if (content.type === 'assistant_text') {
          tokens += estimateText(content.text);
          assistant.message.content.push({ type: 'text', text: content.text });
        } else {
          tokens += estimateText(content.toolName) + estimateText(JSON.stringify(content.input));
          assistant.message.content.push({
            type: 'tool-call', toolCallId: content.callId, toolName: content.toolName, input: content.input,
          });
        }
        break;
      }
      case 'tool_result': {
        if (!tool) {
          tool = { role: 'tool', content: [] };
          messages.push(tool);
          tokens += 4;
        }
        const output = content.output;
        tokens += estimateText(content.toolName) + estimateText(typeof output === 'string' ? output : JSON.stringify(output));
        tool.content.push({
          type: 'tool-result', toolCallId: content.callId, toolName: content.toolName, output: toolOutput(output, content.isError),
        });
        break;
      }
      default:
        throw new Error(`plain projection does not handle ${content.type}`);
    }
  }
  return { messages, estimatedTokens: tokens, fits: tokens <= contextWindow };
}
