// Conversions between the three message shapes `contextfold/ai-sdk` meets: the AI SDK's
// `ModelMessage[]` (what `importModelMessages` reads and `project({ format: 'ai-sdk' })` writes),
// the provider-level prompt a `LanguageModelV3`/`V4` receives (`LanguageModelV4Prompt`: system
// content is a string, every other content is an array of parts), and the OpenAI Responses input
// items of a native compaction request. Nothing is dropped: a part these functions do not know
// passes through unchanged, so the core's importer reports it with its typed error.
import { ContextfoldError } from 'contextfold';

/** The text of a message's content: a string, or its `text` parts joined. */
export function contentText(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.filter((part) => part?.type === 'text').map((part) => part.text).join('');
}

function bytesToBase64(bytes) {
  if (globalThis.Buffer) return globalThis.Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** A ModelMessage image/file part → a provider-level file part (V3: raw data; V4: tagged). */
function providerFilePart(part, version) {
  const raw = part.type === 'image' ? part.image : part.data;
  const mediaType = part.mediaType ?? (part.type === 'image' ? 'image' : 'application/octet-stream');
  const isUrl = raw instanceof URL || (typeof raw === 'string' && /^(https?:|data:)/.test(raw));
  const out = { type: 'file', mediaType };
  if (part.filename !== undefined) out.filename = part.filename;
  if (version === 'v4') {
    out.data = isUrl ? { type: 'url', url: raw instanceof URL ? raw : new URL(raw) } : { type: 'data', data: raw };
  } else {
    out.data = isUrl ? (raw instanceof URL ? raw : new URL(raw)) : raw;
  }
  if (part.providerOptions !== undefined) out.providerOptions = part.providerOptions;
  return out;
}

/** A provider-level file part → the ModelMessage part `importModelMessages` reads. */
function modelFilePart(part) {
  let data = part.data;
  if (data && typeof data === 'object' && !(data instanceof URL) && !(data instanceof Uint8Array) && 'type' in data) {
    if (data.type === 'url') data = data.url;
    else if (data.type === 'data') data = data.data;
    else return part; // a provider reference or inline text: the importer names it
  }
  if (data instanceof URL) data = data.href;
  if (data instanceof Uint8Array) data = bytesToBase64(data);
  const out = part.mediaType?.startsWith('image')
    ? { type: 'image', image: data, mediaType: part.mediaType }
    : { type: 'file', data, mediaType: part.mediaType };
  if (part.filename !== undefined) out.filename = part.filename;
  if (part.providerOptions !== undefined) out.providerOptions = part.providerOptions;
  return out;
}

/**
 * `ModelMessage[]` → the provider-level prompt of a `LanguageModelV3` (`version: 'v3'`) or
 * `LanguageModelV4` (`'v4'`, the default): string contents become one text part, image and file
 * parts become `file` parts in that version's data shape; every other part is copied.
 */
export function toProviderPrompt(messages, version = 'v4') {
  return messages.map((message) => {
    const out = { role: message.role };
    if (message.role === 'system') {
      out.content = typeof message.content === 'string' ? message.content : contentText(message.content);
    } else if (typeof message.content === 'string') {
      out.content = [{ type: 'text', text: message.content }];
    } else {
      out.content = message.content.map((part) => (part.type === 'image' || part.type === 'file' ? providerFilePart(part, version) : part));
    }
    if (message.providerOptions !== undefined) out.providerOptions = message.providerOptions;
    return out;
  });
}

/** A provider-level prompt (V3 or V4) → `ModelMessage[]` as `importModelMessages` reads them. */
export function fromProviderPrompt(prompt) {
  return prompt.map((message) => {
    if (message.role === 'system') return { ...message };
    const content = message.content.map((part) => (part.type === 'file' ? modelFilePart(part) : part));
    return { ...message, content };
  });
}

/**
 * The Responses API input items of a native compaction request (without the terminal
 * `compaction_trigger`) → a provider-level prompt for `@ai-sdk/openai`'s Responses model, which
 * writes them back as the same items: messages, `function_call` / `function_call_output` pairs,
 * and a previous `compaction` item as the `openai.compaction` custom part.
 */
export function responsesItemsToPrompt(items) {
  const prompt = [];
  const last = () => prompt.at(-1);
  const push = (role, part) => {
    if (last()?.role === role && role !== 'system') last().content.push(part);
    else prompt.push({ role, content: [part] });
  };
  for (const item of items) {
    switch (item.type) {
      case 'compaction_trigger':
        break;
      case 'message': {
        const text = typeof item.content === 'string' ? item.content
          : item.content.map((part) => part.text ?? '').join('');
        if (item.role === 'system' || item.role === 'developer') prompt.push({ role: 'system', content: text });
        else push(item.role === 'assistant' ? 'assistant' : 'user', { type: 'text', text });
        break;
      }
      case 'function_call':
        push('assistant', { type: 'tool-call', toolCallId: item.call_id, toolName: item.name, input: parseArguments(item.arguments) });
        break;
      case 'function_call_output':
        push('tool', {
          type: 'tool-result', toolCallId: item.call_id, toolName: toolNameOf(prompt, item.call_id),
          output: { type: 'text', value: typeof item.output === 'string' ? item.output : JSON.stringify(item.output) },
        });
        break;
      case 'compaction':
      case 'compaction_summary':
        push('assistant', { type: 'custom', kind: 'openai.compaction', providerOptions: { openai: { itemId: item.id, encryptedContent: item.encrypted_content } } });
        break;
      default:
        throw new ContextfoldError('native_item_unsupported', `a native compaction request holds a \`${item.type}\` item this adapter cannot send`);
    }
  }
  return prompt;
}

function parseArguments(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function toolNameOf(prompt, callId) {
  for (const message of prompt) {
    if (message.role !== 'assistant') continue;
    for (const part of message.content) {
      if (part.type === 'tool-call' && part.toolCallId === callId) return part.toolName;
    }
  }
  return 'unknown';
}

/** The compaction output items of a Responses model's result content (`openai.compaction` parts). */
export function compactionItems(content) {
  return (content ?? [])
    .filter((part) => part.type === 'custom' && part.kind === 'openai.compaction')
    .map((part) => {
      const meta = part.providerMetadata?.openai ?? part.providerOptions?.openai ?? {};
      return { type: 'compaction', id: meta.itemId, encrypted_content: meta.encryptedContent };
    });
}

/** A provider result's finish reason in the AI SDK spelling (`{ unified }` in V3/V4, a string in V2). */
export function finishReasonOf(result) {
  const reason = result?.finishReason;
  return typeof reason === 'string' ? reason : reason?.unified;
}

/** The number of input tokens a provider-level usage reports (V3/V4 `{ total }`, or a number). */
export function providerInputTokens(usage) {
  const input = usage?.inputTokens;
  return typeof input === 'number' ? input : input?.total;
}
