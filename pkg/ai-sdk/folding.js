// `Folding`: one session's compaction driver for the AI SDK. Each step (a `prepareStep` call, or
// a language-model middleware's `transformParams`) appends the new messages to the store as
// events, evaluates the projection of the live turn, compacts through the summarizer of the
// caller's choice (or provider-native compaction for an OpenAI Responses model) when it does not
// fit, and answers the next request's history with `projectForRequest` (fail-open). The usage
// each step reports feeds the token calibration the next projection is measured with, and is
// recorded in the store (`store.recordUsage`), whose calibration a reopened session starts from. With
// `backgroundPreparation`, the next checkpoint is prepared between steps (./preparation.js).
import { ContextfoldError, calibrate, compact, providerFailure, usageFact } from 'contextfold';
import { SessionHistory } from './history.js';
import { makeHost, nativeCapable, requireSummarizer } from './host.js';
import { Preparations } from './preparation.js';
import { fromProviderPrompt, providerInputTokens, toProviderPrompt } from './prompt.js';
import { estimateText, instructionsText, ownSystemCount, textTokens, withInstructions } from './request.js';

/** The compaction driver `contextfold()` returns (docs/npm.md#the-ai-sdk-adapter). */
export class Folding {
  #store;
  #history;
  #modelFacts;
  #summarizer;
  #provider;
  #historyMode;
  #native;
  #countTokens;
  #onCompaction;
  #background;
  #preparations;
  #calibration;
  #last = null;
  #call = null;
  #queue = Promise.resolve();
  #textCache = new Map();
  #middlewares = {};
  #guards = {};
  #stats = { steps: 0, compactions: 0, checkpoints: 0, failures: 0, usageFacts: 0, overflows: 0, overBudget: 0, lastOutcome: null };

  /** See `contextfold()` in `contextfold/ai-sdk` for the options. */
  constructor({ store, model = {}, summarizer = 'extractive', provider, history = 'auto', native = 'auto', countTokens, calibration, onCompaction, backgroundPreparation = false, onPreparation } = {}) {
    if (!store?.log || typeof store.appendEvents !== 'function') {
      throw new ContextfoldError('invalid_argument', 'contextfold(): `store` must implement the store interface (e.g. await MemoryStore.open({ sessionId }))');
    }
    this.#store = store;
    this.#history = new SessionHistory(store);
    this.#modelFacts = model;
    this.#summarizer = requireSummarizer(summarizer);
    this.#provider = provider;
    this.#historyMode = history;
    this.#native = native;
    this.#countTokens = countTokens;
    // The store's calibration (learned from the usage facts it kept) unless one is given.
    this.#calibration = calibration ?? store.calibration ?? null;
    this.#onCompaction = onCompaction;
    this.#background = backgroundPreparation === true;
    this.#preparations = new Preparations(store, onPreparation);
    this.prepareStep = this.prepareStep.bind(this);
  }

  /** The store this driver appends to. */
  get store() {
    return this.#store;
  }

  /**
   * The request model's facts. Set them when the agent switches to a model with another window:
   * the next step measures (and judges a prepared checkpoint) against the new budget.
   */
  get model() {
    return this.#modelFacts;
  }

  set model(facts) {
    this.#modelFacts = facts ?? {};
  }

  /**
   * Background preparations so far (`backgroundPreparation`), by how they ended: `started`,
   * `prepared`, `used`, `superseded`, `wasted`, `failed`, `held`, and the summarizer tokens they
   * spent (`tokens`, `usedTokens`, `wastedTokens`, `heldTokens`).
   */
  get preparations() {
    return this.#preparations.stats;
  }

  /**
   * Resolves once the preparation in flight, if any, has ended and been taken in (a host shutting
   * down, or a test that needs it settled). Steps never wait for it unless a compaction needs it.
   */
  awaitPreparation() {
    return this.#preparations.settled();
  }

  /**
   * The calibration learned from the steps' usage so far: at first the `calibration` option, else
   * the store's (learned from the usage facts it recorded), then each step's usage, which the
   * store records too. A session reopened from its store starts where it left off.
   */
  get calibration() {
    return this.#calibration;
  }

  /**
   * Counters: steps prepared (an overflow guard's retry of a step is not one), compactions run, checkpoints recorded, compaction errors, usage
   * facts, provider overflows answered, and requests sent over the history budget (fail-open).
   */
  get stats() {
    return { ...this.#stats };
  }

  /** The projection sent with the last request, or null. */
  get lastProjection() {
    return this.#last?.projection ?? null;
  }

  /**
   * `prepareStep` for `generateText`, `streamText` and `ToolLoopAgent` (ai@6 and ai@7): appends
   * the step's new messages, compacts when the projection does not fit, and returns
   * `{ messages }`, the projected history to send.
   */
  prepareStep(options) {
    return this.#serialized(() => this.#prepareStep(options));
  }

  /**
   * Appends the call's final response messages (the last step has no `prepareStep` after it)
   * and records its usage. Optional when the next call passes the whole conversation again.
   */
  finish(result) {
    return this.#serialized(async () => {
      if (!this.#call) return;
      // ai@7: `responseMessages` (all steps; `response.messages` is the last step's); ai@6:
      // `response.messages` (all steps). streamText results hold promises.
      const responseMessages = (await result.responseMessages) ?? (await result.response)?.messages ?? [];
      const steps = await result.steps;
      const conversation = [...this.#call.initial, ...responseMessages];
      await this.#history.appendMessages(conversation.slice(this.#call.consumed));
      await this.#recordUsage(steps?.at(-1)?.usage);
      this.#call = null;
    });
  }

  /** A `LanguageModelV4Middleware` (ai@7's `wrapLanguageModel`) doing the same per request. */
  get middleware() {
    this.#middlewares.v4 ??= this.#middleware('v4');
    return this.#middlewares.v4;
  }

  /** The same middleware for ai@6 (`LanguageModelV3Middleware`). */
  get middlewareV3() {
    this.#middlewares.v3 ??= this.#middleware('v3');
    return this.#middlewares.v3;
  }

  /**
   * A `LanguageModelV4Middleware` for a model driven by `prepareStep`: when the provider refuses
   * a step's request as too long, records the overflow, compacts with trigger `overflow` and
   * sends the new projection once (the call's own instructions kept). Changes nothing else.
   */
  get overflowGuard() {
    this.#guards.v4 ??= this.#guard('v4');
    return this.#guards.v4;
  }

  /** The same guard for ai@6 (`LanguageModelV3Middleware`). */
  get overflowGuardV3() {
    this.#guards.v3 ??= this.#guard('v3');
    return this.#guards.v3;
  }

  async #prepareStep(options) {
    const v7 = Array.isArray(options.responseMessages);
    const conversation = v7 ? [...(options.initialMessages ?? []), ...options.responseMessages] : options.messages;
    if (options.stepNumber === 0 || !this.#call) {
      const count = v7 ? (options.initialMessages ?? []).length : options.messages.length;
      const initial = conversation.slice(0, count);
      this.#call = { initial, consumed: count, v7 };
      await this.#history.appendCallInput(initial, this.#historyMode);
      if (count < conversation.length) await this.#history.appendMessages(conversation.slice(count));
    } else {
      await this.#recordUsage(options.steps?.at(-1)?.usage);
      await this.#history.appendMessages(conversation.slice(this.#call.consumed));
    }
    this.#call.consumed = conversation.length;
    const instructions = v7 ? options.initialInstructions : options.instructions;
    const overhead = textTokens(this.#textCache, instructionsText(instructions));
    const trigger = options.stepNumber === 0 ? 'pre-turn' : 'mid-turn';
    const sent = await this.#fold(trigger, options.model, overhead, options.abortSignal);
    const result = v7 ? withInstructions(this.#call, sent.messages, instructions) : { messages: sent.messages };
    if (sent.checkpoint?.schemaVersion === 3) result.providerOptions = { openai: { store: false } };
    return result;
  }

  #middleware(version) {
    const transform = (params, model, trigger) => this.#serialized(async () => {
      const before = this.#history.currentTurnId;
      if (trigger !== 'overflow') await this.#history.appendCallInput(fromProviderPrompt(params.prompt), this.#historyMode);
      const chosen = trigger ?? (before !== this.#history.currentTurnId ? 'pre-turn' : 'mid-turn');
      const overhead = textTokens(this.#textCache, params.tools?.length ? JSON.stringify(params.tools) : '');
      const sent = await this.#fold(chosen, model, overhead, params.abortSignal, trigger === 'overflow');
      const out = { ...params, prompt: toProviderPrompt(sent.messages, model?.specificationVersion === 'v3' ? 'v3' : 'v4') };
      if (sent.checkpoint?.schemaVersion === 3) {
        out.providerOptions = { ...params.providerOptions, openai: { ...params.providerOptions?.openai, store: false } };
      }
      return out;
    });
    return {
      specificationVersion: version,
      transformParams: ({ params, model }) => transform(params, model),
      ...this.#overflowRetry((params, model) => transform(params, model, 'overflow')),
    };
  }

  #guard(version) {
    const resend = (params, model) => this.#serialized(async () => {
      const own = params.prompt.slice(0, ownSystemCount(params.prompt, this.#last.projection.messages, this.#call?.v7));
      const overhead = textTokens(this.#textCache, own.map((message) => message.content).join('\n'));
      const sent = await this.#fold('overflow', model, overhead, params.abortSignal, true);
      const out = { ...params, prompt: [...own, ...toProviderPrompt(sent.messages, version)] };
      if (sent.checkpoint?.schemaVersion === 3) {
        out.providerOptions = { ...params.providerOptions, openai: { ...params.providerOptions?.openai, store: false } };
      }
      return out;
    });
    return { specificationVersion: version, ...this.#overflowRetry(resend) };
  }

  /**
   * `wrapGenerate` / `wrapStream` recording each response's usage. A request the provider
   * refuses as too long: record the overflow, build the request again with `resend` (which
   * compacts with trigger `overflow`), and send it once.
   */
  #overflowRetry(resend) {
    const retryOnOverflow = async (call, params, model) => {
      try {
        return await call(params);
      } catch (error) {
        if (providerFailure(error).kind !== 'overflow' || !this.#last) throw error;
        await this.#recordOverflow();
        return call(await resend(params, model));
      }
    };
    return {
      wrapGenerate: async ({ doGenerate, params, model }) => {
        const result = await retryOnOverflow((p) => (p === params ? doGenerate() : model.doGenerate(p)), params, model);
        await this.#recordProviderUsage(result.usage);
        return result;
      },
      wrapStream: async ({ doStream, params, model }) => {
        const result = await retryOnOverflow((p) => (p === params ? doStream() : model.doStream(p)), params, model);
        const record = (usage) => this.#recordProviderUsage(usage);
        const stream = result.stream.pipeThrough(new TransformStream({
          async transform(part, controller) {
            if (part?.type === 'finish') await record(part.usage);
            controller.enqueue(part);
          },
        }));
        return { ...result, stream };
      },
    };
  }

  /** The provider identity a request is measured and checkpointed under. */
  #identity(model, native) {
    if (this.#provider) return this.#provider;
    const connection = typeof model === 'object' && model ? model.provider : String(model ?? 'unknown');
    const modelId = typeof model === 'object' && model ? model.modelId : String(model ?? 'unknown');
    return { provider: native ? 'openai-codex' : connection, connectionSlug: connection, modelId };
  }

  /**
   * Evaluates, compacts when the projection does not fit (or when `force`: an overflow), prepares
   * the next checkpoint in the background when it fits at the soft threshold, and projects the
   * next request.
   */
  async #fold(trigger, model, overheadTokens, signal, force = false) {
    // An overflow guard's retry builds the same step's request again: not a step of its own.
    if (!force) this.#stats.steps += 1;
    const native = this.#native !== false && nativeCapable(model, this.#native);
    const provider = this.#identity(model, native);
    const facts = { ...this.#modelFacts, fixedOverheadTokens: (this.#modelFacts.fixedOverheadTokens ?? 0) + overheadTokens };
    const store = this.#store;
    const measure = { model: facts, provider, currentTurnId: this.#history.currentTurnId, calibration: this.#calibration, countTokens: this.#countTokens };
    const evaluated = force ? null : store.log.project({ ...measure, checkpoint: store.checkpoint });
    if (force || !evaluated.fits) {
      await this.#compact(trigger, native ? model : null, measure, signal, force);
    } else if (this.#background) {
      this.#preparations.startIfDue(evaluated.estimatedTokens, facts, (prepSignal, meter) => this.#prepare(native ? model : null, measure, prepSignal, meter));
    }
    const sent = store.log.projectForRequest({ ...measure, checkpoint: store.checkpoint });
    if (!sent.fits) this.#stats.overBudget += 1;
    this.#last = { projection: sent, request: { ...provider, fixedOverheadTokens: facts.fixedOverheadTokens } };
    return sent;
  }

  /** The estimated tokens of a summarizer's answer (the caller's counter when it has one). */
  #countText(text) {
    return this.#countTokens ? this.#countTokens(text) : estimateText(text);
  }

  /**
   * A compaction the next request needs now. A checkpoint prepared in the background (held, or
   * awaited in flight) goes in as `prepared`: the core adopts it when it still serves. An
   * overflow supersedes it instead: the estimate it was prepared against was wrong.
   */
  async #compact(trigger, nativeModel, measure, signal, force) {
    const store = this.#store;
    if (force) this.#preparations.supersede();
    const { held, state } = force ? { held: null, state: 'none' } : await this.#preparations.take(signal);
    const meter = { tokens: 0 };
    const host = makeHost({ store, summarizer: this.#summarizer, nativeModel, meter, countText: (text) => this.#countText(text) });
    let pending = held;
    try {
      const outcome = await compact({
        events: store.log, ...measure, checkpoint: store.checkpoint, trigger,
        circuit: store.circuit ?? undefined,
        summarizerLabel: this.#summarizer.label,
        compactor: nativeModel ? 'openai-codex-native' : 'text-summary',
        prepared: held?.checkpoint,
        signal,
      }, host);
      this.#preparations.settle(pending, outcome);
      pending = null;
      this.#stats.compactions += 1;
      if (outcome.outcome === 'recorded') this.#stats.checkpoints += 1;
      this.#stats.lastOutcome = outcome.reason;
      this.#onCompaction?.(outcome, { trigger, preparation: state, summarizerTokens: meter.tokens, preparations: this.#preparations.stats });
    } catch (error) {
      // Fail open: the request reuses the last source-matched checkpoint.
      this.#preparations.settle(pending, null);
      this.#stats.failures += 1;
      this.#stats.lastOutcome = error?.code ?? 'compaction_error';
      this.#onCompaction?.({ outcome: 'error', reason: this.#stats.lastOutcome, error, diagnostics: [] }, { trigger, preparation: state, summarizerTokens: meter.tokens, preparations: this.#preparations.stats });
    }
  }

  /**
   * One background preparation: `compact()` with trigger `prepare` over the log as it stands. Its
   * checkpoint comes back in the outcome, unrecorded (the host's append is never asked for), and
   * its circuit is handed back for the merge instead of recorded.
   */
  async #prepare(nativeModel, measure, signal, meter) {
    const store = this.#store;
    let circuit = null;
    const host = makeHost({ store, summarizer: this.#summarizer, nativeModel, meter, countText: (text) => this.#countText(text), background: true });
    host.appendCheckpoint = async () => {
      throw new ContextfoldError('invalid_state', 'a preparation records no checkpoint');
    };
    host.recordCircuit = (value) => {
      circuit = value;
    };
    const outcome = await compact({
      events: store.log, ...measure, checkpoint: store.checkpoint, trigger: 'prepare',
      circuit: store.circuit ?? undefined,
      summarizerLabel: this.#summarizer.label,
      compactor: nativeModel ? 'openai-codex-native' : 'text-summary',
      checkpointId: `cp-prepared-${globalThis.crypto.randomUUID()}`,
      signal,
    }, host);
    return { outcome, circuit };
  }

  /** One usage fact per projection sent (the step's `usage` against its estimate), learned and stored. */
  async #recordUsage(usage) {
    const last = this.#last;
    if (!last || usage?.inputTokens === undefined || usage?.inputTokens === null) return;
    this.#last = { ...last, recorded: true };
    if (last.recorded) return;
    await this.#learn(usageFact(last.projection, last.request, usage));
  }

  /** The provider refused the last projection as too long: an overflow fact for the calibration. */
  async #recordOverflow() {
    const last = this.#last;
    this.#last = { ...last, recorded: true };
    if (last.recorded) return;
    this.#stats.overflows += 1;
    await this.#learn(usageFact(last.projection, last.request, { kind: 'overflow' }));
  }

  /** Learns from `fact` and records it in the store (a store without `recordUsage` keeps none). */
  async #learn(fact) {
    this.#calibration = calibrate(this.#calibration, fact);
    this.#stats.usageFacts += 1;
    await this.#store.recordUsage?.(fact);
  }

  #recordProviderUsage(usage) {
    const inputTokens = providerInputTokens(usage);
    if (typeof inputTokens !== 'number') return undefined;
    const cached = typeof usage.inputTokens === 'object' ? usage.inputTokens.cacheRead : undefined;
    return this.#recordUsage({ inputTokens, ...(typeof cached === 'number' ? { cachedInputTokens: cached } : {}) });
  }

  #serialized(fn) {
    const run = this.#queue.then(fn);
    this.#queue = run.catch(() => {});
    return run;
  }
}
