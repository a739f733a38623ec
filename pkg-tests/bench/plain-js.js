// A plain JavaScript implementation of the work the package does for `digestPrefix(events)` and
// `project({ events, model, format: 'ai-sdk' })`, the baseline of bench/run.mjs.
//
// Replicated (the package does all of it on every call):
// - the event checks of the core's parser (`RuntimeEvent` serde: required fields and their
//   types, no unknown field, a known `content.type` with exactly its fields) — `checkEvent`;
// - the core's `validate_log` (core/src/event.rs): one session, `seq` strictly increasing,
//   unique `runtimeEventId` — `validateLog`. `project()` runs it; `digestPrefix` does not, but
//   the brief of this baseline asks for it on both (a Set pass: about 1% of plainDigest);
// - the source digest: JCS canonical JSON + node:crypto SHA-256 (docs/digest.md);
// - `project()` without a checkpoint and without a current turn (core/src/projection/project.rs):
//   stale tool-result pruning (the newest 2 turns protected; an output estimated above 4096
//   tokens becomes the core's placeholder), materialization (core/src/projection/materialize.rs:
//   grouping into user / assistant-step / tool messages by turn and responseId, and every
//   pairing repair — orphan and duplicate results dropped, duplicate unanswered calls dropped,
//   reused call ids renamed `<id>_r<n>`, results moved after their call, interrupted calls
//   answered with the core's error result), the token estimate of the messages (the core's
//   CharEstimator and per-message/part overheads), the budget and `fits`, and the mapping to AI
//   SDK `ModelMessage`s (core/src/projection/ai_sdk.rs);
// - from JSONL: UTF-8 checked decoding, `str::lines` splitting, blank lines skipped, JSON.parse.
// Not replicated (not exercised by these sessions, so they throw instead of guessing):
// checkpoints and their verification, a current turn, `reasoning` and hosted tool events; the
// text of repair diagnostics (their codes are kept).
import { createHash } from 'node:crypto';

const DOMAIN_PREFIX = 'contextfold-source-v1\n';
const OPTIONAL = ['createdAtMs', 'responseId', 'metadata'];
const FLAGS = ['partial', 'pinned'];
const STALE_RESULT_MIN_TOKENS = 4096;
const PROTECTED_COMPLETED_TURNS = 2;
const MESSAGE_OVERHEAD = 4;
const MAX_RESERVE_TOKENS = 16384;
const INTERRUPTED_OUTPUT = { error: 'tool call interrupted: no result was recorded' };

const EVENT_FIELDS = new Set(['sessionId', 'runId', 'turnId', 'runtimeEventId', 'seq', 'createdAtMs', 'responseId', 'partial', 'pinned', 'content', 'metadata']);
/** Per kind: its fields, `s` a required string, `v` a required JSON value, `b?` an optional boolean, `v?` optional. */
const KINDS = {
  user_text: { text: 's' },
  assistant_text: { text: 's' },
  system_note: { text: 's' },
  runtime_note: { code: 's', text: 's' },
  reasoning: { text: 's', providerData: 'v?' },
  tool_call: { callId: 's', toolName: 's', input: 'v' },
  hosted_tool_call: { callId: 's', toolName: 's', input: 'v' },
  tool_result: { callId: 's', toolName: 's', output: 'v', isError: 'b?' },
  hosted_tool_result: { callId: 's', toolName: 's', output: 'v', isError: 'b?' },
};

function fail(code, message) {
  throw Object.assign(new Error(message), { code });
}

const isCount = (n) => Number.isInteger(n) && n >= 0;

/** The checks of the core's event parser. */
function checkEvent(event) {
  if (event === null || typeof event !== 'object' || Array.isArray(event)) fail('event_missing_kind', 'not an event');
  const kind = KINDS[event.content?.type];
  if (!kind) fail(typeof event.content?.type === 'string' ? 'event_unknown_kind' : 'event_missing_kind', 'bad content.type');
  for (const key in event) if (!EVENT_FIELDS.has(key)) fail('event_unknown_field', `unknown field ${key}`);
  for (const key of ['sessionId', 'runId', 'turnId', 'runtimeEventId']) if (typeof event[key] !== 'string') fail('event_invalid', key);
  if (!isCount(event.seq) || (event.createdAtMs != null && !isCount(event.createdAtMs))) fail('event_invalid', 'seq');
  if (event.responseId != null && typeof event.responseId !== 'string') fail('event_invalid', 'responseId');
  for (const key of FLAGS) if (key in event && typeof event[key] !== 'boolean') fail('event_invalid', key);
  if (event.metadata != null && (typeof event.metadata !== 'object' || Array.isArray(event.metadata))) fail('event_invalid', 'metadata');
  const { content } = event;
  for (const key in content) if (key !== 'type' && !(key in kind)) fail('event_unknown_field', `unknown field ${key}`);
  for (const key in kind) {
    const want = kind[key];
    const value = content[key];
    if (want === 's' ? typeof value !== 'string' : want === 'v' ? value === undefined : want === 'b?' && value !== undefined && typeof value !== 'boolean') {
      fail('event_invalid', key);
    }
  }
}

/** The core's `validate_log`, after checking each event as the parser does. */
export function validateLog(events) {
  const ids = new Set();
  for (let i = 0; i < events.length; i += 1) {
    const event = events[i];
    checkEvent(event);
    if (event.sessionId !== events[0].sessionId) fail('log_mixed_sessions', `event ${i}`);
    if (i > 0 && event.seq <= events[i - 1].seq) fail('log_seq_not_increasing', `event ${i}`);
    if (ids.has(event.runtimeEventId)) fail('log_duplicate_event_id', `event ${i}`);
    ids.add(event.runtimeEventId);
  }
}

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

/** The source digest of the events, in plain JS (checked as the package checks them). */
export function plainDigest(events) {
  validateLog(events);
  const hash = createHash('sha256').update(DOMAIN_PREFIX);
  for (const event of events) hash.update(`${canonical(normalized(event))}\n`);
  return `sha256:${hash.digest('hex')}`;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Events of UTF-8 JSONL bytes: checked decoding, `str::lines` splitting, blank lines skipped. */
export function parseJsonl(bytes) {
  const lines = utf8.decode(bytes).split('\n');
  const events = [];
  for (const raw of lines) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.trim() !== '') events.push(JSON.parse(line));
  }
  return events;
}

/** Tokens of a text as the core's CharEstimator counts them: ASCII / 4 rounded up, plus one per other character. */
function estimateText(text) {
  let ascii = 0;
  let other = 0;
  for (let i = 0; i < text.length; i += 1) {
    const unit = text.charCodeAt(i);
    if (unit < 128) ascii += 1;
    else {
      other += 1;
      if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
        const next = text.charCodeAt(i + 1);
        if (next >= 0xdc00 && next <= 0xdfff) i += 1;
      }
    }
  }
  return Math.ceil(ascii / 4) + other;
}

const estimateValue = (value) => estimateText(typeof value === 'string' ? value : JSON.stringify(value));

/** The core's stale tool-result pruning over a log without checkpoint or current turn. */
function pruneStale(events, diagnostics) {
  const protectedTurns = new Set();
  for (let i = events.length - 1; i >= 0 && protectedTurns.size < PROTECTED_COMPLETED_TURNS; i -= 1) {
    protectedTurns.add(events[i].turnId);
  }
  const pruned = [];
  const out = events.map((event) => {
    const { content } = event;
    if (content.type !== 'tool_result' || event.pinned || event.partial || protectedTurns.has(event.turnId)) return event;
    const tokens = estimateValue(content.output);
    if (tokens <= STALE_RESULT_MIN_TOKENS) return event;
    pruned.push({ id: event.runtimeEventId, tokens });
    const q = JSON.stringify;
    const body = Buffer.from(typeof content.output === 'string' ? content.output : JSON.stringify(content.output));
    const address = `contextfold://archive/${event.sessionId}/${createHash('sha256').update(body).digest('hex')}/${body.length}`;
    const output = `[stale tool result omitted from this request: tool ${q(content.toolName)} call ${q(content.callId)}. The full result remains in the event log as runtime event ${q(event.runtimeEventId)}, archived at ${address}.]`;
    return { ...event, content: { ...content, output } };
  });
  if (pruned.length > 0) {
    const total = pruned.reduce((sum, p) => sum + p.tokens, 0);
    diagnostics.push({ code: 'stale_tool_results_pruned', detail: `${pruned.length} stale tool result(s) of about ${total} estimated tokens replaced for this request: ${pruned.map((p) => p.id).join(', ')}` });
  }
  return out;
}

/** The core's materialization (ordinary tools): messages of `{ role, parts }` plus repair codes. */
function materialize(events, repairs) {
  const slots = [];
  const calls = new Map();
  const renamed = new Map();
  let open = null;
  const plain = (role, text) => {
    open = null;
    slots.push({ role, parts: [{ type: 'text', text }], calls: [], results: [] });
  };
  const stepPart = (event, part) => {
    const responseId = event.responseId ?? null;
    if (open && open.turnId === event.turnId && open.responseId === responseId) {
      slots[open.slot].parts.push(part);
      return [open.slot, slots[open.slot].parts.length - 1];
    }
    slots.push({ role: 'assistant', parts: [part], calls: [], results: [] });
    open = { slot: slots.length - 1, turnId: event.turnId, responseId };
    return [open.slot, 0];
  };
  for (const event of events) {
    const { content } = event;
    switch (content.type) {
      case 'user_text': plain('user', content.text); break;
      case 'system_note': plain('system', content.text); break;
      case 'runtime_note': plain('system', `[runtime:${content.code}] ${content.text}`); break;
      case 'assistant_text': stepPart(event, { type: 'text', text: content.text }); break;
      case 'tool_call': {
        const site = calls.get(renamed.get(content.callId) ?? content.callId);
        let id = content.callId;
        if (site && !site.answered) { repairs.push('duplicate_tool_call_dropped'); break; }
        if (site) {
          let n = 2;
          while (calls.has(`${content.callId}_r${n}`)) n += 1;
          id = `${content.callId}_r${n}`;
          renamed.set(content.callId, id);
          repairs.push('tool_call_id_renamed');
        }
        const [slot, partIndex] = stepPart(event, { type: 'tool-call', toolCallId: id, toolName: content.toolName, input: content.input });
        slots[slot].calls.push(id);
        calls.set(id, { slot, partIndex, toolName: content.toolName, answered: false });
        break;
      }
      case 'tool_result': {
        const id = renamed.get(content.callId) ?? content.callId;
        const site = calls.get(id);
        if (!site) { repairs.push('orphan_tool_result_dropped'); break; }
        if (site.answered) { repairs.push('duplicate_tool_result_dropped'); break; }
        slots[site.slot].results.push({ type: 'tool-result', toolCallId: id, toolName: site.toolName, output: content.output, isError: content.isError === true });
        if (open && open.responseId === null) open = null;
        if (site.slot + 1 !== slots.length) repairs.push('tool_result_moved');
        site.answered = true;
        break;
      }
      default:
        throw new Error(`plain projection does not replicate ${content.type}`);
    }
  }
  const unanswered = [...calls].filter(([, site]) => !site.answered).sort(([, a], [, b]) => a.slot - b.slot || a.partIndex - b.partIndex);
  for (const [id, site] of unanswered) {
    slots[site.slot].results.push({ type: 'tool-result', toolCallId: id, toolName: site.toolName, output: INTERRUPTED_OUTPUT, isError: true });
    repairs.push('tool_call_interrupted');
  }
  const messages = [];
  for (const slot of slots) {
    messages.push({ role: slot.role, parts: slot.parts });
    if (slot.calls.length > 0) messages.push({ role: 'tool', parts: slot.results });
  }
  return messages;
}

function estimatePart(part) {
  const body = part.type === 'text'
    ? estimateText(part.text)
    : estimateText(part.toolCallId) + estimateText(part.toolName) + estimateValue(part.type === 'tool-call' ? part.input : part.output);
  return body + MESSAGE_OVERHEAD;
}

function isWholeOutput(output) {
  if (output === null || typeof output !== 'object' || Array.isArray(output)) return false;
  const only = (allowed) => Object.keys(output).every((key) => allowed.includes(key));
  if (output.type === 'content') return Array.isArray(output.value) && only(['type', 'value', 'providerOptions']);
  if (output.type === 'execution-denied') return only(['type', 'reason', 'providerOptions']);
  return false;
}

function toolOutput(output, isError) {
  if (isWholeOutput(output)) return output;
  if (typeof output === 'string') return { type: isError ? 'error-text' : 'text', value: output };
  return { type: isError ? 'error-json' : 'json', value: output };
}

/** One neutral message as an AI SDK ModelMessage. */
function modelMessage({ role, parts }) {
  if (role === 'system') return { role, content: parts.map((p) => p.text).join('\n\n') };
  if (role === 'user' && parts.length === 1) return { role, content: parts[0].text };
  return {
    role,
    content: parts.map((p) => (p.type === 'tool-result'
      ? { type: 'tool-result', toolCallId: p.toolCallId, toolName: p.toolName, output: toolOutput(p.output, p.isError) }
      : p)),
  };
}

/** `project({ events, model: { contextWindow }, format: 'ai-sdk' })` in plain JS (no checkpoint, no current turn). */
export function plainProject(events, contextWindow) {
  validateLog(events);
  const diagnostics = [];
  const repairs = [];
  const messages = materialize(pruneStale(events, diagnostics), repairs);
  let estimatedTokens = 0;
  for (const message of messages) {
    estimatedTokens += MESSAGE_OVERHEAD;
    for (const part of message.parts) estimatedTokens += estimatePart(part);
  }
  for (const code of repairs) diagnostics.push({ code });
  const historyBudget = contextWindow - Math.min(Math.floor(contextWindow / 4), MAX_RESERVE_TOKENS);
  return {
    messages: messages.map(modelMessage),
    estimatedTokens,
    historyBudget,
    fits: estimatedTokens <= historyBudget,
    checkpoint: null,
    omittedEvents: 0,
    diagnostics,
  };
}
