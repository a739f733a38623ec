// A session's AI SDK messages as RuntimeEvents in a store, appended incrementally with stable,
// deterministic ids: every batch is read by the core's `importModelMessages` with `firstSeq` and
// `firstTurn` continuing the stored log, so importing a conversation in batches gives exactly the
// events (ids `evt-<seq>`, turns `turn-<n>`, runs `run-<n>`, response ids `resp-<seq>`) that
// importing it whole gives. A user message starts a turn.
//
// A call may pass the stored conversation back as the store gives it (`store.modelMessages()`,
// to resume after a restart). Those messages are the projection of the stored events: what the
// event log keeps but no projection gives back (a part's `providerOptions`, e.g. the Responses
// item ids `@ai-sdk/openai` puts on every part, kept in the event's `metadata`) is missing, so
// their import is not byte for byte the stored events and its digest differs. The matcher then
// compares them in that form: the same number of events projecting to the same AI SDK messages
// is the same conversation, and the stored events (with all they keep) stay as they are.
import { ContextfoldError, canonicalEventJson, digestPrefix, importModelMessages, project } from 'contextfold';

/** A context window no conversation reaches: a projection of every event. */
const UNBOUNDED = { contextWindow: Number.MAX_SAFE_INTEGER };

/** The AI SDK messages `events` project to (every event, no checkpoint), as JSON text. */
function messagesOf(events) {
  return JSON.stringify(project({ events, model: UNBOUNDED, format: 'ai-sdk' }).messages);
}

/**
 * Whether two event lists are the same conversation as the AI SDK messages they give back (false
 * when either does not project, e.g. a lone tool call).
 */
function sameConversation(a, b) {
  if (a.length !== b.length) return false;
  try {
    return a.length === 0 || messagesOf(a) === messagesOf(b);
  } catch {
    return false;
  }
}

/** Whether two events are the same event (their JSON, else their canonical JSON). */
function sameEvent(a, b) {
  return JSON.stringify(a) === JSON.stringify(b) || canonicalEventJson(a) === canonicalEventJson(b);
}

const TURN = /^turn-(\d+)$/;

/** Whether a batch's first non-system message is a user message (it then opens a new turn). */
function opensTurn(messages) {
  const first = messages.find((message) => message.role !== 'system');
  return first?.role === 'user';
}

/**
 * The mapping from AI SDK messages to the events of one store. One call at a time: a
 * `Folding` serializes its steps.
 */
export class SessionHistory {
  #store;
  #turn = -1;
  #nextSeq = 1;
  #firstDigest = null;
  /**
   * After a call passed stored events back in their projected form: `{ count, digest }`, the
   * digest of that form's first `count` events (so later calls repeating it match at once).
   */
  #resent = null;

  /** Continues the events `store` already holds (its last event's turn and `seq`). */
  constructor(store) {
    this.#store = store;
    const length = store.log.length;
    if (length > 0) {
      const events = store.log.events();
      const last = events[length - 1];
      this.#nextSeq = Number(last.seq) + 1;
      const match = TURN.exec(last.turnId);
      this.#turn = match ? Number(match[1]) : new Set(events.map((event) => event.turnId)).size - 1;
    }
  }

  /** The turn the last stored event belongs to (`turn-<n>`), or null before any event. */
  get currentTurnId() {
    return this.#turn < 0 ? null : `turn-${this.#turn}`;
  }

  /** Appends `messages` (one batch: a step's response messages, or new user input) as events. */
  async appendMessages(messages) {
    if (messages.length === 0) return [];
    const firstTurn = this.#turn < 0 ? 0 : this.#turn + (opensTurn(messages) ? 1 : 0);
    const events = importModelMessages(messages, { sessionId: this.#store.sessionId, firstSeq: this.#nextSeq, firstTurn });
    await this.#appendEvents(events);
    return events;
  }

  /**
   * The first messages of a call. `mode` `'full'`: they are the whole conversation so far (the
   * stored events must be a prefix of their import; the rest is appended); `'new'`: they follow
   * the stored events; `'auto'` (default): `'full'` when their first event is the stored log's
   * first event (also in the form the store gives it back), else `'new'`. Throws
   * `history_diverged` when a full history does not extend the stored one.
   */
  async appendCallInput(messages, mode = 'auto') {
    const log = this.#store.log;
    if (log.length === 0 || mode === 'new') return this.appendMessages(messages);
    const whole = importModelMessages(messages, { sessionId: this.#store.sessionId });
    this.#firstDigest ??= digestPrefix(log.events().slice(0, 1));
    if (mode === 'auto' && (whole.length === 0 || (digestPrefix([whole[0]]) !== this.#firstDigest && !sameConversation([whole[0]], log.events().slice(0, 1))))) {
      return this.appendMessages(messages);
    }
    if (!this.#extends(whole, log)) {
      throw new ContextfoldError('history_diverged', `the call's messages do not extend the ${log.length} stored events of session ${this.#store.sessionId}: pass the conversation unchanged (or as store.modelMessages() gives it back), or only the new messages`);
    }
    const rest = whole.slice(log.length);
    await this.#appendEvents(rest);
    return rest;
  }

  /**
   * Whether `whole` (a call's messages, imported) starts with the stored events: byte for byte
   * (their digest), or in the form the store gives them back (module comment). In that form, the
   * part an earlier call already matched is recognized by its digest and the events after it
   * are compared one by one; otherwise both are projected and compared whole.
   */
  #extends(whole, log) {
    const length = log.length;
    if (whole.length < length) return false;
    const head = whole.slice(0, length);
    if (digestPrefix(head) === log.digest()) return true;
    const stored = log.events();
    const known = this.#resent !== null && this.#resent.count <= length && digestPrefix(head.slice(0, this.#resent.count)) === this.#resent.digest
      ? this.#resent.count : 0;
    const same = known === 0
      ? sameConversation(head, stored)
      : head.slice(known).every((event, index) => sameEvent(event, stored[known + index]));
    if (same && known === 0) this.#resent = { count: length, digest: digestPrefix(head) };
    return same;
  }

  async #appendEvents(events) {
    if (events.length === 0) return;
    await this.#store.appendEvents(events);
    const last = events.at(-1);
    this.#nextSeq = Number(last.seq) + 1;
    this.#turn = Number(TURN.exec(last.turnId)?.[1] ?? this.#turn + 1);
  }
}
